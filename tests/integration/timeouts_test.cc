// Timeouts and the fault-injection hooks: each fault ends the job with the cause named.

#include <gmock/gmock.h>

#include "mini_loom.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::vector<std::string> Job(std::vector<std::string> extra) {
  std::vector<std::string> args = {"submit", "--src_dir", MiniLoom::Source("tests/integration/scripts"),
                                   "--executes", "sleep_forever.py", "--python_binary_path", "/usr/bin/python3",
                                   "--conf", "loom.task.stop-grace-ms=500"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

struct Outcome {
  RunResult result;
  history::JobView view;
  std::chrono::steady_clock::duration took;
};

Outcome RunJob(MiniLoom& loom, std::vector<std::string> extra, std::map<std::string, std::string> env = {}) {
  auto start = std::chrono::steady_clock::now();
  RunResult r = loom.Run(Job(std::move(extra)), env);
  Outcome o{r, loom.View(loom.OnlyJobId()), std::chrono::steady_clock::now() - start};
  EXPECT_TRUE(MiniLoom::JobProcesses(loom.OnlyJobId()).empty());
  return o;
}

TEST(Timeouts, RegistrationTimeoutNamesTheTask) {
  MiniLoom loom;
  Outcome o = RunJob(loom, {"--conf", "loom.worker.instances=2", "--conf", "tony.container.registration.timeout=1000"},
                     {{"LOOM_TEST_DELAY_REGISTRATION_MS", "worker:1=20000"}});
  EXPECT_EQ(o.result.exit_code, 1);
  EXPECT_THAT(o.view.diagnostics, HasSubstr("task worker:1 failed: did not register within 1000 ms"));
  EXPECT_LT(o.took, 10s);
}

TEST(Timeouts, GangAllocationTimeoutListsWhatIsMissing) {
  MiniLoom loom;
  Outcome o = RunJob(loom, {"--conf", "loom.worker.instances=3", "--conf", "tony.container.allocation.timeout=1500"},
                     {{"LOOM_TEST_DELAY_REGISTRATION_MS", "worker:2=20000"}});
  EXPECT_EQ(o.result.exit_code, 1);
  EXPECT_THAT(o.view.diagnostics, HasSubstr("gang allocation timeout"));
  EXPECT_THAT(o.view.diagnostics, HasSubstr("launched but not registered: worker:2"));
  EXPECT_LT(o.took, 10s);
}

std::vector<std::string> DependencyJob(bool ignored) {
  std::vector<std::string> args = {
      "--conf", "loom.worker.instances=2", "--conf", "loom.worker.command=/usr/bin/python3 fail_with.py --task none:0",
      "--conf", "loom.evaluator.instances=1", "--conf", "loom.application.group.training=worker",
      "--conf", "tony.application.dependency.evaluator.timeout.after.training=1"};
  if (ignored) {
    args.push_back("--conf");
    args.push_back("tony.application.dependency.evaluator.timeout.after.training.ignored=true");
  }
  return args;
}

TEST(Timeouts, GroupDependencyTimeoutFailsAHangingEvaluator) {
  MiniLoom loom;
  Outcome o = RunJob(loom, DependencyJob(false));
  EXPECT_EQ(o.result.exit_code, 1);
  EXPECT_THAT(o.view.diagnostics,
              HasSubstr("group dependency timeout: evaluator still running 1 s after group training (worker) finished"));
  EXPECT_LT(o.took, 10s);
}

TEST(Timeouts, IgnoredGroupDependencyTimeoutStopsItQuietly) {
  MiniLoom loom;
  Outcome o = RunJob(loom, DependencyJob(true));
  EXPECT_EQ(o.result.exit_code, 0) << o.result.out;
  for (const auto& t : o.view.tasks) EXPECT_EQ(t.state, t.id == "evaluator:0" ? "KILLED" : "SUCCEEDED") << t.id;
}

TEST(FaultHooks, DroppedHeartbeatsMakeTheTaskLost) {
  MiniLoom loom;
  Outcome o = RunJob(loom, {"--conf", "loom.worker.instances=2", "--conf", "loom.task.heartbeat-interval-ms=100",
                            "--conf", "loom.task.max-missed-heartbeats=5"},
                     {{"LOOM_TEST_DROP_HEARTBEATS", "worker:1=1"}});
  EXPECT_EQ(o.result.exit_code, 1);
  EXPECT_THAT(o.view.diagnostics, HasSubstr("task worker:1 failed: lost: no heartbeat for 500 ms"));
}

TEST(FaultHooks, CrashedExecutorFailsItsTask) {
  MiniLoom loom;
  Outcome o = RunJob(loom, {"--conf", "loom.worker.instances=2"}, {{"LOOM_TEST_CRASH_EXECUTOR_MS", "worker:1=300"}});
  EXPECT_EQ(o.result.exit_code, 1);
  EXPECT_THAT(o.view.diagnostics, HasSubstr("task worker:1 failed: executor exited with code 99 before reporting"));
}

TEST(FaultHooks, CrashedAmFailsTheJob) {
  MiniLoom loom;
  Outcome o = RunJob(loom, {"--conf", "loom.worker.instances=2"}, {{"LOOM_TEST_AM_CRASH_MS", "1000"}});
  EXPECT_EQ(o.result.exit_code, 1);
  EXPECT_THAT(o.view.diagnostics, HasSubstr("ApplicationMaster exited unexpectedly"));
}

}  // namespace
}  // namespace loom::testing
