// The ResourceManager half of the YARN test double: ApplicationClientProtocol (the client
// port), ApplicationMasterProtocol (the scheduler port), the AM launch, and the application
// life cycle, shaped like the Hadoop 3.3.6 RM recorded in dshell/01 and dshell/05.

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <set>

#include "core/strings.h"
#include "delegation_token_store.h"
#include "double_records.pb.h"
#include "fake_hdfs.h"
#include "yarn_double_impl.h"

namespace loom::yarn_double {

namespace {

namespace rec = loom::yarn_double::records;
using hadoop::common::RpcResponseHeaderProto;

constexpr char kYarnException[] = "org.apache.hadoop.yarn.exceptions.YarnException";
constexpr char kAppNotFound[] = "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException";
constexpr char kInvalidResourceRequest[] = "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException";
constexpr char kInvalidAmRequest[] = "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException";
constexpr char kAmNotRegistered[] = "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException";
constexpr char kAttemptNotFound[] = "org.apache.hadoop.yarn.exceptions.ApplicationAttemptNotFoundException";
constexpr char kInvalidToken[] = "org.apache.hadoop.security.token.SecretManager$InvalidToken";

template <typename T>
std::optional<T> Parse(std::string_view bytes) {
  T m;
  if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return std::nullopt;
  return m;
}

RpcError BadRequest(const std::string& method) {
  return RpcError{"org.apache.hadoop.ipc.RpcServerException", "Error decoding the request parameter of " + method,
                  RpcResponseHeaderProto::FATAL_DESERIALIZING_REQUEST, true};
}

RpcError NoSuchMethod(const std::string& method, const char* protocol) {
  return RpcError{"org.apache.hadoop.ipc.RpcNoSuchMethodException",
                  "Unknown method " + method + " called on " + protocol + " protocol.",
                  RpcResponseHeaderProto::ERROR_NO_SUCH_METHOD, false};
}

// An ERROR from ClientRMService.<method>, with the stack trace shape of dshell/01.
RpcError ClientError(const char* cls, const std::string& method, const std::string& message) {
  return AppError(cls, message,
                  ServiceFrames("org.apache.hadoop.yarn.server.resourcemanager.ClientRMService." + method +
                                    "(ClientRMService.java)",
                                "ApplicationClientProtocol", method));
}

// An ERROR from ApplicationMasterService.<method> (negative/04).
RpcError AmsError(const char* cls, const std::string& method, const std::string& message) {
  std::string frame = "org.apache.hadoop.yarn.server.resourcemanager.ApplicationMasterService." + method +
                      (method == "registerApplicationMaster" ? "(ApplicationMasterService.java:279)"
                                                             : "(ApplicationMasterService.java)");
  return AppError(cls, message, ServiceFrames(frame, "ApplicationMasterProtocol", method));
}

std::string Serialize(const google::protobuf::Message& m) { return m.SerializeAsString(); }

// Hadoop's message when a request exceeds what the scheduler can ever give (SchedulerUtils).
std::string TooBigMessage(const Res& asked, const Res& max, bool gpu) {
  std::string type = asked.memory > max.memory ? "memory-mb" : asked.vcores > max.vcores ? "vcores" : kGpuResource;
  return "Invalid resource request! Cannot allocate containers as requested resource is greater than maximum "
         "allowed allocation. Requested resource type=[" +
         type + "], Requested resource=" + asked.ToString(gpu) + ", maximum allowed allocation=" + max.ToString(gpu) +
         ", please note that maximum allowed allocation is calculated by scheduler based on maximum resource of "
         "registered NodeManagers, which might be less than configured maximum allocation=" +
         max.ToString(gpu);
}

// The date in the scheduler's diagnostics: FastDateFormat "EEE MMM dd HH:mm:ss Z yyyy", in UTC
// as on the recorded RM ("Sun Nov 22 18:58:42 +0000 2026").
std::string DiagnosticsDate(int64_t ms) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%a %b %d %H:%M:%S +0000 %Y", &tm);
  return buf;
}

// `r` times `fraction`, rounded down: a queue's share of the cluster.
Res Scale(const Res& r, float fraction) {
  auto part = [&](int64_t v) { return static_cast<int64_t>(std::floor(static_cast<double>(v) * fraction + 1e-6)); };
  return Res{part(r.memory), static_cast<int32_t>(part(r.vcores)), part(r.gpus)};
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

std::string FormatIsoMs(int64_t ms) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[80];
  std::snprintf(out, sizeof(out), "%s.%03d+0000", buf, static_cast<int>(ms % 1000));
  return out;
}

}  // namespace

// ---- tokens -------------------------------------------------------------------------------------

PasswordLookup YarnDoubleImpl::AmRmPassword(const std::string& identifier) {
  yp::AMRMTokenIdentifierProto id;
  if (!id.ParseFromString(identifier) || !id.has_appattemptid()) {
    return RpcError{kInvalidToken, "Can't de-serialize tokenIdentifier"};
  }
  std::string attempt = AttemptIdString(id.appattemptid());
  std::lock_guard<std::mutex> lock(mu_);
  App* app = AppOfAttemptLocked(id.appattemptid());
  // The RM drops an attempt's token once the attempt is over (its AM container has exited).
  bool over = app && app->Final() &&
              (app->am_container.empty() || !containers_.count(app->am_container) ||
               containers_[app->am_container]->complete);
  if (!app || over) return RpcError{kInvalidToken, attempt + " not found in AMRMTokenSecretManager."};
  if (app->amrm_token.identifier != identifier) return RpcError{kInvalidToken, "Invalid AMRMToken from " + attempt};
  return app->amrm_token.password;
}

// ---- allocation ---------------------------------------------------------------------------------

Container* YarnDoubleImpl::AllocateLocked(App& app, const Res& r, int32_t priority, int64_t allocation_request_id,
                                          bool is_am, int node) {
  const Node& n = *nodes_[static_cast<size_t>(node)];
  auto c = std::make_unique<Container>();
  int64_t number = is_am ? 1 : app.next_container++;
  int64_t now = NowMs();
  c->id_proto = ContainerIdProto(cluster_ts_, app.id, app.attempt, number);
  c->id = ContainerIdString(c->id_proto);
  c->app = app.id;
  c->attempt = app.attempt;
  c->is_am = is_am;
  c->resource = r;
  c->priority = priority;
  c->allocation_request_id = allocation_request_id;
  c->node = node;
  c->user = app.user;
  c->allocated_ms = now;
  c->work_dir = n.local_dir + "/usercache/" + app.user + "/appcache/" + app.id_str + "/" + c->id;
  c->log_dir = n.log_dir + "/" + app.id_str + "/" + c->id;

  // The container token, field for field as in dshell/03 and dshell/05 (defaults written out).
  yp::ContainerTokenIdentifierProto t;
  *t.mutable_containerid() = c->id_proto;
  t.set_nmhostaddr(n.Address());
  t.set_appsubmitter(app.user);
  *t.mutable_resource() = ResourceToProto(r, WithGpu());
  t.set_expirytimestamp(now + kContainerTokenExpiryMs);
  t.set_masterkeyid(container_key_id_);
  t.set_rmidentifier(cluster_ts_);
  t.mutable_priority()->set_priority(priority);
  t.set_creationtime(now);
  t.set_nodelabelexpression("");
  t.set_containertype(is_am ? yp::APPLICATION_MASTER : yp::TASK);
  t.set_executiontype(yp::GUARANTEED);
  t.set_version(0);
  t.set_allocation_request_id(allocation_request_id);
  c->token = wire::Token{t.SerializeAsString(), RandomPassword(), "ContainerToken",
                         n.bind_ip + ":" + std::to_string(n.port())};
  Container* raw = c.get();
  containers_[c->id] = std::move(c);
  return raw;
}

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
    Container* c = AllocateLocked(*app, app->am_resource, app->priority, -1, true, fits);
    c->start_requested = true;
    app->am_pending = false;
    app->am_container = c->id;
    app->diagnostics = "";
    to_launch->push_back(c->id);
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
    Container* c = AllocateLocked(*app, app->am_resource, app->priority, -1, true, index);
    c->start_requested = true;
    app->am_pending = false;
    app->am_container = c->id;
    app->diagnostics = "";
    am_launches->push_back(c->id);
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

// What the RM's AMLauncher does: the client's CLC plus the AMRMToken (in the HDTS blob) and two
// environment variables, then the NM's startContainer.
void YarnDoubleImpl::LaunchAm(const std::string& container_id) {
  yp::ContainerLaunchContextProto clc;
  std::string tokens;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = containers_.find(container_id);
    if (it == containers_.end()) return;
    App* app = FindAppLocked(it->second->app);
    if (!app || app->Final()) return;
    clc = app->asc.am_container_spec();
    wire::Credentials creds;
    if (clc.has_tokens()) {
      Result<wire::Credentials> parsed = wire::ParseCredentials(clc.tokens());
      if (parsed.ok()) creds = *parsed;  // validated at submission
    }
    // Credentials.addToken(service, token): the AMRMToken's service, and so its alias, is "".
    std::erase_if(creds.tokens, [&](const auto& t) { return t.first == app->amrm_token.service; });
    creds.tokens.emplace_back(app->amrm_token.service, app->amrm_token);
    tokens = wire::SerializeCredentials(creds);
    clc.set_tokens(tokens);
    auto set_env = [&](const std::string& k, const std::string& v) {
      for (auto& e : *clc.mutable_environment()) {
        if (e.key() == k) return e.set_value(v);
      }
      auto* e = clc.add_environment();
      e->set_key(k);
      e->set_value(v);
    };
    set_env("APPLICATION_WEB_PROXY_BASE", "/proxy/" + app->id_str);
    set_env("APP_SUBMIT_TIME_ENV", std::to_string(app->start_ms));
  }
  LaunchContainer(container_id, clc, tokens);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = containers_.find(container_id);
  App* app = it == containers_.end() ? nullptr : FindAppLocked(it->second->app);
  if (!app) return;
  app->launch_ms = NowMs();
  if (app->state == yp::ACCEPTED && !it->second->complete) {
    app->diagnostics = "AM container is launched, waiting for AM container to Register with RM";
  }
  cv_.notify_all();
}

// ---- HDFS delegation tokens: which NameNode a token's service names ------------------------------

std::string YarnDoubleImpl::HdfsTokenServiceRefusal(const std::string& service) const {
  constexpr std::string_view kHaPrefix = "ha-hdfs:";  // HAUtilClient.HA_DT_SERVICE_PREFIX
  if (StartsWith(service, kHaPrefix)) {
    std::string nameservice = service.substr(kHaPrefix.size());
    if (options_.standby_namenode && nameservice == "loomns") return "";
    return "java.io.IOException: Unable to map logical nameservice URI 'hdfs://" + nameservice +
           "' to a NameNode. Local configuration does not have a failover proxy provider configured.";
  }
  size_t colon = service.rfind(':');
  if (service.empty() || colon == std::string::npos || colon == 0 || colon + 1 == service.size()) {
    return "java.lang.IllegalArgumentException: Does not contain a valid host:port authority: " + service;
  }
  std::string host = service.substr(0, colon), port = service.substr(colon + 1);
  int rpc_port = namenode_rpc_ ? namenode_rpc_->port() : 0;
  if ((host == "127.0.0.1" || host == "localhost") && rpc_port > 0 && port == std::to_string(rpc_port)) return "";
  return "java.net.ConnectException: Call From localhost/127.0.0.1 to " + service +
         " failed on connection exception: java.net.ConnectException: Connection refused; For more details see:  "
         "http://wiki.apache.org/hadoop/ConnectionRefused";
}

// ---- the application life cycle ---------------------------------------------------------------

void YarnDoubleImpl::EndAppLocked(App& app, yp::YarnApplicationStateProto state,
                                  yp::FinalApplicationStatusProto final_status, const std::string& diagnostics) {
  if (app.Final()) return;
  app.state = state;
  app.final_status = final_status;
  app.diagnostics = diagnostics;
  app.finish_ms = NowMs();
  app.am_pending = false;
  if (state == yp::FINISHED) app.progress = 1;
  // DelegationTokenRenewer.applicationFinished: the tokens renewed for it are cancelled, as the
  // RM, unless the client asked to keep them (rpc/05's cancelDelegationToken).
  if (options_.kerberos.enabled && options_.hdfs != nullptr && app.asc.cancel_tokens_when_complete()) {
    for (const wire::Token& token : app.renewed_tokens) {
      Status cancelled = options_.hdfs->tokens().Cancel(token, options_.kerberos.rm_principal);
      if (!cancelled.ok()) {
        std::fprintf(stderr, "yarn double rm: cancelling a token of %s: %s\n", app.id_str.c_str(),
                     cancelled.message().c_str());
      }
    }
  }
  app.renewed_tokens.clear();
  cv_.notify_all();
}

void YarnDoubleImpl::KillAppContainersLocked(App& app, const std::string& why, int grace_ms, bool include_am) {
  for (auto& [id, c] : containers_) {
    if (c->app != app.id || c->complete || (c->is_am && !include_am)) continue;
    c->rm_done = true;  // nobody is left to be told about these
    KillContainerLocked(*c, why, grace_ms);
  }
}

// The NM reported a finished container: queue its status for the AM and, for the AM container,
// end the application (unregistered: as the AM said; otherwise FAILED, as with maxAppAttempts 1).
void YarnDoubleImpl::OnContainerFinishedLocked(Container& c) {
  // A lost NodeManager tells the RM nothing; its containers end when the node expires.
  if (!NodeOf(c).Usable() && !NodeOf(c).expired) return;
  App* app = FindAppLocked(c.app);
  if (!app) return;
  if (!c.rm_done) {
    c.rm_done = true;
    if (!c.is_am) app->completed.push_back(StatusLocked(c));
  }
  if (!c.is_am) return;
  if (!app->Final()) {
    std::string tracking = "http://" + options_.node_host + ":8088/cluster/app/" + app->id_str;
    std::string attempt_diag = "AM Container for " + app->attempt_str + " exited with  exitCode: " +
                               std::to_string(c.exit_status) + "\nFailing this attempt.Diagnostics: " +
                               c.diagnostics + "For more detailed output, check the application tracking page: " +
                               tracking + " Then click on links to logs of each attempt.\n";
    EndAppLocked(*app, yp::FAILED, yp::APP_FAILED,
                 "Application " + app->id_str + " failed 1 times due to " + attempt_diag + ". Failing the application.");
  }
  // Application clean-up on the NM: whatever the application still runs is killed.
  KillAppContainersLocked(*app, "Container killed by the ResourceManager.", options_.nm_sigkill_delay_ms, false);
}

yp::ApplicationReportProto YarnDoubleImpl::ReportLocked(const App& app) const {
  yp::ApplicationReportProto r;
  *r.mutable_applicationid() = AppIdProto(cluster_ts_, app.id);
  r.set_user(app.user);
  r.set_queue(app.queue);
  r.set_name(app.name);
  std::string am_host = options_.am_host_in_reports.empty() ? app.host : options_.am_host_in_reports;
  r.set_host(app.registered ? am_host : "N/A");
  r.set_rpc_port(app.registered ? app.rpc_port : -1);
  r.set_yarn_application_state(app.state);
  // A real RM sends its web proxy's URL (http://<rm>:8088/proxy/<app>/) and the AM's own URL as
  // originalTrackingUrl. The double runs no proxy, so an AM that registered a tracking URL gets
  // it back as trackingUrl directly; otherwise the recorded proxy form (which nothing serves).
  bool has_url = app.registered && !app.tracking_url.empty() && app.tracking_url != "N/A";
  r.set_trackingurl(has_url ? app.tracking_url
                            : "http://" + options_.node_host + ":8088/proxy/" + app.id_str + "/");
  r.set_diagnostics(app.diagnostics);
  r.set_starttime(app.start_ms);
  r.set_finishtime(app.finish_ms);
  r.set_final_application_status(app.final_status);

  // Resource usage of the application's containers.
  Res used;
  int32_t live = 0;
  double mem_seconds = 0, vcore_seconds = 0;
  int64_t now = NowMs();
  for (const auto& [id, c] : containers_) {
    if (c->app != app.id) continue;
    if (!c->complete && !c->rm_done) {
      used = used + c->resource;
      ++live;
    }
    if (c->started_ms) {
      double secs = static_cast<double>((c->finished_ms ? c->finished_ms : now) - c->started_ms) / 1000.0;
      mem_seconds += secs * static_cast<double>(c->resource.memory);
      vcore_seconds += secs * c->resource.vcores;
    }
  }
  auto* usage = r.mutable_app_resource_usage();
  usage->set_num_used_containers(live);
  usage->set_num_reserved_containers(0);
  *usage->mutable_used_resources() = ResourceToProto(used, WithGpu());
  *usage->mutable_reserved_resources() = ResourceToProto(Res{}, WithGpu());
  *usage->mutable_needed_resources() = ResourceToProto(used, WithGpu());
  usage->set_memory_seconds(static_cast<int64_t>(mem_seconds));
  usage->set_vcore_seconds(static_cast<int64_t>(vcore_seconds));
  int64_t cluster_mb = ClusterCapacityLocked().memory;
  float pct = cluster_mb ? 100.0f * static_cast<float>(used.memory) / static_cast<float>(cluster_mb) : 0;
  usage->set_queue_usage_percentage(pct);
  usage->set_cluster_usage_percentage(pct);
  usage->set_preempted_memory_seconds(0);
  usage->set_preempted_vcore_seconds(0);
  auto add_map = [](auto* list, const char* key, int64_t v) {
    auto* e = list->Add();
    e->set_key(key);
    e->set_value(v);
  };
  add_map(usage->mutable_application_resource_usage_map(), "memory-mb", static_cast<int64_t>(mem_seconds));
  add_map(usage->mutable_application_resource_usage_map(), "vcores", static_cast<int64_t>(vcore_seconds));
  add_map(usage->mutable_application_preempted_resource_usage_map(), "memory-mb", 0);
  add_map(usage->mutable_application_preempted_resource_usage_map(), "vcores", 0);

  r.set_originaltrackingurl(has_url ? app.tracking_url : "N/A");
  *r.mutable_currentapplicationattemptid() = AttemptIdProto(cluster_ts_, app.id, app.attempt);
  r.set_progress(app.progress);
  r.set_applicationtype(app.type);
  for (const std::string& t : app.tags) r.add_applicationtags(t);
  // As RMAppImpl reports it (log-aggregation/*-app-logAggregationStatus-SUCCEEDED): DISABLED when
  // the cluster does not aggregate, NOT_START while the application runs, RUNNING from its end
  // until the NodeManagers have uploaded its logs, then SUCCEEDED or FAILED.
  if (options_.log_aggregation.empty()) {
    r.set_log_aggregation_status(yp::LOG_DISABLED);
  } else if (app.log_aggregation > 0) {
    r.set_log_aggregation_status(yp::LOG_SUCCEEDED);
  } else if (app.log_aggregation < 0) {
    r.set_log_aggregation_status(yp::LOG_FAILED);
  } else {
    r.set_log_aggregation_status(app.Final() ? yp::LOG_RUNNING : yp::LOG_NOT_START);
  }
  r.set_unmanaged_application(false);
  r.mutable_priority()->set_priority(app.priority);
  r.set_appnodelabelexpression("<Not set>");
  r.set_amnodelabelexpression("<DEFAULT_PARTITION>");
  auto* timeout = r.add_apptimeouts();
  timeout->set_application_timeout_type(yp::APP_TIMEOUT_LIFETIME);
  auto* t = timeout->mutable_application_timeout();
  t->set_application_timeout_type(yp::APP_TIMEOUT_LIFETIME);
  if (app.lifetime_s > 0) {
    int64_t expire = app.start_ms + app.lifetime_s * 1000;
    t->set_expire_time(FormatIsoMs(expire));
    t->set_remaining_time(app.Final() ? 0 : std::max<int64_t>(0, (expire - now) / 1000));
  } else {
    t->set_expire_time("UNLIMITED");
    t->set_remaining_time(-1);
  }
  r.set_launchtime(app.launch_ms);
  return r;
}

// ---- ApplicationClientProtocol ------------------------------------------------------------------

namespace {

struct ClientCalls {
  YarnDoubleImpl& d;
  const ConnectionInfo& conn;

  // The caller as the RM names it: a Kerberos principal's short name (auth_to_local DEFAULT:
  // root@LOOM.TEST -> root), the SIMPLE user, or the default user.
  std::string User() const {
    if (!conn.kerberos_principal.empty()) return ShortName(conn.kerberos_principal);
    return conn.user.empty() ? d.options_.user : conn.user;
  }

  CallResult ResourceTypeInfo() {
    yp::GetAllResourceTypeInfoResponseProto resp;
    for (const auto& t : ResourceTypes(d.WithGpu())) *resp.add_resource_type_info() = t;
    return Serialize(resp);
  }

  CallResult ClusterMetrics() {
    yp::GetClusterMetricsResponseProto resp;
    auto* m = resp.mutable_cluster_metrics();
    int active = 0, lost = 0;
    {
      std::lock_guard<std::mutex> lock(d.mu_);
      for (const auto& n : d.nodes_) (n->expired ? lost : active) += 1;
    }
    m->set_num_node_managers(active);
    m->set_num_decommissioned_nms(0);
    m->set_num_active_nms(active);
    m->set_num_lost_nms(lost);
    m->set_num_unhealthy_nms(0);
    m->set_num_rebooted_nms(0);
    m->set_num_decommissioning_nms(0);
    m->set_num_shutdown_nms(0);
    return Serialize(resp);
  }

  // Every node in a requested state (none requested: every state, as ClientRMService does).
  CallResult ClusterNodes(std::string_view bytes) {
    auto req = Parse<yp::GetClusterNodesRequestProto>(bytes);
    if (!req) return BadRequest("getClusterNodes");
    yp::GetClusterNodesResponseProto resp;
    std::lock_guard<std::mutex> lock(d.mu_);
    for (const auto& n : d.nodes_) {
      if (NowMs() < d.nodes_registered_ms_) break;  // not registered yet
      yp::NodeStateProto state = n->expired ? yp::NS_LOST : yp::NS_RUNNING;
      bool wanted = req->nodestates_size() == 0 ||
                    std::find(req->nodestates().begin(), req->nodestates().end(), state) != req->nodestates().end();
      if (wanted) *resp.add_nodereports() = d.NodeReportLocked(*n);
    }
    return Serialize(resp);
  }

  // An unknown queue is SUCCESS with an empty body (ipc-queue/02); capacities are fractions.
  CallResult QueueInfo(std::string_view bytes) {
    auto req = Parse<yp::GetQueueInfoRequestProto>(bytes);
    if (!req) return BadRequest("getQueueInfo");
    std::lock_guard<std::mutex> lock(d.mu_);
    yp::GetQueueInfoResponseProto resp;
    std::optional<YarnTestDouble::Options::Queue> queue = d.FindQueueLocked(req->queuename());
    if (!queue) return Serialize(resp);
    const Res cluster = d.ClusterCapacityLocked();
    const Res cap = Scale(cluster, queue->capacity), max = Scale(cluster, queue->max_capacity);
    const Res used = d.QueueUsedLocked(queue->name);
    auto* q = resp.mutable_queueinfo();
    q->set_queuename(queue->name);
    q->set_capacity(queue->capacity);
    q->set_maximumcapacity(queue->max_capacity);
    q->set_currentcapacity(cap.memory ? static_cast<float>(used.memory) / static_cast<float>(cap.memory) : 0);
    q->set_state(yp::Q_RUNNING);
    if (req->includeapplications()) {
      for (const auto& [id, app] : d.apps_) {
        if (app->queue == queue->name && !app->Final()) *q->add_applications() = d.ReportLocked(*app);
      }
    }
    q->add_accessiblenodelabels("*");
    auto* s = q->mutable_queuestatistics();
    int64_t submitted = 0, running = 0, pending = 0, completed = 0, killed = 0, failed = 0, containers = 0;
    Res pending_res;
    int64_t pending_containers = 0;
    std::set<std::string> active_users;
    for (const auto& [id, app] : d.apps_) {
      if (app->queue != queue->name) continue;
      ++submitted;
      running += app->state == yp::RUNNING;
      pending += app->state == yp::SUBMITTED || app->state == yp::ACCEPTED;
      completed += app->state == yp::FINISHED;
      killed += app->state == yp::KILLED;
      failed += app->state == yp::FAILED;
      if (!app->Final()) active_users.insert(app->user);
      if (app->Final()) continue;
      for (const auto& [key, ask] : app->asks) {
        if (key.resource_name != "*" || ask.num_containers() <= 0) continue;
        Res one = ResourceFromProto(ask.capability());
        pending_res = pending_res + Res{one.memory * ask.num_containers(), one.vcores * ask.num_containers(), 0};
        pending_containers += ask.num_containers();
      }
    }
    for (const auto& [id, c] : d.containers_) {
      auto app = d.apps_.find(c->app);
      if (app != d.apps_.end() && app->second->queue == queue->name) containers += (!c->complete && !c->rm_done) ? 1 : 0;
    }
    s->set_numappssubmitted(submitted);
    s->set_numappsrunning(running);
    s->set_numappspending(pending);
    s->set_numappscompleted(completed);
    s->set_numappskilled(killed);
    s->set_numappsfailed(failed);
    s->set_numactiveusers(static_cast<int64_t>(active_users.size()));
    s->set_availablememorymb(max.memory - used.memory);
    s->set_allocatedmemorymb(used.memory);
    s->set_pendingmemorymb(pending_res.memory);
    s->set_reservedmemorymb(0);
    s->set_availablevcores(max.vcores - used.vcores);
    s->set_allocatedvcores(used.vcores);
    s->set_pendingvcores(pending_res.vcores);
    s->set_reservedvcores(0);
    s->set_allocatedcontainers(containers);
    s->set_pendingcontainers(pending_containers);
    s->set_reservedcontainers(0);
    q->set_preemptiondisabled(true);
    auto* m = q->add_queueconfigurationsmap();
    m->set_partitionname("");
    auto* qc = m->mutable_queueconfigurations();
    qc->set_capacity(queue->capacity);
    qc->set_absolutecapacity(queue->capacity);  // every queue is a child of root
    qc->set_maxcapacity(queue->max_capacity);
    qc->set_absolutemaxcapacity(queue->max_capacity);
    qc->set_maxampercentage(queue->max_am_percentage);
    *qc->mutable_effectivemincapacity() = ResourceToProto(cap, d.WithGpu());
    *qc->mutable_effectivemaxcapacity() = ResourceToProto(max, d.WithGpu());
    *qc->mutable_configuredmincapacity() = ResourceToProto(Res{}, d.WithGpu());
    *qc->mutable_configuredmaxcapacity() = ResourceToProto(Res{}, d.WithGpu());
    q->set_intraqueuepreemptiondisabled(true);
    return Serialize(resp);
  }

  CallResult QueueUserAcls() {
    yp::GetQueueUserAclsInfoResponseProto resp;
    std::vector<std::string> names = {"root"};
    {
      std::lock_guard<std::mutex> lock(d.mu_);
      for (const auto& q : d.QueuesLocked()) names.push_back("root." + q.name);
    }
    for (const std::string& name : names) {
      auto* a = resp.add_queueuseracls();
      a->set_queuename(name);
      a->add_useracls(yp::QACL_SUBMIT_APPLICATIONS);
      a->add_useracls(yp::QACL_ADMINISTER_QUEUE);
    }
    return Serialize(resp);
  }

  // getApplications with the filters `yarn application -list` uses (ipc-queue/03): states,
  // types, tags (any of them, lowercased as the RM stores them), queues and users.
  CallResult Applications(std::string_view bytes) {
    auto req = Parse<yp::GetApplicationsRequestProto>(bytes);
    if (!req) return BadRequest("getApplications");
    auto wanted = [](const auto& list, const std::string& v) {
      return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
    };
    std::set<std::string> tags;
    for (const std::string& t : req->applicationtags()) tags.insert(ToLower(Trim(t)));
    std::lock_guard<std::mutex> lock(d.mu_);
    yp::GetApplicationsResponseProto resp;
    int64_t n = 0;
    for (const auto& [id, app] : d.apps_) {
      if (req->has_limit() && req->limit() > 0 && n >= req->limit()) break;
      if (req->application_states_size() > 0 &&
          std::find(req->application_states().begin(), req->application_states().end(), app->state) ==
              req->application_states().end()) {
        continue;
      }
      if (!wanted(req->application_types(), app->type) || !wanted(req->users(), app->user)) continue;
      if (!wanted(req->queues(), app->queue) && !wanted(req->queues(), "root." + app->queue)) continue;
      if (!tags.empty() &&
          std::none_of(app->tags.begin(), app->tags.end(), [&](const std::string& t) { return tags.count(t) > 0; })) {
        continue;
      }
      *resp.add_applications() = d.ReportLocked(*app);
      ++n;
    }
    return Serialize(resp);
  }

  // Resource profiles are off, as on the recorded cluster: dshell/01 callId 5, byte for byte.
  CallResult ResourceProfiles() {
    return AppError(
        "org.apache.hadoop.yarn.exceptions.YARNFeatureNotEnabledException",
        "Resource profile is not enabled, please enable resource profile feature before using its functions. (by "
        "setting yarn.resourcemanager.resource-profiles.enabled to true)",
        {"org.apache.hadoop.yarn.server.resourcemanager.resource.ResourceProfilesManagerImpl."
         "checkAndThrowExceptionWhenFeatureDisabled(ResourceProfilesManagerImpl.java:191)",
         "org.apache.hadoop.yarn.server.resourcemanager.resource.ResourceProfilesManagerImpl.getResourceProfiles("
         "ResourceProfilesManagerImpl.java:214)",
         "org.apache.hadoop.yarn.server.resourcemanager.ClientRMService.getResourceProfiles(ClientRMService.java:1846)",
         "org.apache.hadoop.yarn.api.impl.pb.service.ApplicationClientProtocolPBServiceImpl.getResourceProfiles("
         "ApplicationClientProtocolPBServiceImpl.java:670)",
         "org.apache.hadoop.yarn.proto.ApplicationClientProtocol$ApplicationClientProtocolService$2."
         "callBlockingMethod(ApplicationClientProtocol.java:671)"});
  }

  CallResult NewApplication() {
    std::lock_guard<std::mutex> lock(d.mu_);
    yp::GetNewApplicationResponseProto resp;
    *resp.mutable_application_id() = AppIdProto(d.cluster_ts_, d.next_app_++);
    *resp.mutable_maximumcapability() = ResourceToProto(d.NodeCapacity(), d.WithGpu());
    return Serialize(resp);
  }

  // The AM's resource: the ANY am_container_resource_request, else the ASC resource; memory
  // rounded up to the minimum allocation like the scheduler's normalization.
  std::variant<Res, RpcError> AmResource(const yp::ApplicationSubmissionContextProto& asc) {
    std::optional<Res> r;
    if (asc.am_container_resource_request_size() > 0) {
      for (const auto& rr : asc.am_container_resource_request()) {
        if (rr.resource_name() == "*") r = ResourceFromProto(rr.capability());
      }
      if (!r) {
        return ClientError(kInvalidResourceRequest, "submitApplication",
                           "Invalid resource request, no resource request specified with *");
      }
    } else if (asc.has_resource()) {
      r = ResourceFromProto(asc.resource());
    } else {
      return ClientError(kInvalidResourceRequest, "submitApplication",
                         "Invalid resource request, no resources requested");
    }
    return *r;
  }

  CallResult Submit(std::string_view bytes) {
    auto req = Parse<yp::SubmitApplicationRequestProto>(bytes);
    if (!req) return BadRequest("submitApplication");
    const auto& asc = req->application_submission_context();
    if (!asc.has_application_id()) {
      return ClientError("org.apache.hadoop.yarn.exceptions.ApplicationIdNotProvidedException", "submitApplication",
                         "ApplicationIdNotProvidedException: applicationId is not provided in "
                         "ApplicationSubmissionContext");
    }
    std::string user = User();
    std::string app_id = AppIdString(asc.application_id().cluster_timestamp(), asc.application_id().id());
    std::lock_guard<std::mutex> lock(d.mu_);
    if (asc.application_id().cluster_timestamp() != d.cluster_ts_) {
      return ClientError(kYarnException, "submitApplication",
                         "Application " + app_id + " was not created by this ResourceManager (cluster timestamp " +
                             std::to_string(d.cluster_ts_) + ")");
    }
    // ClientRMService treats a known id as the retry of an earlier submission.
    if (d.FindAppLocked(asc.application_id().id())) return Serialize(yp::SubmitApplicationResponseProto());
    std::optional<YarnTestDouble::Options::Queue> queue = d.FindQueueLocked(asc.queue());
    if (!queue) {
      return ClientError(kYarnException, "submitApplication",
                         "Application " + app_id + " submitted by user " + user + " to unknown queue: " + asc.queue());
    }
    if (asc.unmanaged_am()) {
      return ClientError(kYarnException, "submitApplication", "unmanaged AMs are not supported by the test double");
    }
    if (!asc.has_am_container_spec()) {
      return ClientError(kYarnException, "submitApplication",
                         "Application " + app_id + " has no am_container_spec (ContainerLaunchContext)");
    }
    wire::Credentials creds;
    if (asc.am_container_spec().has_tokens()) {
      Result<wire::Credentials> parsed = wire::ParseCredentials(asc.am_container_spec().tokens());
      if (!parsed.ok()) {
        return ClientError(kYarnException, "submitApplication", "java.io.IOException: " + parsed.status().message());
      }
      creds = *parsed;
    }
    auto res = AmResource(asc);
    if (auto* e = std::get_if<RpcError>(&res)) return *e;
    Res am = Normalize(std::get<Res>(res));
    if (auto e = CheckAsk(am, "submitApplication")) return *e;

    auto app = std::make_unique<App>();
    app->id = asc.application_id().id();
    app->id_str = app_id;
    app->attempt_str = AttemptIdString(d.cluster_ts_, app->id, app->attempt);
    app->asc = asc;
    app->user = user;
    app->queue = queue->name;
    app->name = asc.application_name();
    // ClientRMService.submitApplication: no type is "YARN", a longer one is cut to
    // YarnConfiguration.APPLICATION_TYPE_LENGTH (20) characters.
    app->type = !asc.has_applicationtype() ? "YARN" : asc.applicationtype().substr(0, 20);
    for (const std::string& t : asc.applicationtags()) app->tags.push_back(ToLower(Trim(t)));  // the RM lowercases tags
    app->priority = asc.priority().priority();
    app->start_ms = NowMs();
    app->am_resource = am;
    for (const auto& t : asc.application_timeouts()) {
      if (t.application_timeout_type() == yp::APP_TIMEOUT_LIFETIME && t.timeout() > 0) app->lifetime_s = t.timeout();
    }
    yp::AMRMTokenIdentifierProto id;
    *id.mutable_appattemptid() = AttemptIdProto(d.cluster_ts_, app->id, app->attempt);
    id.set_keyid(d.amrm_key_id_);
    app->amrm_token = wire::Token{id.SerializeAsString(), RandomPassword(), "YARN_AM_RM_TOKEN", ""};
    d.next_app_ = std::max(d.next_app_, app->id + 1);
    App& submitted = *app;
    d.apps_[app->id] = std::move(app);
    if (d.options_.kerberos.enabled) RenewTokensLocked(submitted, creds);
    d.cv_.notify_all();  // the dispatcher allocates and launches the AM
    return Serialize(yp::SubmitApplicationResponseProto());
  }

  // DelegationTokenRenewer at submission (K5.5, rpc/05): every HDFS delegation token of the AM's
  // CLC is renewed as the RM's principal, which only works when its renewer is the RM. As in
  // Hadoop the submission itself succeeds and a failed renewal rejects the application (FAILED,
  // its diagnostics Hadoop's "Failed to renew token: <token>", with the NameNode's reason added).
  void RenewTokensLocked(App& app, const wire::Credentials& creds) {
    DelegationTokenStore& store = d.options_.hdfs->tokens();
    for (const auto& [alias, token] : creds.tokens) {
      if (token.kind != wire::kHdfsDelegationKind) continue;
      // The renewer connects to the NameNode the token's service names, then renews there.
      std::string unreachable = d.HdfsTokenServiceRefusal(token.service);
      Result<int64_t> renewed = unreachable.empty() ? store.Renew(token, d.options_.kerberos.rm_principal)
                                                    : Result<int64_t>(Status::Unavailable(unreachable));
      if (!renewed.ok()) {
        Result<wire::DelegationTokenIdentifier> id = wire::ParseDelegationTokenIdentifier(token.identifier);
        std::string ident = id.ok() ? "(" + FormatTokenId(*id) + ")" : "(unparseable identifier)";
        d.EndAppLocked(app, yp::FAILED, yp::APP_FAILED,
                       "Failed to renew token: Kind: " + token.kind + ", Service: " + token.service + ", Ident: " +
                           ident + ": " + renewed.status().message());
        return;
      }
      app.renewed_tokens.push_back(token);
    }
  }

  Res Normalize(Res r) {
    int64_t step = std::max<int64_t>(1, d.options_.min_allocation_mb);
    r.memory = std::max(step, (r.memory + step - 1) / step * step);
    r.vcores = std::max(1, r.vcores);
    if (!d.WithGpu()) r.gpus = 0;  // an RM without yarn.io/gpu skips the unknown resource type
    return r;
  }

  std::optional<RpcError> CheckAsk(const Res& r, const std::string& method) {
    Res max = d.NodeCapacity();
    if (r.memory < 0 || r.vcores < 0 || r.gpus < 0 || !r.FitsIn(max)) {
      return ClientError(kInvalidResourceRequest, method, TooBigMessage(r, max, d.WithGpu()));
    }
    return std::nullopt;
  }

  CallResult Report(std::string_view bytes) {
    auto req = Parse<yp::GetApplicationReportRequestProto>(bytes);
    if (!req) return BadRequest("getApplicationReport");
    std::lock_guard<std::mutex> lock(d.mu_);
    App* app = req->application_id().cluster_timestamp() == d.cluster_ts_ ? d.FindAppLocked(req->application_id().id())
                                                                          : nullptr;
    if (!app) {
      return ClientError(kAppNotFound, "getApplicationReport",
                         "Application with id '" +
                             AppIdString(req->application_id().cluster_timestamp(), req->application_id().id()) +
                             "' doesn't exist in RM. Please check that the job submission was successful.");
    }
    yp::GetApplicationReportResponseProto resp;
    *resp.mutable_application_report() = d.ReportLocked(*app);
    return Serialize(resp);
  }

  CallResult Kill(std::string_view bytes) {
    auto req = Parse<yp::KillApplicationRequestProto>(bytes);
    if (!req) return BadRequest("forceKillApplication");
    std::lock_guard<std::mutex> lock(d.mu_);
    App* app = req->application_id().cluster_timestamp() == d.cluster_ts_ ? d.FindAppLocked(req->application_id().id())
                                                                          : nullptr;
    if (!app) {
      return ClientError(kAppNotFound, "forceKillApplication",
                         "Trying to kill an absent application " +
                             AppIdString(req->application_id().cluster_timestamp(), req->application_id().id()));
    }
    if (!app->Final()) {
      std::string msg = "Application " + app->id_str + " was killed by user " +
                        User() + " at " + conn.peer_ip;
      if (req->has_diagnostics()) msg += " with diagnostic message: " + req->diagnostics();
      d.EndAppLocked(*app, yp::KILLED, yp::APP_KILLED, msg);
      d.KillAppContainersLocked(*app, "Container killed by the ResourceManager.", d.options_.rm_kill_grace_ms, true);
    }
    yp::KillApplicationResponseProto resp;
    resp.set_is_kill_completed(true);
    return Serialize(resp);
  }
};

}  // namespace

CallResult YarnDoubleImpl::HandleClient(const std::string& method, std::string_view req, const ConnectionInfo& conn) {
  ClientCalls calls{*this, conn};
  if (method == "getResourceTypeInfo") return calls.ResourceTypeInfo();
  if (method == "getClusterMetrics") return calls.ClusterMetrics();
  if (method == "getClusterNodes") return calls.ClusterNodes(req);
  if (method == "getQueueInfo") return calls.QueueInfo(req);
  if (method == "getQueueUserAcls") return calls.QueueUserAcls();
  if (method == "getResourceProfiles") return calls.ResourceProfiles();
  if (method == "getNewApplication") return calls.NewApplication();
  if (method == "submitApplication") return calls.Submit(req);
  if (method == "getApplicationReport") return calls.Report(req);
  if (method == "getApplications") return calls.Applications(req);
  if (method == "forceKillApplication") return calls.Kill(req);
  return NoSuchMethod(method, kClientProtocol);
}

// ---- ApplicationMasterProtocol ------------------------------------------------------------------

namespace {

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
      if (req->has_tracking_url()) app.tracking_url = req->tracking_url();
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
