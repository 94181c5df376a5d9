// The ResourceManager half of the YARN test double: ApplicationClientProtocol (the client
// port), ApplicationMasterProtocol (the scheduler port), the AM launch, and the application
// life cycle, shaped like the Hadoop 3.3.6 RM recorded in dshell/01 and dshell/05.
// The CapacityScheduler, ApplicationClientProtocol and ApplicationMasterProtocol have files of
// their own (capacity_scheduler.cc, rm_client_calls.cc, rm_scheduler_calls.cc); this one holds
// the AMRMToken's secret manager, container allocation, the AM launch, the HDFS tokens' service
// check and the application life cycle.

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <vector>

#include "core/strings.h"
#include "delegation_token_store.h"
#include "fake_hdfs.h"
#include "yarn_double_impl.h"

namespace loom::yarn_double {

namespace {

constexpr char kInvalidToken[] = "org.apache.hadoop.security.token.SecretManager$InvalidToken";

std::string FormatIsoMs(int64_t ms) {
  char millis[24];
  std::snprintf(millis, sizeof(millis), ".%03d+0000", static_cast<int>(ms % 1000));
  return FormatUtc(ms, "%Y-%m-%dT%H:%M:%S") + millis;
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
  c->token = hadoop::Token{t.SerializeAsString(), RandomPassword(), "ContainerToken",
                         n.bind_ip + ":" + std::to_string(n.port())};
  Container* raw = c.get();
  containers_[c->id] = std::move(c);
  return raw;
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
    hadoop::Credentials creds;
    if (clc.has_tokens()) {
      Result<hadoop::Credentials> parsed = hadoop::ParseCredentials(clc.tokens());
      if (parsed.ok()) creds = *parsed;  // validated at submission
    }
    // Credentials.addToken(service, token): the AMRMToken's service, and so its alias, is "".
    std::erase_if(creds.tokens, [&](const auto& t) { return t.first == app->amrm_token.service; });
    creds.tokens.emplace_back(app->amrm_token.service, app->amrm_token);
    tokens = hadoop::SerializeCredentials(creds);
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
    for (const hadoop::Token& token : app.renewed_tokens) {
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
    std::string tracking = RmWebUrl() + "/cluster/app/" + app->id_str;
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

std::string YarnDoubleImpl::RmWebUrl() const {
  return "http://" + options_.node_host + ":" + std::to_string(rm_web_port_);
}

YarnDoubleImpl::TrackingUrls YarnDoubleImpl::TrackingUrlsLocked(const App& app) const {
  // RMAppAttemptImpl.setTrackingUrlToRMAppPage, on the attempt's FAILED and KILLED ends.
  if (app.state == yp::KILLED || app.state == yp::FAILED) {
    std::string page = RmWebUrl() + "/cluster/app/" + app.id_str;
    return {page, page};
  }
  // From submission on (NEW, ACCEPTED: dshell/01, kerberos rpc/03), through FINISHED (rm-rest/04).
  // sanitizeTrackingUrl: "" (DistributedShell's registration, Loom's unregistering) is "N/A".
  bool has_url = app.registered && !app.tracking_url.empty() && app.tracking_url != "N/A";
  return {RmWebUrl() + "/proxy/" + app.id_str + "/", has_url ? app.tracking_url : "N/A"};
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
  // The web proxy's URL, which rm_web_server.cc serves, and the AM's own URL as originalTrackingUrl.
  TrackingUrls urls = TrackingUrlsLocked(app);
  r.set_trackingurl(urls.proxied);
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

  r.set_originaltrackingurl(urls.original);
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

}  // namespace loom::yarn_double
