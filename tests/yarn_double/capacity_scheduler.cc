// The CapacityScheduler of the double's ResourceManager: queues and their AM share, the
// NodeManagers' heartbeats with locality and the one OFF_SWITCH container per heartbeat, node
// reports and the expiry of lost nodes. Part of YarnDoubleImpl (resource_manager_internal.h).

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <set>

#include "core/strings.h"
#include "double_records.pb.h"
#include "resource_manager_internal.h"
#include "yarn_double_impl.h"

namespace loom::yarn_double {

namespace {

namespace rec = loom::yarn_double::records;

// The date in the scheduler's diagnostics: FastDateFormat "EEE MMM dd HH:mm:ss Z yyyy", in UTC
// as on the recorded RM ("Sun Nov 22 18:58:42 +0000 2026").
std::string DiagnosticsDate(int64_t ms) { return FormatUtc(ms, "%a %b %d %H:%M:%S +0000 %Y"); }

// `app`'s AM container `c` has a node: it starts at the next launch, and the application waits no
// more (nor says why it waited).
void MarkAmPlaced(App& app, Container& c, std::vector<std::string>* launches) {
  c.start_requested = true;
  app.am_pending = false;
  app.am_container = c.id;
  app.diagnostics = "";
  launches->push_back(c.id);
}

// Resources.multiplyAndNormalizeUp: `r` times `fraction`, memory rounded up to the minimum
// allocation, vcores up to whole ones. 10% of 8192 MB is 896 MB with 128 MB steps (rm-rest 08).
Res ScaleUp(const Res& r, float fraction, int64_t step) {
  auto up = [&](int64_t v, int64_t unit) {
    double x = static_cast<double>(v) * fraction / static_cast<double>(unit);
    return static_cast<int64_t>(std::ceil(x - 1e-9)) * unit;
  };
  return Res{std::max(step, up(r.memory, step)), static_cast<int32_t>(std::max<int64_t>(1, up(r.vcores, 1))),
             up(r.gpus, 1)};
}

constexpr char kRack[] = "/default-rack";  // every node's rack, as on the recorded cluster
constexpr char kLostContainer[] = "Container released on a *lost* node";  // SchedulerUtils.LOST_CONTAINER

}  // namespace

// ---- the CapacityScheduler ---------------------------------------------------------------------

std::vector<YarnTestDouble::Options::Queue> YarnDoubleImpl::QueuesLocked() const {
  if (!options_.queues.empty()) return options_.queues;
  return {YarnTestDouble::Options::Queue{"default", 1.0f, 1.0f, 0.1f}};  // ipc-queue/06
}

std::optional<YarnTestDouble::Options::Queue> YarnDoubleImpl::FindQueueLocked(const std::string& name) const {
  for (const auto& q : QueuesLocked()) {
    if (name == q.name || name == "root." + q.name) return q;
  }
  return std::nullopt;
}

Res YarnDoubleImpl::QueueUsedLocked(const std::string& queue) const {
  Res used;
  for (const auto& [id, c] : containers_) {
    auto app = apps_.find(c->app);
    if (app == apps_.end() || app->second->queue != queue) continue;
    if (!c->rm_done && (!c->complete || !NodeOf(*c).Usable())) used = used + c->resource;
  }
  return used;
}

// LeafQueue.activateApplications: an application's AM counts against its queue's AM share
// (maximum-am-resource-percent of the queue's capacity, rounded up to the minimum allocation)
// from activation until it ends. The first application of a queue is always activated, even
// alone over the limit; later ones wait ACCEPTED with the recorded diagnostics (rm-rest 08)
// until the queue's AM usage leaves room. Memory alone decides (DefaultResourceCalculator).
void YarnDoubleImpl::ActivateLocked(int64_t now) {
  const Res cluster = ClusterCapacityLocked();
  const bool gpu = WithGpu();
  for (const auto& q : QueuesLocked()) {
    Res limit =
        ScaleUp(Scale(cluster, q.capacity), q.max_am_percentage, std::max<int64_t>(1, options_.min_allocation_mb));
    if (!gpu) limit.gpus = 0;
    Res used_am;
    int active = 0;
    for (const auto& [id, app] : apps_) {
      if (app->queue == q.name && app->activated && !app->Final()) {
        used_am = used_am + app->am_resource;
        ++active;
      }
    }
    for (auto& [id, app] : apps_) {
      if (app->queue != q.name || app->activated || app->Final()) continue;
      if (app->state == yp::SUBMITTED) app->state = yp::ACCEPTED;  // the scheduler took it into its queue
      if (active > 0 && used_am.memory + app->am_resource.memory > limit.memory) {
        std::string details =
            "Application is added to the scheduler and is not yet activated. Queue's AM resource limit exceeded.  "
            "Details : AM Partition = <DEFAULT_PARTITION>; AM Resource Request = " +
            app->am_resource.ToString(gpu) + "; Queue Resource Limit for AM = " + limit.ToString(gpu) +
            "; User AM Resource Limit of the queue = " + limit.ToString(gpu) +
            "; Queue AM Resource Usage = " + used_am.ToString(gpu) + "; ";
        // Stamped when the reason (or the usage in it) changes, not on every pass.
        if (details != app->am_limit_details) {
          app->am_limit_details = details;
          app->diagnostics = "[" + DiagnosticsDate(now) + "] " + details;
        }
        continue;
      }
      app->activated = true;
      app->am_limit_details.clear();
      app->diagnostics = "";
      used_am = used_am + app->am_resource;
      ++active;
      cv_.notify_all();
    }
  }
}

void YarnDoubleImpl::ScheduleAmsLocked(std::vector<std::string>* to_launch) {
  ActivateLocked(NowMs());
  for (auto& [id, app] : apps_) {
    if (!app->activated || !app->am_pending || app->Final()) continue;
    // The first node with room; with heartbeats the AM waits for one from such a node.
    int fits = -1;
    for (const auto& n : nodes_) {
      if (n->Usable() && app->am_resource.FitsIn(NodeCapacity() - UsedOnLocked(n->index))) {
        fits = n->index;
        break;
      }
    }
    if (fits < 0) {
      app->diagnostics = "Application is added to the scheduler and is not yet activated. Waiting for " +
                         app->am_resource.ToString(WithGpu()) + " to be free on the node for the AM container.";
      continue;
    }
    if (options_.nm_heartbeat_ms != 0) {
      if (StartsWith(app->diagnostics, "Application is added to the scheduler and is not yet activated. Waiting")) {
        app->diagnostics = "";
      }
      continue;
    }
    MarkAmPlaced(*app, *AllocateLocked(*app, app->am_resource, app->priority, -1, true, fits), to_launch);
    cv_.notify_all();
  }
}

namespace {

enum class Locality { kNodeLocal, kRackLocal, kOffSwitch };

}  // namespace

// One NodeManager heartbeat, as the CapacityScheduler handles it: AM containers first (their
// ask is "*", so OFF_SWITCH), then each application's asks in priority order. Per scheduler
// key (priority, allocation_request_id) the "*" ask holds the total; a host ask puts the
// container on that host (NODE_LOCAL, as many as fit in one heartbeat), a rack ask on any node
// of the rack (RACK_LOCAL) once the key has missed `delay` scheduling opportunities, and
// anything else goes OFF_SWITCH: at most one OFF_SWITCH container per heartbeat
// (yarn.scheduler.capacity.per-node-heartbeat.maximum-offswitch-assignments = 1), which is why
// a gang that asks for "*" only gets one container per NodeManager heartbeat. The keys go in
// order, and the first whose container may not go to this node yet (its asks name other
// hosts and the locality delay has not passed) ends the application's turn on this heartbeat
// (RegularContainerAllocator's LOCALITY_SKIPPED): measured on a real 2-node cluster, asks for
// h1, h2, h1, h2 under one key each got one container per heartbeat.
int YarnDoubleImpl::NodeHeartbeatLocked(int index, std::vector<std::string>* am_launches) {
  Node& n = *nodes_[static_cast<size_t>(index)];
  if (!n.Usable()) return 0;
  const Res cluster = ClusterCapacityLocked();
  int placed = 0, off_switch = 0;
  auto fits = [&](const App& app, const Res& r) {
    if (!r.FitsIn(NodeCapacity() - UsedOnLocked(index))) return false;
    auto q = FindQueueLocked(app.queue);
    Res max = Scale(cluster, q ? q->max_capacity : 1.0f);
    return QueueUsedLocked(app.queue).memory + r.memory <= max.memory;
  };
  for (auto& [id, app] : apps_) {
    if (off_switch > 0) break;
    if (!app->activated || !app->am_pending || app->Final() || !fits(*app, app->am_resource)) continue;
    MarkAmPlaced(*app, *AllocateLocked(*app, app->am_resource, app->priority, -1, true, index), am_launches);
    ++off_switch;
    ++placed;
  }
  int usable = 0;
  for (const auto& node : nodes_) usable += node->Usable() ? 1 : 0;
  const int delay = options_.node_locality_delay >= 0 ? options_.node_locality_delay : usable;
  for (auto& [id, app_ptr] : apps_) {
    App& app = *app_ptr;
    if (!app.registered || app.Final() || app.finish_calls > 0) continue;
    std::set<std::pair<int32_t, int64_t>> keys;
    for (const auto& [key, ask] : app.asks) keys.insert({key.priority, key.allocation_request_id});
    bool locality_skipped = false;
    for (const auto& key : keys) {
      if (locality_skipped) break;
      auto find = [&](const std::string& name) -> yp::ResourceRequestProto* {
        auto it = app.asks.find(App::AskKey{key.first, key.second, name});
        return it == app.asks.end() ? nullptr : &it->second;
      };
      yp::ResourceRequestProto* any = find("*");
      if (!any || any->num_containers() <= 0) continue;
      yp::ResourceRequestProto* here = find(n.host);
      yp::ResourceRequestProto* rack = find(kRack);
      bool host_asks = false, relax_from_host = true;
      for (const auto& [k, ask] : app.asks) {
        if (k.priority != key.first || k.allocation_request_id != key.second || k.resource_name == "*" ||
            StartsWith(k.resource_name, "/") || ask.num_containers() <= 0) {
          continue;
        }
        host_asks = true;
        relax_from_host = relax_from_host && ask.relax_locality();
      }
      bool rack_wanted = rack && rack->num_containers() > 0;
      bool relax_from_rack = relax_from_host && (!rack || rack->relax_locality());
      int& missed = app.missed[key];
      ++missed;  // SchedulerApplicationAttempt.addSchedulingOpportunity
      Res r = ResourceFromProto(any->capability());
      while (any->num_containers() > 0 && fits(app, r)) {
        Locality where;
        if (here && here->num_containers() > 0) {
          where = Locality::kNodeLocal;
        } else if (!host_asks && !rack_wanted) {
          where = Locality::kOffSwitch;  // asked for "*" only
        } else if (missed > delay && rack_wanted && relax_from_host) {
          where = Locality::kRackLocal;  // every node is in /default-rack
        } else if (missed > delay && relax_from_rack) {
          where = Locality::kOffSwitch;
        } else {
          locality_skipped = true;
          break;
        }
        if (where == Locality::kOffSwitch && off_switch > 0) break;
        Container* c = AllocateLocked(app, r, key.first, key.second, false, index);
        app.newly_allocated.push_back(c->id);
        any->set_num_containers(any->num_containers() - 1);
        if (where == Locality::kNodeLocal) {
          here->set_num_containers(here->num_containers() - 1);
          missed = 0;
        }
        if (where != Locality::kOffSwitch && rack && rack->num_containers() > 0) {
          rack->set_num_containers(rack->num_containers() - 1);
        }
        if (where == Locality::kOffSwitch) ++off_switch;
        ++placed;
      }
    }
  }
  if (placed > 0) cv_.notify_all();
  return placed;
}

int64_t YarnDoubleImpl::HeartbeatsLocked(int64_t now, std::vector<std::string>* am_launches) {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  if (options_.nm_heartbeat_ms <= 0) return kNever;
  int64_t next = kNever;
  if (now < nodes_registered_ms_) return nodes_registered_ms_;  // no NodeManager has registered yet
  for (auto& n : nodes_) {
    if (!n->Usable()) continue;
    if (now >= n->next_heartbeat_ms) {
      NodeHeartbeatLocked(n->index, am_launches);
      n->next_heartbeat_ms = std::max(n->next_heartbeat_ms + options_.nm_heartbeat_ms, now + 1);
    }
    next = std::min(next, n->next_heartbeat_ms);
  }
  return next;
}

yp::NodeReportProto YarnDoubleImpl::NodeReportLocked(const Node& node) const {
  yp::NodeReportProto n;
  n.mutable_nodeid()->set_host(node.host);
  n.mutable_nodeid()->set_port(node.port());
  n.set_httpaddress(node.host + ":" + std::to_string(node.http_port));
  n.set_rackname(kRack);
  Res used = node.expired ? Res{} : UsedOnLocked(node.index);
  *n.mutable_used() = ResourceToProto(used, WithGpu());
  *n.mutable_capability() = ResourceToProto(NodeCapacity(), WithGpu());
  int live = 0;
  for (const auto& [id, c] : containers_) live += (c->node == node.index && !c->complete && !c->rm_done) ? 1 : 0;
  if (live > 0 && !node.expired) n.set_numcontainers(live);
  n.set_node_state(node.expired ? yp::NS_LOST : yp::NS_RUNNING);
  n.set_health_report("");
  n.set_last_health_report_time((node.lost_ms ? node.lost_ms : NowMs()) / 1000 * 1000);
  auto* cu = n.mutable_containers_utilization();
  cu->set_pmem(0);
  cu->set_vmem(0);
  cu->set_cpu(0);
  // node_utilization carries customResources {yarn.io/gpu: 0} even without GPUs (dshell/01).
  rec::ResourceUtilizationProto nu;
  nu.set_pmem(0);
  nu.set_vmem(0);
  nu.set_cpu(0);
  auto* gpu = nu.add_customresources();
  gpu->set_key(kGpuResource);
  gpu->set_value(0);
  n.mutable_node_utilization()->ParseFromString(nu.SerializeAsString());  // field 4 kept as unknown
  return n;
}

// The liveness monitor gave up on a node (yarn.nm.liveness-monitor.expiry-interval-ms): the RM
// marks it LOST, tells every running attempt (updated_nodes), and completes each container it
// had there with ABORTED and the scheduler's LOST_CONTAINER text (CapacityScheduler.removeNode).
void YarnDoubleImpl::ExpireNodeLocked(Node& node) {
  node.expired = true;
  for (auto& [id, c] : containers_) {
    if (c->node != node.index || c->rm_done) continue;
    if (c->running && c->pid > 0) ::kill(-c->pid, SIGKILL);
    c->exit_status = -100;  // ContainerExitStatus.ABORTED
    c->diagnostics = kLostContainer;
    if (!c->complete) {
      c->complete = true;
      c->finished_ms = NowMs();
    }
    OnContainerFinishedLocked(*c);
  }
  for (auto& [id, app] : apps_) {
    if (!app->Final()) app->updated_nodes.push_back(NodeReportLocked(node));
  }
  cv_.notify_all();
}

}  // namespace loom::yarn_double
