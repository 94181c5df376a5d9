#include "executor/unix_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace loom::executor {
namespace {

constexpr uint32_t kMaxFrame = 16u << 20;

// The address of `path`: the path itself when it fits, else /proc/self/fd/<dir fd>/<name>, with
// `*dir_fd` left open for the caller to close once bound or connected.
Result<sockaddr_un> AddressOf(const std::string& path, int* dir_fd) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  *dir_fd = -1;
  std::string reachable = path;
  if (path.size() >= sizeof(addr.sun_path)) {
    size_t slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    *dir_fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (*dir_fd < 0) return Status::FromErrno("open " + dir, errno);
    reachable = "/proc/self/fd/" + std::to_string(*dir_fd) + "/" + path.substr(slash + 1);
    if (reachable.size() >= sizeof(addr.sun_path)) {
      ::close(*dir_fd);
      return Status::InvalidArgument("socket name too long: " + path);
    }
  }
  std::memcpy(addr.sun_path, reachable.c_str(), reachable.size() + 1);
  return addr;
}

// A new stream socket and the address of `path` for it, `*dir_fd` as AddressOf leaves it.
Result<int> SocketFor(const std::string& path, sockaddr_un* addr, int* dir_fd) {
  LOOM_ASSIGN_OR_RETURN(*addr, AddressOf(path, dir_fd));
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    int err = errno;
    if (*dir_fd >= 0) ::close(*dir_fd);
    return Status::FromErrno("socket", err);
  }
  return fd;
}

Status WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Status::FromErrno("write to socket", errno);
    data += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

// Reads exactly `n` bytes; returns how many arrived before the peer closed.
Result<size_t> ReadAll(int fd, char* data, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, data + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::FromErrno("read from socket", errno);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

}  // namespace

Result<int> ListenUnix(const std::string& path) {
  sockaddr_un addr{};
  int dir_fd = -1;
  LOOM_ASSIGN_OR_RETURN(int fd, SocketFor(path, &addr, &dir_fd));
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  int err = errno;
  if (dir_fd >= 0) ::close(dir_fd);
  if (rc != 0 || ::chmod(path.c_str(), 0600) != 0 || ::listen(fd, 16) != 0) {
    if (rc == 0) err = errno;
    ::close(fd);
    return Status::FromErrno("listen on " + path, err);
  }
  return fd;
}

Result<int> ConnectUnix(const std::string& path) {
  sockaddr_un addr{};
  int dir_fd = -1;
  LOOM_ASSIGN_OR_RETURN(int fd, SocketFor(path, &addr, &dir_fd));
  int rc;
  do {
    rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  } while (rc != 0 && errno == EINTR);
  int err = errno;
  if (dir_fd >= 0) ::close(dir_fd);
  if (rc != 0) {
    ::close(fd);
    Status s = Status::FromErrno("connect to " + path, err);
    return err == ENOENT || err == ECONNREFUSED ? Status::Unavailable(s.message()) : s;
  }
  return fd;
}

bool PeerIsSameUser(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  return ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == ::getuid();
}

Status WriteFrame(int fd, const std::string& payload) {
  if (payload.size() > kMaxFrame) return Status::InvalidArgument("frame of " + std::to_string(payload.size()) + " bytes");
  uint32_t n = static_cast<uint32_t>(payload.size());
  char header[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                    static_cast<char>(n)};
  LOOM_RETURN_IF_ERROR(WriteAll(fd, header, sizeof(header)));
  return WriteAll(fd, payload.data(), payload.size());
}

Result<std::string> ReadFrame(int fd) {
  unsigned char header[4];
  LOOM_ASSIGN_OR_RETURN(size_t got, ReadAll(fd, reinterpret_cast<char*>(header), sizeof(header)));
  if (got == 0) return Status::NotFound("connection closed");
  if (got < sizeof(header)) return Status(StatusCode::kDataLoss, "connection closed in a frame's header");
  uint32_t n = (uint32_t{header[0]} << 24) | (uint32_t{header[1]} << 16) | (uint32_t{header[2]} << 8) | header[3];
  if (n > kMaxFrame) return Status::InvalidArgument("frame of " + std::to_string(n) + " bytes (at most 16 MiB)");
  std::string payload(n, '\0');
  LOOM_ASSIGN_OR_RETURN(got, ReadAll(fd, payload.data(), n));
  if (got < n) return Status(StatusCode::kDataLoss, "connection closed in a frame");
  return payload;
}

}  // namespace loom::executor
