#include "executor/task_metrics.h"

#include <gmock/gmock.h>

#include "core/testing.h"

namespace loom::executor {
namespace {

TEST(TaskMetrics, KeepsThePeaksForTheReportAndTheLatestForTheHeartbeat) {
  std::vector<GpuSample> answers = {{1, 40, 100}, {1, 90, 50}, {1, 10, 300}};
  size_t next = 0;
  TaskMetrics metrics([&]() -> Result<GpuSample> { return answers[next++]; });
  metrics.Sample(1000);
  metrics.Sample(5000);
  MetricsSample last = metrics.Sample(2000);
  EXPECT_EQ(last.rss_bytes, 2000);
  EXPECT_EQ(last.gpu_utilization_percent, 10);
  EXPECT_EQ(last.gpu_memory_bytes, 300);
  metrics.NoteRss(7000);  // the watchdog saw more between two samples
  control::ExitReport report;
  metrics.FillReport(&report);
  EXPECT_EQ(report.peak_rss_bytes(), 7000);
  EXPECT_EQ(report.max_gpu_utilization_percent(), 90);
  EXPECT_EQ(report.peak_gpu_memory_bytes(), 300);
  EXPECT_EQ(report.gpu_samples(), 3);
}

TEST(TaskMetrics, GpuSamplingStopsAfterTenFailuresInARowAndTheLastAnswerStands) {
  int asked = 0;
  bool fail = false;
  TaskMetrics metrics([&]() -> Result<GpuSample> {
    ++asked;
    if (fail) return Status::Unavailable("nvidia-smi: no devices");
    return GpuSample{1, 55, 64};
  });
  metrics.Sample(1);
  fail = true;
  for (int i = 0; i < 9; ++i) metrics.Sample(1);
  fail = false;
  metrics.Sample(1);  // a success resets the count
  fail = true;
  for (int i = 0; i < 25; ++i) {
    MetricsSample s = metrics.Sample(1);
    EXPECT_EQ(s.gpu_utilization_percent, 55);
  }
  EXPECT_EQ(asked, 1 + 9 + 1 + TaskMetrics::kMaxGpuFailures);
  control::ExitReport report;
  metrics.FillReport(&report);
  EXPECT_EQ(report.gpu_samples(), 2);
}

TEST(TaskMetrics, CpuIsNoneUntilMeasuredThenPeakAndTimeWeightedAverage) {
  TaskMetrics metrics(nullptr);
  MetricsSample first = metrics.Sample(10, std::nullopt);  // the meter's first reading
  EXPECT_EQ(first.seq, 1u);
  EXPECT_FALSE(first.cpu_cores);
  MetricsSample s = metrics.Sample(10, CpuReading{2.0, 1.0});
  EXPECT_EQ(s.seq, 2u);
  EXPECT_DOUBLE_EQ(*s.cpu_cores, 2.0);
  metrics.Sample(10, CpuReading{0.5, 3.0});
  control::ExitReport report;
  metrics.FillReport(&report);
  EXPECT_EQ(report.cpu_samples(), 2);
  EXPECT_FLOAT_EQ(report.peak_cpu_cores(), 2.0f);
  EXPECT_FLOAT_EQ(report.avg_cpu_cores(), 0.875f);  // (2 x 1 s + 0.5 x 3 s) / 4 s
}

TEST(TaskMetrics, EachGpuOfTheSampleIsKept) {
  GpuSample two{2, 90, 3 << 20, {{0, 90, 1 << 20}, {5, 10, 2 << 20}}};
  TaskMetrics metrics([&]() -> Result<GpuSample> { return two; });
  MetricsSample s = metrics.Sample(1);
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[1], (GpuDevice{5, 10, 2 << 20}));
  EXPECT_EQ(s.gpu_utilization_percent, 90);
}

TEST(TaskMetrics, WithoutGpuMetricsOnlyTheRss) {
  TaskMetrics metrics(nullptr);
  MetricsSample s = metrics.Sample(42);
  EXPECT_EQ(s.rss_bytes, 42);
  EXPECT_EQ(s.gpu_utilization_percent, 0);
  control::ExitReport report;
  metrics.FillReport(&report);
  EXPECT_EQ(report.gpu_samples(), 0);
  EXPECT_EQ(report.peak_rss_bytes(), 42);
  EXPECT_EQ(report.cpu_samples(), 0);
  EXPECT_TRUE(s.gpus.empty());
}

}  // namespace
}  // namespace loom::executor
