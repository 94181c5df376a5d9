#pragma once
// GuestProcesses: commands another task runs inside this task's executor (framework mpi: Open
// MPI's daemons, which the launcher starts through `loom mpi-rsh`), run as sshd would run them on
// a host: each through bash -c (as every task command runs, entry_point.h), in a process group
// of its own, with the task's environment and working dir, its output appended to one log file. What they start (the ranks, which Open MPI
// puts in groups of their own) carries their marker variable, so that StopAll finds it all.
//
// Thread-safe. The executor reaps every child itself (it is a subreaper) and hands each reaped
// pid to Reaped().

#include <sys/types.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "core/subprocess.h"

namespace loom::executor {

class GuestProcesses {
 public:
  struct Options {
    std::map<std::string, std::string> env;  // the complete environment of every guest
    std::string cwd;
    std::string log_path;  // stdout and stderr of every guest, appended
    // "NAME=value", added to `env`: marks every process of every guest (and their children).
    std::string marker;
  };
  explicit GuestProcesses(Options options) : options_(std::move(options)) {}
  // Stops whatever still runs, without grace.
  ~GuestProcesses() { StopAll(std::chrono::milliseconds(0)); }

  // Starts guest `id` running `command`; its pid. FailedPrecondition once StopAll has begun;
  // AlreadyExists for an id already started; otherwise the spawn's error.
  //
  // The calling thread must live as long as the guest: the guest's parent-death signal follows
  // the thread that started it (prctl(2)), so that the guest dies with the executor.
  Result<pid_t> Start(int64_t id, const std::string& command);
  // If `pid` is a guest: its id and how it ended (`wstatus` as waitpid(2) gave it).
  std::optional<std::pair<int64_t, ExitInfo>> Reaped(pid_t pid, int wstatus);
  // Asks guest `id` to stop (SIGTERM to its group); StopAll forces what is left. False if it
  // is not running.
  bool Stop(int64_t id);
  // Stops every guest and starts no more: SIGTERM to each guest's group (an Open MPI daemon
  // then stops its ranks), and after `grace` SIGKILL to every process that still carries the
  // marker. Returns once none is left.
  void StopAll(std::chrono::milliseconds grace);
  size_t running() const;
  // The resident memory of the guests and of every process they started (the ranks), in
  // bytes: what the task's own processes' groups do not cover.
  int64_t RssBytes() const;

 private:
  struct Guest {
    int64_t id = 0;
    Subprocess process;
  };
  const Options options_;
  mutable std::mutex mu_;
  std::map<pid_t, Guest> guests_;  // running ones, by pid; guarded by mu_
  bool stopping_ = false;          // guarded by mu_
};

}  // namespace loom::executor
