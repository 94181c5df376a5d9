#pragma once
// Follows a running job from its job directory until it ends: inotify on the directory (no
// polling) for new events and the final status, a pidfd on the AM to notice it dying without
// one, and SIGINT/SIGTERM/SIGHUP to kill the job. On a terminal it keeps a live task table;
// otherwise it prints one line per transition.

#include <signal.h>

#include <chrono>

#include "cluster/backend.h"
#include "history/job_dir.h"

namespace loom::cli {

enum class FollowMode {
  kTable,  // live task table (a terminal)
  kLines,  // one line per transition (a pipe or file)
  kQuiet,  // only the final state
};

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, and so in every thread it starts
// later. `loom submit` calls it first, before anything can start a thread (gRPC, libcurl, a
// backend's mirror): a thread that does not block them would take the default action, and
// the client would die leaving its job running. FollowJob takes them through a signalfd.
sigset_t BlockStopSignals();

// Returns the exit code for `loom submit`: 0 SUCCEEDED, 1 FAILED or KILLED. An AM that stops
// answering for `am_silence_limit` (probed every `probe_interval`) is killed and the job FAILED.
int FollowJob(const history::JobDir& dir, cluster::Backend& backend, FollowMode mode,
              std::chrono::milliseconds probe_interval, std::chrono::milliseconds am_silence_limit);

}  // namespace loom::cli
