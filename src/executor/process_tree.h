#pragma once
// Resident memory of a task's processes, read from /proc.

#include <sys/types.h>

#include <cstdint>
#include <set>
#include <vector>

namespace loom::executor {

// One live process, from /proc/<pid>/stat.
struct ProcStat {
  pid_t pid = 0, ppid = 0, pgrp = 0;
  int64_t rss_bytes = 0;
};

// Every process but zombies, in one pass over /proc.
std::vector<ProcStat> ReadProcStats();

// Sum of RSS of the processes of `procs` in one of `pgids` or descending from one of `roots`
// (roots included): a daemon's children may leave its group, not its tree.
int64_t RssBytesOf(const std::vector<ProcStat>& procs, const std::vector<pid_t>& pgids, std::set<pid_t> roots);

// Sum of RSS of every live process in process group `pgid`, in bytes.
int64_t ProcessGroupRssBytes(pid_t pgid);
// The same over several groups (a task's processes), in one pass over /proc.
int64_t ProcessGroupsRssBytes(const std::vector<pid_t>& pgids);

}  // namespace loom::executor
