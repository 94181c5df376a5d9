#pragma once
// The one way to fill a sockaddr_in: each bind and connect to a fixed IPv4 address otherwise
// spells out the family and both byte-order conversions itself.

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>

namespace loom {

// An IPv4 socket address: `host` in host byte order (INADDR_LOOPBACK, INADDR_ANY), `port`
// 0-65535 (0: the kernel picks one at bind).
inline sockaddr_in Ipv4Address(in_addr_t host, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(host);
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

}  // namespace loom
