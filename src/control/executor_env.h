#pragma once
// ExecutorEnv: the whole environment contract of `loom executor`, the one place that names its
// LOOM_* variables. The AM fills the job's part (task, AM address, secret, ports), the backend
// that starts the container fills its part (host, container id, log dir, memory enforcement),
// and the executor reads it all back with FromEnv. None of these reach the user's process
// except LOOM_JOB_ID and LOOM_TASK_ID, which also mark every process of a job.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace loom::control {

inline constexpr char kJobIdEnv[] = "LOOM_JOB_ID";

struct ExecutorEnv {
  // ---- from the AM ----
  std::string job_id;          // LOOM_JOB_ID: the job, and the marker that finds its processes
  std::string task_id;         // LOOM_TASK_ID: "worker:0"
  int restart_count = 0;       // LOOM_RESTART_COUNT: gang restarts plus this task's own
  std::string am_address;      // LOOM_AM_ADDRESS: host:port of the control plane
  std::string secret_file;     // LOOM_SECRET_FILE: a 0600 file holding the job secret, or
  std::string secret_credential;  // LOOM_SECRET_CREDENTIAL: its alias in $HADOOP_TOKEN_FILE_LOCATION, or
  int secret_fd = -1;          // LOOM_SECRET_FD: a pipe to read it from (the local backend: ReadSecretFd)
  int port_low = 0, port_high = 0;  // LOOM_PORT_RANGE: "low-high", where the task's port is taken
  int preferred_port = 0;      // LOOM_PREFERRED_PORT: a restarted task's old port, asked for first
  bool reserve_tb_port = false;    // LOOM_RESERVE_TB_PORT=1: also hold a TensorBoard port (TB_PORT)
  // LOOM_REGISTRY_TIMEOUT_MS: how long registration with the AM is retried before the executor
  // gives up (loom.task.executor.registry-timeout-sec); 0: forever.
  int64_t registry_timeout_ms = 0;
  int metrics_interval_ms = 5000;  // LOOM_METRICS_INTERVAL_MS: how often the task's metrics are sampled
  bool gpu_metrics = false;        // LOOM_GPU_METRICS=1: sample its GPUs with nvidia-smi too
  std::string gpu_exec_path = "nvidia-smi";  // LOOM_GPU_EXEC_PATH: the nvidia-smi to sample them with
  // LOOM_KEY_PREFIX: "tony." or "loom.", the prefix the user wrote their keys in, so that the
  // executor's messages name keys as the user does (JobSpec::key_prefix).
  std::string key_prefix = "loom.";
  // ---- from the backend that starts the container ----
  std::string host;            // LOOM_HOST: the address peers use for this task
  std::string container_id;    // LOOM_CONTAINER_ID
  std::string log_dir;         // LOOM_LOG_DIR: where stdout, stderr and executor.log go ("." if unset)
  std::string link_into_workdir;   // LOOM_LINK_INTO_WORKDIR: an unpacked dir whose entries are linked into the cwd
  std::string memory_enforced_by;  // LOOM_MEMORY_ENFORCED_BY: "cgroup", "watchdog" or "" (the cluster)
  // LOOM_PLANNED_GPUS: "0,1", the devices the AM planned for this container on its node where
  // the cluster does not say which it assigned (YARN: cluster/yarn/gpu_pinning.h), and
  // LOOM_NM_WEB, the NodeManager's web services ("http://host:8042") that may say so.
  std::vector<int> planned_gpus;
  std::string nm_web;
  // ---- from the executor's own start-up ----
  std::string gpu_note;        // LOOM_GPU_NOTE: why other applications may share its GPUs, for the AM

  // Writes the fields that are set into `env` (others are left as they are).
  void AddTo(std::map<std::string, std::string>& env) const;
  // Reads every field; InvalidArgument naming the variable when a required one (task, AM
  // address, a secret source) is missing or a number is malformed.
  static Result<ExecutorEnv> FromEnv(const std::map<std::string, std::string>& env);
  // Removes the executor's own wiring from `env` (what the user process must not see): all but
  // LOOM_JOB_ID, LOOM_TASK_ID, LOOM_RESTART_COUNT, LOOM_HOST and LOOM_CONTAINER_ID.
  static void RemoveWiring(std::map<std::string, std::string>& env);
};

}  // namespace loom::control
