#include "executor/task_metrics.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace loom::executor {

MetricsSample TaskMetrics::Sample(int64_t rss_bytes) {
  latest_.rss_bytes = rss_bytes;
  NoteRss(rss_bytes);
  if (sample_gpus_ && gpu_failures_ < kMaxGpuFailures) {
    Result<GpuSample> gpus = sample_gpus_();
    if (gpus.ok()) {
      gpu_failures_ = 0;
      ++gpu_samples_;
      latest_.gpu_utilization_percent = gpus->max_utilization_percent;
      latest_.gpu_memory_bytes = gpus->memory_used_bytes;
      max_gpu_utilization_ = std::max(max_gpu_utilization_, gpus->max_utilization_percent);
      peak_gpu_memory_ = std::max(peak_gpu_memory_, gpus->memory_used_bytes);
    } else if (++gpu_failures_ == kMaxGpuFailures) {
      spdlog::warn("GPU metrics off after {} failed samples in a row: {}", kMaxGpuFailures, gpus.status().ToString());
    }
  }
  return latest_;
}

void TaskMetrics::FillReport(control::ExitReport* report) const {
  report->set_peak_rss_bytes(peak_rss_);
  report->set_max_gpu_utilization_percent(max_gpu_utilization_);
  report->set_peak_gpu_memory_bytes(peak_gpu_memory_);
  report->set_gpu_samples(gpu_samples_);
}

}  // namespace loom::executor
