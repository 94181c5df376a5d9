#include "runtime/framework_env.h"

#include <arpa/inet.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/host_resolver.h"
#include "core/job_state.h"
#include "core/strings.h"
#include "runtime/mpi.h"

namespace loom::runtime {

using nlohmann::json;

void ClusterSpec::Add(const std::string& type, std::vector<std::string> addresses) {
  types_.emplace_back(type, std::move(addresses));
}

const std::vector<std::string>* ClusterSpec::Find(const std::string& type) const {
  for (const auto& [t, addrs] : types_) {
    if (t == type) return &addrs;
  }
  return nullptr;
}

std::string ClusterSpec::AddressOf(const TaskId& id) const {
  const auto* addrs = Find(id.type);
  if (!addrs || id.index < 0 || id.index >= static_cast<int>(addrs->size())) return "";
  return (*addrs)[id.index];
}

std::string ClusterSpec::ToJson(const std::vector<std::string>& exclude) const {
  json j = json::object();
  for (const auto& [t, addrs] : types_) {
    if (std::find(exclude.begin(), exclude.end(), t) == exclude.end()) j[t] = addrs;
  }
  return j.dump();
}

Result<ClusterSpec> ClusterSpec::FromJson(const std::string& text, const std::vector<std::string>& order) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("cluster spec is not JSON: ") + e.what());
  }
  if (!j.is_object()) return Status::InvalidArgument("cluster spec is not a JSON object");
  ClusterSpec spec;
  for (const std::string& type : order) {
    if (!j.contains(type)) continue;
    std::vector<std::string> addrs;
    for (const auto& a : j[type]) {
      if (!a.is_string()) return Status::InvalidArgument("cluster spec: address of " + type + " is not a string");
      addrs.push_back(a.get<std::string>());
    }
    spec.Add(type, std::move(addrs));
  }
  return spec;
}

bool InWorld(const TaskTypeSpec& type) { return type.holds_rank && type.role != TaskRole::kSidecar; }

int GlobalRank(const JobSpec& spec, const TaskId& task) {
  int rank = 0;
  for (const auto& t : spec.types) {
    if (!InWorld(t)) continue;
    if (t.name == task.type) return task.index < t.instances ? rank + task.index : -1;
    rank += t.instances;
  }
  return -1;
}

int WorldSize(const JobSpec& spec) {
  int n = 0;
  for (const auto& t : spec.types) {
    if (InWorld(t)) n += t.instances;
  }
  return n;
}

int FirstProcessRank(const JobSpec& spec, const TaskId& task) {
  int rank = 0;
  for (const auto& t : spec.types) {
    if (!InWorld(t)) continue;
    if (t.name == task.type) return task.index < t.instances ? rank + task.index * t.processes : -1;
    rank += t.instances * t.processes;
  }
  return -1;
}

int WorldProcesses(const JobSpec& spec) {
  int n = 0;
  for (const auto& t : spec.types) {
    if (InWorld(t)) n += t.instances * t.processes;
  }
  return n;
}

namespace {

std::pair<std::string, std::string> SplitHostPort(const std::string& addr) {
  size_t colon = addr.rfind(':');
  if (colon == std::string::npos) return {addr, ""};
  return {addr.substr(0, colon), addr.substr(colon + 1)};
}

// MXNet's ps-lite wants an IP address, not a host name (TonY resolves it too).
std::string ResolveIp(const std::string& host) {
  Result<std::string> ip = ResolveHostToIp(host);
  return ip.ok() ? *ip : host;
}

int ProcessesOf(const JobSpec& spec, const std::string& type) {
  const TaskTypeSpec* t = spec.FindType(type);
  return t ? std::max(1, t->processes) : 1;
}

// torchrun's variables. A task is one torchrun "node" (agent) with loom.<type>.processes
// workers: GROUP_RANK / GROUP_WORLD_SIZE count tasks, RANK / WORLD_SIZE count processes, and
// ROLE_RANK / ROLE_WORLD_SIZE count the processes of the task's type (torchrun's role), as
// torch.distributed.elastic's _assign_worker_ranks does. `local_rank`: the process's.
void AddTorchEnv(const JobSpec& spec, const ClusterSpec& cluster, const TaskContext& ctx, int local_rank,
                 std::map<std::string, std::string>& env) {
  const int processes = ProcessesOf(spec, ctx.task.type);
  const int task_rank = GlobalRank(spec, ctx.task);
  const int first_rank = FirstProcessRank(spec, ctx.task);
  const int world = WorldProcesses(spec);
  // Rank 0 is the first ranked task's process 0; its task's reserved port becomes the
  // rendezvous port, one for every process of the job.
  std::string master;
  for (const auto& t : spec.types) {
    if (InWorld(t) && t.instances > 0) {
      master = cluster.AddressOf({t.name, 0});
      break;
    }
  }
  // A stage without ranked types (a prepare stage of data loaders) has no world to join.
  if (!master.empty()) {
    auto [addr, port] = SplitHostPort(master);
    env["MASTER_ADDR"] = addr;
    env["MASTER_PORT"] = port;
    env["WORLD_SIZE"] = std::to_string(world);
    env["GROUP_WORLD_SIZE"] = std::to_string(WorldSize(spec));
    // TonY's names.
    env["INIT_METHOD"] = "tcp://" + master;
    env["WORLD"] = std::to_string(world);
  }
  // With one process, each container is its own node with local rank 0, so that
  // torch.cuda.set_device(LOCAL_RANK) is right under the pinned CUDA_VISIBLE_DEVICES; with
  // split GPUs each process sees only its own, and the same holds.
  env["LOCAL_RANK"] = std::to_string(local_rank);
  env["LOCAL_WORLD_SIZE"] = std::to_string(processes);
  env["ROLE_NAME"] = ctx.task.type;
  env["ROLE_RANK"] = std::to_string(ctx.task.index * processes + local_rank);
  if (const TaskTypeSpec* t = spec.FindType(ctx.task.type)) {
    env["ROLE_WORLD_SIZE"] = std::to_string(t->instances * processes);
  }
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(ctx.restart_count);
  env["TORCHELASTIC_RUN_ID"] = ctx.job_id;
  if (task_rank >= 0) {
    env["RANK"] = std::to_string(first_rank + local_rank);
    env["GROUP_RANK"] = std::to_string(task_rank);
  }
}

// Horovod's variables for process `local_rank` of the task (horovodrun's meaning): ranks over
// every process of the world; the "cross" communicator of a local rank joins the one process
// of that local rank on each task that has one (a chief of 1 process is in cross communicator
// 0 only).
void AddHorovodEnv(const JobSpec& spec, const ClusterSpec& cluster, const TaskContext& ctx, int local_rank,
                   std::map<std::string, std::string>& env) {
  const int first_rank = FirstProcessRank(spec, ctx.task);
  if (first_rank >= 0) env["HOROVOD_RANK"] = std::to_string(first_rank + local_rank);
  env["HOROVOD_SIZE"] = std::to_string(WorldProcesses(spec));
  env["HOROVOD_LOCAL_RANK"] = std::to_string(local_rank);
  env["HOROVOD_LOCAL_SIZE"] = std::to_string(ProcessesOf(spec, ctx.task.type));
  int cross_rank = -1, cross_size = 0;
  for (const auto& t : spec.types) {
    if (!InWorld(t) || t.processes <= local_rank) continue;
    for (int i = 0; i < t.instances; ++i) {
      if (t.name == ctx.task.type && i == ctx.task.index) cross_rank = cross_size;
      ++cross_size;
    }
  }
  if (cross_rank >= 0) env["HOROVOD_CROSS_RANK"] = std::to_string(cross_rank);
  env["HOROVOD_CROSS_SIZE"] = std::to_string(cross_size);
  env["HOROVOD_CONTROLLER"] = "gloo";
  env["HOROVOD_CPU_OPERATIONS"] = "gloo";
  env["HOROVOD_HOSTNAME"] = HorovodHostname(cluster, ctx.task);
  // What horovodrun's gloo mode adds (gloo_run.py, create_run_envs): where the store is. Not its
  // HOROVOD_GLOO_IFACE / NCCL_SOCKET_IFNAME, which it finds by probing the hosts' interfaces:
  // without them gloo uses the address the host's name resolves to; --shell_env sets them.
  if (!ctx.rendezvous_address.empty()) {
    auto [addr, port] = SplitHostPort(ctx.rendezvous_address);
    env["HOROVOD_GLOO_RENDEZVOUS_ADDR"] = addr;
    env["HOROVOD_GLOO_RENDEZVOUS_PORT"] = port;
  }
}

// Every variable that differs between the processes of a task, for process `local_rank`;
// `spec` is the task's stage.
void AddProcessEnv(const JobSpec& spec, const ClusterSpec& cluster, const TaskContext& ctx, int local_rank,
                   std::map<std::string, std::string>& env) {
  env["LOOM_PROCESS_INDEX"] = std::to_string(local_rank);
  env["LOCAL_RANK"] = std::to_string(local_rank);
  switch (spec.framework) {
    case Framework::kPyTorch:
      AddTorchEnv(spec, cluster, ctx, local_rank, env);
      break;
    case Framework::kHorovod:
      AddTorchEnv(spec, cluster, ctx, local_rank, env);
      AddHorovodEnv(spec, cluster, ctx, local_rank, env);
      break;
    case Framework::kTensorFlow:
    case Framework::kMXNet:
    case Framework::kStandalone:
      break;
    case Framework::kMpi:
      // The processes of an MPI task are ranks Open MPI starts, each with its own
      // OMPI_COMM_WORLD_LOCAL_RANK: a LOCAL_RANK of 0 inherited by every one would mislead.
      for (const char* k : {"LOOM_PROCESS_INDEX", "LOCAL_RANK", "LOCAL_WORLD_SIZE"}) env.erase(k);
      break;
  }
}

// The spec as `task`'s stage sees it (a stage is its own cluster).
JobSpec StageOfTask(const JobSpec& job, const TaskId& task) {
  return HasTrainingStage(job) ? StageSpec(job, StageOf(job, task.type)) : job;
}

}  // namespace

std::string HorovodHostname(const ClusterSpec& cluster, const TaskId& task) {
  return task.type + "-" + std::to_string(task.index) + "." + SplitHostPort(cluster.AddressOf(task)).first;
}

bool ReservesTbPort(const JobSpec& spec, const TaskId& task) {
  if (!spec.tensorboard_log_dir.empty()) return task.type == kTensorBoardType;
  std::optional<TaskId> chief = spec.Chief();
  return chief && *chief == task;
}

std::map<std::string, std::string> BuildFrameworkEnv(const JobSpec& job, const ClusterSpec& cluster,
                                                     const TaskContext& ctx) {
  std::map<std::string, std::string> env;
  const TaskId& task = ctx.task;
  const JobSpec spec = StageOfTask(job, task);
  if (ctx.tb_port > 0) env["TB_PORT"] = std::to_string(ctx.tb_port);
  if (task.type == kTensorBoardType && !job.tensorboard_log_dir.empty()) env["TB_LOG_DIR"] = job.tensorboard_log_dir;
  std::optional<TaskId> chief = spec.Chief();
  env["JOB_NAME"] = task.type;
  env["TASK_INDEX"] = std::to_string(task.index);
  env["TASK_NUM"] = std::to_string(spec.TrackedTasks());
  env["IS_CHIEF"] = chief && *chief == task ? "true" : "false";
  env["DISTRIBUTED_MODE"] = spec.gang ? "GANG" : "FCFS";
  env["LOOM_JOB_ID"] = ctx.job_id;
  env["JOB_ID"] = ctx.job_id;
  env["LOOM_TASK_ID"] = task.ToString();
  env["LOOM_RESTART_COUNT"] = std::to_string(ctx.restart_count);
  env["SESSION_ID"] = std::to_string(ctx.restart_count);
  // Every framework: which of the task's processes this is (loom.<type>.processes).
  env["LOCAL_WORLD_SIZE"] = std::to_string(ProcessesOf(spec, task.type));

  switch (spec.framework) {
    case Framework::kTensorFlow: {
      if (!spec.gang) break;  // FCFS has no complete cluster, as in TonY
      env["CLUSTER_SPEC"] = cluster.ToJson();
      // TensorFlow hangs when the evaluator (or tensorboard) sits in other tasks' cluster
      // (TonY#344, #506): only the evaluator itself sees the evaluator entry.
      std::vector<std::string> exclude = {kTensorBoardType};
      if (task.type != "evaluator") exclude.push_back("evaluator");
      for (const auto& [type, addrs] : cluster.types()) {
        if (!spec.FindType(type)) exclude.push_back(type);  // another stage's
      }
      nlohmann::ordered_json tf;
      tf["cluster"] = json::parse(cluster.ToJson(exclude));
      tf["task"] = {{"type", task.type}, {"index", task.index}};
      env["TF_CONFIG"] = tf.dump();
      break;
    }
    case Framework::kPyTorch:
    case Framework::kHorovod:
      break;  // all theirs differs between processes: AddProcessEnv
    case Framework::kMXNet: {
      auto [host, port] = SplitHostPort(cluster.AddressOf({"scheduler", 0}));
      env["DMLC_ROLE"] = task.type;
      env["DMLC_PS_ROOT_URI"] = ResolveIp(host);
      env["DMLC_PS_ROOT_PORT"] = port;
      env["DMLC_LOCAL"] = "0";
      const TaskTypeSpec* servers = spec.FindType("server");
      const TaskTypeSpec* workers = spec.FindType("worker");
      // ps-lite counts the processes that register with its scheduler.
      env["DMLC_NUM_SERVER"] = std::to_string(servers ? servers->instances * servers->processes : 0);
      env["DMLC_NUM_WORKER"] = std::to_string(workers ? workers->instances * workers->processes : 0);
      break;
    }
    case Framework::kStandalone:
      break;
    case Framework::kMpi:
      AddMpiEnv(spec, task, env);
      break;
  }
  AddProcessEnv(spec, cluster, ctx, 0, env);
  return env;
}

std::vector<std::map<std::string, std::string>> BuildProcessEnvs(const JobSpec& job, const ClusterSpec& cluster,
                                                                 const TaskContext& ctx) {
  const JobSpec spec = StageOfTask(job, ctx.task);
  std::vector<std::map<std::string, std::string>> envs(ProcessesOf(spec, ctx.task.type));
  for (size_t i = 0; i < envs.size(); ++i) AddProcessEnv(spec, cluster, ctx, static_cast<int>(i), envs[i]);
  return envs;
}

}  // namespace loom::runtime
