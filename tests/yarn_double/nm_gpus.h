#pragma once
// The GPU part of the YARN TEST DOUBLE's NodeManagers, as Hadoop 3.3.6's GPU plugin behaves
// (yarn-captures gpu/facts.md): under Options::linux_container_executor each container gets the
// lowest free device indices when it starts (GpuResourceAllocator's TreeSet order) and loses
// them when it completes; the web service GET /ws/v1/node/resources/yarn.io%2Fgpu answers in
// the recorded JSON shape (gpu/01, 41, 46), [] lists under the DefaultContainerExecutor, {} for
// a plugin the node lacks (gpu/04), a 404 page for an unencoded slash (gpu/03) and a 500 for
// XML (gpu/02). The devices are made up (uuid "GPU-<node>-<index>" in the recorded format).

#include <string>

namespace httplib {
class Server;
}

namespace loom::yarn_double {

class YarnDoubleImpl;
struct Container;

// A container about to start: its devices, when the NodeManager assigns them. mu_ held.
void AssignContainerGpusLocked(YarnDoubleImpl& d, Container& c);
// Adds the resources route of node `node` to `server`.
void AddGpuResourcesRoute(httplib::Server& server, YarnDoubleImpl& d, int node);

}  // namespace loom::yarn_double
