#pragma once
// Resident memory of a task's processes, read from /proc.

#include <sys/types.h>

#include <cstdint>

namespace loom::executor {

// Sum of RSS of every live process in process group `pgid`, in bytes.
int64_t ProcessGroupRssBytes(pid_t pgid);

}  // namespace loom::executor
