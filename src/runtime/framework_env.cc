#include "runtime/framework_env.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/job_state.h"
#include "core/strings.h"

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

int GlobalRank(const JobSpec& spec, const TaskId& task) {
  int rank = 0;
  for (const auto& t : spec.types) {
    if (t.role == TaskRole::kSidecar) continue;
    if (t.name == task.type) return task.index < t.instances ? rank + task.index : -1;
    rank += t.instances;
  }
  return -1;
}

int WorldSize(const JobSpec& spec) {
  int n = 0;
  for (const auto& t : spec.types) {
    if (t.role != TaskRole::kSidecar) n += t.instances;
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
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) return host;
  char buf[INET_ADDRSTRLEN];
  auto* sin = reinterpret_cast<sockaddr_in*>(res->ai_addr);
  std::string ip = ::inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)) ? buf : host;
  ::freeaddrinfo(res);
  return ip;
}

void AddTorchEnv(const JobSpec& spec, const ClusterSpec& cluster, const TaskContext& ctx,
                 std::map<std::string, std::string>& env) {
  int rank = GlobalRank(spec, ctx.task);
  int world = WorldSize(spec);
  // Rank 0 is the first non-sidecar task; its reserved port becomes the rendezvous port.
  std::string master;
  for (const auto& t : spec.types) {
    if (t.role != TaskRole::kSidecar && t.instances > 0) {
      master = cluster.AddressOf({t.name, 0});
      break;
    }
  }
  auto [addr, port] = SplitHostPort(master);
  env["MASTER_ADDR"] = addr;
  env["MASTER_PORT"] = port;
  env["WORLD_SIZE"] = std::to_string(world);
  // Each container is its own torchrun "node" with one process: local rank 0, so that
  // torch.cuda.set_device(LOCAL_RANK) is right under the pinned CUDA_VISIBLE_DEVICES.
  env["LOCAL_RANK"] = "0";
  env["LOCAL_WORLD_SIZE"] = "1";
  env["ROLE_NAME"] = ctx.task.type;
  env["ROLE_RANK"] = std::to_string(ctx.task.index);
  if (const TaskTypeSpec* t = spec.FindType(ctx.task.type)) env["ROLE_WORLD_SIZE"] = std::to_string(t->instances);
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(ctx.restart_count);
  env["TORCHELASTIC_RUN_ID"] = ctx.job_id;
  if (rank >= 0) {
    env["RANK"] = std::to_string(rank);
    env["GROUP_RANK"] = std::to_string(rank);
  }
  // TonY's names.
  env["INIT_METHOD"] = "tcp://" + master;
  env["WORLD"] = std::to_string(world);
}

}  // namespace

bool ReservesTbPort(const JobSpec& spec, const TaskId& task) {
  if (!spec.tensorboard_log_dir.empty()) return task.type == kTensorBoardType;
  std::optional<TaskId> chief = spec.Chief();
  return chief && *chief == task;
}

std::map<std::string, std::string> BuildFrameworkEnv(const JobSpec& job, const ClusterSpec& cluster,
                                                     const TaskContext& ctx) {
  std::map<std::string, std::string> env;
  const TaskId& task = ctx.task;
  const JobSpec spec = HasTrainingStage(job) ? StageSpec(job, StageOf(job, task.type)) : job;
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
      AddTorchEnv(spec, cluster, ctx, env);
      break;
    case Framework::kHorovod: {
      AddTorchEnv(spec, cluster, ctx, env);
      int rank = GlobalRank(spec, task);
      if (rank >= 0) env["HOROVOD_RANK"] = std::to_string(rank);
      env["HOROVOD_SIZE"] = std::to_string(WorldSize(spec));
      env["HOROVOD_LOCAL_RANK"] = "0";
      env["HOROVOD_LOCAL_SIZE"] = "1";
      if (rank >= 0) env["HOROVOD_CROSS_RANK"] = std::to_string(rank);
      env["HOROVOD_CROSS_SIZE"] = std::to_string(WorldSize(spec));
      env["HOROVOD_CONTROLLER"] = "gloo";
      env["HOROVOD_CPU_OPERATIONS"] = "gloo";
      env["HOROVOD_HOSTNAME"] = SplitHostPort(cluster.AddressOf(task)).first;
      break;
    }
    case Framework::kMXNet: {
      auto [host, port] = SplitHostPort(cluster.AddressOf({"scheduler", 0}));
      env["DMLC_ROLE"] = task.type;
      env["DMLC_PS_ROOT_URI"] = ResolveIp(host);
      env["DMLC_PS_ROOT_PORT"] = port;
      env["DMLC_LOCAL"] = "0";
      const TaskTypeSpec* servers = spec.FindType("server");
      const TaskTypeSpec* workers = spec.FindType("worker");
      env["DMLC_NUM_SERVER"] = std::to_string(servers ? servers->instances : 0);
      env["DMLC_NUM_WORKER"] = std::to_string(workers ? workers->instances : 0);
      break;
    }
    case Framework::kStandalone:
      break;
  }
  return env;
}

}  // namespace loom::runtime
