#pragma once
// What a task's executor measures of it, every loom.task.metrics-interval-ms: the RSS of its
// processes and, with loom.task.gpu-metrics.enabled, its GPUs (executor/gpu_metrics.h). The
// latest sample rides on the heartbeats; the peaks go into the exit report.

#include <cstdint>
#include <functional>

#include "control/control.pb.h"
#include "core/status.h"
#include "executor/gpu_metrics.h"

namespace loom::executor {

struct MetricsSample {
  int64_t rss_bytes = 0;
  int32_t gpu_utilization_percent = 0;  // the busiest GPU's, 0 without GPU metrics
  int64_t gpu_memory_bytes = 0;         // on all the task's GPUs together
};

class TaskMetrics {
 public:
  // As TonY's TaskMonitor: GPU sampling stops after this many failures in a row.
  static constexpr int kMaxGpuFailures = 10;

  // `sample_gpus` asks the task's GPUs; empty: no GPU metrics.
  explicit TaskMetrics(std::function<Result<GpuSample>()> sample_gpus) : sample_gpus_(std::move(sample_gpus)) {}

  // One sample, the processes' RSS being `rss_bytes`: the GPUs are asked too (their last answer
  // stands while they fail). Returns it.
  MetricsSample Sample(int64_t rss_bytes);
  // An RSS measured elsewhere (the memory watchdog, the reaped children's rusage): for the peak.
  void NoteRss(int64_t rss_bytes) { peak_rss_ = std::max(peak_rss_, rss_bytes); }
  // The peaks, into the task's exit report.
  void FillReport(control::ExitReport* report) const;

 private:
  std::function<Result<GpuSample>()> sample_gpus_;
  MetricsSample latest_;
  int64_t peak_rss_ = 0;
  int gpu_failures_ = 0;  // in a row
  int gpu_samples_ = 0;
  int max_gpu_utilization_ = 0;
  int64_t peak_gpu_memory_ = 0;
};

}  // namespace loom::executor
