// Whole Loom jobs through the yarn backend: the real `loom` client, AM and executors, speaking
// Hadoop IPC, SASL DIGEST-MD5 and WebHDFS to the YARN test double (tests/yarn_double: an
// in-process RM + NM + WebHDFS that follows recorded Hadoop 3.3.6 exchanges; no Hadoop runs
// here; or a real cluster, see yarn_double_cluster.h). Containers are real processes; the
// training is real PyTorch.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <thread>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "core/inet_address.h"
#include "core/testing.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
namespace ypb = ::hadoop::yarn;

// `--src_dir SRC --executes SCRIPT` with the system python, then `extra`.
std::vector<std::string> JobArgs(const std::string& src, const std::string& script, std::vector<std::string> extra) {
  std::vector<std::string> args = {"--src_dir", MiniLoom::Source(src), "--executes", script, "--python_binary_path",
                                   "/usr/bin/python3"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
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
  // The tracking URL is the RM's web proxy's, kept once FINISHED (yarn-captures rm-rest/04); the
  // AM unregistered without a final one of its own, so the proxy sends users to the RM's page.
  EXPECT_THAT(report.trackingurl(), ::testing::EndsWith("/proxy/" + cluster.ApplicationId(id) + "/"));
  EXPECT_EQ(report.originaltrackingurl(), "N/A");
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
  for (const auto& t : view.tasks) EXPECT_EQ(t.state, TaskState::kSucceeded) << t.id;
  // Staging keeps only what the history needs, and the `loom` binary shared by later jobs.
  for (const std::string& f : cluster.StagingFiles()) {
    EXPECT_TRUE(f.find("/history/") != std::string::npos || f.ends_with("/config.xml") ||
                f.starts_with(cluster.StagingRoot() + "/cache/loom-"))
        << f;
  }
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 5s));
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
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s));
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
  ASSERT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).size() >= 5; }, 10s))
      << MiniLoom::JobProcesses(id).size() << " processes";
  RunResult kill = cluster.loom().Run({"kill", id}, cluster.Env());
  EXPECT_EQ(kill.exit_code, 0) << kill.out << kill.err;
  RunResult r = cluster.loom().Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(cluster.loom().View(id).state, "KILLED");
  EXPECT_EQ(cluster.Report(id).yarn_application_state(), ypb::KILLED);
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s))
      << MiniLoom::DescribeProcesses(MiniLoom::JobProcesses(id)) << cluster.ContainerLogs("am.log");
}

// Issue 18 item 5: the job's own files go to HDFS at once. Here the DataNode holds each CREATE's
// answer 300 ms, as a real close can wait for the block report; one after another, config.xml,
// job.json, the manifest and the src dir would never overlap. And the AM's container localizes
// only what the AM reads: no src dir (nor venv) to download before it can start.
TEST(YarnJob, TheJobsFilesAreStagedAtOnceAndTheAmGetsOnlyWhatItReads) {
  LOOM_REQUIRE_YARN_DOUBLE("holds the DataNode's answers and reads container dirs");
  YarnDoubleCluster cluster;
  cluster.hdfs().set_datanode_close_ms(300);
  RunResult r = cluster.Submit(
      JobArgs(kScripts, "fail_with.py", {"--task_params", "--task none:0", "--conf", "loom.worker.instances=1"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  // Only staging writes several files at once: the AM's and the client's history copies come
  // one file at a time.
  EXPECT_GE(cluster.hdfs().max_concurrent_creates(), 4);
  int checked = 0;
  for (const auto& c : cluster.yarn().Containers()) {
    if (c.work_dir.empty() || !fs::exists(c.work_dir)) continue;
    ++checked;
    EXPECT_TRUE(fs::exists(c.work_dir + "/loom-staging.json") == c.is_am) << c.id;
    EXPECT_TRUE(fs::exists(fs::symlink_status(c.work_dir + "/loom-src")) != c.is_am) << c.id;
  }
  EXPECT_EQ(checked, 2) << "the AM's and the worker's container dirs";
}

// User code shares the container's working dir and Unix user with the executor: the
// NodeManager's container_tokens (the job secret, the forwarded MLFLOW_TRACKING_TOKEN) must be
// gone before it starts, and the executor keeps the secret in memory, in no file. The task
// lists every 64-hex-digit string in its working dir's files (the secret's form) for the test
// to look for the job's secret.
TEST(YarnJob, UserCodeFindsNoContainerCredentialsNorTheJobSecret) {
  YarnDoubleCluster cluster;
  const std::string src = cluster.root() + "/secret-probe";
  std::filesystem::create_directories(src);
  ASSERT_OK(WriteFileAtomic(src + "/probe.py", R"PY(import os, re, sys
bad = [f"{n} exists" for n in ("container_tokens", ".loom.secret") if os.path.lexists(n)]
tokens = os.environ.get("HADOOP_TOKEN_FILE_LOCATION", "")
if os.path.basename(tokens) != ".loom.hdfs-tokens":
    bad.append("HADOOP_TOKEN_FILE_LOCATION=" + tokens)
mlflow = os.environ.get("MLFLOW_TRACKING_TOKEN", "")
if not mlflow:
    bad.append("no MLFLOW_TRACKING_TOKEN")
hexes = set()
for name in sorted(os.listdir(".")):
    if not os.path.isfile(name):
        continue
    data = open(name, "rb").read()
    if mlflow and mlflow.encode() in data:
        bad.append("the MLflow token is in " + name)
    hexes.update(m.decode() for m in re.findall(rb"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])", data))
for h in sorted(hexes):
    print("hex64", h)
print("probe:", "; ".join(bad) if bad else "clean")
sys.exit(1 if bad else 0)
)PY"));
  const std::string mlflow = "mlflow-token-" + std::to_string(::getpid());
  auto env = cluster.Env();
  env["MLFLOW_TRACKING_TOKEN"] = mlflow;
  Subprocess submit = cluster.loom().Start({"submit", "--cluster", "yarn", "--src_dir", src, "--executes", "probe.py",
                                            "--python_binary_path", "/usr/bin/python3", "--conf",
                                            "tony.worker.instances=1", "--conf", "tony.am.memory=512m", "--conf",
                                            "tony.worker.memory=512m"},
                                           "submit", env);
  // The client removes its copy of the secret when the job ends: read it while it runs.
  std::string secret;
  ASSERT_TRUE(loom::testing::Eventually([&] {
    std::vector<std::string> ids = cluster.loom().JobIds();
    if (ids.size() == 1) secret = Trim(ReadFile(cluster.loom().Dir(ids[0]).secret()).value_or(""));
    return !secret.empty();
  }, 30s));
  RunResult r = cluster.loom().Collect(submit, "submit");
  // The task's stdout as any user reads it, on the double or a real cluster.
  std::string out = cluster.loom().Run({"logs", cluster.loom().OnlyJobId(), "--task", "worker:0"}, env).out;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << out << cluster.ContainerLogs("executor.log");
  EXPECT_THAT(out, HasSubstr("probe: clean"));
  ASSERT_EQ(secret.size(), 64u);
  EXPECT_THAT(out, Not(HasSubstr("hex64 " + secret))) << "the job secret is in a file user code can read";
}

TEST(YarnJob, TaskLargerThanAnyNodeIsRefusedAtSubmit) {
  YarnDoubleCluster cluster;  // sized to the cluster: 1 GiB more than its largest node
  int64_t largest_mb = 0;
  for (const auto& n : cluster.RunningNodes()) largest_mb = std::max<int64_t>(largest_mb, n.capability().memory());
  ASSERT_GT(largest_mb, 0);
  RunResult r = cluster.Submit(JobArgs(kScripts, "fail_with.py",
                                       {"--conf", "tony.worker.instances=1", "--conf",
                                        "tony.worker.memory=" + std::to_string(largest_mb + 1024) + "m"}));
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

// A job that succeeds at once: fail_with.py fails only the task it names, and worker:9 is none.
std::vector<std::string> QuickJob(std::vector<std::string> extra) {
  std::vector<std::string> args = JobArgs(kScripts, "fail_with.py",
                                          {"--task_params", "--task worker:9", "--conf", "tony.worker.instances=2",
                                           "--conf", "tony.am.memory=512m", "--conf", "tony.worker.memory=512m"});
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// loom.docker.*: every task container's launch context asks YARN's Docker runtime for its
// type's image (per-type image over the containers' one), with the mounts, on the host network;
// the AM's does not (it runs only loom). The double, like a NodeManager with the
// DefaultContainerExecutor, runs them as plain processes, so the job runs here.
// loom.application.type is the application's type.
TEST(YarnJob, TaskContainersAreAskedToRunInTheirTypesDockerImage) {
  LOOM_REQUIRE_YARN_DOUBLE("the launch contexts the NodeManager received");
  YarnDoubleCluster cluster;
  RunResult r = cluster.Submit(QuickJob(
      {"--conf", "tony.ps.instances=1", "--conf", "tony.ps.memory=256m", "--conf", "tony.docker.enabled=true",
       "--conf", "tony.docker.containers.image=registry.example.com:5000/ml/train:1.2", "--conf",
       "loom.docker.ps.image=repo/ps:2", "--conf", "tony.docker.containers.mount=/etc/hosts:/etc/hosts:ro,/tmp:/scratch",
       "--conf", "tony.application.type=TRAINING"}));
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  EXPECT_EQ(cluster.Report(id).applicationtype(), "TRAINING");
  std::string app = cluster.ApplicationId(id);
  std::map<std::string, std::string> task_of;  // container id -> task
  for (const auto& t : cluster.loom().View(id).tasks) task_of[t.container] = t.id;
  int tasks = 0, ams = 0;
  for (const auto& c : cluster.yarn().Containers()) {
    if (c.app_id != app) continue;
    auto env = [&](const char* k) { return c.launch_env.count(k) ? c.launch_env.at(k) : std::string("(unset)"); };
    if (c.is_am) {
      ++ams;
      EXPECT_EQ(env("YARN_CONTAINER_RUNTIME_TYPE"), "(unset)") << "the AM runs only loom, outside Docker";
      EXPECT_EQ(env("YARN_CONTAINER_RUNTIME_DOCKER_IMAGE"), "(unset)");
      continue;
    }
    ++tasks;
    std::string task = task_of[c.id];
    SCOPED_TRACE(c.id + " (" + task + ")");
    EXPECT_EQ(env("LOOM_TASK_ID"), task);
    EXPECT_EQ(env("YARN_CONTAINER_RUNTIME_TYPE"), "docker");
    EXPECT_EQ(env("YARN_CONTAINER_RUNTIME_DOCKER_IMAGE"),
              task == "ps:0" ? "repo/ps:2" : "registry.example.com:5000/ml/train:1.2");
    EXPECT_EQ(env("YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS"), "/etc/hosts:/etc/hosts:ro,/tmp:/scratch");
    EXPECT_EQ(env("YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK"), "host");
    EXPECT_EQ(env("PATH"), "(unset)") << "the image's own PATH must stand";
  }
  EXPECT_EQ(ams, 1);
  EXPECT_EQ(tasks, 3);
  // Without loom.docker.enabled no container is asked to run in Docker.
  YarnDoubleCluster plain;
  ASSERT_EQ(plain.Submit(QuickJob({})).exit_code, 0);
  for (const auto& c : plain.yarn().Containers()) {
    EXPECT_EQ(c.launch_env.count("YARN_CONTAINER_RUNTIME_TYPE"), 0u);
    if (!c.is_am) {
      EXPECT_EQ(c.launch_env.count("PATH"), 1u) << "plain containers get the AM's PATH";
    }
  }
  EXPECT_EQ(plain.Report(plain.loom().OnlyJobId()).applicationtype(), "LOOM");
}

// What YARN would refuse or change later is refused at submit, naming the key as written, and
// nothing is staged or submitted.
TEST(YarnJob, DockerAndApplicationTypeMistakesAreRefusedBeforeAnythingIsStaged) {
  YarnDoubleCluster cluster;
  struct Case {
    std::vector<std::string> conf;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"tony.docker.enabled=true", "tony.docker.containers.image=repo/train:1", "tony.docker.containers.mount=/data"},
       "tony.docker.containers.mount: '/data' in '/data' is not source:destination[:mode]"},
      {{"tony.docker.enabled=true", "tony.docker.containers.image=Repo/Train"},
       "Docker image 'Repo/Train' of task type 'worker'"},
      {{"tony.application.type=A-TYPE-LONGER-THAN-TWENTY"},
       "tony.application.type='A-TYPE-LONGER-THAN-TWENTY': YARN keeps an application type of 1 to 20 characters"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> extra;
    for (const std::string& kv : c.conf) extra.insert(extra.end(), {"--conf", kv});
    RunResult r = cluster.Submit(QuickJob(extra));
    SCOPED_TRACE(c.conf.back());
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message));
  }
  EXPECT_TRUE(cluster.loom().JobIds().empty());
  EXPECT_TRUE(cluster.JobStagingFiles().empty());
  if (!cluster.real()) {
    EXPECT_TRUE(cluster.yarn().ApplicationIds().empty());
  }
}

// loom.application.yarn-conf-path / hdfs-conf-path: the files they name are read over
// HADOOP_CONF_DIR's. Here the directory's own files name a ResourceManager and a NameNode that
// do not exist: the job reaches the cluster only through the named files, and so does a later
// `loom status`.
TEST(YarnJob, SiteFilesNamedByTheJobWinOverHadoopConfDir) {
  YarnDoubleCluster cluster;
  std::string good = cluster.ConfDir(), bad = cluster.root() + "/stale-conf";
  ASSERT_OK(MakeDirs(bad));
  ASSERT_OK(WriteFileAtomic(bad + "/core-site.xml", ReadFile(good + "/core-site.xml").value_or("")));
  auto site = [](const std::string& props) { return "<?xml version=\"1.0\"?>\n<configuration>\n" + props + "</configuration>\n"; };
  auto prop = [](const std::string& k, const std::string& v) {
    return "<property><name>" + k + "</name><value>" + v + "</value></property>\n";
  };
  ASSERT_OK(WriteFileAtomic(bad + "/hdfs-site.xml", site(prop("dfs.namenode.http-address", "127.0.0.1:1"))));
  ASSERT_OK(WriteFileAtomic(bad + "/yarn-site.xml",
                            site(prop("yarn.resourcemanager.address", "127.0.0.1:1") +
                                 prop("yarn.resourcemanager.scheduler.address", "127.0.0.1:1") +
                                 prop("yarn.resourcemanager.connect.retry-interval.ms", "100"))));
  std::map<std::string, std::string> env = cluster.EnvWithConfDir(bad);
  std::vector<std::string> args = {"submit", "--cluster", "yarn"};
  for (const std::string& a :
       QuickJob({"--conf", "loom.application.yarn-conf-path=" + good + "/yarn-site.xml", "--conf",
                 "tony.application.hdfs-conf-path=" + good + "/hdfs-site.xml"})) {
    args.push_back(a);
  }
  RunResult r = cluster.loom().Run(args, env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  std::string id = cluster.loom().OnlyJobId();
  EXPECT_EQ(cluster.Report(id).final_application_status(), ypb::APP_SUCCEEDED);
  RunResult status = cluster.loom().Run({"status", id}, env);
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_THAT(status.out, HasSubstr("SUCCEEDED"));
  // A named file that is not there is the user's to fix.
  args.insert(args.end(), {"--conf", "tony.application.yarn-conf-path=" + bad + "/nosuch-site.xml"});
  RunResult missing = cluster.loom().Run(args, env);
  EXPECT_EQ(missing.exit_code, 2) << missing.out << missing.err;
  EXPECT_THAT(missing.err, HasSubstr("tony.application.yarn-conf-path=" + bad + "/nosuch-site.xml: " + bad +
                                     "/nosuch-site.xml is not a file"));
  EXPECT_EQ(cluster.loom().JobIds().size(), 1u);
}

// A ResourceManager that accepts connections and drops them, counting those that open with
// Hadoop IPC's "hrpc" (another process's stray connection to this port is not loom's try).
class DroppingServer {
 public:
  DroppingServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr = Ipv4Address(INADDR_LOOPBACK, 0);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    EXPECT_EQ(::listen(fd_, 16), 0);
    thread_ = std::thread([this] {
      int c;
      while ((c = ::accept(fd_, nullptr, nullptr)) >= 0) {
        timeval limit{2, 0};
        ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
        char magic[4];
        if (::recv(c, magic, sizeof(magic), MSG_WAITALL) == 4 && std::string_view(magic, 4) == "hrpc") ++accepted_;
        ::close(c);
      }
    });
  }
  ~DroppingServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  int fd_ = -1, port_ = 0;
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

// loom.application.num-client-rm-connect-retries: a ResourceManager that does not answer is
// tried that many more times, yarn.resourcemanager.connect.retry-interval.ms apart, then the
// submit gives up (exit 1: the cluster could not be asked) saying how often it tried.
TEST(YarnJob, UnansweringResourceManagerIsTriedAgainAsConfigured) {
  DroppingServer rm;
  MiniLoom loom;
  std::string conf = loom.home() + "/conf";
  ASSERT_OK(MakeDirs(conf));
  ASSERT_OK(WriteFileAtomic(conf + "/core-site.xml",
                            "<configuration><property><name>fs.defaultFS</name><value>hdfs://127.0.0.1:1</value>"
                            "</property></configuration>\n"));
  ASSERT_OK(WriteFileAtomic(
      conf + "/yarn-site.xml",
      "<configuration><property><name>yarn.resourcemanager.address</name><value>127.0.0.1:" +
          std::to_string(rm.port()) +
          "</value></property><property><name>yarn.resourcemanager.connect.retry-interval.ms</name><value>300</value>"
          "</property></configuration>\n"));
  auto started = std::chrono::steady_clock::now();
  std::vector<std::string> args = {"submit", "--cluster", "yarn"};
  for (const std::string& a : QuickJob({"--conf", "tony.application.num-client-rm-connect-retries=2"})) args.push_back(a);
  RunResult r = loom.Run(args, {{"HADOOP_CONF_DIR", conf}, {"USER", "root"}});
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(rm.accepted(), 3) << r.err;  // the first try and two more
  EXPECT_GE(took, 600ms);
  EXPECT_THAT(r.err, HasSubstr("trying again in 300 ms (1 of 2, tony.application.num-client-rm-connect-retries)"));
  EXPECT_THAT(r.err, HasSubstr("3 tries, 300 ms apart (tony.application.num-client-rm-connect-retries=2"));
  EXPECT_TRUE(loom.JobIds().empty());
  // 0: one try only.
  args.back() = "tony.application.num-client-rm-connect-retries=0";
  RunResult once = loom.Run(args, {{"HADOOP_CONF_DIR", conf}, {"USER", "root"}});
  EXPECT_EQ(once.exit_code, 1);
  EXPECT_EQ(rm.accepted(), 4) << once.err;
}

}  // namespace
}  // namespace loom::testing
