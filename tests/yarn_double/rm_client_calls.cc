// The ResourceManager's client port: ApplicationClientProtocol as ClientRMService answers it
// (dshell/01, ipc-queue/): cluster, node and queue reports, new applications, submission (with
// the DelegationTokenRenewer under Kerberos), application reports and kills. Part of
// YarnDoubleImpl (resource_manager_internal.h).

#include <algorithm>
#include <optional>
#include <set>
#include <variant>

#include "core/strings.h"
#include "delegation_token_store.h"
#include "fake_hdfs.h"
#include "resource_manager_internal.h"
#include "yarn_double_impl.h"

namespace loom::yarn_double {

// ---- ApplicationClientProtocol ------------------------------------------------------------------

namespace {

constexpr char kYarnException[] = "org.apache.hadoop.yarn.exceptions.YarnException";
constexpr char kAppNotFound[] = "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException";

// An ERROR from ClientRMService.<method>, with the stack trace shape of dshell/01.
RpcError ClientError(const char* cls, const std::string& method, const std::string& message) {
  return AppError(cls, message,
                  ServiceFrames("org.apache.hadoop.yarn.server.resourcemanager.ClientRMService." + method +
                                    "(ClientRMService.java)",
                                "ApplicationClientProtocol", method));
}

struct ClientCalls {
  YarnDoubleImpl& d;

  // The application `id` names if this RM made it (its cluster timestamp), else nullptr; d.mu_ held.
  App* RequestedAppLocked(const yp::ApplicationIdProto& id) {
    return id.cluster_timestamp() == d.cluster_ts_ ? d.FindAppLocked(id.id()) : nullptr;
  }
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
    hadoop::Credentials creds;
    if (asc.am_container_spec().has_tokens()) {
      Result<hadoop::Credentials> parsed = hadoop::ParseCredentials(asc.am_container_spec().tokens());
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
    app->amrm_token = hadoop::Token{id.SerializeAsString(), RandomPassword(), "YARN_AM_RM_TOKEN", ""};
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
  void RenewTokensLocked(App& app, const hadoop::Credentials& creds) {
    DelegationTokenStore& store = d.options_.hdfs->tokens();
    for (const auto& [alias, token] : creds.tokens) {
      if (token.kind != hadoop::kHdfsDelegationKind) continue;
      // The renewer connects to the NameNode the token's service names, then renews there.
      std::string unreachable = d.HdfsTokenServiceRefusal(token.service);
      Result<int64_t> renewed = unreachable.empty() ? store.Renew(token, d.options_.kerberos.rm_principal)
                                                    : Result<int64_t>(Status::Unavailable(unreachable));
      if (!renewed.ok()) {
        Result<hadoop::DelegationTokenIdentifier> id = hadoop::ParseDelegationTokenIdentifier(token.identifier);
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
    App* app = RequestedAppLocked(req->application_id());
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
    App* app = RequestedAppLocked(req->application_id());
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

}  // namespace loom::yarn_double
