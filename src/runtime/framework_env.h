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
  // framework=horovod: "host:port" of the AM's rendezvous store (am/rendezvous_server.h),
  // given as HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT; "" if none.
  std::string rendezvous_address;
};

// horovod: HOROVOD_HOSTNAME of `task`, "<type>-<index>.<host>". Each task is one of horovodrun's
// hosts (its processes are the host's slots, LOCAL_RANK 0..processes-1, sharing the task's
// GPUs), so the name must differ between two tasks on one machine: gloo's local communicator
// is the store scope "local_<HOROVOD_HOSTNAME>", and tasks sharing it would take each other's
// keys. Horovod on Spark does the same: a YARN container "must be considered a `host`"
// (horovod/spark/common/util.py, host_hash; horovod#1497). Type names hold no '.', so the name
// is unambiguous; it matches horovodrun's host syntax [\w.-]+.
std::string HorovodHostname(const ClusterSpec& cluster, const TaskId& task);

// The sidecar TensorBoard's type, added by loom.application.tensorboard-log-dir (TonY's name).
inline constexpr char kTensorBoardType[] = "tensorboard";

// Whether the executor of `task` holds a TensorBoard port (TB_PORT), as TonY's
// needReserveTBPort: the sidecar `tensorboard` task when the job has one, else the chief.
bool ReservesTbPort(const JobSpec& spec, const TaskId& task);

// Whether the tasks of `type` hold ranks in the flat world (pytorch, horovod): the types of
// loom.application.world.jobtypes (TaskTypeSpec::holds_rank), never a sidecar.
bool InWorld(const TaskTypeSpec& type);
// Ranks of tasks in frameworks with a flat world: every task of an InWorld type, in the job's
// type order (chief, master, worker, then the rest by name). Returns -1 for tasks outside the
// world. This is torchrun's GROUP_RANK (a task is a torchrun "node").
int GlobalRank(const JobSpec& spec, const TaskId& task);
// Tasks in the flat world (GROUP_WORLD_SIZE).
int WorldSize(const JobSpec& spec);
// The flat world counts processes (loom.<type>.processes each task): the rank of `task`'s
// process 0 is the number of processes of the world's tasks before it, in GlobalRank's order;
// -1 outside the world. Its process i has rank FirstProcessRank + i.
int FirstProcessRank(const JobSpec& spec, const TaskId& task);
// Processes in the flat world (WORLD_SIZE).
int WorldProcesses(const JobSpec& spec);

// The variables given to the user processes of `ctx.task`, on top of the container's
// environment: what every process of the task shares, with process 0's values for the
// per-process variables (so a task of one process needs nothing else).
// In a two-stage job each stage is its own cluster: ranks, world sizes, TASK_NUM, the chief and
// TF_CONFIG's cluster cover the task's own stage; CLUSTER_SPEC lists every task with a known
// address (as TonY's), so a training task finds a service started in the prepare stage.
std::map<std::string, std::string> BuildFrameworkEnv(const JobSpec& spec, const ClusterSpec& cluster,
                                                     const TaskContext& ctx);

// What process i of the task sets on top of BuildFrameworkEnv: element i (one per process of
// the type's loom.<type>.processes, at least one) holds every variable that differs between
// the task's processes (LOOM_PROCESS_INDEX, LOCAL_RANK, RANK, ROLE_RANK, HOROVOD_*RANK, ...),
// so applying it over BuildFrameworkEnv's map gives process i its complete contract. Element 0
// agrees with BuildFrameworkEnv.
std::vector<std::map<std::string, std::string>> BuildProcessEnvs(const JobSpec& spec, const ClusterSpec& cluster,
                                                                 const TaskContext& ctx);

}  // namespace loom::runtime
