// The ResourceManager's scheduler port: ApplicationMasterProtocol as ApplicationMasterService
// answers it (dshell/05, negative/04): registration, allocate (asks, releases, grants with their
// NMTokens, completions, headroom, the response_id rules) and finish. Part of YarnDoubleImpl
// (resource_manager_internal.h).

#include <algorithm>
#include <optional>
#include <vector>

#include "resource_manager_internal.h"
#include "yarn_double_impl.h"

namespace loom::yarn_double {

// ---- ApplicationMasterProtocol ------------------------------------------------------------------

namespace {

constexpr char kInvalidAmRequest[] = "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException";
constexpr char kAmNotRegistered[] = "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException";
constexpr char kAttemptNotFound[] = "org.apache.hadoop.yarn.exceptions.ApplicationAttemptNotFoundException";

// An ERROR from ApplicationMasterService.<method> (negative/04).
RpcError AmsError(const char* cls, const std::string& method, const std::string& message) {
  std::string frame = "org.apache.hadoop.yarn.server.resourcemanager.ApplicationMasterService." + method +
                      (method == "registerApplicationMaster" ? "(ApplicationMasterService.java:279)"
                                                             : "(ApplicationMasterService.java)");
  return AppError(cls, message, ServiceFrames(frame, "ApplicationMasterProtocol", method));
}

struct SchedulerCalls {
  YarnDoubleImpl& d;
  App& app;

  CallResult Register(std::string_view bytes) {
    auto req = Parse<yp::RegisterApplicationMasterRequestProto>(bytes);
    if (!req) return BadRequest("registerApplicationMaster");
    if (app.registered) {  // negative/04, byte for byte
      return AmsError(kInvalidAmRequest, "registerApplicationMaster",
                      "Application Master is already registered : " + app.id_str);
    }
    app.registered = true;
    app.host = req->host();
    app.rpc_port = req->rpc_port();
    app.tracking_url = req->tracking_url();
    if (!app.Final()) {
      app.state = yp::RUNNING;
      app.diagnostics = "";
    }
    app.last_response_id = 0;
    yp::AllocateResponseProto initial;
    initial.set_response_id(0);
    app.last_response = initial.SerializeAsString();
    d.cv_.notify_all();
    yp::RegisterApplicationMasterResponseProto resp;
    *resp.mutable_maximumcapability() = ResourceToProto(d.NodeCapacity(), d.WithGpu());
    resp.set_queue(app.queue);
    resp.add_scheduler_resource_types(yp::MEMORY);
    if (d.WithGpu()) resp.add_scheduler_resource_types(yp::CPU);  // GPUs need the DominantResourceCalculator
    for (const auto& t : ResourceTypes(d.WithGpu())) *resp.add_resource_types() = t;
    return Serialize(resp);
  }

  std::optional<RpcError> ValidateAsk(const yp::ResourceRequestProto& ask, Res* normalized) {
    Res r = ResourceFromProto(ask.capability());
    int64_t step = std::max<int64_t>(1, d.options_.min_allocation_mb);
    Res max = d.NodeCapacity();
    if (r.memory < 0 || r.vcores < 0 || r.gpus < 0 || ask.num_containers() < 0) {
      return AmsError(kInvalidResourceRequest, "allocate",
                      "Invalid resource ask by application " + app.attempt_str +
                          ": negative resource or container count in " + r.ToString(d.WithGpu()));
    }
    r.memory = std::max(step, (r.memory + step - 1) / step * step);
    r.vcores = std::max(1, r.vcores);
    if (!d.WithGpu()) r.gpus = 0;
    if (!r.FitsIn(max)) return AmsError(kInvalidResourceRequest, "allocate", TooBigMessage(r, max, d.WithGpu()));
    *normalized = r;
    return std::nullopt;
  }

  yp::ContainerProto ToProto(const Container& c) {
    const Node& n = d.NodeOf(c);
    yp::ContainerProto p;
    *p.mutable_id() = c.id_proto;
    p.mutable_nodeid()->set_host(n.host);
    p.mutable_nodeid()->set_port(n.port());
    p.set_node_http_address(n.host + ":" + std::to_string(n.http_port));
    *p.mutable_resource() = ResourceToProto(c.resource, d.WithGpu());
    p.mutable_priority()->set_priority(c.priority);
    auto* t = p.mutable_container_token();
    t->set_identifier(c.token.identifier);
    t->set_password(c.token.password);
    t->set_kind(c.token.kind);
    t->set_service(c.token.service);
    p.set_execution_type(yp::GUARANTEED);
    if (!d.options_.hadoop_2_8) p.set_allocation_request_id(c.allocation_request_id);
    return p;
  }

  // Without heartbeats (nm_heartbeat_ms 0): the scheduler places, during this call, what the
  // asks then pending want, on the first node with room (a host ask's node first).
  void PlaceNow(std::vector<std::string>* placed) {
    int granted = 0;
    int limit = d.options_.max_containers_per_allocate;
    for (auto& [key, ask] : app.asks) {
      if (key.resource_name != "*") continue;
      Res r = ResourceFromProto(ask.capability());
      while (ask.num_containers() > 0 && (limit <= 0 || granted < limit)) {
        int node = -1;
        for (const auto& [k, local] : app.asks) {
          if (k.priority != key.priority || k.allocation_request_id != key.allocation_request_id ||
              local.num_containers() <= 0) {
            continue;
          }
          for (const auto& n : d.nodes_) {
            if (n->Usable() && n->host == k.resource_name && r.FitsIn(d.NodeCapacity() - d.UsedOnLocked(n->index))) {
              node = n->index;
            }
          }
        }
        for (size_t i = 0; node < 0 && i < d.nodes_.size(); ++i) {
          const Node& n = *d.nodes_[i];
          if (n.Usable() && r.FitsIn(d.NodeCapacity() - d.UsedOnLocked(n.index))) node = n.index;
        }
        if (node < 0) break;
        Container* c = d.AllocateLocked(app, r, key.priority, key.allocation_request_id, false, node);
        placed->push_back(c->id);
        ask.set_num_containers(ask.num_containers() - 1);
        auto local = app.asks.find(App::AskKey{key.priority, key.allocation_request_id, d.NodeOf(*c).host});
        if (local != app.asks.end() && local->second.num_containers() > 0) {
          local->second.set_num_containers(local->second.num_containers() - 1);
        }
        ++granted;
      }
    }
  }

  // The containers placed since the previous call, and one NMToken per node the first time the
  // attempt gets a container there.
  void Grant(yp::AllocateResponseProto* resp) {
    std::vector<std::string> placed = std::move(app.newly_allocated);
    app.newly_allocated.clear();
    if (d.options_.nm_heartbeat_ms == 0) PlaceNow(&placed);
    for (const std::string& id : placed) {
      auto it = d.containers_.find(id);
      if (it == d.containers_.end()) continue;
      const Container& c = *it->second;
      *resp->add_allocated_containers() = ToProto(c);
      if (app.nm_token_nodes.insert(c.node).second) {
        const Node& n = d.NodeOf(c);
        yp::NMTokenIdentifierProto nid;
        *nid.mutable_appattemptid() = AttemptIdProto(d.cluster_ts_, app.id, app.attempt);
        nid.mutable_nodeid()->set_host(n.host);
        nid.mutable_nodeid()->set_port(n.port());
        nid.set_appsubmitter(app.user);
        nid.set_keyid(d.nm_key_id_);
        std::string password = RandomPassword();
        d.nm_tokens_[nid.SerializeAsString()] = password;
        auto* nm = resp->add_nm_tokens();
        nm->mutable_nodeid()->set_host(n.host);
        nm->mutable_nodeid()->set_port(n.port());
        auto* t = nm->mutable_token();
        t->set_identifier(nid.SerializeAsString());
        t->set_password(password);
        t->set_kind("NMToken");
        t->set_service(n.bind_ip + ":" + std::to_string(n.port()));
      }
    }
  }

  std::optional<RpcError> Release(const yp::ContainerIdProto& id) {
    std::string cid = ContainerIdString(id);
    auto it = d.containers_.find(cid);
    if (it == d.containers_.end() || it->second->app != app.id || it->second->attempt != app.attempt) {
      return AmsError("org.apache.hadoop.yarn.exceptions.InvalidContainerReleaseException", "allocate",
                      "Cannot release container : " + cid + " not belonging to this application attempt : " +
                          app.attempt_str);
    }
    Container& c = *it->second;
    if (c.rm_done || c.is_am) return std::nullopt;
    c.rm_done = true;
    yp::ContainerStatusProto s = d.StatusLocked(c);
    s.set_state(yp::C_COMPLETE);
    s.set_exit_status(-100);  // ContainerExitStatus.ABORTED
    s.set_diagnostics("Container released by application");
    s.set_container_sub_state(yp::CSS_DONE);
    app.completed.push_back(s);
    d.KillContainerLocked(c, "Container released by application", d.options_.nm_sigkill_delay_ms);
    return std::nullopt;
  }

  CallResult Allocate(std::string_view bytes) {
    auto req = Parse<yp::AllocateRequestProto>(bytes);
    if (!req) return BadRequest("allocate");
    if (!app.registered) {
      return AmsError(kAmNotRegistered, "allocate",
                      "AM is not registered for known application attempt: " + app.attempt_str +
                          " or RM had restarted after AM registered. AM should re-register.");
    }
    // response_id: the last one sent is expected; the one before it is a retry and gets the
    // cached response; anything else is refused.
    int32_t next_of_request = (req->response_id() + 1) & 0x7fffffff;
    if (next_of_request == app.last_response_id && req->response_id() != app.last_response_id) {
      return app.last_response;
    }
    if (req->response_id() != app.last_response_id) {
      return AmsError(kInvalidAmRequest, "allocate",
                      "Invalid responseId in AllocateRequest from application attempt: " + app.attempt_str +
                          ", expect responseId to be " + std::to_string(app.last_response_id) + ", but get " +
                          std::to_string(req->response_id()));
    }
    std::vector<std::pair<App::AskKey, yp::ResourceRequestProto>> asks;
    for (const auto& ask : req->ask()) {
      Res r;
      if (auto e = ValidateAsk(ask, &r)) return *e;
      yp::ResourceRequestProto stored = ask;
      *stored.mutable_capability() = ResourceToProto(r, d.WithGpu());
      // Hadoop 2.8 knows no field 8: one ask per priority and location, the last one wins.
      if (d.options_.hadoop_2_8) stored.clear_allocation_request_id();
      asks.push_back({App::AskKey{stored.priority().priority(), stored.allocation_request_id(), stored.resource_name()},
                      stored});
    }
    for (const auto& id : req->release()) {
      std::string cid = ContainerIdString(id);
      auto it = d.containers_.find(cid);
      if (it == d.containers_.end() || it->second->app != app.id) {
        return AmsError("org.apache.hadoop.yarn.exceptions.InvalidContainerReleaseException", "allocate",
                        "Cannot release container : " + cid + " not belonging to this application attempt : " +
                            app.attempt_str);
      }
    }

    yp::AllocateResponseProto resp;
    resp.set_response_id((app.last_response_id + 1) & 0x7fffffff);
    if (app.finish_calls == 0 && !app.Final()) Grant(&resp);  // allocations made since the last call
    for (auto& n : app.updated_nodes) *resp.add_updated_nodes() = std::move(n);
    app.updated_nodes.clear();
    for (auto& [key, ask] : asks) app.asks[key] = ask;         // totals: a new ask replaces the old
    for (const auto& id : req->release()) (void)Release(id);
    if (req->has_progress()) app.progress = std::clamp(req->progress(), 0.0f, 1.0f);
    if (req->has_tracking_url()) app.tracking_url = req->tracking_url();
    for (auto& s : app.completed) *resp.add_completed_container_statuses() = s;
    app.completed.clear();
    // Headroom: what is free in the cluster, within what the queue may still take.
    Res cluster = d.ClusterCapacityLocked();
    Res headroom = cluster - d.UsedLocked();
    auto queue = d.FindQueueLocked(app.queue);
    Res queue_room = Scale(cluster, queue ? queue->max_capacity : 1.0f) - d.QueueUsedLocked(app.queue);
    headroom = Res{std::max<int64_t>(0, std::min(headroom.memory, queue_room.memory)),
                   std::max(0, std::min(headroom.vcores, queue_room.vcores)), std::max<int64_t>(0, headroom.gpus)};
    *resp.mutable_limit() = ResourceToProto(headroom, d.WithGpu());
    int nodes = 0;
    for (const auto& n : d.nodes_) nodes += n->expired ? 0 : 1;
    resp.set_num_cluster_nodes(nodes);
    resp.mutable_application_priority()->set_priority(app.priority);
    app.last_response_id = resp.response_id();
    app.last_response = resp.SerializeAsString();
    return app.last_response;
  }

  // Recorded (dshell/05): the first call answers isUnregistered=false, the resend ~100 ms
  // later true. The application is FINISHED from the first call on.
  CallResult Finish(std::string_view bytes) {
    auto req = Parse<yp::FinishApplicationMasterRequestProto>(bytes);
    if (!req) return BadRequest("finishApplicationMaster");
    if (!app.registered) {
      return AmsError(kAmNotRegistered, "finishApplicationMaster",
                      "Application Master is trying to unregister before registering for: " + app.attempt_str);
    }
    yp::FinishApplicationMasterResponseProto resp;
    resp.set_isunregistered(app.finish_calls > 0);
    if (app.finish_calls++ == 0) {
      // AMUnregisteredTransition: the final tracking URL replaces the registered one, none
      // ("" or absent) leaving "N/A", so the proxy then sends users to the RM's page (rm-rest/05).
      app.tracking_url = req->tracking_url();
      d.EndAppLocked(app, yp::FINISHED, req->final_application_status(), req->diagnostics());
      if (!app.am_container.empty()) app.am_stop_at_ms = NowMs() + d.options_.am_exit_grace_ms;
    }
    return Serialize(resp);
  }
};

}  // namespace

CallResult YarnDoubleImpl::HandleScheduler(const std::string& method, std::string_view req,
                                           const ConnectionInfo& conn) {
  if (method != "registerApplicationMaster" && method != "allocate" && method != "finishApplicationMaster") {
    return NoSuchMethod(method, kSchedulerProtocol);
  }
  yp::AMRMTokenIdentifierProto id;
  id.ParseFromString(conn.token_identifier);
  std::lock_guard<std::mutex> lock(mu_);
  App* app = AppOfAttemptLocked(id.appattemptid());
  bool gone = !app || (app->Final() && app->finish_calls == 0);  // killed or failed
  if (gone) {
    return AmsError(kAttemptNotFound, method,
                    "Application attempt " + AttemptIdString(id.appattemptid()) +
                        " doesn't exist in ApplicationMasterService cache.");
  }
  SchedulerCalls calls{*this, *app};
  if (method == "registerApplicationMaster") return calls.Register(req);
  if (method == "allocate") return calls.Allocate(req);
  return calls.Finish(req);
}

}  // namespace loom::yarn_double
