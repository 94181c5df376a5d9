#pragma once
// GPU metrics of a task, as TonY's TaskMonitor collects them (loom.task.gpu-metrics.enabled):
// nvidia-smi asked about the task's GPUs, once per metrics interval. Not NVML: the executor is
// the static `loom`, and a static program's dlopen works only with the glibc it was linked
// with, which a cluster's nodes do not have.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace loom::executor {

// One GPU's values in a sample.
struct GpuDevice {
  int index = 0;  // nvidia-smi's index of the device on its host
  int utilization_percent = 0;
  int64_t memory_used_bytes = 0;
  bool operator==(const GpuDevice&) const = default;
};

struct GpuSample {
  int gpus = 0;                     // how many GPUs answered
  int max_utilization_percent = 0;  // the busiest one's
  int64_t memory_used_bytes = 0;    // on all of them together
  std::vector<GpuDevice> devices;   // each of them, in nvidia-smi's order (metrics.jsonl keeps them)
};

// Parses the output of `nvidia-smi --query-gpu=utilization.gpu,memory.used,index
// --format=csv,noheader,nounits` (one "percent, MiB, index" line per GPU; without the index, as
// an older query asked, a GPU's index is its line's position). A value nvidia-smi cannot give
// ("[N/A]", as under MIG) counts as 0; InvalidArgument when no line has the shape.
Result<GpuSample> ParseNvidiaSmi(const std::string& text);

// Runs `nvidia_smi` (looked up in PATH) for the GPUs in `visible` (CUDA_VISIBLE_DEVICES, indices
// or UUIDs; empty: every GPU it sees) and parses its answer. A run longer than `timeout` is
// killed. Reaps its child itself: call it from the thread that reaps the executor's children.
Result<GpuSample> SampleGpus(const std::string& nvidia_smi, const std::string& visible,
                             const std::string& path_env, std::chrono::milliseconds timeout);

// SampleGpus for a task: its GPUs (CUDA_VISIBLE_DEVICES in `env`) found through its PATH, a
// run allowed its metrics interval, within 1 to 5 s.
std::function<Result<GpuSample>()> TaskGpuSampler(const std::string& nvidia_smi,
                                                  const std::map<std::string, std::string>& env,
                                                  std::chrono::milliseconds metrics_interval);

}  // namespace loom::executor
