// A YARN user's daily loop (issue "YARN in daily use"): Ctrl-C and friends, status, kill and
// what it leaves, a client that vanishes, and finding a job from another $LOOM_HOME. The real
// `loom` binary against the YARN test double (tests/yarn_double; no Hadoop runs here).

#include <signal.h>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "core/testing.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;
namespace ypb = ::hadoop::yarn;

// `loom submit --cluster yarn FLAGS...` of two workers that sleep until stopped.
std::vector<std::string> SleepJob(const std::vector<std::string>& flags = {}) {
  std::vector<std::string> args = {"submit", "--cluster", "yarn"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--src_dir", MiniLoom::Source(kScripts), "--executes", "sleep_forever.py",
                           "--python_binary_path", "/usr/bin/python3", "--conf", "loom.worker.instances=2", "--conf",
                           "loom.worker.memory=512m", "--conf", "loom.task.stop-grace-ms=1000"});
  return args;
}

// What a job may leave in HDFS once it ended (README, "Staging"): its config and history, and
// the shared binary cache.
void ExpectOnlyHistoryLeft(YarnDoubleCluster& cluster) {
  for (const std::string& f : cluster.StagingFiles()) {
    EXPECT_TRUE(f.find("/history/") != std::string::npos || f.ends_with("/config.xml") ||
                f.find("/.loom/cache/") != std::string::npos)
        << f;
  }
}

void ExpectEveryTaskRowFinal(const history::JobView& view) {
  ASSERT_FALSE(view.tasks.empty());
  for (const auto& t : view.tasks) EXPECT_TRUE(IsTerminal(t.state)) << t.id << " " << t.state;
}

class StopSignal : public ::testing::TestWithParam<int> {};

TEST_P(StopSignal, KillsTheApplicationAndEveryContainer) {
  YarnDoubleCluster cluster;
  Subprocess submit = cluster.loom().Start(SleepJob(), "submit", cluster.Env());
  std::string id = cluster.loom().WaitUntilRunning(2, 60s);
  ASSERT_FALSE(id.empty()) << cluster.ContainerLogs("am.log");
  ASSERT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).size() >= 5; }, 10s));
  ::kill(submit.pid(), GetParam());
  RunResult r = cluster.loom().Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("killing job " + id));
  EXPECT_EQ(cluster.Report(id).yarn_application_state(), ypb::KILLED);
  history::JobView view = cluster.loom().View(id);
  EXPECT_EQ(view.state, "KILLED");
  // The real cause, as on the local backend; YARN's own words are kept beside it.
  std::string cause = "killed: " + SignalName(GetParam()) + " to loom submit (from pid " + std::to_string(::getpid());
  EXPECT_THAT(view.diagnostics, HasSubstr(cause));
  EXPECT_THAT(r.out, HasSubstr(cause));
  auto status = nlohmann::json::parse(ReadFile(cluster.loom().Dir(id).status()).value_or("{}"));
  EXPECT_THAT(status.value("yarn_diagnostics", ""), HasSubstr("was killed by user root"));
  EXPECT_THAT(cluster.Report(id).diagnostics(), HasSubstr(cause));  // what `yarn application -status` says
  ExpectEveryTaskRowFinal(view);
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s))
      << MiniLoom::JobProcesses(id).size() << " processes left";
  ExpectOnlyHistoryLeft(cluster);
}

INSTANTIATE_TEST_SUITE_P(YarnDaily, StopSignal, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const auto& info) { return SignalName(info.param); });

TEST(YarnDaily, StatusOfARunningJobComesFromYarn) {
  YarnDoubleCluster cluster;
  Subprocess submit = cluster.loom().Start(SleepJob({"--conf", "loom.task.metrics-interval-ms=200"}), "submit", cluster.Env());
  std::string id = cluster.loom().WaitUntilRunning(2, 60s);
  ASSERT_FALSE(id.empty()) << cluster.ContainerLogs("am.log");
  std::string app = cluster.ApplicationId(id);
  RunResult status = cluster.loom().Run({"status", id}, cluster.Env());
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("RUNNING"));
  EXPECT_THAT(status.out, Not(HasSubstr("AM not running")));
  EXPECT_THAT(status.out, HasSubstr(app));
  RunResult json_status = cluster.loom().Run({"status", "--json", id}, cluster.Env());
  auto j = nlohmann::json::parse(json_status.out);
  EXPECT_EQ(j["state"], "RUNNING");
  EXPECT_EQ(j["backend_id"], app);
  EXPECT_EQ(j["tasks"].size(), 2u);
  RunResult list = cluster.loom().Run({"list"}, cluster.Env());
  EXPECT_THAT(list.out, HasSubstr(app));
  // Each task's latest CPU and RSS, which only the AM's metrics.jsonl in its container holds:
  // they come with the AM's events (JobState), as on the local backend.
  bool sampled = Eventually(
      [&] {
        j = nlohmann::json::parse(cluster.loom().Run({"status", "--json", id}, cluster.Env()).out, nullptr, false);
        if (!j.is_object() || j["tasks"].size() != 2) return false;
        for (const auto& t : j["tasks"]) {
          if (!t.contains("metrics") || t["metrics"].value("rss_bytes", 0) <= 0 || !t["metrics"].contains("cpu_cores")) {
            return false;
          }
        }
        return true;
      },
      20s);
  EXPECT_TRUE(sampled) << j.dump();
  EXPECT_THAT(cluster.loom().Run({"status", id}, cluster.Env()).out, ::testing::ContainsRegex("worker:0 +RUNNING .* [1-9][0-9]*M "));
  // While it runs, HDFS holds no secret of the job: it travels in the containers' credentials.
  for (const std::string& f : cluster.StagingFiles()) EXPECT_THAT(f, Not(HasSubstr("secret"))) << f;
  ::kill(submit.pid(), SIGINT);
  cluster.loom().Collect(submit, "submit");
}

TEST(YarnDaily, LoomKillCleansStagingAndEndsEveryTaskRow) {
  YarnDoubleCluster cluster;
  Subprocess submit = cluster.loom().Start(SleepJob({"--quiet"}), "submit", cluster.Env());
  std::string id = cluster.loom().WaitUntilRunning(2, 60s);
  ASSERT_FALSE(id.empty()) << cluster.ContainerLogs("am.log");
  // The follower is gone (SIGKILL: no clean-up of its own); `loom kill` must do it all.
  ::kill(submit.pid(), SIGKILL);
  cluster.loom().Collect(submit, "submit");
  RunResult kill = cluster.loom().Run({"kill", id}, cluster.Env());
  EXPECT_EQ(kill.exit_code, 0) << kill.out << kill.err;
  EXPECT_THAT(kill.out, HasSubstr("KILLED"));
  EXPECT_EQ(cluster.Report(id).yarn_application_state(), ypb::KILLED);
  history::JobView view = cluster.loom().View(id);
  EXPECT_EQ(view.state, "KILLED");
  EXPECT_EQ(view.diagnostics, "killed by loom kill (user " + cluster.user() + ")");
  ExpectEveryTaskRowFinal(view);
  ExpectOnlyHistoryLeft(cluster);
  EXPECT_FALSE(PathExists(cluster.loom().Dir(id).secret()));  // no secret outlives its job
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s));
}

TEST(YarnDaily, JobWhoseClientWasKilledIsRecordedAndCleanedByTheNextStatus) {
  YarnDoubleCluster cluster;
  Subprocess submit = cluster.loom().Start(
      {"submit", "--cluster", "yarn", "--quiet", "--src_dir", MiniLoom::Source(kScripts), "--executes",
       "fail_with.py", "--python_binary_path", "/usr/bin/python3", "--task_params", "--task worker:9 --others-sleep 3",
       "--conf", "loom.worker.instances=2", "--conf", "loom.worker.memory=512m"},
      "submit", cluster.Env());
  std::string id = cluster.loom().WaitUntilRunning(2, 60s);
  ASSERT_FALSE(id.empty()) << cluster.ContainerLogs("am.log");
  ::kill(submit.pid(), SIGKILL);
  cluster.loom().Collect(submit, "submit");
  ASSERT_OK(cluster.WaitForAppEnd(id, 60s));
  RunResult status = cluster.loom().Run({"status", id}, cluster.Env());
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_THAT(status.out, HasSubstr("SUCCEEDED"));
  ExpectEveryTaskRowFinal(cluster.loom().View(id));
  ExpectOnlyHistoryLeft(cluster);
}

TEST(YarnDaily, AnotherClientFindsTheJobByApplicationOrJobId) {
  YarnDoubleCluster cluster;
  Subprocess submit = cluster.loom().Start(SleepJob({"--quiet"}), "submit", cluster.Env());
  std::string id = cluster.loom().WaitUntilRunning(2, 60s);
  ASSERT_FALSE(id.empty()) << cluster.ContainerLogs("am.log");
  std::string app = cluster.ApplicationId(id);
  // Another user session: its own $LOOM_HOME, the same HADOOP_CONF_DIR.
  MiniLoom elsewhere;
  RunResult running;
  ASSERT_TRUE(loom::testing::Eventually(
      [&] {
        running = elsewhere.Run({"status", app}, cluster.Env());
        return running.out.find("worker:1") != std::string::npos && running.out.find("RUNNING") != std::string::npos;
      },
      15s))
      << running.out << running.err;
  EXPECT_THAT(running.out, HasSubstr(id));
  RunResult kill = elsewhere.Run({"kill", id}, cluster.Env());
  EXPECT_EQ(kill.exit_code, 0) << kill.out << kill.err;
  RunResult r = cluster.loom().Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  // The submitting client learns the cause from YARN: the kill's diagnostics carried it.
  const std::string cause = "killed by loom kill (user " + cluster.user() + ")";
  EXPECT_EQ(cluster.loom().View(id).diagnostics, cause);
  EXPECT_THAT(r.out, HasSubstr(cause));
  // A third client, after the end: the record in HDFS.
  MiniLoom later;
  RunResult status = later.Run({"status", id}, cluster.Env());
  EXPECT_EQ(status.exit_code, 1) << status.out << status.err;  // KILLED
  EXPECT_THAT(status.out, HasSubstr("KILLED"));
  EXPECT_THAT(status.out, HasSubstr(cause));
  EXPECT_THAT(status.out, HasSubstr("worker:0"));
  RunResult unknown = later.Run({"status", "application_1_9999"}, cluster.Env());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("application_1_9999"));
  ExpectOnlyHistoryLeft(cluster);
}

// An untracked task the AM stops once the tracked ones are done ends as on the local backend
// (LocalJob.UntrackedTasksAreStoppedWhenTrackedOnesFinish): KILLED, exit 143 and why, whatever
// exit status the NodeManager or the RM gave its container.
TEST(YarnDaily, UntrackedTaskStoppedAtTheEndEndsLikeOnTheLocalBackend) {
  YarnDoubleCluster cluster;
  RunResult r = cluster.Submit({"--src_dir", MiniLoom::Source(kScripts), "--executes", "fail_with.py",
                                "--python_binary_path", "/usr/bin/python3", "--task_params",
                                "--task none:0 --others-sleep 2", "--conf", "loom.worker.instances=1", "--conf",
                                "loom.worker.memory=512m", "--conf", "loom.ps.instances=1", "--conf",
                                "loom.ps.memory=512m", "--conf",
                                "loom.ps.command=/usr/bin/python3 sleep_forever.py --spawn-child", "--conf",
                                "loom.task.stop-grace-ms=1000"});
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  history::JobView view = cluster.loom().View(id);
  EXPECT_EQ(view.FindTask("worker:0")->state, TaskState::kSucceeded);
  history::TaskView* ps = view.FindTask("ps:0");
  EXPECT_EQ(ps->state, TaskState::kKilled);
  EXPECT_EQ(ps->exit_code, 143) << ps->diagnostics;
  EXPECT_EQ(ps->diagnostics, "stopped by the AM: tracked tasks finished");
  RunResult status = cluster.loom().Run({"status", id}, cluster.Env());
  EXPECT_THAT(status.out, HasSubstr("ps:0: stopped by the AM: tracked tasks finished"));
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s));
}

// A job whose workers print numbered lines to stdout and stderr, then end: worker:1 fails.
// worker:1 prints `lines` lines, then fails after `sleep_s`; worker:0 prints them, sleeps
// `others_sleep_s` (default: the same) and prints "worker:0 done". The job ends as worker:1
// fails, stopping worker:0 if it is not done by then.
std::vector<std::string> LinesJob(int lines, int sleep_s, int others_sleep_s = -1) {
  if (others_sleep_s < 0) others_sleep_s = sleep_s;
  return {"submit", "--cluster", "yarn", "--quiet", "--src_dir", MiniLoom::Source(kScripts), "--executes",
          "fail_with.py", "--python_binary_path", "/usr/bin/python3", "--task_params",
          "--task worker:1 --delay " + std::to_string(sleep_s) + " --others-sleep " + std::to_string(others_sleep_s) +
              " --lines " + std::to_string(lines),
          "--conf", "loom.worker.instances=2", "--conf", "loom.worker.memory=512m"};
}

void ExpectLogsOfEveryStream(YarnDoubleCluster& cluster, MiniLoom& client, const std::string& job) {
  RunResult out = client.Run({"logs", job, "--task", "worker:0"}, cluster.Env());
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_THAT(out.out, HasSubstr("worker:0 stdout line 1/3"));
  EXPECT_THAT(out.out, HasSubstr("worker:0 stdout line 3/3"));
  EXPECT_THAT(out.out, Not(HasSubstr("stderr line")));
  RunResult err = client.Run({"logs", job, "--task", "worker:1", "--stderr"}, cluster.Env());
  EXPECT_THAT(err.out, HasSubstr("worker:1 stderr line 2/3"));
  EXPECT_THAT(err.out, HasSubstr("fatal: simulated failure"));
  RunResult all = client.Run({"logs", job}, cluster.Env());
  EXPECT_THAT(all.out, HasSubstr("==> worker:0 stdout <=="));
  EXPECT_THAT(all.out, HasSubstr("==> worker:1 stdout <=="));
  RunResult am = client.Run({"logs", job, "--task", "am"}, cluster.Env());
  EXPECT_EQ(am.exit_code, 0) << am.err;
  EXPECT_THAT(am.out, HasSubstr("AM for " + job));
  RunResult executor = client.Run({"logs", job, "--task", "worker:1", "--file", "executor.log"}, cluster.Env());
  EXPECT_THAT(executor.out, HasSubstr("[executor]"));
  RunResult bad = client.Run({"logs", job, "--task", "worker:7"}, cluster.Env());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("has no task worker:7"));
}

TEST(YarnDaily, LogsFollowEveryTaskWithLabelsWhileTheJobRuns) {
  YarnDoubleCluster cluster;
  // worker:0 is done well before worker:1 fails and ends the job.
  Subprocess submit = cluster.loom().Start(LinesJob(3, 4, 1), "submit", cluster.Env());
  std::string id = cluster.loom().WaitUntilRunning(2, 60s);
  ASSERT_FALSE(id.empty()) << cluster.ContainerLogs("am.log");
  RunResult follow = cluster.loom().Run({"logs", id, "-f"}, cluster.Env());
  EXPECT_EQ(follow.exit_code, 0) << follow.err;
  EXPECT_THAT(follow.out, HasSubstr("[worker:0] worker:0 stdout line 1/3\n"));
  EXPECT_THAT(follow.out, HasSubstr("[worker:1] worker:1 stdout line 3/3\n"));
  EXPECT_THAT(follow.out, HasSubstr("[worker:0] worker:0 done"));
  cluster.loom().Collect(submit, "submit");
  ExpectLogsOfEveryStream(cluster, cluster.loom(), id);
}

TEST(YarnDaily, LogsOfAnEndedJobFromTheNodeManager) {
  YarnDoubleCluster cluster;
  RunResult r = cluster.loom().Run(LinesJob(3, 2, 0), cluster.Env());  // worker:0 done before worker:1 fails
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  ExpectLogsOfEveryStream(cluster, cluster.loom(), cluster.loom().OnlyJobId());
}

class AggregatedLogs : public ::testing::TestWithParam<std::string> {};

// On a real cluster, the case of the format it aggregates in runs, with the cluster as it is.
TEST_P(AggregatedLogs, AreReadFromHdfsOnceTheNodeManagerLetsGo) {
  std::function<void(yarn_double::YarnTestDouble::Options&)> aggregate;
  if (!YarnDoubleCluster::RealClusterConfDir()) aggregate = [](auto& o) { o.log_aggregation = GetParam(); };
  YarnDoubleCluster cluster(aggregate);
  if (auto why = cluster.RealClusterDoesNotAggregateAs(GetParam())) GTEST_SKIP() << *why;
  RunResult r = cluster.loom().Run(LinesJob(3, 2, 0), cluster.Env());  // worker:0 done before worker:1 fails
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  std::string id = cluster.loom().OnlyJobId();
  // As `yarn logs` does, from the RM's report (the double reports it as a real RM does).
  ASSERT_OK(cluster.WaitForLogAggregation(id, 60s));
  ExpectLogsOfEveryStream(cluster, cluster.loom(), id);
  // And from another client, which finds the job through YARN.
  MiniLoom elsewhere;
  ExpectLogsOfEveryStream(cluster, elsewhere, id);
}

INSTANTIATE_TEST_SUITE_P(YarnDaily, AggregatedLogs, ::testing::Values("TFile", "IFile"),
                         [](const auto& info) { return std::string(info.param); });

TEST(YarnDaily, LostNodeManagerFailsTheJobAndSaysSo) {
  LOOM_REQUIRE_YARN_DOUBLE("loses a NodeManager");
  YarnDoubleCluster cluster([](auto& o) {
    o.node_count = 3;
    o.node_memory_mb = 4096;
    o.nm_heartbeat_ms = 100;
    o.nm_liveness_expiry_ms = 1000;
  });
  std::vector<std::string> args = SleepJob();
  args.insert(args.end(), {"--conf", "loom.worker.memory=2g"});  // one worker per node at most
  Subprocess submit = cluster.loom().Start(args, "submit", cluster.Env());
  std::string id = cluster.loom().WaitUntilRunning(2, 60s);
  ASSERT_FALSE(id.empty()) << cluster.ContainerLogs("am.log");
  // The node of a worker that does not also run the AM.
  int am_node = -1, lost = -1;
  for (const auto& c : cluster.yarn().Containers()) {
    if (c.is_am) am_node = c.node;
  }
  std::string lost_container;
  for (const auto& c : cluster.yarn().Containers()) {
    if (!c.is_am && c.node != am_node) {
      lost = c.node;
      lost_container = c.id;
    }
  }
  ASSERT_GE(lost, 0) << "every worker shares the AM's node";
  ASSERT_OK(cluster.yarn().LoseNodeForTest(lost));
  RunResult r = cluster.loom().Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  history::JobView view = cluster.loom().View(id);
  EXPECT_EQ(view.state, "FAILED");
  ExpectEveryTaskRowFinal(view);
  // The task on the lost node failed (it was not stopped by Loom), and the record says why.
  for (const auto& t : view.tasks) {
    if (t.container != lost_container) continue;
    EXPECT_NE(t.state, TaskState::kKilled) << t.id << ": " << t.diagnostics;
  }
  EXPECT_THAT(view.diagnostics, HasSubstr("Container released on a *lost* node"));
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s));
  ExpectOnlyHistoryLeft(cluster);
}

TEST(YarnDaily, CrashedAmFailsTheJobAndItsStagingIsCleaned) {
  YarnDoubleCluster cluster;
  auto env = cluster.Env();
  env["LOOM_TEST_AM_CRASH_MS"] = "2500";
  RunResult r = cluster.loom().Run(SleepJob(), env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  std::string id = cluster.loom().OnlyJobId();
  EXPECT_EQ(cluster.Report(id).yarn_application_state(), ypb::FAILED);
  history::JobView view = cluster.loom().View(id);
  EXPECT_EQ(view.state, "FAILED");
  ExpectEveryTaskRowFinal(view);
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 15s));
  ExpectOnlyHistoryLeft(cluster);
}

TEST(YarnDaily, LiveTableOnATerminalShowsTheApplicationAndItsTrackingUrl) {
  YarnDoubleCluster cluster;
  // script(1) gives `loom submit` a terminal, as a user at a shell has.
  std::string cmd = MiniLoom::Binary() + " submit --cluster yarn --src_dir " + MiniLoom::Source(kScripts) +
                    " --executes fail_with.py --python_binary_path /usr/bin/python3"
                    " --task_params '--task worker:9 --others-sleep 2' --conf loom.worker.instances=1"
                    " --conf loom.worker.memory=512m";
  SpawnOptions o;
  o.argv = {"script", "-qec", cmd, "/dev/null"};
  o.env = cluster.loom().Env();
  for (const auto& [k, v] : cluster.Env()) o.env[k] = v;
  o.env["TERM"] = "xterm";
  o.stdout_path = cluster.loom().home() + "/tty.out";
  o.stderr_path = o.stdout_path;
  auto child = Subprocess::Spawn(o);
  ASSERT_OK(child);
  auto info = child->Wait();
  ASSERT_OK(info);
  std::string screen = ReadFile(o.stdout_path).value_or("");
  EXPECT_EQ(info->ShellCode(), 0) << screen;
  std::string id = cluster.loom().OnlyJobId();
  std::string app = cluster.ApplicationId(id);
  EXPECT_THAT(screen, HasSubstr("yarn " + app + "  http://"));  // the table's header line
  EXPECT_THAT(screen, HasSubstr("\033["));                     // redrawn in place: a live table
  EXPECT_THAT(screen, HasSubstr("SUCCEEDED"));
}

}  // namespace
}  // namespace loom::testing
