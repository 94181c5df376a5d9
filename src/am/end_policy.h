#pragma once
// The AM's decisions at an end, as pure functions of what it knows and the time, so that each
// rule is tested from a table (end_policy_test.cc) as rm_failover's FailoverPolicy is: whether a
// task that ended is restarted alone, whether a failed attempt starts a new gang, whether a
// task whose heartbeats stopped is lost, and what each timeout does when its timer fires (the
// AM arms the timers on its event loop's clock; these decide whether the timeout still applies).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

// ---- timeouts ---------------------------------------------------------------------------------

// The timer of a timeout was armed for one attempt (and one stage's gang); the job may have
// moved on since.
struct TimerScope {
  bool same_attempt = true;  // and, for the allocation timeout, the same stage
  bool job_over = false;     // the attempt has its final state
};

// loom.application.timeout: the job fails when it still runs.
bool ApplicationTimeoutApplies(const TimerScope& scope);

// loom.container.allocation.timeout, for a stage's gang: nullopt when it no longer applies (the
// job moved on, or the gang is complete), else why the job fails, naming the gang's tasks that
// never got resources and those launched but not registered. `started`: the stage's tasks.
std::optional<std::string> AllocationTimeoutWhy(const TimerScope& scope, bool gang_complete,
                                                const std::vector<TaskRecord>& started, const std::string& gang,
                                                int64_t ms, const std::string& key);

// loom.container.registration.timeout: applies when the task still waits for its executor's
// registration in the container the timer was armed for (not a later one).
bool RegistrationTimeoutApplies(bool same_container, TaskState state);

// loom.application.dependency.<type>.timeout.after.<group>: the timer is armed once every task
// of the group has ended; when it fires, the type's tasks still running are late.
bool DependencyGroupDone(const DependencyTimeout& d, const std::vector<TaskRecord>& tasks);
enum class DependencyAction { kNothing, kStopLateTasks, kFailJob };
// kNothing when the job moved on or no task is late; .ignored=true stops the late tasks (KILLED,
// not a failure); otherwise the job fails. `late` gets the late tasks.
DependencyAction DecideDependencyTimeout(const DependencyTimeout& d, const TimerScope& scope,
                                         const std::vector<TaskRecord>& tasks, std::vector<TaskId>* late);

}  // namespace loom::am
