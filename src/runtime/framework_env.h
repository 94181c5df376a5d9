#pragma once
// The environment a user process gets from its framework contract, so that scripts written for
// TonY (JOB_NAME, TASK_INDEX, CLUSTER_SPEC, TF_CONFIG, INIT_METHOD, RANK, WORLD, DMLC_*) or for
// torchrun (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, ...) run unchanged.
// Pure functions: no I/O.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/job_spec.h"

namespace loom::runtime {

// Addresses of every task, by type, in the job's rank order.
class ClusterSpec {
 public:
  void Add(const std::string& type, std::vector<std::string> addresses);
  const std::vector<std::pair<std::string, std::vector<std::string>>>& types() const { return types_; }
  const std::vector<std::string>* Find(const std::string& type) const;
  std::string AddressOf(const TaskId& id) const;  // "" if unknown
  // {"worker": ["h:1", "h:2"], ...} without the types in `exclude`.
  std::string ToJson(const std::vector<std::string>& exclude = {}) const;
  static Result<ClusterSpec> FromJson(const std::string& json, const std::vector<std::string>& type_order);

 private:
  std::vector<std::pair<std::string, std::vector<std::string>>> types_;
};

struct TaskContext {
  TaskId task;
  std::string job_id;
  int restart_count = 0;
  int tb_port = 0;  // the TensorBoard port its executor holds (ReservesTbPort), else 0
};

// The sidecar TensorBoard's type, added by loom.application.tensorboard-log-dir (TonY's name).
inline constexpr char kTensorBoardType[] = "tensorboard";

// Whether the executor of `task` holds a TensorBoard port (TB_PORT), as TonY's
// needReserveTBPort: the sidecar `tensorboard` task when the job has one, else the chief.
bool ReservesTbPort(const JobSpec& spec, const TaskId& task);

// Ranks for frameworks with a flat world (pytorch, horovod): every non-sidecar task, in the
// job's type order (chief, master, worker, then the rest by name). Returns -1 for tasks outside
// the world (sidecars).
int GlobalRank(const JobSpec& spec, const TaskId& task);
int WorldSize(const JobSpec& spec);

// The variables given to the user process of `ctx.task`, on top of the container's environment.
// In a two-stage job each stage is its own cluster: ranks, world sizes, TASK_NUM, the chief and
// TF_CONFIG's cluster cover the task's own stage; CLUSTER_SPEC lists every task with a known
// address (as TonY's), so a training task finds a service started in the prepare stage.
std::map<std::string, std::string> BuildFrameworkEnv(const JobSpec& spec, const ClusterSpec& cluster,
                                                     const TaskContext& ctx);

}  // namespace loom::runtime
