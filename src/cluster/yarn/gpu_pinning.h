#pragma once
// GPUs on YARN: which devices a task's container may use, and how its processes learn them.
// YARN never sets CUDA_VISIBLE_DEVICES (facts: ../shared/yarn-captures/gpu/facts.md §3). Under
// the LinuxContainerExecutor a NodeManager assigns each container the lowest free devices and
// fences the others off with the devices cgroup; the only place that says which is its web
// service GET /ws/v1/node/resources/yarn.io%2Fgpu (`assignedGpuDevices`, recorded in gpu/41,
// 46). Under the DefaultContainerExecutor it only counts them: the lists stay [] (gpu/01-31).
//
// So two steps. The AM plans distinct devices among its own containers on each node
// (GpuPlan, the same lowest-free rule as YARN's allocator) and hands the plan to the container
// (ExecutorEnv::planned_gpus). The executor, before anything else, asks its NodeManager:
// YARN's assignment wins where there is one; else the plan stands, and the task says that
// other applications on that node are not fenced off.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "control/executor_env.h"
#include "core/status.h"

namespace loom::cluster::yarn {

// The AM's per-node plan. Not thread-safe (the broker holds it under its lock).
class GpuPlan {
 public:
  // `count` distinct device indices on `host` for `container_id`, the lowest ones none of
  // the plan's live containers holds, among the node's `node_gpus` (0: unknown, taken as
  // `count`). When too few are free (the node has fewer than the plan thinks: a node report
  // behind) the lowest busy ones make up the rest, and `overlap` says so.
  std::vector<int> Assign(const std::string& host, const std::string& container_id, int count, int node_gpus,
                          bool* overlap = nullptr);
  // The container ended or was given back: its devices are free again. Unknown ids: no-op.
  void Free(const std::string& container_id);

 private:
  struct Holding {
    std::string host;
    std::vector<int> devices;
  };
  std::map<std::string, Holding> by_container_;
};

// What the NodeManager's GPU resource endpoint says (its JSON, Jackson's bean names).
struct NmGpuResources {
  std::vector<std::string> uuids;  // gpuDeviceInformation.gpus[i].uuid: the device of YARN index i
  bool assigns = false;            // totalGpuDevices is not empty: YARN assigns (LinuxContainerExecutor)
  std::map<std::string, std::vector<int>> assigned;  // container id -> its devices' indices
};

// Errors: InvalidArgument naming what is missing or malformed. `{}` (a node with no GPU
// plugin, gpu/04) is NotFound.
Result<NmGpuResources> ParseNmGpuResources(const std::string& body);

// GET <scheme>://<nm_http_address>/ws/v1/node/resources/yarn.io%2Fgpu (JSON only: XML is a
// 500, gpu/02; the slash must be %2F, gpu/03). A short timeout: a container starts anyway.
Result<NmGpuResources> FetchNmGpuResources(const std::string& nm_http_address, const std::string& scheme = "http");

// What a task's processes get.
struct GpuPinning {
  std::string visible_devices;  // CUDA_VISIBLE_DEVICES: UUIDs where the NodeManager names them, else indices
  bool by_index = false;        // indices: they mean nvidia-smi's order only with CUDA_DEVICE_ORDER=PCI_BUS_ID
  bool fenced = false;          // YARN assigned these devices and the node keeps others from them
  std::string note;             // "" or why other applications may use the same devices
};

// The pinning of container `container_id` (`count` GPUs) on host `host`: YARN's assignment
// from `nm` where it made one, else the AM's `planned` indices. `nvidia_visible_devices`: the
// container's NVIDIA_VISIBLE_DEVICES (set by YARN's nvidia-docker-v2 plugin: the container
// sees only its devices, numbered from 0).
GpuPinning DecideGpuPinning(const Result<NmGpuResources>& nm, const std::string& container_id, const std::string& host,
                            int count, const std::vector<int>& planned, const std::string& nvidia_visible_devices);

// The executor's start-up on YARN: when the AM planned GPUs for this container
// (wiring.planned_gpus), asks its NodeManager (wiring.nm_web) and sets CUDA_VISIBLE_DEVICES
// (and CUDA_DEVICE_ORDER=PCI_BUS_ID for indices) in `env`. Returns the note for the AM ("":
// fenced by YARN, or no GPUs).
std::string PinContainerGpus(const control::ExecutorEnv& wiring, std::map<std::string, std::string>& env);

}  // namespace loom::cluster::yarn
