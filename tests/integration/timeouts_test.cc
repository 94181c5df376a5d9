// Timeouts and the fault-injection hooks: each fault ends the job with the cause named.

#include <gmock/gmock.h>

#include "mini_loom.h"

namespace loom::testing {
namespace {

std::vector<std::string> Job(std::vector<std::string> extra) {
  std::vector<std::string> args = {"submit", "--src_dir", MiniLoom::Source(kScripts),
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

// A job of `workers` workers whose last one registers only after 20 s, under `timeout`: it fails
// well before then, its diagnostics saying each of `says`.
void ExpectLateRegistrationFails(int workers, const std::string& timeout, const std::vector<std::string>& says) {
  MiniLoom loom;
  const std::string late = "worker:" + std::to_string(workers - 1);
  Outcome o = RunJob(loom, Confs({"loom.worker.instances=" + std::to_string(workers), timeout}),
                     {{"LOOM_TEST_DELAY_REGISTRATION_MS", late + "=20000"}});
  EXPECT_EQ(o.result.exit_code, 1);
  for (const std::string& s : says) EXPECT_THAT(o.view.diagnostics, HasSubstr(s));
  EXPECT_LT(o.took, 10s);
}

TEST(Timeouts, RegistrationTimeoutNamesTheTask) {
  ExpectLateRegistrationFails(2, "tony.container.registration.timeout=1000",
                              {"task worker:1 failed: did not register within 1000 ms"});
}

TEST(Timeouts, GangAllocationTimeoutListsWhatIsMissing) {
  ExpectLateRegistrationFails(3, "tony.container.allocation.timeout=1500",
                              {"gang allocation timeout", "launched but not registered: worker:2"});
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
  for (const auto& t : o.view.tasks) EXPECT_EQ(t.state, t.id == "evaluator:0" ? TaskState::kKilled : TaskState::kSucceeded) << t.id;
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

// A worker that fails on its first run with `code`, and succeeds when restarted.
std::vector<std::string> FlakyWorker(const std::string& policy, int code) {
  return {"--conf", "loom.worker.instances=2", "--conf", "loom.worker.restart-policy=" + policy, "--conf",
          "loom.worker.max-restarts=2", "--conf",
          "loom.worker.command=/bin/sh -c 'if [ \"$TASK_INDEX\" = 1 ] && [ \"$LOOM_RESTART_COUNT\" = 0 ]; then "
          "echo boom >&2; exit " + std::to_string(code) + "; fi; echo ran restart=$LOOM_RESTART_COUNT port=$MASTER_PORT'",
          "--conf", "loom.application.framework=pytorch"};
}

TEST(RestartPolicy, OnFailureRestartsTheTaskAlone) {
  MiniLoom loom;
  Outcome o = RunJob(loom, FlakyWorker("on-failure", 3));
  EXPECT_EQ(o.result.exit_code, 0) << o.result.out;
  EXPECT_THAT(o.result.out, ::testing::HasSubstr("worker:1 failed (exit 3); restarting it alone, restart 1"));
  std::string id = loom.OnlyJobId();
  EXPECT_THAT(loom.TaskOutput(id, {"worker", 1}), HasSubstr("ran restart=1"));
  EXPECT_THAT(loom.TaskOutput(id, {"worker", 0}), HasSubstr("ran restart=0"));
  EXPECT_EQ(o.view.attempt, 0);  // no gang restart
}

TEST(RestartPolicy, ExitCodePolicyTreatsLowCodesAsPermanent) {
  MiniLoom permanent;
  Outcome p = RunJob(permanent, FlakyWorker("exit-code", 3));
  EXPECT_EQ(p.result.exit_code, 1);
  EXPECT_THAT(p.view.diagnostics, HasSubstr("task worker:1 failed: exit code 3"));
  MiniLoom retried;
  Outcome r = RunJob(retried, FlakyWorker("exit-code", 137));
  EXPECT_EQ(r.result.exit_code, 0) << r.result.out;
}

TEST(RestartPolicy, RestartsAreBounded) {
  MiniLoom loom;
  Outcome o = RunJob(loom, {"--conf", "loom.worker.instances=1", "--conf", "loom.worker.restart-policy=on-failure",
                            "--conf", "loom.worker.max-restarts=2", "--conf", "loom.worker.command=/bin/sh -c 'exit 5'"});
  EXPECT_EQ(o.result.exit_code, 1);
  EXPECT_THAT(o.result.out, HasSubstr("restart 2"));
  EXPECT_THAT(o.result.out, ::testing::Not(HasSubstr("restart 3")));
}

}  // namespace
}  // namespace loom::testing
