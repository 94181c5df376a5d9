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

TaskRecord Task(const char* type, int index, TaskState state) {
  TaskRecord r;
  r.id = TaskId{type, index};
  r.state = state;
  return r;
}

TEST(ApplicationTimeout, FromTheTable) {
  EXPECT_TRUE(ApplicationTimeoutApplies({true, false})) << "the job still runs: it fails";
  EXPECT_FALSE(ApplicationTimeoutApplies({true, true})) << "the job already ended";
}

TEST(AllocationTimeout, FromTheTable) {
  const std::vector<TaskRecord> waiting = {Task("worker", 0, TaskState::kRunning), Task("worker", 1, TaskState::kPending),
                                           Task("worker", 2, TaskState::kLaunched)};
  struct Row {
    const char* what;
    TimerScope scope;
    bool gang_complete;
    bool fails;
  } rows[] = {
      {"the gang is incomplete when it fires", {true, false}, false, true},
      {"the gang completed in time", {true, false}, true, false},
      {"armed for another attempt or stage", {false, false}, false, false},
      {"the job already ended", {true, true}, false, false},
  };
  for (const Row& r : rows) {
    std::optional<std::string> why = AllocationTimeoutWhy(r.scope, r.gang_complete, waiting, "the gang", 5000,
                                                          "loom.container.allocation.timeout");
    EXPECT_EQ(why.has_value(), r.fails) << r.what;
  }
  std::optional<std::string> why =
      AllocationTimeoutWhy({true, false}, false, waiting, "the training stage's gang", 5000, "tony.x");
  ASSERT_TRUE(why);
  EXPECT_EQ(*why,
            "gang allocation timeout: the training stage's gang was not complete after 5000 ms (tony.x); never got "
            "resources: worker:1; launched but not registered: worker:2");
}

TEST(RegistrationTimeout, FromTheTable) {
  struct Row {
    const char* what;
    bool same_container;
    TaskState state;
    bool applies;
  } rows[] = {
      {"still waiting for its executor", true, TaskState::kLaunched, true},
      {"registered in time", true, TaskState::kRegistered, false},
      {"running", true, TaskState::kRunning, false},
      {"ended before", true, TaskState::kFailed, false},
      {"restarted in another container since", false, TaskState::kLaunched, false},
  };
  for (const Row& r : rows) EXPECT_EQ(RegistrationTimeoutApplies(r.same_container, r.state), r.applies) << r.what;
}

TEST(DependencyTimeout, FromTheTable) {
  DependencyTimeout d;
  d.type = "evaluator";
  d.group = "train";
  d.group_types = {"chief", "worker"};
  d.seconds = 30;
  const std::vector<TaskRecord> group_running = {Task("chief", 0, TaskState::kSucceeded),
                                                 Task("worker", 0, TaskState::kRunning),
                                                 Task("evaluator", 0, TaskState::kRunning)};
  const std::vector<TaskRecord> group_done = {Task("chief", 0, TaskState::kSucceeded),
                                              Task("worker", 0, TaskState::kFailed),
                                              Task("evaluator", 0, TaskState::kRunning)};
  const std::vector<TaskRecord> nobody_late = {Task("chief", 0, TaskState::kSucceeded),
                                               Task("worker", 0, TaskState::kSucceeded),
                                               Task("evaluator", 0, TaskState::kSucceeded)};
  EXPECT_FALSE(DependencyGroupDone(d, group_running)) << "a worker still runs: not armed";
  EXPECT_TRUE(DependencyGroupDone(d, group_done)) << "every group task ended, however: armed";

  struct Row {
    const char* what;
    bool ignored;
    TimerScope scope;
    const std::vector<TaskRecord>* tasks;
    DependencyAction want;
    size_t late;
  } rows[] = {
      {"the evaluator is late: the job fails", false, {true, false}, &group_done, DependencyAction::kFailJob, 1},
      {".ignored=true: the late evaluator is stopped", true, {true, false}, &group_done,
       DependencyAction::kStopLateTasks, 1},
      {"nobody is late", false, {true, false}, &nobody_late, DependencyAction::kNothing, 0},
      {"armed in another attempt", false, {false, false}, &group_done, DependencyAction::kNothing, 0},
      {"the job already ended", false, {true, true}, &group_done, DependencyAction::kNothing, 0},
  };
  for (const Row& r : rows) {
    d.ignored = r.ignored;
    std::vector<TaskId> late;
    EXPECT_EQ(DecideDependencyTimeout(d, r.scope, *r.tasks, &late), r.want) << r.what;
    EXPECT_EQ(late.size(), r.late) << r.what;
  }
}

}  // namespace
}  // namespace loom::am
