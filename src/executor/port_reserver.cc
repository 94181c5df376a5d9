#include "executor/port_reserver.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "core/host_resolver.h"
#include "core/inet_address.h"

namespace loom::executor {

ReservedPort& ReservedPort::operator=(ReservedPort&& o) noexcept {
  if (this != &o) {
    Release();
    fd_ = o.fd_;
    port_ = o.port_;
    o.fd_ = -1;
  }
  return *this;
}

ReservedPort::~ReservedPort() { Release(); }

bool PortAnswers(const std::string& host, int port, int timeout_ms) {
  Result<std::vector<IpAddress>> addresses = ResolveHost(host);
  if (!addresses.ok()) return false;
  const IpAddress& address = addresses->front();
  socklen_t length = 0;
  sockaddr_storage target = address.SocketAddress(port, &length);
  int fd = ::socket(address.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  bool ok = false;
  if (fd >= 0) {
    int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&target), length);
    if (rc == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof(err);
      ok = ::poll(&p, 1, timeout_ms) > 0 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    ::close(fd);
  }
  return ok;
}

void ReservedPort::Release() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<ReservedPort> ReservedPort::Reserve(int low, int high, int preferred) {
  std::vector<int> candidates = PortCandidates(low, high);
  if (preferred > 0 && preferred <= 65535) candidates.insert(candidates.begin(), preferred);
  for (int p : candidates) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Status::FromErrno("socket", errno);
    sockaddr_in addr = Ipv4Address(INADDR_ANY, p);
    // Bind exclusively first (fails if anyone, another executor included, holds the port), then
    // turn SO_REUSEADDR on so the framework's own SO_REUSEADDR bind+listen succeeds.
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      int one = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      ReservedPort r;
      r.fd_ = fd;
      r.port_ = p;
      return r;
    }
    ::close(fd);
  }
  return Status::ResourceExhausted("no free port in " + std::to_string(low) + "-" + std::to_string(high) +
                                   " (loom.task.port-range)");
}

}  // namespace loom::executor#include "core/host_resolver.h"

