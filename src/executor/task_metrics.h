#pragma once
// What a task's executor measures of it, every loom.task.metrics-interval-ms: the RSS and CPU
// of its processes (executor/process_tree.h) and, with loom.task.gpu-metrics.enabled, its GPUs
// (executor/gpu_metrics.h). The latest sample rides on the heartbeats (the AM keeps each in
// metrics.jsonl); the peaks and the CPU's average go into the exit report.

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "control/control.pb.h"
#include "core/status.h"
#include "executor/gpu_metrics.h"
#include "executor/process_tree.h"

namespace loom::executor {

struct MetricsSample {
  int64_t rss_bytes = 0;
  int32_t gpu_utilization_percent = 0;  // the busiest GPU's, 0 without GPU metrics
  int64_t gpu_memory_bytes = 0;         // on all the task's GPUs together
  std::optional<double> cpu_cores;      // none on the first sample (process_tree.h's CpuMeter)
  std::vector<GpuDevice> gpus;          // each GPU, empty without GPU metrics
  uint32_t seq = 0;                     // 1 for the first sample, then one more each
};

class TaskMetrics {
 public:
  // As TonY's TaskMonitor: GPU sampling stops after this many failures in a row.
  static constexpr int kMaxGpuFailures = 10;

  // `sample_gpus` asks the task's GPUs; empty: no GPU metrics.
  explicit TaskMetrics(std::function<Result<GpuSample>()> sample_gpus) : sample_gpus_(std::move(sample_gpus)) {}

  // One sample, the processes' RSS being `rss_bytes` and their CPU `cpu` (none: not measured
  // yet): the GPUs are asked too (their last answer stands while they fail). Returns it.
  MetricsSample Sample(int64_t rss_bytes, std::optional<CpuReading> cpu = std::nullopt);
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
  int cpu_samples_ = 0;
  double peak_cpu_cores_ = 0;
  double cpu_seconds_ = 0, cpu_measured_s_ = 0;  // the average's: CPU time over the time measured
};

}  // namespace loom::executor
