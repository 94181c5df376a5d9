#pragma once
// Follows a running job from its job directory until it ends: inotify on the directory (no
// polling) for new events and the final status, a pidfd on the AM to notice it dying without
// one, and SIGINT/SIGTERM/SIGHUP to kill the job. On a terminal it keeps a live task table;
// otherwise it prints one line per transition.

#include "cluster/job_submitter.h"
#include "history/job_dir.h"

namespace loom::cli {

enum class FollowMode {
  kTable,  // live task table (a terminal)
  kLines,  // one line per transition (a pipe or file)
  kQuiet,  // only the final state
};

// Returns the exit code for `loom submit`: 0 SUCCEEDED, 1 FAILED or KILLED. An AM that stops
// answering for `am_silence_limit` (probed every `probe_interval`) is killed and the job FAILED.
int FollowJob(const history::JobDir& dir, cluster::JobSubmitter& submitter, FollowMode mode,
              std::chrono::milliseconds probe_interval, std::chrono::milliseconds am_silence_limit);

}  // namespace loom::cli
