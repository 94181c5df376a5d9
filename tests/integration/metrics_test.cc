// Metrics over time on the local backend: each executor's samples (CPU, RSS, GPUs) reach the
// job's metrics.jsonl through the AM, and `loom status` shows the latest while a task runs.

#include <sys/stat.h>

#include <fstream>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "history/metrics_log.h"
#include "mini_loom.h"

namespace loom::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// `loom status --json` of `id`, parsed; null when it printed no JSON.
json StatusJson(MiniLoom& loom, const std::string& id) {
  RunResult r = loom.Run({"status", "--json", id});
  return json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

TEST(Metrics, ABusyTasksCpuAndRssAreSampledKeptAndShown) {
  MiniLoom loom;
  // Two processes busy for 5 s, in pure Python: up to two cores, and at least one on a machine
  // that builds beside the test. The parent reaps the child (its time moves to the parent's).
  const std::string burn = loom.home() + "/burn.py";
  std::ofstream(burn) << "import os, time\n"
                         "end = time.time() + 5\n"
                         "child = os.fork()\n"
                         "while time.time() < end:\n"
                         "    pass\n"
                         "if child:\n"
                         "    os.waitpid(child, 0)\n"
                         "else:\n"
                         "    os._exit(0)\n";
  Subprocess submit = loom.Start({"submit", "--conf", "loom.worker.instances=1", "--conf",
                                  "loom.worker.command=/usr/bin/python3 " + burn, "--conf",
                                  "loom.task.metrics-interval-ms=200"},
                                 "submit");
  // While it runs: `loom status --json` has its latest sample, CPU measured.
  std::string id;
  json running;
  bool seen = Eventually(
      [&] {
        auto ids = loom.JobIds();
        if (ids.empty()) return false;
        id = ids[0];
        json j = StatusJson(loom, id);
        if (!j.is_object() || j["tasks"].empty()) return false;
        const json& t = j["tasks"][0];
        if (t.value("state", "") != "RUNNING" || !t.contains("metrics")) return false;
        running = t;
        return t["metrics"].value("cpu_cores", 0.0) > 0.5;
      },
      20s);
  RunResult r = loom.Collect(submit, "submit");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_TRUE(seen) << running.dump();
  EXPECT_GT(running["metrics"]["rss_bytes"].get<int64_t>(), 0) << running.dump();
  EXPECT_FALSE(running["metrics"].contains("gpus"));

  // The record keeps every sample the AM received: a sample without CPU only first (nothing to
  // measure over yet; a loaded machine may have the second replace it before the heartbeat
  // stream sends it), the busy ones of one core or more.
  int skipped = -1;
  std::vector<history::TaskSample> samples = history::ReadSamples(loom.Dir(id).metrics(), &skipped);
  EXPECT_EQ(skipped, 0);
  ASSERT_GE(samples.size(), 5u);
  int busy = 0;
  double max_cpu = 0;
  for (const auto& s : samples) {
    EXPECT_EQ(s.task, "worker:0");
    EXPECT_GT(s.rss_bytes, 0);
    if (s.cpu_cores) max_cpu = std::max(max_cpu, *s.cpu_cores), busy += *s.cpu_cores > 0.5;
  }
  for (size_t i = 1; i < samples.size(); ++i) EXPECT_TRUE(samples[i].cpu_cores) << "sample " << i;
  EXPECT_GE(busy, 2);  // of about 25 (a loaded machine may give it less than a core at times)
  EXPECT_LT(max_cpu, 2.5);  // two processes: two cores at most, no spike when the child is reaped
  std::printf("samples %zu, busy %d, max cpu %.2f cores\n", samples.size(), busy, max_cpu);

  // Once ended: the average and the peak from the exit report, no "current" sample.
  json done = StatusJson(loom, id)["tasks"][0];
  EXPECT_FALSE(done.contains("metrics")) << done.dump();
  EXPECT_GT(done.value("avg_cpu_cores", 0.0), 0.5) << done.dump();
  EXPECT_GE(done.value("peak_cpu_cores", 0.0), done.value("avg_cpu_cores", 0.0)) << done.dump();
  RunResult table = loom.Run({"status", id});
  EXPECT_THAT(table.out, ::testing::HasSubstr("CPU"));
}

TEST(Metrics, EachGpuOfATaskIsKeptWithItsIndex) {
  // No GPU here: an nvidia-smi that tells the task's GPU (index 0) at discovery, and samples it
  // as device 3, 37 % busy with 1 GiB used.
  MiniLoom loom;
  const std::string smi = loom.home() + "/fake-nvidia-smi";
  std::ofstream(smi) << "#!/bin/sh\n"
                        "case \"$*\" in *--query-gpu=utilization*) echo '37, 1024, 3' ;; *) echo 0 ;; esac\n";
  ::chmod(smi.c_str(), 0755);
  RunResult r = loom.Run({"submit", "--conf", "loom.gpu-exec-path=" + smi, "--conf", "loom.worker.instances=1",
                          "--conf", "loom.worker.gpus=1", "--conf", "loom.worker.command=/bin/sleep 1", "--conf",
                          "loom.task.metrics-interval-ms=100", "--conf", "loom.task.gpu-metrics.enabled=true"});
  std::string id = loom.OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<history::TaskSample> samples = history::ReadSamples(loom.Dir(id).metrics());
  ASSERT_FALSE(samples.empty());
  EXPECT_THAT(samples.back().gpus, ::testing::ElementsAre(history::GpuValue{3, 37, int64_t{1} << 30}));
}

}  // namespace
}  // namespace loom::testing
