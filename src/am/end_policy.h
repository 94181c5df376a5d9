#pragma once
// The AM's decisions at an end, as pure functions of what it knows and the time, so that each
// rule is tested from a table (end_policy_test.cc) as rm_failover's FailoverPolicy is: whether a
// task that ended is restarted alone, whether a failed attempt starts a new gang, and whether a
// task whose heartbeats stopped is lost.

#include <chrono>
#include <cstdint>

#include "core/job_spec.h"
#include "core/job_state.h"

namespace loom::am {

// A task's end as the AM sees it.
struct TaskEnd {
  int exit_code = 0;          // shell convention: 128 + N for signal N
  bool stopped_by_am = false;  // the AM stopped it (a sibling failed, the job ended, killed)
  bool job_over = false;       // the attempt already has its final state
  int restarts = 0;            // this task's restarts in this attempt so far
};
enum class TaskEndAction { kRecordEnd, kRestartTask };
// Restarted alone (loom.<type>.restart-policy, .max-restarts) only when it ended by itself,
// unsuccessfully as its type's policy counts it, while the job runs, with restarts left.
TaskEndAction DecideTaskEnd(const TaskTypeSpec& type, const TaskEnd& end);

// An attempt's final state as the AM sees it.
struct AttemptEnd {
  JobState state = JobState::kRunning;
  bool retryable = true;        // false once it failed for a reason a new gang cannot fix
  bool kill_requested = false;  // `loom kill`, Ctrl-C
  int attempt = 0;              // 0 for the first
};
enum class AttemptEndAction { kFinishJob, kStartNextAttempt };
// A new gang (loom.am.retry-count) only after a retryable failure that nobody asked for.
AttemptEndAction DecideAttemptEnd(const JobSpec& spec, const AttemptEnd& end);

// How long a task may stay silent: loom.task.max-missed-heartbeats heartbeat intervals.
std::chrono::milliseconds HeartbeatLimit(const JobSpec& spec);
// Whether a task last heard from at `last_heartbeat` is lost at `now`: silent for more than
// HeartbeatLimit.
bool HeartbeatLost(const JobSpec& spec, std::chrono::steady_clock::time_point last_heartbeat,
                   std::chrono::steady_clock::time_point now);

}  // namespace loom::am
