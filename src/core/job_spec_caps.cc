#include "core/job_spec_internal.h"

#include "core/config/key_registry.h"

namespace loom {

namespace {

// Where a `loom.max-total-*` cap is exceeded, a problem naming it.
void CheckCap(const Config& conf, const std::string& key, int64_t total, const std::string& what,
              std::vector<std::string>& problems) {
  int64_t limit = GetInt(conf, key);
  if (limit >= 0 && total > limit) {
    problems.push_back(config::Spelled(conf, key) + "=" + std::to_string(limit) + " but the job asks for " +
                       std::to_string(total) + " " + what);
  }
}

}  // namespace

void CheckCaps(const Config& conf, const JobSpec& spec, std::vector<std::string>& problems) {
  Resources total = spec.TotalResources();
  CheckCap(conf, "loom.task.max-total-instances", spec.TotalTasks(), "tasks", problems);
  CheckCap(conf, "loom.task.max-total-gpus", total.gpus, "GPUs", problems);
  CheckCap(conf, "loom.task.max-total-vcores", total.vcores, "vcores", problems);
  CheckCap(conf, "loom.task.max-total-memory", total.memory_mib, "MiB", problems);
}

}  // namespace loom
