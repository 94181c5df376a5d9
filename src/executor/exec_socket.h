#pragma once
// ExecSocket: the launcher executor's end of `loom mpi-rsh` (framework mpi; runtime/mpi.h). It
// listens on a Unix socket in the container's private directory; each connection is one
// agent's request (control.proto's AgentRequest): the host alias must be one of the job's, and
// the command is passed to the AM as an Exec call, with the job's secret, which the agent never
// sees. The reply (AgentReply) comes when the command has ended in its target task, or says why
// it did not run. An agent that goes away first has its call cancelled, which stops its command.
//
// Thread-safe: one thread accepts, one serves each connection.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "control/control_client.h"
#include "core/status.h"
#include "runtime/mpi.h"

namespace loom::executor {

class ExecSocket {
 public:
  struct Options {
    std::string path;                         // the socket; its directory should be 0700
    std::vector<runtime::MpiHost> hosts;      // the hostfile's: the only aliases served
    const control::ControlClient* am = nullptr;  // must outlive the ExecSocket
    control::TaskRef task;                    // the launcher
    std::string container_id;                 // the launcher's, told to the AM with each call
  };
  // Listens at `options.path` and serves until Stop().
  static Result<std::unique_ptr<ExecSocket>> Start(Options options);
  ~ExecSocket() { Stop(std::chrono::milliseconds(0)); }

  // Stops serving: no new connection; the open calls get up to `drain` to end on their own
  // (when mpirun exits, its daemons are ending too), then are cancelled (their agents get an
  // error). Removes the socket. Returns once every thread has ended. Idempotent.
  void Stop(std::chrono::milliseconds drain);

 private:
  explicit ExecSocket(Options options) : options_(std::move(options)) {}
  void AcceptLoop();
  void Serve(int fd);
  // The reply to one request (run on the connection's thread).
  control::AgentReply Handle(int fd, const control::AgentRequest& req);

  const Options options_;
  int listen_fd_ = -1;
  int accept_stop_fd_ = -1;  // eventfd: readable once Stop() began
  int cancel_fd_ = -1;       // eventfd: readable once the open calls are to be cancelled
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::condition_variable idle_;
  std::vector<std::thread> connections_;  // guarded by mu_
  int active_ = 0;                        // connections being served, guarded by mu_
};

}  // namespace loom::executor
