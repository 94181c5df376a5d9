#include "core/job_state.h"

#include "core/testing.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

JobSpec MakeSpec(std::vector<std::tuple<std::string, int, TaskRole, bool>> types,
                 SuccessPolicy policy = SuccessPolicy::kAll) {
  JobSpec spec;
  spec.success_policy = policy;
  for (auto& [name, n, role, sof] : types) {
    TaskTypeSpec t;
    t.name = name;
    t.instances = n;
    t.role = role;
    t.stop_on_failure = sof;
    spec.types.push_back(t);
  }
  return spec;
}

TEST(JobTracker, GangCompletesOnLastRegistration) {
  JobSpec spec = MakeSpec({{"worker", 2, TaskRole::kTracked, false}, {"ps", 1, TaskRole::kUntracked, true}});
  JobTracker jt(spec);
  EXPECT_FALSE(jt.OnRegistered({"worker", 0}, "h", 1));
  EXPECT_FALSE(jt.OnRegistered({"ps", 0}, "h", 2));
  EXPECT_TRUE(jt.OnRegistered({"worker", 1}, "h", 3));
  EXPECT_FALSE(jt.OnRegistered({"worker", 1}, "h", 3));  // a duplicate does not re-complete
  EXPECT_TRUE(jt.GangComplete());
}

TEST(JobTracker, SuccessStopsUntrackedTasks) {
  JobSpec spec = MakeSpec({{"worker", 2, TaskRole::kTracked, false}, {"ps", 1, TaskRole::kUntracked, true}});
  JobTracker jt(spec);
  EXPECT_TRUE(jt.OnTaskFinished({"worker", 0}, 0, false, "").empty());
  auto stop = jt.OnTaskFinished({"worker", 1}, 0, false, "");
  EXPECT_EQ(jt.state(), JobState::kSucceeded);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_EQ(stop[0].ToString(), "ps:0");
  // The ps then dies from our SIGTERM: recorded as KILLED, the job stays SUCCEEDED.
  jt.OnTaskFinished({"ps", 0}, 143, true, "");
  EXPECT_EQ(jt.Find({"ps", 0})->state, TaskState::kKilled);
  EXPECT_EQ(jt.state(), JobState::kSucceeded);
}

TEST(JobTracker, ChiefFailureFailsAtOnce) {
  JobSpec spec = MakeSpec({{"worker", 3, TaskRole::kTracked, false}}, SuccessPolicy::kAny);
  JobTracker jt(spec);
  auto stop = jt.OnTaskFinished({"worker", 0}, 1, false, "exit code 1");
  EXPECT_EQ(jt.state(), JobState::kFailed);
  EXPECT_THAT(jt.diagnostics(), HasSubstr("chief task worker:0 failed: exit code 1"));
  EXPECT_EQ(stop.size(), 2u);
}

TEST(JobTracker, AnyWorkerFailureFailsByDefault) {
  JobSpec spec = MakeSpec({{"worker", 3, TaskRole::kTracked, false}});
  JobTracker jt(spec);
  jt.OnTaskFinished({"worker", 2}, 3, false, "exit code 3");
  EXPECT_EQ(jt.state(), JobState::kFailed);
  EXPECT_THAT(jt.diagnostics(), HasSubstr("task worker:2 failed: exit code 3"));
}

TEST(JobTracker, TonyRuleToleratesSomeWorkerFailures) {
  JobSpec spec = MakeSpec({{"worker", 3, TaskRole::kTracked, false}}, SuccessPolicy::kAny);
  JobTracker jt(spec);
  jt.OnTaskFinished({"worker", 2}, 3, false, "");
  EXPECT_EQ(jt.state(), JobState::kRunning);
  jt.OnTaskFinished({"worker", 1}, 0, false, "");
  jt.OnTaskFinished({"worker", 0}, 0, false, "");
  EXPECT_EQ(jt.state(), JobState::kSucceeded);
  EXPECT_THAT(jt.diagnostics(), HasSubstr("2 of 3"));
}

TEST(JobTracker, StopOnFailureAndUntrackedFailures) {
  JobSpec spec = MakeSpec({{"worker", 1, TaskRole::kTracked, false}, {"ps", 1, TaskRole::kUntracked, true}});
  JobTracker jt(spec);
  jt.OnTaskFinished({"ps", 0}, 1, false, "");
  EXPECT_EQ(jt.state(), JobState::kFailed);
  EXPECT_THAT(jt.diagnostics(), HasSubstr("stop-on-failure task ps:0"));
}

TEST(JobTracker, SidecarFailureIsIgnored) {
  JobSpec spec = MakeSpec({{"worker", 1, TaskRole::kTracked, false}, {"tensorboard", 1, TaskRole::kSidecar, false}});
  JobTracker jt(spec);
  jt.OnTaskFinished({"tensorboard", 0}, 1, false, "");
  EXPECT_EQ(jt.state(), JobState::kRunning);
  jt.OnTaskFinished({"worker", 0}, 0, false, "");
  EXPECT_EQ(jt.state(), JobState::kSucceeded);
}

TEST(JobTracker, FirstFinalStateWins) {
  JobSpec spec = MakeSpec({{"worker", 2, TaskRole::kTracked, false}});
  JobTracker jt(spec);
  jt.OnTaskFinished({"worker", 1}, 3, false, "first");
  EXPECT_TRUE(jt.Finish(JobState::kKilled, "later kill").empty());
  EXPECT_EQ(jt.state(), JobState::kFailed);
  EXPECT_THAT(jt.diagnostics(), HasSubstr("first"));
}

TEST(JobTracker, RestartedTaskRejoinsTheGang) {
  JobSpec spec = MakeSpec({{"worker", 2, TaskRole::kTracked, false}});
  JobTracker jt(spec);
  jt.OnRegistered({"worker", 0}, "h", 1);
  EXPECT_TRUE(jt.OnRegistered({"worker", 1}, "h", 2));
  jt.OnRunning({"worker", 1});
  jt.RestartTask({"worker", 1});
  EXPECT_EQ(jt.Find({"worker", 1})->state, TaskState::kPending);
  EXPECT_FALSE(jt.GangComplete());
  EXPECT_EQ(jt.state(), JobState::kRunning);
  EXPECT_TRUE(jt.OnRegistered({"worker", 1}, "h", 3));  // complete again
  jt.OnTaskFinished({"worker", 0}, 0, false, "");
  jt.OnTaskFinished({"worker", 1}, 0, false, "");
  EXPECT_EQ(jt.state(), JobState::kSucceeded);
}

TEST(RestartPolicy, ExitCodePolicyRetriesOnlySignalsAndHighCodes) {
  TaskTypeSpec t;
  EXPECT_FALSE(t.Restartable(1));
  t.restart_policy = RestartPolicy::kOnFailure;
  EXPECT_TRUE(t.Restartable(1));
  EXPECT_FALSE(t.Restartable(0));
  t.restart_policy = RestartPolicy::kExitCode;
  EXPECT_FALSE(t.Restartable(3));
  EXPECT_FALSE(t.Restartable(127));
  EXPECT_TRUE(t.Restartable(137));
  EXPECT_TRUE(t.Restartable(255));
}

TEST(JobTracker, KillStopsEverything) {
  JobSpec spec = MakeSpec({{"worker", 2, TaskRole::kTracked, false}});
  JobTracker jt(spec);
  jt.OnTaskFinished({"worker", 1}, 0, false, "");
  auto stop = jt.Finish(JobState::kKilled, "killed by user");
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_EQ(stop[0].ToString(), "worker:0");
  EXPECT_EQ(jt.state(), JobState::kKilled);
}

}  // namespace
}  // namespace loom
