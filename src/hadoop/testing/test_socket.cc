#include "hadoop/testing/test_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "core/inet_address.h"
#include "hadoop/wire/ipc_frame.h"

namespace loom::hadoop::testing {

namespace {
using Clock = std::chrono::steady_clock;

int MillisLeft(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(ms);
}

// Waits until `fd` is readable; false on timeout.
bool WaitReadable(int fd, Clock::time_point deadline) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    int r = ::poll(&p, 1, MillisLeft(deadline));
    if (r < 0 && errno == EINTR) continue;
    return r > 0;
  }
}
}  // namespace

Result<int> ListenLoopback(int* port, bool listen) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("socket", errno);
  sockaddr_in addr = Ipv4Address(INADDR_LOOPBACK, 0);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 || (listen && ::listen(fd, 64) < 0) ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) < 0) {
    Status s = Status::FromErrno("bind/listen on 127.0.0.1", errno);
    ::close(fd);
    return s;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

int ClosedLoopbackPort() {
  int port = 0;
  Result<int> fd = ListenLoopback(&port, /*listen=*/false);
  if (!fd.ok()) return 0;
  ::close(*fd);
  return port;
}

Result<int> ConnectLoopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("socket", errno);
  sockaddr_in addr = Ipv4Address(INADDR_LOOPBACK, port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    Status s = Status::FromErrno("connect 127.0.0.1:" + std::to_string(port), errno);
    ::close(fd);
    return s;
  }
  return fd;
}

Result<int> AcceptWithin(int listen_fd, std::chrono::milliseconds timeout) {
  if (!WaitReadable(listen_fd, Clock::now() + timeout)) return Status::DeadlineExceeded("no client connected");
  int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return Status::FromErrno("accept", errno);
  return fd;
}

Result<std::string> ReadExactly(int fd, size_t n, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string out;
  while (out.size() < n) {
    if (!WaitReadable(fd, deadline)) {
      return Status::DeadlineExceeded("read " + std::to_string(out.size()) + " of " + std::to_string(n) + " bytes");
    }
    char buf[65536];
    ssize_t r = ::recv(fd, buf, std::min(sizeof buf, n - out.size()), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      return Status::Unavailable("end of stream after " + std::to_string(out.size()) + " of " + std::to_string(n) +
                                 " bytes");
    }
    out.append(buf, static_cast<size_t>(r));
  }
  return out;
}

Result<std::string> ReadFrameBytes(int fd, std::chrono::milliseconds timeout) {
  LOOM_ASSIGN_OR_RETURN(std::string head, ReadExactly(fd, 4, timeout));
  uint32_t len = (uint32_t{static_cast<uint8_t>(head[0])} << 24) | (uint32_t{static_cast<uint8_t>(head[1])} << 16) |
                 (uint32_t{static_cast<uint8_t>(head[2])} << 8) | uint32_t{static_cast<uint8_t>(head[3])};
  if (len > kMaxFrameBytes) return Status::InvalidArgument("frame length " + std::to_string(len));
  LOOM_ASSIGN_OR_RETURN(std::string body, ReadExactly(fd, len, timeout));
  return head + body;
}

std::string ReadUntilEof(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string out;
  while (WaitReadable(fd, deadline)) {
    char buf[65536];
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    out.append(buf, static_cast<size_t>(r));
  }
  return out;
}

Status WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("send", errno);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

std::string Hex(std::string_view bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out += ' ';
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

}  // namespace loom::hadoop::testing
