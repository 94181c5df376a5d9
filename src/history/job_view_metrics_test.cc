// What `loom status` shows of metrics.jsonl: each running task's latest sample, in the task
// table and in --json (history/metrics_log.h).
#include <filesystem>

#include <gmock/gmock.h>

#include "core/files.h"
#include "core/testing.h"
#include "history/event_log.h"
#include "history/job_view.h"
#include "history/metrics_log.h"

namespace loom::history {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;

class JobViewMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() / ("loom_jvm_" + std::to_string(::getpid()) + "/job_x");
    std::filesystem::create_directories(root_);
    dir_ = JobDir(root_.string());
  }
  void TearDown() override { std::filesystem::remove_all(root_.parent_path()); }
  void Event(const char* text) { lines_ += text + std::string("\n"); }
  void Flush() { ASSERT_OK(WriteFileAtomic(dir_.events(), lines_)); }
  std::filesystem::path root_;
  JobDir dir_;
  std::string lines_;
};

TEST_F(JobViewMetricsTest, RunningTasksShowTheirLatestSampleInTheTableAndTheJson) {
  Event(R"({"ts": 900, "event": "JOB_SUBMITTED", "tasks": ["worker:0", "worker:1", "ps:0"]})");
  Event(R"({"ts": 1000, "event": "TASK_STATE", "task": "worker:0", "state": "RUNNING"})");
  Event(R"({"ts": 1000, "event": "TASK_STATE", "task": "worker:1", "state": "RUNNING"})");
  Flush();
  JobView before = *LoadJobView(dir_);  // no metrics.jsonl (a job of an older Loom): as before
  const json plain = ToJson(before);
  EXPECT_FALSE(plain["tasks"][0].contains("metrics"));

  MetricsLog log(dir_.metrics());
  TaskSample s;
  s.ms = 1500, s.task = "worker:0", s.rss_bytes = int64_t{300} << 20;  // first: no CPU yet
  ASSERT_OK(log.Append(s));
  s.ms = 2000, s.cpu_cores = 1.97, s.rss_bytes = int64_t{512} << 20;
  s.gpus = {{0, 87, int64_t{16} << 30}, {1, 12, int64_t{1} << 30}};
  ASSERT_OK(log.Append(s));
  TaskSample other;
  other.ms = 2000, other.task = "worker:1", other.rss_bytes = int64_t{64} << 20;
  ASSERT_OK(log.Append(other));
  TaskSample stranger = other;
  stranger.task = "evaluator:7";  // no such task in the job: ignored
  ASSERT_OK(log.Append(stranger));

  auto view = LoadJobView(dir_);
  ASSERT_OK(view);
  ASSERT_TRUE(view->tasks[0].latest);
  std::string table = RenderTaskTable(*view);
  EXPECT_THAT(table, HasSubstr("CPU"));
  EXPECT_THAT(table, HasSubstr("GPU"));
  EXPECT_THAT(table, HasSubstr(" 1.97 "));
  EXPECT_THAT(table, HasSubstr(" 512M "));
  EXPECT_THAT(table, HasSubstr("87% 16.0G, 12% 1.0G"));
  EXPECT_THAT(table, Not(HasSubstr("evaluator")));
  json j = ToJson(*view);
  EXPECT_EQ(j["tasks"][0]["metrics"], json::parse(R"({"ms": 2000, "cpu_cores": 1.97, "rss_bytes": 536870912,
      "gpus": [{"index": 0, "utilization_percent": 87, "memory_bytes": 17179869184},
               {"index": 1, "utilization_percent": 12, "memory_bytes": 1073741824}]})"));
  EXPECT_EQ(j["tasks"][1]["metrics"], json::parse(R"({"ms": 2000, "rss_bytes": 67108864})"));  // no CPU yet
  EXPECT_FALSE(j["tasks"][2].contains("metrics"));  // ps:0 never started
  // The fields that were there before are the same, byte for byte.
  for (size_t i = 0; i < 3; ++i) {
    json t = j["tasks"][i];
    t.erase("metrics");
    EXPECT_EQ(t.dump(), plain["tasks"][i].dump());
  }
}

TEST_F(JobViewMetricsTest, AnEndedTaskShowsItsAverageCpuAndPeakNotALateSample) {
  Event(R"({"ts": 1000, "event": "TASK_STATE", "task": "worker:0", "state": "RUNNING"})");
  Event(R"({"ts": 5000, "event": "TASK_STATE", "task": "worker:0", "state": "SUCCEEDED", "exit_code": 0, )"
        R"("peak_rss_bytes": 786432000, "peak_cpu_cores": 3.5, "avg_cpu_cores": 1.25})");
  Flush();
  MetricsLog log(dir_.metrics());
  TaskSample s;
  s.ms = 4000, s.task = "worker:0", s.rss_bytes = 1 << 20, s.cpu_cores = 3.5;
  ASSERT_OK(log.Append(s));
  auto view = LoadJobView(dir_);
  ASSERT_OK(view);
  EXPECT_FALSE(view->tasks[0].latest);
  std::string table = RenderTaskTable(*view);
  EXPECT_THAT(table, HasSubstr(" 1.25 "));  // the average over its run
  EXPECT_THAT(table, HasSubstr(" 750M "));
  EXPECT_THAT(table, Not(HasSubstr("GPU")));
  json t = ToJson(*view)["tasks"][0];
  EXPECT_FALSE(t.contains("metrics"));
  EXPECT_EQ(t["peak_cpu_cores"], 3.5);
  EXPECT_EQ(t["avg_cpu_cores"], 1.25);
}

TEST_F(JobViewMetricsTest, ARestartedTaskIgnoresItsEarlierRunsSamples) {
  JobView view;
  view.Apply(json::parse(R"({"ts": 1000, "event": "TASK_STATE", "task": "worker:0", "state": "RUNNING"})"));
  view.Apply(json::parse(R"({"ts": 9000, "event": "TASK_STATE", "task": "worker:0", "state": "RUNNING"})"));
  EXPECT_EQ(view.RunningTasks(), std::set<std::string>{"worker:0"});
  TaskSample old;
  old.ms = 8000, old.task = "worker:0", old.rss_bytes = 5;
  view.ApplySamples({{"worker:0", old}});
  EXPECT_FALSE(view.tasks[0].latest);
  old.ms = 9500;
  view.ApplySamples({{"worker:0", old}});
  EXPECT_TRUE(view.tasks[0].latest);
}

}  // namespace
}  // namespace loom::history
