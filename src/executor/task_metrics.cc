#include "executor/task_metrics.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace loom::executor {

MetricsSample TaskMetrics::Sample(int64_t rss_bytes, std::optional<CpuReading> cpu) {
  ++latest_.seq;
  latest_.rss_bytes = rss_bytes;
  NoteRss(rss_bytes);
  latest_.cpu_cores.reset();
  if (cpu && cpu->interval_s > 0) {
    latest_.cpu_cores = cpu->cores;
    ++cpu_samples_;
    peak_cpu_cores_ = std::max(peak_cpu_cores_, cpu->cores);
    cpu_seconds_ += cpu->cores * cpu->interval_s;
    cpu_measured_s_ += cpu->interval_s;
  }
  if (sample_gpus_ && gpu_failures_ < kMaxGpuFailures) {
    Result<GpuSample> gpus = sample_gpus_();
    if (gpus.ok()) {
      gpu_failures_ = 0;
      ++gpu_samples_;
      latest_.gpu_utilization_percent = gpus->max_utilization_percent;
      latest_.gpu_memory_bytes = gpus->memory_used_bytes;
      latest_.gpus = gpus->devices;
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
  report->set_cpu_samples(cpu_samples_);
  report->set_peak_cpu_cores(static_cast<float>(peak_cpu_cores_));
  report->set_avg_cpu_cores(cpu_measured_s_ > 0 ? static_cast<float>(cpu_seconds_ / cpu_measured_s_) : 0.0f);
}

}  // namespace loom::executor
