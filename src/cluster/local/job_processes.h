#pragma once
// The live processes of a local job, as root or the job's own user finds them.
//
// Every Loom process of a job carries LOOM_JOB_ID=<id> in its environment, but a local
// executor makes itself non-dumpable (the job secret is in its memory: cli/role_commands.cc),
// and the kernel then lets root alone read its /proc/PID/environ. So LocalContainerBroker
// records each executor it starts in the job dir, as executors/<container id>: its pid, start
// time and boot (core/subprocess.h RecordProcess), which a process that later gets the same pid
// does not match; it removes the record once it has reaped the executor. A record an AM that
// crashed left behind matches nothing either.
//
// Header-only so that the integration tests' harness (tests/integration/mini_loom.h), which
// links core and history alone, counts a job's processes by the very same rule.

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/subprocess.h"
#include "history/job_dir.h"

namespace loom::cluster::local {

// The job's live processes: those that carry its marker and its recorded executors, sorted.
inline std::vector<pid_t> JobProcesses(const history::JobDir& dir) {
  return FindProcesses({"LOOM_JOB_ID=" + dir.job_id()}, dir.executors_dir());
}
// SIGKILLs them; returns how many were signalled.
inline int KillJobProcesses(const history::JobDir& dir) {
  return KillProcesses({"LOOM_JOB_ID=" + dir.job_id()}, dir.executors_dir());
}

}  // namespace loom::cluster::local
