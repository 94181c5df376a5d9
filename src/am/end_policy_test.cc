// The AM's end decisions from tables: a row per rule, each with the case on either side of it.

#include "am/end_policy.h"

#include "core/testing.h"

namespace loom::am {
namespace {

using namespace std::chrono_literals;

TaskTypeSpec Type(RestartPolicy policy, int max_restarts) {
  TaskTypeSpec t;
  t.name = "worker";
  t.restart_policy = policy;
  t.max_restarts = max_restarts;
  return t;
}

TEST(DecideTaskEnd, FromTheTable) {
  constexpr auto kRecord = TaskEndAction::kRecordEnd;
  constexpr auto kRestart = TaskEndAction::kRestartTask;
  struct Row {
    const char* what;
    RestartPolicy policy;
    int max_restarts;
    TaskEnd end;  // exit code, stopped by the AM, job over, restarts so far
    TaskEndAction want;
  } rows[] = {
      {"a success is recorded", RestartPolicy::kOnFailure, 3, {0, false, false, 0}, kRecord},
      {"a failure under on-failure restarts", RestartPolicy::kOnFailure, 3, {1, false, false, 0}, kRestart},
      {"the last restart left is used", RestartPolicy::kOnFailure, 3, {1, false, false, 2}, kRestart},
      {"no restarts left", RestartPolicy::kOnFailure, 3, {1, false, false, 3}, kRecord},
      {"max-restarts 0", RestartPolicy::kOnFailure, 0, {1, false, false, 0}, kRecord},
      {"policy never", RestartPolicy::kNever, 3, {1, false, false, 0}, kRecord},
      {"exit-code: a signal (137) restarts", RestartPolicy::kExitCode, 3, {137, false, false, 0}, kRestart},
      {"exit-code: 128 is the first retryable code", RestartPolicy::kExitCode, 3, {128, false, false, 0}, kRestart},
      {"exit-code: 127 is the user's error", RestartPolicy::kExitCode, 3, {127, false, false, 0}, kRecord},
      {"exit-code: 1 is the user's error", RestartPolicy::kExitCode, 3, {1, false, false, 0}, kRecord},
      {"stopped by the AM (143) is not restarted", RestartPolicy::kOnFailure, 3, {143, true, false, 0}, kRecord},
      {"stopped by the AM under exit-code", RestartPolicy::kExitCode, 3, {143, true, false, 0}, kRecord},
      {"the job is already over", RestartPolicy::kOnFailure, 3, {1, false, true, 0}, kRecord},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(DecideTaskEnd(Type(r.policy, r.max_restarts), r.end), r.want) << r.what;
  }
}

TEST(DecideAttemptEnd, FromTheTable) {
  constexpr auto kFinish = AttemptEndAction::kFinishJob;
  constexpr auto kNext = AttemptEndAction::kStartNextAttempt;
  struct Row {
    const char* what;
    int retry_count;
    AttemptEnd end;  // state, retryable, kill requested, attempt
    AttemptEndAction want;
  } rows[] = {
      {"a success ends the job", 2, {JobState::kSucceeded, true, false, 0}, kFinish},
      {"a failure with retries left starts a new gang", 2, {JobState::kFailed, true, false, 0}, kNext},
      {"the last retry is used", 2, {JobState::kFailed, true, false, 1}, kNext},
      {"no retries left", 2, {JobState::kFailed, true, false, 2}, kFinish},
      {"retry-count 0", 0, {JobState::kFailed, true, false, 0}, kFinish},
      {"a failure a new gang cannot fix (a timeout)", 2, {JobState::kFailed, false, false, 0}, kFinish},
      {"killed by the user", 2, {JobState::kKilled, true, true, 0}, kFinish},
      {"failed while a kill was asked for", 2, {JobState::kFailed, true, true, 0}, kFinish},
  };
  for (const Row& r : rows) {
    JobSpec spec;
    spec.am_retry_count = r.retry_count;
    EXPECT_EQ(DecideAttemptEnd(spec, r.end), r.want) << r.what;
  }
}

TEST(HeartbeatLost, FromTheTable) {
  const std::chrono::steady_clock::time_point t0{std::chrono::hours(1)};
  struct Row {
    int interval_ms, max_missed;
    std::chrono::milliseconds silent;
    bool lost;
  } rows[] = {
      {1000, 25, 0ms, false},      {1000, 25, 25000ms, false}, {1000, 25, 25001ms, true},
      {1000, 3, 3000ms, false},    {1000, 3, 3001ms, true},    {200, 5, 1000ms, false},
      {200, 5, 1001ms, true},      {1000, 1, 1001ms, true},
  };
  for (const Row& r : rows) {
    JobSpec spec;
    spec.heartbeat_interval_ms = r.interval_ms;
    spec.max_missed_heartbeats = r.max_missed;
    EXPECT_EQ(HeartbeatLost(spec, t0, t0 + r.silent), r.lost)
        << r.interval_ms << " ms x " << r.max_missed << ", silent " << r.silent.count() << " ms";
  }
}

}  // namespace
}  // namespace loom::am
