#pragma once
// HostInventory: what this machine offers the local backend. Memory and GPUs are reserved
// exclusively (a gang's total must fit); vcores are a share, not a reservation, so a job may ask
// for more vcores in total than there are cores and simply time-slices (one task alone still
// may not ask for more than the host has).

#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/job_spec.h"

namespace loom::cluster::local {

struct HostInventory {
  int vcores = 1;
  int64_t memory_mib = 0;
  std::vector<int> gpus;  // device indices

  // Reads /proc, nvidia-smi and the loom.local.* overrides.
  static Result<HostInventory> Detect(const config::Config& conf);
  // InvalidArgument naming the task type and resource when the job could never run here.
  Status CheckFits(const JobSpec& spec) const;
  std::string ToString() const;
};

// GPU indices reported by `nvidia_smi --query-gpu=index --format=csv,noheader`; empty if none.
std::vector<int> DetectNvidiaGpus(const std::string& nvidia_smi);

}  // namespace loom::cluster::local
