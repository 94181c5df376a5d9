#pragma once
// TaskCgroup: a cgroup v2 group per task, so that every process of the task, however deeply it
// forks or daemonizes, can be found and killed at once (cgroup.kill), and memory can be enforced
// (memory.max) where the memory controller can be delegated to us.
//
// Where cgroup v2 is not writable, Create() fails and the local backend falls back to process
// groups plus an environment marker scan, and the executor's RSS watchdog enforces memory.

#include <optional>
#include <string>

#include "core/status.h"

namespace loom::cluster::local {

class TaskCgroup {
 public:
  // The cgroup v2 directory this process lives in, if cgroup v2 is mounted and writable.
  static std::optional<std::string> WritableSelfCgroup();
  // Creates `<self cgroup>/<relative>` (e.g. "loom/<job>/worker-0"), best-effort enabling the
  // memory controller on the way and setting memory.max when it is there.
  static Result<TaskCgroup> Create(const std::string& relative, int64_t memory_limit_bytes);

  const std::string& path() const { return path_; }
  std::string procs_path() const { return path_ + "/cgroup.procs"; }
  bool memory_enforced() const { return memory_enforced_; }
  // SIGKILLs every process in the group (cgroup.kill, or one by one on older kernels).
  void KillAll() const;
  // Removes the group once it is empty; waits up to 2 s for the kernel to drain it.
  Status Remove() const;
  // How many times the kernel's OOM killer acted in the group (memory.events); 0 without the
  // memory controller.
  int64_t OomKills() const;

 private:
  friend void KillAndRemoveCgroupTree(const std::string& relative);
  std::string path_;
  bool memory_enforced_ = false;
};

// Removes empty cgroup directories from `<self cgroup>/<relative>` upward to the self cgroup.
void RemoveEmptyCgroupTree(const std::string& relative);

// Kills whatever is left in every task group under `<self cgroup>/<relative>` and removes the
// groups: the clean-up for a job whose AM died before it could do it.
void KillAndRemoveCgroupTree(const std::string& relative);

}  // namespace loom::cluster::local
