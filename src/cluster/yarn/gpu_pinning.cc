#include "cluster/yarn/gpu_pinning.h"

#include <algorithm>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/strings.h"
#include "hadoop/hdfs/spnego.h"

namespace loom::cluster::yarn {

using json = nlohmann::json;

namespace {

std::string IndexList(const std::vector<int>& devices) {
  std::vector<std::string> out;
  for (int d : devices) out.push_back(std::to_string(d));
  return Join(out, ",");
}

}  // namespace

std::vector<int> GpuPlan::Assign(const std::string& host, const std::string& container_id, int count, int node_gpus,
                                 bool* overlap) {
  Free(container_id);
  std::set<int> busy;
  for (const auto& [id, h] : by_container_) {
    if (h.host == host) busy.insert(h.devices.begin(), h.devices.end());
  }
  const int total = std::max(node_gpus, count);
  std::vector<int> devices;
  for (int d = 0; d < total && static_cast<int>(devices.size()) < count; ++d) {
    if (!busy.count(d)) devices.push_back(d);
  }
  if (overlap) *overlap = static_cast<int>(devices.size()) < count;
  for (int d = 0; static_cast<int>(devices.size()) < count; ++d) {
    if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
  }
  std::sort(devices.begin(), devices.end());
  by_container_[container_id] = {host, devices};
  return devices;
}

void GpuPlan::Free(const std::string& container_id) { by_container_.erase(container_id); }

Result<NmGpuResources> ParseNmGpuResources(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_object()) return Status::InvalidArgument("the NodeManager's GPU resources are not a JSON object");
  if (j.empty()) return Status::NotFound("the NodeManager has no GPU plugin (yarn.io/gpu answered {})");
  NmGpuResources out;
  auto list = [&](const char* key) -> Result<const json*> {
    if (!j.contains(key) || j[key].is_null()) return static_cast<const json*>(nullptr);
    if (!j[key].is_array()) return Status::InvalidArgument(std::string("the NodeManager's ") + key + " is not a list");
    return &j[key];
  };
  // Manual allowed-gpu-devices mode has no device information (gpu/facts.md §3): no UUIDs.
  if (j.contains("gpuDeviceInformation") && j["gpuDeviceInformation"].is_object()) {
    const json& info = j["gpuDeviceInformation"];
    if (info.contains("gpus") && info["gpus"].is_array()) {
      for (const json& g : info["gpus"]) {
        out.uuids.push_back(g.is_object() && g.contains("uuid") && g["uuid"].is_string() ? g["uuid"].get<std::string>() : "");
      }
    }
  }
  LOOM_ASSIGN_OR_RETURN(const json* total, list("totalGpuDevices"));
  out.assigns = total && !total->empty();
  LOOM_ASSIGN_OR_RETURN(const json* assigned, list("assignedGpuDevices"));
  if (assigned) {
    for (const json& a : *assigned) {
      if (!a.is_object() || !a.contains("index") || !a["index"].is_number_integer() || !a.contains("containerId") ||
          !a["containerId"].is_string()) {
        return Status::InvalidArgument("an entry of the NodeManager's assignedGpuDevices lacks index or containerId: " +
                                       a.dump());
      }
      out.assigned[a["containerId"].get<std::string>()].push_back(a["index"].get<int>());
    }
  }
  return out;
}

Result<NmGpuResources> FetchNmGpuResources(const std::string& nm_http_address, const std::string& scheme) {
  hadoop::HttpRequest request;
  request.url = scheme + "://" + nm_http_address + "/ws/v1/node/resources/yarn.io%2Fgpu";
  request.headers = {"Accept: application/json"};
  request.connect_timeout_s = 5;
  request.stall_timeout_s = 15;  // the NodeManager runs nvidia-smi for each call (10 s limit)
  LOOM_ASSIGN_OR_RETURN(hadoop::HttpResponse r, hadoop::AuthenticatedExchange(request));
  if (r.code != 200) {
    return Status::Unavailable("GET " + request.url + ": HTTP " + std::to_string(r.code) + ": " + r.body.substr(0, 200));
  }
  Result<NmGpuResources> parsed = ParseNmGpuResources(r.body);
  if (!parsed.ok()) return parsed.status().WithContext("GET " + request.url);
  return parsed;
}

GpuPinning DecideGpuPinning(const Result<NmGpuResources>& nm, const std::string& container_id, const std::string& host,
                            int count, const std::vector<int>& planned, const std::string& nvidia_visible_devices) {
  GpuPinning p;
  // nvidia-docker-v2: the container sees its devices alone, as 0..n-1.
  if (!nvidia_visible_devices.empty() && nvidia_visible_devices != "all" && nvidia_visible_devices != "none") {
    std::vector<int> own;
    for (int i = 0; i < static_cast<int>(Split(nvidia_visible_devices, ',').size()); ++i) own.push_back(i);
    p.visible_devices = IndexList(own);
    p.by_index = true;
    p.fenced = true;
    return p;
  }
  // The index of YARN's allocator is the position in nvidia-smi's list; its UUID holds in any
  // CUDA device order.
  auto name = [&](int index) -> std::string {
    if (nm.ok() && index >= 0 && index < static_cast<int>(nm->uuids.size()) && !nm->uuids[index].empty()) {
      return nm->uuids[index];
    }
    return std::to_string(index);
  };
  auto names = [&](const std::vector<int>& devices) {
    std::vector<std::string> out;
    for (int d : devices) out.push_back(name(d));
    p.by_index = std::any_of(out.begin(), out.end(), [](const std::string& s) { return !StartsWith(s, "GPU-") && !StartsWith(s, "MIG-"); });
    return Join(out, ",");
  };
  if (nm.ok() && nm->assigns) {
    auto it = nm->assigned.find(container_id);
    if (it != nm->assigned.end() && static_cast<int>(it->second.size()) == count) {
      p.visible_devices = names(it->second);
      p.fenced = true;
      return p;
    }
    p.visible_devices = names(planned);
    p.note = "YARN assigns GPUs on " + host + " but listed " +
             (it == nm->assigned.end() ? std::string("none") : std::to_string(it->second.size())) + " of " +
             std::to_string(count) + " for " + container_id + ": pinned to Loom's plan (" + p.visible_devices +
             "), which may differ from the devices YARN lets it open";
    return p;
  }
  p.visible_devices = names(planned);
  p.note = nm.ok() ? "YARN only counts GPUs on " + host +
                         " (no LinuxContainerExecutor assigns them): Loom pinned its own tasks there to distinct GPUs, "
                         "but other applications' containers on that node are not fenced off"
                   : "could not ask the NodeManager of " + host + " which GPUs YARN assigned (" + nm.status().message() +
                         "): pinned to Loom's plan (" + p.visible_devices +
                         "), distinct among its own tasks; other applications' containers are not fenced off";
  return p;
}

std::string PinContainerGpus(const control::ExecutorEnv& wiring, std::map<std::string, std::string>& env) {
  if (wiring.planned_gpus.empty()) return "";
  auto get = [&](const char* key) {
    auto it = env.find(key);
    return it == env.end() ? std::string() : it->second;
  };
  const std::string& web = wiring.nm_web;  // scheme://host:port
  Result<NmGpuResources> nm = Status::FailedPrecondition("the AM named no NodeManager web address");
  if (auto sep = web.find("://"); sep != std::string::npos) {
    nm = FetchNmGpuResources(web.substr(sep + 3), web.substr(0, sep));
  }
  std::string host = !get("NM_HOST").empty() ? get("NM_HOST") : web;
  GpuPinning p = DecideGpuPinning(nm, get("CONTAINER_ID"), host, static_cast<int>(wiring.planned_gpus.size()),
                                  wiring.planned_gpus, get("NVIDIA_VISIBLE_DEVICES"));
  env["CUDA_VISIBLE_DEVICES"] = p.visible_devices;
  if (p.by_index) env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";  // indices in nvidia-smi's (YARN's) order
  if (!p.note.empty()) spdlog::warn("{}", p.note);
  spdlog::info("GPUs: CUDA_VISIBLE_DEVICES={} ({})", p.visible_devices,
               p.fenced ? "assigned by YARN" : "Loom's plan " + IndexList(wiring.planned_gpus));
  return p.note;
}

}  // namespace loom::cluster::yarn
