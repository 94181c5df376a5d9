// IpcClient's TCP primitives (ipc_socket.h): connecting with a timeout, whole writes, reads
// bounded by a deadline, and reading one frame.
#include "hadoop/ipc/ipc_socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "core/host_resolver.h"

namespace loom::hadoop::ipc_internal {

namespace {

constexpr size_t kReadChunk = 64 * 1024;

int MillisUntil(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return left > 1000000 ? 1000000 : static_cast<int>(left);
}

}  // namespace

Status Socket::WriteAll(std::string_view bytes) const {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("send", errno);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status Socket::ReadSome(std::string* into, std::optional<Clock::time_point> deadline) const {
  pollfd p{fd_, POLLIN, 0};
  for (;;) {
    int r = ::poll(&p, 1, deadline ? MillisUntil(*deadline) : -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::FromErrno("poll", errno);
    if (r == 0) return Status::DeadlineExceeded("no data from the server in time");
    break;
  }
  char buf[kReadChunk];
  ssize_t n;
  do {
    n = ::recv(fd_, buf, sizeof buf, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return Status::FromErrno("recv", errno);
  if (n == 0) return Status::Unavailable("connection closed by the server");
  into->append(buf, static_cast<size_t>(n));
  return Status::Ok();
}

bool Socket::PeerClosed() const {
  char c;
  ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

void Socket::SetSendTimeout(std::chrono::milliseconds timeout) const {
  timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

void Socket::Shutdown() const {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void Socket::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<Socket> Socket::Connect(const std::string& host, int port, std::chrono::milliseconds timeout) {
  Result<std::vector<IpAddress>> addresses = ResolveHost(host);
  if (!addresses.ok()) return Status::Unavailable(addresses.status().message());
  const Clock::time_point deadline = Clock::now() + timeout;
  Status last = Status::Unavailable("no address for " + host);
  for (const IpAddress& address : *addresses) {
    socklen_t length = 0;
    sockaddr_storage target = address.SocketAddress(port, &length);
    Socket s(::socket(address.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (s.fd_ < 0) {
      last = Status::FromErrno("socket", errno);
      continue;
    }
    int rc = ::connect(s.fd_, reinterpret_cast<const sockaddr*>(&target), length);
    if (rc < 0 && errno == EINPROGRESS) {
      pollfd p{s.fd_, POLLOUT, 0};
      int r;
      do {
        r = ::poll(&p, 1, MillisUntil(deadline));
      } while (r < 0 && errno == EINTR);
      if (r == 0) {
        last = Status::Unavailable("connect timed out after " + std::to_string(timeout.count()) + " ms");
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(s.fd_, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc < 0) {
      last = Status::FromErrno("connect", errno);
      continue;
    }
    // Back to blocking; no Nagle delay, as Java's ipc.client.tcpnodelay=true.
    ::fcntl(s.fd_, F_SETFL, ::fcntl(s.fd_, F_GETFL) & ~O_NONBLOCK);
    int one = 1;
    ::setsockopt(s.fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return s;
  }
  return last;
}

Result<std::string> ReadFrame(const Socket& s, FrameReader* reader, std::optional<Clock::time_point> deadline) {
  for (;;) {
    LOOM_ASSIGN_OR_RETURN(std::optional<std::string> body, reader->Next());
    if (body) return std::move(*body);
    std::string chunk;
    LOOM_RETURN_IF_ERROR(s.ReadSome(&chunk, deadline));
    reader->Feed(chunk);
  }
}

}  // namespace loom::hadoop::ipc_internal
