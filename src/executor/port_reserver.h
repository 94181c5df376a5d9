#pragma once
// PortReserver: a port for the task's framework, held for the whole life of the user process.
//
// TonY binds port 0 and closes the socket just before starting the user process, so another
// process can take the port in between (TonY#365, #453). Loom closes that window instead:
//   - the port comes from a range outside the kernel's ephemeral range
//     (net.ipv4.ip_local_port_range), so outgoing connections never pick it;
//   - the socket is bound exclusively (so two executors never share a port), then given
//     SO_REUSEADDR, and stays bound (never listening) until the user process exits.
//     Linux lets a second SO_REUSEADDR socket bind and listen on a port whose other sockets are
//     not listening, which TensorFlow's gRPC server and PyTorch's TCPStore both do; anyone
//     binding without SO_REUSEADDR gets EADDRINUSE, and once the framework listens nobody else
//     can listen there.
// The socket is close-on-exec, so the user process never inherits it.

#include <string>

#include "core/ports.h"
#include "core/status.h"

namespace loom::executor {

class ReservedPort {
 public:
  ReservedPort() = default;
  ReservedPort(ReservedPort&& o) noexcept : fd_(o.fd_), port_(o.port_) { o.fd_ = -1; }
  ReservedPort& operator=(ReservedPort&& o) noexcept;
  ReservedPort(const ReservedPort&) = delete;
  ReservedPort& operator=(const ReservedPort&) = delete;
  ~ReservedPort();

  int port() const { return port_; }
  void Release();

  // Binds a free port in [low, high], skipping the ephemeral range; random order, so
  // concurrent executors on one host rarely collide (and retry when they do).
  // `preferred` (a restarted task's old port) is tried first, so its address can stay the same.
  static Result<ReservedPort> Reserve(int low, int high, int preferred = 0);

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Whether something listens on host:port, that is a TCP connect there succeeds within
// `timeout_ms` (the port a ReservedPort merely holds refuses it). `host` is resolved (IPv4).
bool PortAnswers(const std::string& host, int port, int timeout_ms);

}  // namespace loom::executor
