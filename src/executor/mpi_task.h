#pragma once
// MpiTask: the executor's part of MPI without ssh (loom.application.framework=mpi;
// runtime/mpi.h), for the task its cluster spec gives an MpiRole:
//  - the launcher: before mpirun starts, writes the hostfile and opens the Unix socket that
//    `loom mpi-rsh` (Open MPI's rsh agent) asks through (exec_socket.h), both in a private
//    directory of the container, and gives mpirun its settings in the environment;
//  - a rank-holding task: runs an idle process as its own (it has no command), opens its
//    Guests stream to the AM and runs each command that comes down it as a guest
//    (guest_processes.h) with a scratch directory of its own for Open MPI's session and shared
//    memory files, reporting each guest's end to the AM.
// Everything it started is stopped by Stop(), whatever ended the task.
//
// Call order: Prepare, then OnReaped from the executor's reaper for every reaped child, then
// Stop. Prepare and Stop on the executor's main thread; OnReaped on any one thread.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "control/control_client.h"
#include "core/job_spec.h"
#include "core/status.h"

namespace loom::executor {

class ExecSocket;
class GuestProcesses;

class MpiTask {
 public:
  struct Options {
    const control::ControlClient* am = nullptr;  // must outlive the MpiTask
    TaskId task;
    std::map<std::string, std::string> env;  // the executor's environment
    std::string work_dir;                    // the container's working dir (absolute)
    std::string log_dir;                     // where mpi-daemon.log goes
    std::string container_id;               // this executor's (LOOM_CONTAINER_ID), told to the AM
  };
  explicit MpiTask(Options options);
  ~MpiTask();

  // Before the task's processes start. Without an MpiRole in `spec`: nothing. For the
  // launcher, adds the variables of mpirun's agent, hostfile and socket to `spec`'s env; for a
  // rank-holding task, sets `spec`'s command to an idle process and starts taking guests.
  Status Prepare(control::ClusterSpecResponse* spec);
  // Whether `pid`, which the executor reaped with `wstatus`, was a guest (its end is reported).
  bool OnReaped(pid_t pid, int wstatus);
  // The resident memory of the guests and their ranks (0 for other tasks), for the task's
  // metrics and memory watchdog. Any thread.
  int64_t GuestRssBytes() const;
  // Stops every guest (SIGTERM, then SIGKILL after `grace`) and the socket; removes the private
  // directory and the scratch directory. Idempotent.
  void Stop(std::chrono::milliseconds grace);

  // The path of this very binary (for the agent and the idle process): /proc/self/exe, which a
  // rebuild may have replaced since (" (deleted)"): then the new file at the same path.
  static std::string SelfExe();

 private:
  Status PrepareLauncher(control::ClusterSpecResponse* spec);
  Status PrepareRankHost(control::ClusterSpecResponse* spec);
  void GuestLoop();
  void ReportLoop();
  void QueueReport(const control::GuestExit& exit);
  control::TaskRef Ref() const;

  Options options_;
  std::string private_dir_;  // the launcher's: hostfile and socket
  std::string scratch_dir_;  // a rank-holding task's: TMPDIR of its guests
  std::unique_ptr<ExecSocket> socket_;
  std::unique_ptr<GuestProcesses> guests_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                     // guarded by mu_
  grpc::ClientContext* stream_ctx_ = nullptr;  // the open Guests stream's, guarded by mu_
  std::deque<control::GuestExit> reports_;    // guarded by mu_
  std::thread guest_thread_;                  // starts the guests: lives as long as they may
  std::thread report_thread_;
  bool stopped_ = false;
};

}  // namespace loom::executor
