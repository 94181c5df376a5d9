#pragma once
// The processes of one task (loom.<type>.processes N), as its executor starts and supervises
// them: member i is LOCAL_RANK i, logs to `stdout[.i]`/`stderr[.i]`, leads its own session
// and process group, and dies with the executor. A member that ends unsuccessfully decides
// the task's exit (as torchrun's agent sees it) and the others are stopped; the task ends when
// every member has.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "control/control.pb.h"
#include "core/status.h"
#include "core/subprocess.h"

namespace loom::executor {

// How one member is to be started.
struct MemberPlan {
  SpawnOptions options;
  std::string label;  // for messages: "worker:0", or "process 1 of 2 (LOCAL_RANK 1)"
};

// What the executor starts for the AM's `spec`, and what it should log about its choices.
struct MembersPlan {
  std::vector<MemberPlan> members;
  std::vector<std::string> notes;     // logged as information
  std::vector<std::string> warnings;  // logged as warnings
};

// The members of the task `task_name`: `base` (command, environment) with each process's own
// variables from `spec`, log files under `log_dir`, and with loom.<type>.process-gpus=split
// (spec.gpus_per_process) the i-th slice of `visible_devices` (the executor's
// CUDA_VISIBLE_DEVICES; nullopt: unset). Several processes without OMP_NUM_THREADS get 1,
// torchrun's default. Pure.
MembersPlan PlanMembers(const SpawnOptions& base, const control::ClusterSpecResponse& spec,
                        const std::string& log_dir, const std::string& task_name,
                        const std::optional<std::string>& visible_devices);

class TaskProcesses {
 public:
  struct Member {
    std::string label;
    std::string stderr_path;       // its stderr tail goes into the exit report if it decides the exit
    Subprocess process;
    std::optional<ExitInfo> exit;  // set when reaped
  };

  // Starts a member (`o` complete but for the session and death signal, which every member
  // gets); returns its index. One started while the task is supervised is supervised too.
  Result<size_t> Start(SpawnOptions o, std::string label);
  // Records the end of `pid` if it is a member's; false otherwise.
  bool OnReaped(pid_t pid, int wstatus);
  bool AllEnded() const;
  // The process groups of the members still running, or with something left in their group.
  std::vector<pid_t> LiveGroups() const;
  // The member that ended unsuccessfully first, if any.
  const Member* FirstFailed() const;
  // The member whose exit is the task's: the first that failed, else member 0. Needs a member.
  const Member& Decisive() const;
  const std::vector<Member>& members() const { return members_; }
  // Kills and reaps every member's group.
  void Clear() { members_.clear(); first_failed_.reset(); }

 private:
  std::vector<Member> members_;
  std::optional<size_t> first_failed_;
};

// SIGTERM to every group at once, then SIGKILL to what is left of them after `grace`: N
// groups stop within one grace period, not N.
void TerminateProcessGroups(const std::vector<pid_t>& pgids, std::chrono::milliseconds grace);

// "exited with code 3", "was killed by signal 9 (SIGKILL)".
std::string HowItEnded(const ExitInfo& e);

}  // namespace loom::executor
