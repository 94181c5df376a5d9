#pragma once
// IpcClient's TCP primitives: a connected socket (connect with a timeout, whole writes, reads
// with a deadline) and reading one frame from it. Internal to ipc_client*.cc and ipc_sasl.cc.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/status.h"
#include "hadoop/wire/ipc_frame.h"

namespace loom::hadoop::ipc_internal {

using Clock = std::chrono::steady_clock;

// A connected TCP socket: blocking writes, reads with an optional deadline.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Socket& operator=(Socket&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Socket() { Reset(); }

  static Result<Socket> Connect(const std::string& host, int port, std::chrono::milliseconds timeout);

  Status WriteAll(std::string_view bytes) const;

  // Appends what arrives to `into`; waits until `deadline` (forever when nullopt).
  Status ReadSome(std::string* into, std::optional<Clock::time_point> deadline) const;

  // True when the server has already closed its end (a FIN or RST is queued), without
  // consuming anything the reader thread has not read yet.
  bool PeerClosed() const;

  // Bounds a write the server does not read (a stuck server with a full receive buffer).
  void SetSendTimeout(std::chrono::milliseconds timeout) const;

  // Wakes a thread blocked in ReadSome (it then sees end of stream); the fd stays open.
  void Shutdown() const;

 private:
  void Reset();
  int fd_ = -1;
};

// Reads one frame body from `s`, buffering extra bytes in `reader`.
Result<std::string> ReadFrame(const Socket& s, FrameReader* reader, std::optional<Clock::time_point> deadline);

}  // namespace loom::hadoop::ipc_internal
