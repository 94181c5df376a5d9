#include "cluster/yarn/yarn_container_broker.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

// What the broker asks the RM for and where: each task planned on the node snapshot (most room
// first), one ask per resource shape and label with its host, rack and "*" totals, the snapshot
// kept current from the RM's node reports, and what each pending task waits for.
namespace loom::cluster::yarn {

namespace ypb = ::hadoop::yarn;

std::string PendingRequest::ToString() const {
  return task.ToString() + " (" + resources.ToString() + ") waiting " +
         std::to_string(std::chrono::duration_cast<std::chrono::seconds>(waited).count()) + " s: " + reason;
}

Resources YarnContainerBroker::FreeOnLocked(const NodeView& n) const {
  Resources free{n.node.memory_mb - n.node.used_memory_mb, n.node.vcores - n.node.used_vcores,
                 static_cast<int>(n.node.gpus - n.node.used_gpus)};
  auto take = [&](const Resources& r) {
    free.memory_mib -= r.memory_mib;
    free.vcores -= r.vcores;
    free.gpus -= r.gpus;
  };
  for (const auto& [id, p] : pending_) {
    if (p.node == n.node.host) take(p.resources);
  }
  // Ours that arrived after the snapshot was taken.
  for (const auto& [id, h] : held_) {
    if (!h.completed && h.container.nodeid().host() == n.node.host) {
      const auto& r = h.container.resource();
      take(Resources{r.memory(), r.virtual_cores(), static_cast<int>(GpusOf(r))});
    }
  }
  return free;
}

std::string YarnContainerBroker::PickNodeLocked(const Resources& r) const {
  std::string best;
  int64_t best_free = -1;
  for (const auto& [host, n] : nodes_) {
    if (!n.usable) continue;
    Resources free = FreeOnLocked(n);
    bool fits = free.memory_mib >= r.memory_mib && free.vcores >= std::max(1, r.vcores) && free.gpus >= r.gpus;
    // The most room first: a gang spreads, and each node's next heartbeat takes its part.
    if (fits && free.memory_mib > best_free) {
      best = host;
      best_free = free.memory_mib;
    }
  }
  return best;
}

YarnContainerBroker::AskKey& YarnContainerBroker::KeyForLocked(const Resources& r, const std::string& node_label) {
  for (auto& [id, key] : keys_) {
    const Resources& k = key.resources;
    if (k.memory_mib == r.memory_mib && k.vcores == r.vcores && k.gpus == r.gpus && key.node_label == node_label) {
      return key;
    }
  }
  int64_t id = static_cast<int64_t>(keys_.size()) + 1;
  AskKey& key = keys_[id];
  key.id = id;
  key.resources = r;
  key.node_label = node_label;
  return key;
}

void YarnContainerBroker::AskLocked(AskKey& key) {
  std::map<std::string, int> want;
  for (const auto& [seq, p] : pending_) {
    if (p.key != key.id) continue;
    ++want["*"];
    if (p.node.empty()) continue;
    ++want[p.node];
    auto it = nodes_.find(p.node);
    ++want[it != nodes_.end() && !it->second.node.rack.empty() ? it->second.node.rack : "/default-rack"];
  }
  ypb::ResourceRequestProto ask;
  ask.mutable_priority()->set_priority(static_cast<int32_t>(key.id));
  *ask.mutable_capability() = ToYarnResource(key.resources);
  ask.set_relax_locality(true);  // the host, then its rack, then anywhere: never stuck on one node
  if (!key.node_label.empty()) ask.set_node_label_expression(key.node_label);
  ask.mutable_execution_type_request()->set_execution_type(ypb::GUARANTEED);
  ask.set_allocation_request_id(key.id);
  for (const auto& [name, was] : key.sent) want.try_emplace(name, 0);
  for (const auto& [name, n] : want) {
    auto sent = key.sent.find(name);
    if (sent != key.sent.end() && sent->second == n) continue;  // unchanged: YARN keeps the last total
    ask.set_resource_name(name);
    ask.set_num_containers(n);
    asks_.push_back(ask);
    key.sent[name] = n;
  }
}

Status YarnContainerBroker::Request(const ContainerRequest& request) { return RequestAll({request}); }

// All under one lock: the heartbeat sends them in one allocate.
Status YarnContainerBroker::RequestAll(const std::vector<ContainerRequest>& requests) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return Status::Cancelled("the broker is shutting down");
  if (!fatal_.ok()) return fatal_;
  auto now = opts_.clock->Now();
  if (pending_.empty()) next_pending_report_ = now + opts_.pending_report_interval;
  for (const ContainerRequest& request : requests) {
    // Node labels pick nodes the snapshot does not describe: those asks stay "*".
    std::string host = request.node_label.empty() ? PickNodeLocked(request.resources) : "";
    AskKey& key = KeyForLocked(request.resources, request.node_label);
    pending_[next_request_++] = Pending{request.task, request.resources, host, key.id, now};
    AskLocked(key);
  }
  wake_.notify_all();
  return Status::Ok();
}

void YarnContainerBroker::UpdateNodesLocked(const ypb::AllocateResponseProto& response) {
  if (response.has_limit()) headroom_ = response.limit();
  for (const ypb::NodeReportProto& r : response.updated_nodes()) {
    const std::string& host = r.nodeid().host();
    bool usable = r.node_state() == ypb::NS_RUNNING;
    auto [it, added] = nodes_.try_emplace(host);
    std::vector<ManifestNode> fresh = ManifestNodes({r});
    if (!fresh.empty()) it->second.node = fresh[0];
    if (added && fresh.empty()) it->second.node.host = host;
    it->second.usable = usable;
    spdlog::info("node {} is now {}", hadoop::NodeIdString(r.nodeid()), ypb::NodeStateProto_Name(r.node_state()));
    if (usable) continue;
    // Tasks planned on a node that is gone: planned elsewhere, their keys asked again.
    std::set<int64_t> changed;
    for (auto& [seq, p] : pending_) {
      if (p.node != host) continue;
      p.node.clear();  // not counted against the lost node any more
      p.node = PickNodeLocked(p.resources);
      changed.insert(p.key);
    }
    for (int64_t k : changed) AskLocked(keys_[k]);
  }
}

std::vector<PendingRequest> YarnContainerBroker::PendingLocked() const {
  auto now = opts_.clock->Now();
  std::vector<PendingRequest> out;
  for (const auto& [id, p] : pending_) {
    PendingRequest r{p.task, p.resources, p.node,
                     std::chrono::duration_cast<std::chrono::milliseconds>(now - p.since), ""};
    bool any_large_enough = nodes_.empty();
    for (const auto& [host, n] : nodes_) {
      if (n.usable && n.node.memory_mb >= p.resources.memory_mib && n.node.vcores >= p.resources.vcores &&
          n.node.gpus >= p.resources.gpus) {
        any_large_enough = true;
      }
    }
    if (!any_large_enough) {
      r.reason = "no known node is large enough";
    } else if (headroom_ && (headroom_->memory() < p.resources.memory_mib ||
                             GpusOf(*headroom_) < p.resources.gpus)) {
      r.reason = "the queue's headroom is " + std::to_string(headroom_->memory()) + " MiB, " +
                 std::to_string(headroom_->virtual_cores()) + " vcores" +
                 (p.resources.gpus ? ", " + std::to_string(GpusOf(*headroom_)) + " GPUs" : "") +
                 ": other applications hold the rest of the queue or cluster";
    } else if (!p.node.empty()) {
      r.reason = "asked on " + p.node + ": waiting for a heartbeat of its NodeManager with room (any node of its "
                 "rack after the scheduler's locality delay)";
    } else {
      r.reason = "waiting for a NodeManager heartbeat with room (the scheduler places one container per heartbeat "
                 "when asked for any node)";
    }
    out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.waited > b.waited; });
  return out;
}

std::vector<PendingRequest> YarnContainerBroker::PendingRequests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return PendingLocked();
}

}  // namespace loom::cluster::yarn
