#include "am/end_policy.h"

#include <algorithm>

#include "core/strings.h"

namespace loom::am {

TaskEndAction DecideTaskEnd(const TaskTypeSpec& type, const TaskEnd& end) {
  if (end.exit_code == 0 || end.stopped_by_am || end.job_over) return TaskEndAction::kRecordEnd;
  if (!type.Restartable(end.exit_code) || end.restarts >= type.max_restarts) return TaskEndAction::kRecordEnd;
  return TaskEndAction::kRestartTask;
}

AttemptEndAction DecideAttemptEnd(const JobSpec& spec, const AttemptEnd& end) {
  if (end.state != JobState::kFailed || !end.retryable || end.kill_requested) return AttemptEndAction::kFinishJob;
  return end.attempt < spec.am_retry_count ? AttemptEndAction::kStartNextAttempt : AttemptEndAction::kFinishJob;
}

std::chrono::milliseconds HeartbeatLimit(const JobSpec& spec) {
  return std::chrono::milliseconds(int64_t{spec.heartbeat_interval_ms} * spec.max_missed_heartbeats);
}

bool HeartbeatLost(const JobSpec& spec, std::chrono::steady_clock::time_point last_heartbeat,
                   std::chrono::steady_clock::time_point now) {
  return now - last_heartbeat > HeartbeatLimit(spec);
}

bool ApplicationTimeoutApplies(const TimerScope& scope) { return !scope.job_over; }

std::optional<std::string> AllocationTimeoutWhy(const TimerScope& scope, bool gang_complete,
                                                const std::vector<TaskRecord>& started, const std::string& gang,
                                                int64_t ms, const std::string& key) {
  if (!scope.same_attempt || scope.job_over || gang_complete) return std::nullopt;
  std::vector<std::string> never, unregistered;
  for (const TaskRecord& r : started) {
    if (r.state == TaskState::kPending) never.push_back(r.id.ToString());
    if (r.state == TaskState::kLaunched) unregistered.push_back(r.id.ToString());
  }
  std::string why = "gang allocation timeout: " + gang + " was not complete after " + std::to_string(ms) + " ms (" +
                    key + ")";
  if (!never.empty()) why += "; never got resources: " + Join(never, ", ");
  if (!unregistered.empty()) why += "; launched but not registered: " + Join(unregistered, ", ");
  return why;
}

bool RegistrationTimeoutApplies(bool same_container, TaskState state) {
  return same_container && state == TaskState::kLaunched;
}

bool DependencyGroupDone(const DependencyTimeout& d, const std::vector<TaskRecord>& tasks) {
  for (const TaskRecord& r : tasks) {
    bool in_group = std::find(d.group_types.begin(), d.group_types.end(), r.id.type) != d.group_types.end();
    if (in_group && !IsTerminal(r.state)) return false;
  }
  return true;
}

DependencyAction DecideDependencyTimeout(const DependencyTimeout& d, const TimerScope& scope,
                                         const std::vector<TaskRecord>& tasks, std::vector<TaskId>* late) {
  late->clear();
  if (!scope.same_attempt || scope.job_over) return DependencyAction::kNothing;
  for (const TaskRecord& r : tasks) {
    if (r.id.type == d.type && !IsTerminal(r.state)) late->push_back(r.id);
  }
  if (late->empty()) return DependencyAction::kNothing;
  return d.ignored ? DependencyAction::kStopLateTasks : DependencyAction::kFailJob;
}

}  // namespace loom::am
