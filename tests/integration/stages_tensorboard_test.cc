// The runtime of four TonY keys, with the real `loom` binary: two-stage ordering
// (loom.application.prepare-stage / training-stage), the sidecar TensorBoard
// (loom.application.tensorboard-log-dir), loom.task.executor.registry-timeout-sec and
// loom.task.metrics-interval-ms; the stages and TensorBoard on the YARN test double too.

#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "core/inet_address.h"
#include "history/event_log.h"
#include "mini_loom.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::vector<std::string> Submit(std::vector<std::string> extra) {
  std::vector<std::string> args = {"submit", "--src_dir", MiniLoom::Source(kScripts), "--executes", "stage_task.py",
                                   "--python_binary_path", "/usr/bin/python3", "--conf", "loom.task.stop-grace-ms=1000"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// A two-stage PyTorch job: dbloader (prepare) writes DIR/prepared once DIR/go exists (or
// fails with `prepare_code`); two workers (training) need it.
std::vector<std::string> TwoStageJob(const std::string& dir, int prepare_code = 0) {
  return {"--conf", "loom.application.framework=pytorch", "--conf", "loom.dbloader.instances=1", "--conf",
          "loom.worker.instances=2", "--conf", "loom.application.prepare-stage=dbloader", "--conf",
          "loom.dbloader.command=/usr/bin/python3 stage_task.py prepare " + dir + " --wait-for " + dir +
              "/go --code " + std::to_string(prepare_code),
          "--conf", "loom.worker.command=/usr/bin/python3 stage_task.py train " + dir};
}

double Seconds(const fs::path& file) { return std::stod(ReadFile(file.string()).value_or("0")); }

void Touch(const fs::path& p) { std::ofstream(p) << "go\n"; }

// Whether `task` of job `id` runs.
bool TaskRunning(const MiniLoom& loom, const std::string& id, const std::string& task) {
  history::JobView view = loom.View(id);
  const auto* t = view.FindTask(task);
  return t != nullptr && t->state == TaskState::kRunning;
}

// The events of job `id` so far.
std::vector<json> Events(MiniLoom& loom, const std::string& id) { return history::ReadEvents(loom.Dir(id).events()); }

// GET `url` (http://host:port/path) over plain HTTP/1.0; the body, "" on any failure.
std::string HttpGet(const std::string& url) {
  std::smatch m;
  std::regex re("http://([^:/]+):([0-9]+)(/.*)?");
  if (!std::regex_match(url, m, re)) return "";
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(m[1].str().c_str(), m[2].str().c_str(), &hints, &res) != 0) return "";
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool connected = ::connect(fd, res->ai_addr, res->ai_addrlen) == 0;
  ::freeaddrinfo(res);
  std::string got;
  if (connected) {
    std::string req = "GET " + (m[3].matched ? m[3].str() : "/") + " HTTP/1.0\r\nHost: " + m[1].str() + "\r\n\r\n";
    if (::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) got.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  size_t body = got.find("\r\n\r\n");
  return got.rfind("HTTP/1.", 0) == 0 && got.find(" 200 ") != std::string::npos && body != std::string::npos
             ? got.substr(body + 4)
             : "";
}

// ---- Two stages ---------------------------------------------------------------------------

TEST(TwoStages, TrainingStartsOnlyAfterThePrepareStageSucceeded) {
  MiniLoom loom;
  fs::path dir = fs::path(loom.home()) / "shared";
  fs::create_directories(dir);
  Subprocess submit = loom.Start(Submit(TwoStageJob(dir.string())), "submit");
  std::string id;
  ASSERT_TRUE(loom.WaitForJob([&](const std::string& job) { return TaskRunning(loom, job, "dbloader:0"); }, 60s, &id));
  // The prepare stage runs (held until DIR/go): the workers were not even asked for.
  RunResult status = loom.Run({"status", id});
  EXPECT_THAT(status.out, HasSubstr("worker:0 waiting for the prepare stage (dbloader)")) << status.out;
  EXPECT_THAT(status.out, HasSubstr("worker:1 waiting for the prepare stage (dbloader)"));
  json j = json::parse(loom.Run({"status", id, "--json"}).out);
  for (const auto& t : j["tasks"]) {
    if (t["task"].get<std::string>().rfind("worker:", 0) == 0) {
      EXPECT_EQ(t["state"], "PENDING");
      EXPECT_EQ(t.value("waiting", ""), "for the prepare stage (dbloader)");
    }
  }
  EXPECT_FALSE(fs::exists(dir / "started-worker-0"));
  EXPECT_FALSE(fs::exists(loom.Dir(id).task_stdout({"worker", 0})));
  Touch(dir / "go");
  RunResult r = loom.Collect(submit, "submit");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << loom.TaskOutput(id, {"worker", 0}, true);
  EXPECT_THAT(r.out, HasSubstr("prepare stage succeeded; training stage started: worker:0, worker:1"));

  // Each worker found the prepared data, and started after the prepare task had finished:
  // by the tasks' own clocks and by the AM's record.
  double prepared_at = Seconds(dir / "ended-dbloader-0");
  ASSERT_GT(prepared_at, 0);
  history::JobView view = loom.View(id);
  int64_t loader_done = view.FindTask("dbloader:0")->finished_ms;
  for (int i = 0; i < 2; ++i) {
    std::string task = "worker-" + std::to_string(i);
    EXPECT_GE(Seconds(dir / ("started-" + task)), prepared_at) << task;
    EXPECT_THAT(loom.TaskOutput(id, {"worker", i}),
                HasSubstr("found rows=42 rank " + std::to_string(i) + " of 2"));  // the training stage's own world
    EXPECT_GE(view.FindTask("worker:" + std::to_string(i))->started_ms, loader_done);
    EXPECT_EQ(view.FindTask("worker:" + std::to_string(i))->state, TaskState::kSucceeded);
  }
  EXPECT_TRUE(MiniLoom::JobProcesses(id).empty());
}

TEST(TwoStages, APrepareFailureFailsTheJobNamingItAndTrainingNeverStarts) {
  MiniLoom loom;
  fs::path dir = fs::path(loom.home()) / "shared";
  fs::create_directories(dir);
  Touch(dir / "go");
  RunResult r = loom.Run(Submit(TwoStageJob(dir.string(), 3)));
  std::string id = loom.OnlyJobId();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("prepare stage failed: task dbloader:0 failed: exit code 3"));
  history::JobView view = loom.View(id);
  EXPECT_THAT(view.diagnostics, HasSubstr("prepare stage failed: task dbloader:0 failed"));
  EXPECT_THAT(view.diagnostics, HasSubstr("the training stage (worker) was not started"));
  for (int i = 0; i < 2; ++i) {
    const auto* w = view.FindTask("worker:" + std::to_string(i));
    EXPECT_EQ(w->state, TaskState::kKilled);
    EXPECT_EQ(w->started_ms, 0);
    EXPECT_TRUE(w->container.empty());  // no container was ever asked for
    EXPECT_FALSE(fs::exists(dir / ("started-worker-" + std::to_string(i))));
  }
  EXPECT_TRUE(MiniLoom::JobProcesses(id).empty());
}

// ---- TensorBoard --------------------------------------------------------------------------

// A `tensorboard` for tests (none is installed): serves the log dir's index.html on --port.
fs::path FakeTensorBoard(const fs::path& bin) {
  fs::create_directories(bin);
  fs::path tb = bin / "tensorboard";
  std::ofstream(tb) << R"(#!/usr/bin/python3
import argparse, functools, http.server
p = argparse.ArgumentParser()
p.add_argument("--logdir")
p.add_argument("--port", type=int)
p.add_argument("--host", default="localhost")  # TensorBoard 2.x's default
a = p.parse_args()
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=a.logdir)
http.server.HTTPServer((a.host, a.port), handler).serve_forever()
)";
  ::chmod(tb.c_str(), 0755);
  return bin;
}

// The AM's status page, as the AM recorded it when it started.
std::string StatusUrl(MiniLoom& loom, const std::string& id) {
  for (const json& e : Events(loom, id)) {
    if (e.value("event", "") == "AM_STARTED") return e.value("status_url", "");
  }
  return "";
}

TEST(TensorBoard, TheSidecarServesItsLogDirAndItsLinkAnswers) {
  MiniLoom loom;
  fs::path dir = fs::path(loom.home()) / "shared", logs = fs::path(loom.home()) / "tb-logs";
  fs::create_directories(dir);
  fs::create_directories(logs);
  std::ofstream(logs / "index.html") << "fake tensorboard of " << logs.string() << "\n";
  fs::path bin = FakeTensorBoard(fs::path(loom.home()) / "bin");
  Subprocess submit = loom.Start(
      Submit({"--conf", "loom.worker.instances=1", "--sidecar_tensorboard_log_dir", logs.string(), "--shell_env",
              "PATH=" + bin.string() + ":/usr/bin:/bin", "--conf",
              "loom.worker.command=/bin/sh -c 'while [ ! -e " + (dir / "go").string() + " ]; do sleep 0.05; done'"}),
      "submit");
  std::string id;
  history::JobView view;
  ASSERT_TRUE(loom.WaitForJob(
      [&](const std::string& job) {
        view = loom.View(job);
        return !view.tensorboard_url.empty();
      },
      60s, &id))
      << loom.TaskOutput(id, {"tensorboard", 0}, true);
  EXPECT_EQ(view.tensorboard_task, "tensorboard:0");
  // The AM's dashboard shows it (the job's JSON, which its page draws), and the link answers with
  // the log dir's content.
  std::string job = HttpGet(StatusUrl(loom, id) + "api/jobs/" + id);
  json job_json = json::parse(job, nullptr, false);
  EXPECT_EQ(job_json.is_object() ? job_json.value("tensorboard_url", "") : "", view.tensorboard_url) << job;
  EXPECT_EQ(HttpGet(view.tensorboard_url), "fake tensorboard of " + logs.string() + "\n");
  // `loom status` shows it, as does its JSON; and the AM's own page (the local backend has no
  // tracking URL of a cluster's UI to show instead).
  const std::string dashboard = StatusUrl(loom, id);
  ASSERT_FALSE(dashboard.empty());
  RunResult status = loom.Run({"status", id});
  EXPECT_THAT(status.out, HasSubstr("TensorBoard: " + view.tensorboard_url));
  EXPECT_THAT(status.out, HasSubstr("Dashboard: " + dashboard));
  json status_json = json::parse(loom.Run({"status", id, "--json"}).out);
  EXPECT_EQ(status_json["tensorboard_url"], view.tensorboard_url);
  EXPECT_EQ(status_json["dashboard_url"], dashboard);
  EXPECT_THAT(HttpGet(dashboard + "api/info"), HasSubstr("\"job_id\":\"" + id + "\""));  // the dashboard's API

  Touch(dir / "go");
  RunResult r = loom.Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // The submit follower printed both once known.
  EXPECT_THAT(r.out, HasSubstr("TensorBoard (tensorboard:0): " + view.tensorboard_url));
  EXPECT_THAT(r.out, HasSubstr("; dashboard: " + dashboard));
  EXPECT_EQ(loom.View(id).FindTask("tensorboard:0")->state, TaskState::kKilled);  // a sidecar: stopped at the end
  EXPECT_TRUE(MiniLoom::JobProcesses(id).empty());
  // Once the job ended nothing answers at either link, and neither is shown any more.
  EXPECT_EQ(HttpGet(view.tensorboard_url), "");
  EXPECT_EQ(HttpGet(dashboard), "");
  RunResult after = loom.Run({"status", id});
  EXPECT_THAT(after.out, Not(HasSubstr("TensorBoard:")));
  EXPECT_THAT(after.out, Not(HasSubstr("Dashboard:")));
  json after_json = json::parse(loom.Run({"status", id, "--json"}).out);
  EXPECT_FALSE(after_json.contains("tensorboard_url")) << after_json.dump();
  EXPECT_FALSE(after_json.contains("dashboard_url")) << after_json.dump();
}

// ---- Registry timeout ---------------------------------------------------------------------

// A port on which nothing listens.
int ClosedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = Ipv4Address(INADDR_LOOPBACK, 0);
  socklen_t len = sizeof(a);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// `loom executor` for a task whose AM is nowhere.
std::map<std::string, std::string> OrphanExecutorEnv(MiniLoom& loom, const std::string& job_id) {
  fs::path secret = fs::path(loom.home()) / "secret";
  std::ofstream(secret) << std::string(64, 'a') << "\n";
  ::chmod(secret.c_str(), 0600);
  return {{"LOOM_JOB_ID", job_id},
          {"LOOM_TASK_ID", "worker:0"},
          {"LOOM_AM_ADDRESS", "127.0.0.1:" + std::to_string(ClosedPort())},
          {"LOOM_SECRET_FILE", secret.string()},
          {"LOOM_LOG_DIR", loom.home()}};
}

TEST(RegistryTimeout, AnExecutorThatCannotReachItsAmGivesUpAfterTheTimeout) {
  MiniLoom loom;
  auto env = OrphanExecutorEnv(loom, "job_registry_timeout");
  env["LOOM_REGISTRY_TIMEOUT_MS"] = "1500";
  auto start = std::chrono::steady_clock::now();
  RunResult r = loom.Run({"executor"}, env);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.exit_code, 70) << r.out << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("gave up registering with the AM at " + env["LOOM_AM_ADDRESS"] +
                               " after 1500 ms (loom.task.executor.registry-timeout-sec=1.5)"));
  EXPECT_GE(took, 1500ms);
  EXPECT_LT(took, 6s);
}

TEST(RegistryTimeout, ZeroRetriesUntilStopped) {
  MiniLoom loom;
  auto env = OrphanExecutorEnv(loom, "job_registry_forever");
  Subprocess executor = loom.Start({"executor"}, "executor", env);
  // Well past the 30 s an executor used to give up after would take too long; 4 s of retries
  // (many backoff rounds) show it does not give up on a timeout of its own.
  EXPECT_FALSE(loom::testing::Eventually([&] { return !ProcessAlive(executor.pid()); }, 4s));
  ::kill(executor.pid(), SIGTERM);
  auto start = std::chrono::steady_clock::now();
  RunResult r = loom.Collect(executor, "executor");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);  // SIGTERM is heeded while it retries
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.out << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("stopped by SIGTERM while registering with the AM"));
}

TEST(RegistryTimeout, TheKeyReachesTheExecutorsOfAJob) {
  MiniLoom loom;
  auto start = std::chrono::steady_clock::now();
  RunResult r = loom.Run(Submit({"--conf", "loom.worker.instances=2", "--conf",
                                 "loom.worker.command=/bin/sh -c 'sleep 120'", "--conf",
                                 "tony.task.executor.registry-timeout-sec=2"}),
                         {{"LOOM_TEST_UNREACHABLE_AM", "worker:1=1"}});
  std::string id = loom.OnlyJobId();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  history::JobView view = loom.View(id);
  EXPECT_THAT(view.FindTask("worker:1")->diagnostics, HasSubstr("executor exited with code 70 before reporting"));
  std::string log = ReadFile(loom.Dir(id).task_dir({"worker", 1}) + "/executor.log").value_or("");
  EXPECT_THAT(log, HasSubstr("gave up registering with the AM at 127.0.0.1:1 after 2000 ms "
                             "(loom.task.executor.registry-timeout-sec=2)"));
  EXPECT_TRUE(MiniLoom::JobProcesses(id).empty());
}

// ---- Metrics interval ---------------------------------------------------------------------

// The task's RSS as the AM's view shows it, from its TASK_METRICS records: (ms, bytes).
std::vector<std::pair<int64_t, int64_t>> RssRecords(MiniLoom& loom, const std::string& id, const std::string& task) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const json& e : Events(loom, id)) {
    if (e.value("event", "") != "TASK_METRICS") continue;
    for (const auto& t : e.value("tasks", json::array())) {
      if (t.value("task", "") == task) out.emplace_back(e.value("ts", int64_t{0}), t.value("rss_bytes", int64_t{0}));
    }
  }
  return out;
}

TEST(MetricsInterval, TheExecutorSamplesAtTheConfiguredPeriod) {
  // Samples every 2 s, heartbeats every 200 ms: a task that grows by 300 MiB shows up in the
  // AM's view at its executor's next sample, not before and not much after.
  constexpr int64_t kInterval = 2000;
  MiniLoom loom;
  fs::path dir = fs::path(loom.home()) / "shared";
  fs::create_directories(dir);
  std::string grow = "import os, time\n"
                     "while not os.path.exists('" + (dir / "go").string() + "'): time.sleep(0.01)\n"
                     "block = bytearray(300 << 20)\n"
                     "for i in range(0, len(block), 4096): block[i] = 1\n"
                     // Whole or absent: the test reads it as soon as it exists.
                     "open('" + (dir / "grown.tmp").string() + "', 'w').write(repr(time.time()))\n"
                     "os.replace('" + (dir / "grown.tmp").string() + "', '" + (dir / "grown").string() + "')\n"
                     "while not os.path.exists('" + (dir / "end").string() + "'): time.sleep(0.01)\n";
  std::ofstream(dir / "grow.py") << grow;
  Subprocess submit = loom.Start(
      Submit({"--conf", "loom.worker.instances=1", "--conf", "loom.task.metrics-interval-ms=" + std::to_string(kInterval),
              "--conf", "loom.task.heartbeat-interval-ms=200", "--conf",
              "loom.worker.command=/usr/bin/python3 " + (dir / "grow.py").string()}),
      "submit");
  std::string id;
  // The first sample is taken as the task starts.
  ASSERT_TRUE(loom.WaitForJob([&](const std::string& job) { return !RssRecords(loom, job, "worker:0").empty(); }, 60s, &id));
  int64_t first = RssRecords(loom, id, "worker:0")[0].first;
  Touch(dir / "go");
  ASSERT_TRUE(loom::testing::Eventually([&] { return fs::exists(dir / "grown"); }, 10s));
  int64_t grown = static_cast<int64_t>(Seconds(dir / "grown") * 1000);
  int64_t seen = 0;
  ASSERT_TRUE(loom::testing::Eventually(
      [&] {
        for (auto [ts, rss] : RssRecords(loom, id, "worker:0")) {
          if (rss >= (int64_t{250} << 20)) seen = ts;
        }
        return seen > 0;
      },
      15s));
  Touch(dir / "end");
  RunResult r = loom.Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // The follower's lines say what each sample was, never the bare event name.
  EXPECT_THAT(r.out, HasSubstr("memory (RSS): worker:0 "));
  EXPECT_FALSE(std::regex_search(r.out, std::regex("TASK_METRICS\\s*\\n"))) << r.out;
  // Not before the next sample (an executor sampling faster would show it ~0.5 s after it
  // grew), and within one interval of the growth, plus heartbeat and recording slack.
  EXPECT_GE(seen - first, kInterval - 300) << "first record at " << first << ", growth seen at " << seen;
  EXPECT_LE(seen - grown, kInterval + 1500) << "grew at " << grown << ", seen at " << seen;
}

// ---- GPU metrics --------------------------------------------------------------------------

// The final record of `task`: its TASK_STATE event with an exit code.
json FinalRecord(MiniLoom& loom, const std::string& id, const std::string& task) {
  json last;
  for (const json& e : Events(loom, id)) {
    if (e.value("event", "") == "TASK_STATE" && e.value("task", "") == task && e.contains("exit_code")) last = e;
  }
  return last;
}

TEST(GpuMetrics, SampledWithNvidiaSmiOnlyWhenEnabled) {
  // No GPU here: an nvidia-smi that reports one GPU (index 0), 37 % busy with 1 GiB used.
  MiniLoom loom;
  fs::path bin = fs::path(loom.home()) / "bin";
  fs::create_directories(bin);
  // Not on PATH: found only through loom.gpu-exec-path, for discovery and for the samples.
  const fs::path smi = bin / "site-nvidia-smi";
  std::ofstream(smi) << "#!/bin/sh\n"
                        "case \"$*\" in *--query-gpu=index*) echo 0 ;; *) echo '37, 1024' ;; esac\n";
  ::chmod(smi.c_str(), 0755);
  std::map<std::string, std::string> env;
  for (bool enabled : {true, false}) {
    std::vector<std::string> before = loom.JobIds();
    RunResult r = loom.Run(Submit({"--conf", "tony.gpu-exec-path=" + smi.string(),
                                   "--conf", "loom.worker.instances=1", "--conf", "loom.worker.gpus=1", "--conf",
                                   "loom.worker.command=/bin/sleep 0.5", "--conf", "loom.task.metrics-interval-ms=100",
                                   "--conf", std::string("tony.task.gpu-metrics.enabled=") + (enabled ? "true" : "false")}),
                           env);
    // The job this round submitted (ids of one second sort by their random suffix).
    std::string id;
    for (const std::string& j : loom.JobIds()) {
      if (std::find(before.begin(), before.end(), j) == before.end()) id = j;
    }
    ASSERT_FALSE(id.empty()) << r.out << r.err;
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    json done = FinalRecord(loom, id, "worker:0");
    if (enabled) {
      EXPECT_EQ(done.value("max_gpu_utilization_percent", -1), 37) << done.dump();
      EXPECT_EQ(done.value("peak_gpu_memory_bytes", int64_t{-1}), int64_t{1} << 30) << done.dump();
    } else {
      EXPECT_FALSE(done.contains("peak_gpu_memory_bytes")) << done.dump();
    }
  }
}

// ---- On YARN ------------------------------------------------------------------------------

TEST(YarnStages, TheTrainingStageIsAskedForAfterThePrepareStageOnYarn) {
  YarnDoubleCluster cluster;
  fs::path dir = fs::path(cluster.loom().home()) / "shared";
  fs::create_directories(dir);
  std::vector<std::string> args = {"submit", "--cluster", "yarn"};
  for (auto& a : Submit(TwoStageJob(dir.string()))) {
    if (a != "submit") args.push_back(a);
  }
  for (std::string a : {"--conf", "loom.am.memory=512m", "--conf", "loom.worker.memory=512m", "--conf",
                        "loom.dbloader.memory=512m"}) {
    args.push_back(a);
  }
  Subprocess submit = cluster.loom().Start(args, "submit", cluster.Env());
  std::string id;
  ASSERT_TRUE(cluster.loom().WaitForJob(
      [&](const std::string& job) { return TaskRunning(cluster.loom(), job, "dbloader:0"); }, 90s, &id))
      << cluster.ContainerLogs("am.log");
  // Only the prepare stage runs; the workers wait, with no container asked of the RM.
  RunResult status = cluster.loom().Run({"status", id}, cluster.Env());
  EXPECT_THAT(status.out, HasSubstr("worker:0 waiting for the prepare stage (dbloader)")) << status.out;
  EXPECT_THAT(status.out, HasSubstr("worker:1 waiting for the prepare stage (dbloader)"));
  EXPECT_FALSE(fs::exists(dir / "started-worker-0"));
  Touch(dir / "go");
  RunResult r = cluster.loom().Collect(submit, "submit");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  EXPECT_THAT(r.out, HasSubstr("prepare stage succeeded; training stage started: worker:0, worker:1"));
  double prepared_at = Seconds(dir / "ended-dbloader-0");
  ASSERT_GT(prepared_at, 0);
  for (int i = 0; i < 2; ++i) {
    EXPECT_GE(Seconds(dir / ("started-worker-" + std::to_string(i))), prepared_at) << i << r.out;
  }
  history::JobView view = cluster.loom().View(id);
  EXPECT_EQ(view.state, "SUCCEEDED");
  EXPECT_GE(view.FindTask("worker:1")->started_ms, view.FindTask("dbloader:0")->finished_ms);
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s));
}

TEST(YarnStages, TheStatusPageLinksAnAnsweringTensorBoardOnYarn) {
  YarnDoubleCluster cluster;
  fs::path dir = fs::path(cluster.loom().home()) / "shared", logs = fs::path(cluster.loom().home()) / "tb-logs";
  fs::create_directories(dir);
  fs::create_directories(logs);
  std::ofstream(logs / "index.html") << "fake tensorboard on yarn\n";
  fs::path bin = FakeTensorBoard(fs::path(cluster.loom().home()) / "bin");
  std::vector<std::string> args = {"submit", "--cluster", "yarn"};
  for (auto& a : Submit({"--conf", "loom.worker.instances=1", "--conf", "loom.am.memory=512m", "--conf",
                         "loom.worker.memory=512m", "--conf", "loom.tensorboard.memory=512m",
                         "--sidecar_tensorboard_log_dir", logs.string(), "--shell_env",
                         "PATH=" + bin.string() + ":/usr/bin:/bin", "--conf",
                         "loom.worker.command=/bin/sh -c 'while [ ! -e " + (dir / "go").string() +
                             " ]; do sleep 0.05; done'"})) {
    if (a != "submit") args.push_back(a);
  }
  Subprocess submit = cluster.loom().Start(args, "submit", cluster.Env());
  std::string id, url;
  ASSERT_TRUE(cluster.loom().WaitForJob(
      [&](const std::string& job) {
        url = cluster.loom().View(job).tensorboard_url;
        return !url.empty();
      },
      90s, &id))
      << cluster.ContainerLogs("am.log") << cluster.ContainerLogs("executor.log");
  // The application's tracking URL, through the RM's web proxy, is the AM's dashboard; the job's
  // JSON there (what its page draws) has the TensorBoard's link, which answers.
  std::string job = HttpGet(cluster.Report(id).trackingurl() + "api/jobs/" + id);
  json job_json = json::parse(job, nullptr, false);
  EXPECT_EQ(job_json.is_object() ? job_json.value("tensorboard_url", "") : "", url) << job;
  EXPECT_EQ(HttpGet(url), "fake tensorboard on yarn\n");
  Touch(dir / "go");
  RunResult r = cluster.loom().Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
}

}  // namespace
}  // namespace loom::testing
