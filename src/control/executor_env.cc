#include "control/executor_env.h"

#include <utility>

#include "control/auth.h"
#include "core/strings.h"

namespace loom::control {
namespace {

constexpr char kTaskId[] = "LOOM_TASK_ID";
constexpr char kRestartCount[] = "LOOM_RESTART_COUNT";
constexpr char kAmAddress[] = "LOOM_AM_ADDRESS";
constexpr const char* kSecretFile = kSecretFileEnv;
constexpr char kSecretCredential[] = "LOOM_SECRET_CREDENTIAL";
constexpr char kSecretFd[] = "LOOM_SECRET_FD";
constexpr char kPortRange[] = "LOOM_PORT_RANGE";
constexpr char kPreferredPort[] = "LOOM_PREFERRED_PORT";
constexpr char kReserveTbPort[] = "LOOM_RESERVE_TB_PORT";
constexpr char kRegistryTimeout[] = "LOOM_REGISTRY_TIMEOUT_MS";
constexpr char kMetricsInterval[] = "LOOM_METRICS_INTERVAL_MS";
constexpr char kGpuMetrics[] = "LOOM_GPU_METRICS";
constexpr char kKeyPrefix[] = "LOOM_KEY_PREFIX";
constexpr char kGpuExecPath[] = "LOOM_GPU_EXEC_PATH";
constexpr char kHost[] = "LOOM_HOST";
constexpr char kContainerId[] = "LOOM_CONTAINER_ID";
constexpr char kLogDir[] = "LOOM_LOG_DIR";
constexpr char kLinkIntoWorkdir[] = "LOOM_LINK_INTO_WORKDIR";
constexpr char kMemoryEnforcedBy[] = "LOOM_MEMORY_ENFORCED_BY";
constexpr char kPlannedGpus[] = "LOOM_PLANNED_GPUS";
constexpr char kNmWeb[] = "LOOM_NM_WEB";
constexpr char kGpuNote[] = "LOOM_GPU_NOTE";

// The fields that travel as they are: written when set, read back verbatim.
const std::pair<const char*, std::string ExecutorEnv::*> kTextFields[] = {
    // from the AM
    {kJobIdEnv, &ExecutorEnv::job_id}, {kTaskId, &ExecutorEnv::task_id}, {kAmAddress, &ExecutorEnv::am_address},
    {kSecretFile, &ExecutorEnv::secret_file}, {kSecretCredential, &ExecutorEnv::secret_credential},
    // from the backend that starts the container
    {kHost, &ExecutorEnv::host}, {kContainerId, &ExecutorEnv::container_id}, {kLogDir, &ExecutorEnv::log_dir},
    {kLinkIntoWorkdir, &ExecutorEnv::link_into_workdir}, {kMemoryEnforcedBy, &ExecutorEnv::memory_enforced_by},
    {kNmWeb, &ExecutorEnv::nm_web},
    // from the executor's own start-up
    {kGpuNote, &ExecutorEnv::gpu_note},
};

Result<int> Number(const std::map<std::string, std::string>& env, const char* key, int fallback) {
  auto it = env.find(key);
  if (it == env.end() || it->second.empty()) return fallback;
  auto n = ParseInt(it->second);
  if (!n.ok() || *n < 0 || *n > 1 << 30) return Status::InvalidArgument(std::string(key) + "=" + it->second + " is not a number");
  return static_cast<int>(*n);
}

}  // namespace

void ExecutorEnv::AddTo(std::map<std::string, std::string>& env) const {
  for (const auto& [key, field] : kTextFields) {
    if (!(this->*field).empty()) env[key] = this->*field;
  }
  if (!task_id.empty()) env[kRestartCount] = std::to_string(restart_count);
  if (secret_fd >= 0) env[kSecretFd] = std::to_string(secret_fd);
  if (port_high > 0) env[kPortRange] = std::to_string(port_low) + "-" + std::to_string(port_high);
  if (preferred_port > 0) env[kPreferredPort] = std::to_string(preferred_port);
  if (reserve_tb_port) env[kReserveTbPort] = "1";
  if (registry_timeout_ms > 0) env[kRegistryTimeout] = std::to_string(registry_timeout_ms);
  if (!task_id.empty()) env[kMetricsInterval] = std::to_string(metrics_interval_ms);
  if (gpu_metrics) env[kGpuMetrics] = "1";
  if (gpu_metrics) env[kGpuExecPath] = gpu_exec_path;
  if (!task_id.empty()) env[kKeyPrefix] = key_prefix;
  if (!planned_gpus.empty()) {
    std::vector<std::string> ids;
    for (int d : planned_gpus) ids.push_back(std::to_string(d));
    env[kPlannedGpus] = Join(ids, ",");
  }
}

Result<ExecutorEnv> ExecutorEnv::FromEnv(const std::map<std::string, std::string>& env) {
  auto get = [&](const char* key) {
    auto it = env.find(key);
    return it == env.end() ? std::string() : it->second;
  };
  ExecutorEnv e;
  for (const auto& [key, field] : kTextFields) e.*field = get(key);
  if (std::string plan = get(kPlannedGpus); !plan.empty()) {
    for (const std::string& d : Split(plan, ',')) {
      auto n = ParseInt(Trim(d));
      if (!n.ok() || *n < 0 || *n > 4095) {
        return Status::InvalidArgument(std::string(kPlannedGpus) + "=" + plan + " is not a list of device indices");
      }
      e.planned_gpus.push_back(static_cast<int>(*n));
    }
  }
  for (const char* required : {kTaskId, kAmAddress}) {
    if (get(required).empty()) return Status::InvalidArgument(std::string(required) + " is not set");
  }
  if (std::string fd = get(kSecretFd); !fd.empty()) {
    auto n = ParseInt(fd);
    if (!n.ok() || *n < 0 || *n > 1 << 20) return Status::InvalidArgument(std::string(kSecretFd) + "=" + fd + " is not a descriptor");
    e.secret_fd = static_cast<int>(*n);
  }
  if (e.secret_file.empty() && e.secret_credential.empty() && e.secret_fd < 0) {
    return Status::InvalidArgument(std::string(kSecretFile) + " is not set");
  }
  LOOM_ASSIGN_OR_RETURN(e.restart_count, Number(env, kRestartCount, 0));
  LOOM_ASSIGN_OR_RETURN(e.preferred_port, Number(env, kPreferredPort, 0));
  LOOM_ASSIGN_OR_RETURN(e.metrics_interval_ms, Number(env, kMetricsInterval, 5000));
  if (e.metrics_interval_ms <= 0) return Status::InvalidArgument(std::string(kMetricsInterval) + "=0 is not a period");
  if (auto it = env.find(kRegistryTimeout); it != env.end() && !it->second.empty()) {
    auto n = ParseInt(it->second);
    if (!n.ok() || *n < 0) return Status::InvalidArgument(std::string(kRegistryTimeout) + "=" + it->second + " is not a number");
    e.registry_timeout_ms = *n;
  }
  for (auto [key, flag] : {std::pair{kReserveTbPort, &e.reserve_tb_port}, std::pair{kGpuMetrics, &e.gpu_metrics}}) {
    std::string v = get(key);
    if (!v.empty() && v != "0" && v != "1") return Status::InvalidArgument(std::string(key) + "=" + v + " is not 0 or 1");
    *flag = v == "1";
  }
  if (std::string path = get(kGpuExecPath); !path.empty()) e.gpu_exec_path = path;
  if (std::string prefix = get(kKeyPrefix); !prefix.empty()) {
    if (prefix != "loom." && prefix != "tony.") {
      return Status::InvalidArgument(std::string(kKeyPrefix) + "=" + prefix + " is not loom. or tony.");
    }
    e.key_prefix = prefix;
  }
  e.port_low = 20000;
  e.port_high = 32000;
  if (std::string range = get(kPortRange); !range.empty()) {
    auto parts = Split(range, '-');
    auto lo = parts.size() == 2 ? ParseInt(parts[0]) : Result<int64_t>(Status::InvalidArgument(""));
    auto hi = parts.size() == 2 ? ParseInt(parts[1]) : Result<int64_t>(Status::InvalidArgument(""));
    if (!lo.ok() || !hi.ok() || *lo <= 0 || *hi > 65535 || *lo > *hi) {
      return Status::InvalidArgument(std::string(kPortRange) + "=" + range + " is not low-high");
    }
    e.port_low = static_cast<int>(*lo);
    e.port_high = static_cast<int>(*hi);
  }
  if (!e.memory_enforced_by.empty() && e.memory_enforced_by != "cgroup" && e.memory_enforced_by != "watchdog") {
    return Status::InvalidArgument(std::string(kMemoryEnforcedBy) + "=" + e.memory_enforced_by + " is not cgroup or watchdog");
  }
  return e;
}

void ExecutorEnv::RemoveWiring(std::map<std::string, std::string>& env) {
  // LOOM_LOG_DIR too: locally it is the task's dir in the job dir, beside the secret file.
  for (const char* k : {kAmAddress, kSecretFile, kSecretCredential, kSecretFd, kLogDir, kPortRange, kPreferredPort, kMemoryEnforcedBy,
                        kLinkIntoWorkdir, kReserveTbPort, kRegistryTimeout, kMetricsInterval, kGpuMetrics, kKeyPrefix, kGpuExecPath,
                        kPlannedGpus, kNmWeb, kGpuNote}) {
    env.erase(k);
  }
}

}  // namespace loom::control
