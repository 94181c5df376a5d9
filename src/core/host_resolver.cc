#include "core/host_resolver.h"

#include <arpa/inet.h>
#include <ares.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "core/files.h"
#include "core/strings.h"

namespace loom {

sockaddr_storage IpAddress::SocketAddress(int port, socklen_t* length) const {
  sockaddr_storage out{};
  if (family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&out);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET6, text.c_str(), &a->sin6_addr);
    *length = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&out);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, text.c_str(), &a->sin_addr);
    *length = sizeof(sockaddr_in);
  }
  return out;
}

bool ParseIpLiteral(std::string_view text, IpAddress* out) {
  std::string t(text);
  if (t.size() > 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
  unsigned char buf[sizeof(in6_addr)];
  char canonical[INET6_ADDRSTRLEN];
  for (int family : {AF_INET, AF_INET6}) {
    if (::inet_pton(family, t.c_str(), buf) == 1 && ::inet_ntop(family, buf, canonical, sizeof canonical)) {
      *out = IpAddress{family, canonical};
      return true;
    }
  }
  return false;
}

namespace {

// One hosts-file line: the address, then its names; '#' starts a comment.
bool ParseHostsLine(std::string_view line, IpAddress* address, std::vector<std::string_view>* names) {
  if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
  names->clear();
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  if (fields.size() < 2 || !ParseIpLiteral(fields[0], address)) return false;
  names->assign(fields.begin() + 1, fields.end());
  return true;
}

template <typename F>
void ForEachLine(std::string_view text, F&& f) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    f(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

void Ipv4First(std::vector<IpAddress>* addresses) {
  std::stable_partition(addresses->begin(), addresses->end(), [](const IpAddress& a) { return a.family == AF_INET; });
}

std::string HostsFileText(const ResolverSources& sources) {
  Result<std::string> text = ReadFile(sources.hosts_file);
  return text.ok() ? *text : std::string();
}

// A synchronous c-ares query: one channel per lookup (rare: a few per process), driven by poll
// so that descriptors above FD_SETSIZE are fine.
class DnsQuery {
 public:
  explicit DnsQuery(const ResolverSources& sources) {
    static std::once_flag once;
    std::call_once(once, [] { ::ares_library_init(ARES_LIB_INIT_ALL); });
    ares_options options{};
    int mask = ARES_OPT_LOOKUPS;
    char lookups[] = "b";  // DNS only: the hosts file was read already
    options.lookups = lookups;
    if (sources.dns_timeout_ms > 0) {
      options.timeout = sources.dns_timeout_ms;
      options.tries = 2;
      mask |= ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES;
    }
    status_ = ::ares_init_options(&channel_, &options, mask);
    if (status_ == ARES_SUCCESS && !sources.dns_servers.empty()) {
      status_ = ::ares_set_servers_ports_csv(channel_, sources.dns_servers.c_str());
    }
  }
  ~DnsQuery() {
    if (channel_ != nullptr) ::ares_destroy(channel_);
  }
  DnsQuery(const DnsQuery&) = delete;
  DnsQuery& operator=(const DnsQuery&) = delete;

  // The addresses of `name` in `family`; empty when DNS has none or cannot be reached.
  std::vector<IpAddress> Forward(const std::string& name, int family) {
    if (status_ != ARES_SUCCESS) return {};
    ::ares_gethostbyname(channel_, name.c_str(), family, &DnsQuery::OnHost, this);
    Run();
    return std::move(addresses_);
  }

  std::string Reverse(const IpAddress& ip) {
    if (status_ != ARES_SUCCESS) return {};
    unsigned char raw[sizeof(in6_addr)];
    ::inet_pton(ip.family, ip.text.c_str(), raw);
    ::ares_gethostbyaddr(channel_, raw, ip.family == AF_INET ? sizeof(in_addr) : sizeof(in6_addr), ip.family,
                         &DnsQuery::OnHost, this);
    Run();
    return name_;
  }

 private:
  static void OnHost(void* self_ptr, int status, int /*timeouts*/, hostent* host) {
    auto* self = static_cast<DnsQuery*>(self_ptr);
    if (status != ARES_SUCCESS || host == nullptr) return;
    if (host->h_name) self->name_ = host->h_name;
    char text[INET6_ADDRSTRLEN];
    for (char** a = host->h_addr_list; a && *a; ++a) {
      if (::inet_ntop(host->h_addrtype, *a, text, sizeof text)) self->addresses_.push_back({host->h_addrtype, text});
    }
  }

  void Run() {
    for (;;) {
      ares_socket_t socks[ARES_GETSOCK_MAXNUM];
      int bits = ::ares_getsock(channel_, socks, ARES_GETSOCK_MAXNUM);
      std::vector<pollfd> fds;
      for (int i = 0; i < ARES_GETSOCK_MAXNUM; ++i) {
        short events = (ARES_GETSOCK_READABLE(bits, i) ? POLLIN : 0) | (ARES_GETSOCK_WRITABLE(bits, i) ? POLLOUT : 0);
        if (events) fds.push_back({socks[i], events, 0});
      }
      if (fds.empty()) return;  // nothing in flight: the callback ran
      timeval tv{};
      timeval* wait = ::ares_timeout(channel_, nullptr, &tv);
      int timeout_ms = wait ? static_cast<int>(wait->tv_sec * 1000 + wait->tv_usec / 1000) : -1;
      int ready = ::poll(fds.data(), fds.size(), timeout_ms);
      if (ready < 0 && errno != EINTR) return;
      if (ready <= 0) {
        ::ares_process_fd(channel_, ARES_SOCKET_BAD, ARES_SOCKET_BAD);  // time out what is due
        continue;
      }
      for (const pollfd& p : fds) {
        if (p.revents == 0) continue;
        ares_socket_t r = (p.revents & (POLLIN | POLLERR | POLLHUP)) ? p.fd : ARES_SOCKET_BAD;
        ares_socket_t w = (p.revents & POLLOUT) ? p.fd : ARES_SOCKET_BAD;
        ::ares_process_fd(channel_, r, w);
      }
    }
  }

  ares_channel channel_ = nullptr;
  int status_ = ARES_ENOTINITIALIZED;
  std::vector<IpAddress> addresses_;
  std::string name_;
};

// The machine's own name, answered from its interfaces as nss-myhostname does: the addresses of
// the interfaces that are up and not loopback, else 127.0.0.1.
std::vector<IpAddress> OwnHostAddresses(std::string_view name) {
  char own[256] = {};
  if (::gethostname(own, sizeof own - 1) != 0) return {};
  std::string own_name = ToLower(own);
  std::string wanted = ToLower(name);
  std::string own_short = own_name.substr(0, own_name.find('.'));
  if (wanted != own_name && wanted != own_short) return {};
  std::vector<IpAddress> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    char text[INET6_ADDRSTRLEN];
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
      int family = i->ifa_addr->sa_family;
      if (family != AF_INET && family != AF_INET6) continue;
      const void* raw = family == AF_INET ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr)
                                          : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr);
      if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(static_cast<const in6_addr*>(raw))) continue;
      if (::inet_ntop(family, raw, text, sizeof text)) out.push_back({family, text});
    }
    ::freeifaddrs(list);
  }
  if (out.empty()) out.push_back({AF_INET, "127.0.0.1"});
  Ipv4First(&out);
  return out;
}

}  // namespace

std::vector<IpAddress> LookUpHostsFile(std::string_view text, std::string_view name) {
  std::vector<IpAddress> out;
  std::string wanted = ToLower(name);
  if (!wanted.empty() && wanted.back() == '.') wanted.pop_back();
  IpAddress address;
  std::vector<std::string_view> names;
  ForEachLine(text, [&](std::string_view line) {
    if (!ParseHostsLine(line, &address, &names)) return;
    for (std::string_view n : names) {
      if (ToLower(n) == wanted) {
        if (std::find(out.begin(), out.end(), address) == out.end()) out.push_back(address);
        break;
      }
    }
  });
  return out;
}

std::string ReverseLookUpHostsFile(std::string_view text, std::string_view ip) {
  IpAddress wanted;
  if (!ParseIpLiteral(ip, &wanted)) return {};
  std::string found;
  IpAddress address;
  std::vector<std::string_view> names;
  ForEachLine(text, [&](std::string_view line) {
    if (found.empty() && ParseHostsLine(line, &address, &names) && address == wanted) found = names.front();
  });
  return found;
}

Result<std::vector<IpAddress>> ResolveHost(std::string_view host, const ResolverSources& sources) {
  if (host.empty()) return Status::InvalidArgument("empty host name");
  IpAddress literal;
  if (ParseIpLiteral(host, &literal)) return std::vector<IpAddress>{literal};

  std::vector<IpAddress> found = LookUpHostsFile(HostsFileText(sources), host);
  if (found.empty()) {
    DnsQuery dns(sources);
    std::string name(host);
    found = dns.Forward(name, AF_INET);
    if (found.empty()) found = dns.Forward(name, AF_INET6);
  }
  if (found.empty() && sources.use_own_host_name) found = OwnHostAddresses(host);
  if (found.empty()) {
    return Status::NotFound("cannot resolve host '" + std::string(host) + "': not in " + sources.hosts_file +
                            " nor known to DNS (" +
                            (sources.dns_servers.empty() ? "/etc/resolv.conf" : sources.dns_servers) + ")");
  }
  Ipv4First(&found);
  return found;
}

Result<std::string> ResolveHostToIp(std::string_view host, const ResolverSources& sources) {
  LOOM_ASSIGN_OR_RETURN(std::vector<IpAddress> all, ResolveHost(host, sources));
  return all.front().text;
}

Result<std::string> ReverseResolve(std::string_view ip, const ResolverSources& sources) {
  IpAddress address;
  if (!ParseIpLiteral(ip, &address)) return Status::InvalidArgument("'" + std::string(ip) + "' is not an IP address");
  std::string name = ReverseLookUpHostsFile(HostsFileText(sources), address.text);
  if (name.empty()) name = DnsQuery(sources).Reverse(address);
  if (name.empty()) return Status::NotFound("no name for " + address.text);
  return ToLower(name);
}

Result<std::string> GrpcTarget(std::string_view host_port, const ResolverSources& sources) {
  std::string text(Trim(host_port));
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 == text.size()) {
    return Status::InvalidArgument("'" + text + "' is not host:port");
  }
  std::string host = text.substr(0, colon);
  LOOM_ASSIGN_OR_RETURN(std::string ip, ResolveHostToIp(host, sources));
  std::string port = text.substr(colon + 1);
  if (ip.find(':') != std::string::npos) return "ipv6:[" + ip + "]:" + port;
  return "ipv4:" + ip + ":" + port;
}

}  // namespace loom
