#include "nm_gpus.h"

#include <cstdio>
#include <map>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "yarn_double_impl.h"

namespace loom::yarn_double {
namespace {

using ordered_json = nlohmann::ordered_json;

// Device index -> the container holding it on `node`: live containers the NodeManager assigned
// devices, and Options::gpus_held_elsewhere on node 0. mu_ held.
std::map<int, std::string> HoldersLocked(const YarnDoubleImpl& d, int node) {
  std::map<int, std::string> holders;
  if (node == 0) {
    for (int i = 0; i < d.options_.gpus_held_elsewhere; ++i) {
      holders[i] = "container_" + std::to_string(d.cluster_ts_) + "_9999_01_000002";
    }
  }
  for (const auto& [id, c] : d.containers_) {
    if (c->node != node || c->complete) continue;
    for (int g : c->gpu_devices) holders[g] = id;
  }
  return holders;
}

std::string Uuid(int node, int index) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-%08x-0000-4000-8000-%012x", node + 1, index);
  return buf;
}

// NMGpuResourceInfo as Jackson writes it: bean names, field order, arrays always (gpu/41).
std::string ResourcesJson(const YarnDoubleImpl& d, int node) {
  ordered_json gpus = ordered_json::array();
  for (int i = 0; i < d.options_.node_gpus; ++i) {
    ordered_json g;
    g["productName"] = "Loom double GPU";
    g["uuid"] = Uuid(node, i);
    g["minorNumber"] = i;
    g["gpuUtilizations"] = {{"overallGpuUtilization", 0.0}};
    g["gpuMemoryUsage"] = ordered_json{{"usedMemoryMiB", 4}, {"availMemoryMiB", 40329}, {"totalMemoryMiB", 40333}};
    g["temperature"] = ordered_json{{"currentGpuTemp", 31.0}, {"maxGpuTemp", 92.0}, {"slowThresholdGpuTemp", 89.0}};
    gpus.push_back(g);
  }
  ordered_json info;
  info["gpus"] = gpus;
  info["driverVersion"] = "535.104.05";
  ordered_json total = ordered_json::array(), assigned = ordered_json::array();
  // Only the LinuxContainerExecutor bootstraps the allocator (facts.md §2.1).
  if (d.options_.linux_container_executor) {
    for (int i = 0; i < d.options_.node_gpus; ++i) total.push_back(ordered_json{{"index", i}, {"minorNumber", i}});
    for (const auto& [index, container] : HoldersLocked(d, node)) {
      assigned.push_back(ordered_json{{"index", index}, {"minorNumber", index}, {"containerId", container}});
    }
  }
  ordered_json j;
  j["gpuDeviceInformation"] = info;
  j["totalGpuDevices"] = total;
  j["assignedGpuDevices"] = assigned;
  return j.dump();
}

}  // namespace

void AssignContainerGpusLocked(YarnDoubleImpl& d, Container& c) {
  if (!d.options_.linux_container_executor || c.resource.gpus <= 0 || !c.gpu_devices.empty()) return;
  std::map<int, std::string> holders = HoldersLocked(d, c.node);
  for (int i = 0; i < d.options_.node_gpus && static_cast<int64_t>(c.gpu_devices.size()) < c.resource.gpus; ++i) {
    if (!holders.count(i)) c.gpu_devices.push_back(i);
  }
}

void AddGpuResourcesRoute(httplib::Server& server, YarnDoubleImpl& d, int node) {
  server.Get(R"(/ws/v1/node/resources/(.+))", [&d, node](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("Pragma", "no-cache");
    res.set_header("X-Content-Type-Options", "nosniff");
    // JAX-RS matches the encoded path: a literal slash is another route, which does not exist.
    if (ToLower(req.target).find("%2f") == std::string::npos) {
      res.status = 404;
      res.set_content("<html><body>Sorry, got error 404: controller for v1 not found</body></html>", "text/html;charset=utf-8");
      return;
    }
    if (req.get_header_value("Accept").find("xml") != std::string::npos) {
      res.status = 500;
      res.set_content("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?><RemoteException><exception>"
                      "WebApplicationException</exception><message>com.sun.jersey.api.MessageException: A message body "
                      "writer for Java class org.apache.hadoop.yarn.server.nodemanager.webapp.dao.gpu.NMGpuResourceInfo"
                      ", and Java type class org.apache.hadoop.yarn.server.nodemanager.webapp.dao.gpu.NMGpuResourceInfo"
                      ", and MIME media type application/xml; charset=utf-8 was not found.\n</message><javaClassName>"
                      "javax.ws.rs.WebApplicationException</javaClassName></RemoteException>",
                      "application/xml");
      return;
    }
    std::string body = "{}";
    if (req.matches[1] == "yarn.io/gpu" && d.options_.node_gpus > 0) {
      std::lock_guard<std::mutex> lock(d.mu_);
      body = ResourcesJson(d, node);
    }
    res.status = 200;
    res.set_content(body, "application/json;charset=utf-8");
  });
}

}  // namespace loom::yarn_double
