#pragma once
// Host names to addresses without glibc's NSS. `loom` is linked statically so that it runs on
// any node, and a static glibc's getaddrinfo loads the node's NSS modules, which belong to
// another glibc (on a Debian 11 node it answers EAI_NONAME even for localhost). So Loom resolves
// as the system's default "hosts: files dns" does, by itself: /etc/hosts first, then DNS as
// resolv.conf says (c-ares, which reads resolv.conf itself), and last the machine's own name
// from its interfaces, as nss-myhostname does.
// IPv4 comes first and AAAA is asked only when a name has no A record: Hadoop runs its JVMs with
// preferIPv4Stack, and a resolver that waits for an AAAA answer that never comes costs seconds.

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace loom {

struct IpAddress {
  int family = AF_INET;  // AF_INET or AF_INET6
  std::string text;      // "10.0.0.5", "::1"
  // `port` in network form, for connect() and bind().
  sockaddr_storage SocketAddress(int port, socklen_t* length) const;
  bool operator==(const IpAddress&) const = default;
};

// Where the resolver reads from; the defaults are the system's. Tests point them elsewhere.
struct ResolverSources {
  std::string hosts_file = "/etc/hosts";
  // "ip:port,..." of DNS servers instead of resolv.conf's (c-ares' CSV form); "" = resolv.conf.
  std::string dns_servers;
  int dns_timeout_ms = 0;  // per try; 0 = resolv.conf's (c-ares' default when it says nothing)
  bool use_own_host_name = true;
};

// Every address of `host` (an IP literal is its own address), IPv4 first. NotFound names the
// host and the places asked; InvalidArgument for an empty name.
Result<std::vector<IpAddress>> ResolveHost(std::string_view host, const ResolverSources& sources = {});

// The first address ResolveHost gives, as text.
Result<std::string> ResolveHostToIp(std::string_view host, const ResolverSources& sources = {});

// The name of `ip` (IP literal): /etc/hosts' first name for it, else DNS's PTR answer,
// lower-cased, as Java's InetAddress.getCanonicalHostName finds it. NotFound when neither knows.
Result<std::string> ReverseResolve(std::string_view ip, const ResolverSources& sources = {});

// "host:port" (or "[v6]:port") as a gRPC target that gRPC uses without resolving anything:
// "ipv4:10.0.0.5:7000" or "ipv6:[::1]:7000". Every channel and listening port of Loom goes
// through this, since gRPC's own resolvers use getaddrinfo (NSS) for blocking lookups.
Result<std::string> GrpcTarget(std::string_view host_port, const ResolverSources& sources = {});

// The hosts-file part, on the file's text: the addresses listed for `name` (case-insensitive,
// canonical name or alias) in file order, and the first name listed for `ip`.
std::vector<IpAddress> LookUpHostsFile(std::string_view text, std::string_view name);
std::string ReverseLookUpHostsFile(std::string_view text, std::string_view ip);

// `text` as an IPv4 or IPv6 literal ("[::1]" too), or nullopt-like empty text when it is none.
bool ParseIpLiteral(std::string_view text, IpAddress* out);

}  // namespace loom
