// Whole Loom jobs through the yarn backend: the real `loom` client, AM and executors, speaking
// Hadoop IPC, SASL DIGEST-MD5 and WebHDFS to the YARN test double (tests/yarn_double: an
// in-process RM + NM + WebHDFS that follows recorded Hadoop 3.3.6 exchanges; no Hadoop runs
// here; or a real cluster, see yarn_double_cluster.h). Containers are real processes; the
// training is real PyTorch.

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "core/testing.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
namespace ypb = ::hadoop::yarn;

const std::string kScripts = "tests/integration/scripts";

// `--src_dir SRC --executes SCRIPT` with the system python, then `extra`.
std::vector<std::string> JobArgs(const std::string& src, const std::string& script, std::vector<std::string> extra) {
  std::vector<std::string> args = {"--src_dir", MiniLoom::Source(src), "--executes", script, "--python_binary_path",
                                   "/usr/bin/python3"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The command lines of the job's live processes, for failure messages.
std::string Describe(const std::vector<pid_t>& pids) {
  std::string out;
  for (pid_t p : pids) {
    std::string cmd = ReadFile("/proc/" + std::to_string(p) + "/cmdline").value_or("");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    out += std::to_string(p) + ": " + cmd + "\n";
  }
  return out;
}

TEST(YarnJob, PyTorchDdpTrainsToGoodAccuracyOnYarn) {
  YarnDoubleCluster cluster;
  RunResult r = cluster.Submit(JobArgs("examples/pytorch", "train_ddp.py",
                                       {"--conf_file", MiniLoom::Source("examples/pytorch/tony.xml"), "--conf",
                                        "tony.am.memory=1g"}));
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log") << cluster.ContainerLogs("executor.log");
  EXPECT_THAT(r.out, HasSubstr("SUCCEEDED"));
  ypb::ApplicationReportProto report = cluster.Report(id);
  EXPECT_EQ(report.yarn_application_state(), ypb::FINISHED);
  EXPECT_EQ(report.final_application_status(), ypb::APP_SUCCEEDED);
  EXPECT_EQ(report.applicationtype(), "LOOM");
  // The AM's status page (a real RM reports it through its web proxy).
  EXPECT_THAT(report.trackingurl(), ::testing::StartsWith(cluster.real() ? "http://" : "http://localhost:"));
  // Both workers trained; their stdout is the containers' YARN logs.
  std::string out = cluster.ContainerLogs("stdout");
  size_t accuracies = 0;
  for (size_t pos = out.find("test accuracy: "); pos != std::string::npos; pos = out.find("test accuracy: ", pos + 1)) {
    ++accuracies;
    EXPECT_GE(std::stod(LineAfter(out.substr(pos), "test accuracy: ")), 0.9) << out;
  }
  EXPECT_GE(accuracies, 1u) << out;
  // The local job dir mirrors the AM's history.
  history::JobView view = cluster.loom().View(id);
  EXPECT_EQ(view.state, "SUCCEEDED");
  ASSERT_EQ(view.tasks.size(), 2u);
  for (const auto& t : view.tasks) EXPECT_EQ(t.state, "SUCCEEDED") << t.id;
  // Staging keeps only what the history needs, and the `loom` binary shared by later jobs.
  for (const std::string& f : cluster.StagingFiles()) {
    EXPECT_TRUE(f.find("/history/") != std::string::npos || f.ends_with("/config.xml") ||
                f.starts_with(cluster.StagingRoot() + "/cache/loom-"))
        << f;
  }
  EXPECT_TRUE(MiniLoom::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 5s));
}

TEST(YarnJob, FailingWorkerFailsTheApplicationWithDiagnostics) {
  YarnDoubleCluster cluster;
  RunResult r = cluster.Submit(JobArgs(kScripts, "fail_with.py",
                                       {"--task_params", "--task worker:1 --code 3 --others-sleep 120", "--conf",
                                        "tony.worker.instances=2", "--conf", "tony.application.framework=pytorch",
                                        "--conf", "tony.am.memory=512m", "--conf", "tony.worker.memory=512m"}));
  std::string id = cluster.loom().OnlyJobId();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err << cluster.ContainerLogs("am.log");
  ypb::ApplicationReportProto report = cluster.Report(id);
  EXPECT_EQ(report.yarn_application_state(), ypb::FINISHED);
  EXPECT_EQ(report.final_application_status(), ypb::APP_FAILED);
  EXPECT_THAT(report.diagnostics(), HasSubstr("worker:1"));
  RunResult status = cluster.loom().Run({"status", id});
  EXPECT_EQ(status.exit_code, 1);
  EXPECT_THAT(status.out, HasSubstr("FAILED"));
  EXPECT_THAT(status.out, HasSubstr("worker:1"));
  EXPECT_TRUE(MiniLoom::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s));
}

TEST(YarnJob, LoomKillKillsTheApplicationAndEveryProcess) {
  YarnDoubleCluster cluster;
  std::vector<std::string> args = {"submit", "--cluster", "yarn"};
  for (auto& a : JobArgs(kScripts, "sleep_forever.py",
                         {"--conf", "loom.worker.instances=2", "--conf", "loom.am.memory=512m", "--conf",
                          "loom.worker.memory=512m", "--conf", "loom.task.stop-grace-ms=1000"})) {
    args.push_back(a);
  }
  Subprocess submit = cluster.loom().Start(args, "submit", cluster.Env());
  std::string id = cluster.loom().WaitUntilRunning(2, 60s);
  ASSERT_FALSE(id.empty()) << cluster.ContainerLogs("am.log");
  ASSERT_TRUE(MiniLoom::Eventually([&] { return MiniLoom::JobProcesses(id).size() >= 5; }, 10s))
      << MiniLoom::JobProcesses(id).size() << " processes";
  RunResult kill = cluster.loom().Run({"kill", id}, cluster.Env());
  EXPECT_EQ(kill.exit_code, 0) << kill.out << kill.err;
  RunResult r = cluster.loom().Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(cluster.loom().View(id).state, "KILLED");
  EXPECT_EQ(cluster.Report(id).yarn_application_state(), ypb::KILLED);
  EXPECT_TRUE(MiniLoom::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s))
      << Describe(MiniLoom::JobProcesses(id)) << cluster.ContainerLogs("am.log");
}

TEST(YarnJob, TaskLargerThanAnyNodeIsRefusedAtSubmit) {
  LOOM_REQUIRE_YARN_DOUBLE("nodes of 4 GiB");
  YarnDoubleCluster cluster([](auto& o) { o.node_memory_mb = 4096; });
  RunResult r = cluster.Submit(
      JobArgs(kScripts, "fail_with.py", {"--conf", "tony.worker.instances=1", "--conf", "tony.worker.memory=8g"}));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("no YARN node is that large"));
  EXPECT_TRUE(cluster.loom().JobIds().empty());
}

TEST(YarnJob, MissingHadoopConfDirIsAUsageError) {
  MiniLoom loom;
  RunResult r = loom.Run({"submit", "--cluster", "yarn", "--src_dir", MiniLoom::Source(kScripts), "--executes",
                          "fail_with.py", "--conf", "tony.worker.instances=1"},
                         {{"HADOOP_CONF_DIR", ""}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("HADOOP_CONF_DIR"));
}

}  // namespace
}  // namespace loom::testing
