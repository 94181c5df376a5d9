#include "am/end_policy.h"

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

}  // namespace loom::am
