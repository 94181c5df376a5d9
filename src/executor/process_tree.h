#pragma once
// Resident memory of a task's processes, read from /proc.

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace loom::executor {

// Sum of RSS of every live process in process group `pgid`, in bytes.
int64_t ProcessGroupRssBytes(pid_t pgid);
// The same over several groups (a task's processes), in one pass over /proc.
int64_t ProcessGroupsRssBytes(const std::vector<pid_t>& pgids);

}  // namespace loom::executor
