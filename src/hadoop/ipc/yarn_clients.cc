#include "hadoop/ipc/yarn_clients.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <thread>

#include <spdlog/spdlog.h>

#include "core/strings.h"
#include "hadoop/wire/ipc_frame.h"

namespace loom::hadoop {

namespace {

constexpr char kNotRegistered[] = "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException";
constexpr int64_t kContainerNumberBits = 40;

// a_m_command has no "none" value: an unset field reads as AM_RESYNC, its first value.
bool HasCommand(const ypb::AllocateResponseProto& r, ypb::AMCommandProto command) {
  return r.has_a_m_command() && r.a_m_command() == command;
}
constexpr int64_t kContainerNumberMask = (int64_t{1} << kContainerNumberBits) - 1;

// Java's id formats: NumberFormat with a minimum number of digits, no grouping.
std::string Padded(int64_t v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*lld", digits, static_cast<long long>(v));
  return buf;
}

// A non-negative decimal number and nothing else (no sign, no spaces), at most `max`.
Result<int64_t> Digits(std::string_view s, int64_t max, std::string_view what, std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument("malformed " + std::string(what) + " in '" + std::string(text) + "'");
  };
  if (s.empty() || s.size() > 18) return bad();
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return bad();
    v = v * 10 + (c - '0');
  }
  if (v > max) return bad();
  return v;
}

constexpr int64_t kInt32Max = 0x7fffffff;
constexpr int64_t kInt64Max = 0x7fffffffffffffff;

std::string AskKey(const ypb::ResourceRequestProto& r) {
  return std::to_string(r.priority().priority()) + "/" + std::to_string(r.allocation_request_id()) + "/" +
         r.resource_name();
}

IpcOptions NmOptions(const ypb::ContainerProto& container, const Token& nm_token) {
  IpcOptions o;
  o.host = container.nodeid().host();
  o.port = container.nodeid().port();
  o.protocol = kNmProtocol;
  o.token = nm_token;
  o.one_call_per_connection = true;  // as Java (yarn.client.max-cached-nodemanagers-proxies=0)
  return o;
}

// The NodeManager reports per-container failures inside a successful response.
Status ContainerFailures(const google::protobuf::RepeatedPtrField<ypb::ContainerExceptionMapProto>& failed,
                         std::string_view what, const ypb::ContainerProto& container) {
  if (failed.empty()) return Status::Ok();
  const auto& f = failed[0];
  std::string id = ContainerIdString(f.has_container_id() ? f.container_id() : container.id());
  std::string cls = f.exception().class_name();
  return Status::Aborted("NodeManager " + NodeIdString(container.nodeid()) + " could not " + std::string(what) +
                         " " + id + ": " + (cls.empty() ? "" : cls + ": ") + f.exception().message());
}

}  // namespace

std::string ApplicationIdString(const ypb::ApplicationIdProto& id) {
  return "application_" + std::to_string(id.cluster_timestamp()) + "_" + Padded(id.id(), 4);
}

std::string AttemptIdString(const ypb::ApplicationAttemptIdProto& id) {
  const auto& app = id.application_id();
  return "appattempt_" + std::to_string(app.cluster_timestamp()) + "_" + Padded(app.id(), 4) + "_" +
         Padded(id.attemptid(), 6);
}

std::string ContainerIdString(const ypb::ContainerIdProto& id) {
  // The RM fills app_attempt_id; app_id (deprecated) only as a fallback.
  const auto& app = id.has_app_attempt_id() ? id.app_attempt_id().application_id() : id.app_id();
  std::string out = "container_";
  if (int64_t epoch = id.id() >> kContainerNumberBits; epoch > 0) out += "e" + Padded(epoch, 2) + "_";
  return out + std::to_string(app.cluster_timestamp()) + "_" + Padded(app.id(), 4) + "_" +
         Padded(id.app_attempt_id().attemptid(), 2) + "_" + Padded(id.id() & kContainerNumberMask, 6);
}

Result<ypb::ApplicationIdProto> ParseApplicationId(std::string_view text) {
  std::vector<std::string> parts = Split(text, '_', /*skip_empty=*/false);
  if (parts.size() != 3 || parts[0] != "application") {
    return Status::InvalidArgument("not an application id: '" + std::string(text) + "'");
  }
  LOOM_ASSIGN_OR_RETURN(int64_t ts, Digits(parts[1], kInt64Max, "cluster timestamp", text));
  LOOM_ASSIGN_OR_RETURN(int64_t n, Digits(parts[2], kInt32Max, "application number", text));
  ypb::ApplicationIdProto id;
  id.set_cluster_timestamp(ts);
  id.set_id(static_cast<int32_t>(n));
  return id;
}

Result<ypb::ContainerIdProto> ParseContainerId(std::string_view text) {
  std::vector<std::string> parts = Split(text, '_', /*skip_empty=*/false);
  if (parts.size() < 2 || parts[0] != "container") {
    return Status::InvalidArgument("not a container id: '" + std::string(text) + "'");
  }
  int64_t epoch = 0;
  size_t next = 1;
  if (!parts[1].empty() && parts[1][0] == 'e') {
    // The epoch shifted by 40 bits must still fit the int64 id.
    LOOM_ASSIGN_OR_RETURN(epoch, Digits(std::string_view(parts[1]).substr(1), (kInt64Max >> kContainerNumberBits),
                                        "epoch", text));
    next = 2;
  }
  if (parts.size() != next + 4) return Status::InvalidArgument("not a container id: '" + std::string(text) + "'");
  LOOM_ASSIGN_OR_RETURN(int64_t ts, Digits(parts[next], kInt64Max, "cluster timestamp", text));
  LOOM_ASSIGN_OR_RETURN(int64_t app, Digits(parts[next + 1], kInt32Max, "application number", text));
  LOOM_ASSIGN_OR_RETURN(int64_t attempt, Digits(parts[next + 2], kInt32Max, "attempt number", text));
  LOOM_ASSIGN_OR_RETURN(int64_t number, Digits(parts[next + 3], kContainerNumberMask, "container number", text));
  ypb::ContainerIdProto id;
  auto* attempt_id = id.mutable_app_attempt_id();
  attempt_id->mutable_application_id()->set_id(static_cast<int32_t>(app));
  attempt_id->mutable_application_id()->set_cluster_timestamp(ts);
  attempt_id->set_attemptid(static_cast<int32_t>(attempt));
  id.set_id((epoch << kContainerNumberBits) | number);
  return id;
}

std::string NodeIdString(const ypb::NodeIdProto& id) { return id.host() + ":" + std::to_string(id.port()); }

Token FromProto(const ::hadoop::common::TokenProto& t) {
  return Token{t.identifier(), t.password(), t.kind(), t.service()};
}

::hadoop::common::TokenProto ToProto(const Token& t) {
  ::hadoop::common::TokenProto p;
  p.set_identifier(t.identifier);
  p.set_password(t.password);
  p.set_kind(t.kind);
  p.set_service(t.service);
  return p;
}

// ---- ApplicationClient ----

namespace {
IpcOptions ClientOptions(std::string host, int port, std::string user) {
  return {.host = std::move(host), .port = port, .protocol = kClientProtocol, .user = std::move(user)};
}
}  // namespace

ApplicationClient::ApplicationClient(std::string host, int port, std::string user)
    : ipc_({ClientOptions(std::move(host), port, std::move(user))}, FailoverSettings{}) {}

namespace {
std::vector<IpcOptions> EachRm(const RmAddresses& rms, const std::function<IpcOptions(std::string, int)>& options) {
  std::vector<IpcOptions> out;
  for (const auto& [host, port] : rms) out.push_back(options(host, port));
  return out;
}
}  // namespace

ApplicationClient::ApplicationClient(const RmAddresses& rms, std::string user, FailoverSettings failover)
    : ipc_(EachRm(rms, [&](std::string h, int p) { return ClientOptions(std::move(h), p, user); }), failover) {}

Result<ypb::GetNewApplicationResponseProto> ApplicationClient::GetNewApplication() {
  ypb::GetNewApplicationRequestProto req;
  ypb::GetNewApplicationResponseProto resp;
  LOOM_RETURN_IF_ERROR(ipc_.Call("getNewApplication", req, &resp));
  return resp;
}

Status ApplicationClient::SubmitApplication(const ypb::ApplicationSubmissionContextProto& context) {
  ypb::SubmitApplicationRequestProto req;
  *req.mutable_application_submission_context() = context;
  ypb::SubmitApplicationResponseProto resp;
  return ipc_.Call("submitApplication", req, &resp);
}

Result<ypb::ApplicationReportProto> ApplicationClient::GetApplicationReport(const ypb::ApplicationIdProto& id) {
  ypb::GetApplicationReportRequestProto req;
  *req.mutable_application_id() = id;
  ypb::GetApplicationReportResponseProto resp;
  LOOM_RETURN_IF_ERROR(ipc_.Call("getApplicationReport", req, &resp));
  return resp.application_report();
}

Result<bool> ApplicationClient::KillApplication(const ypb::ApplicationIdProto& id, const std::string& diagnostics) {
  ypb::KillApplicationRequestProto req;
  *req.mutable_application_id() = id;
  if (!diagnostics.empty()) req.set_diagnostics(diagnostics);
  ypb::KillApplicationResponseProto resp;
  LOOM_RETURN_IF_ERROR(ipc_.Call("forceKillApplication", req, &resp));
  return resp.is_kill_completed();
}

Result<ypb::YarnClusterMetricsProto> ApplicationClient::GetClusterMetrics() {
  ypb::GetClusterMetricsRequestProto req;
  ypb::GetClusterMetricsResponseProto resp;
  LOOM_RETURN_IF_ERROR(ipc_.Call("getClusterMetrics", req, &resp));
  return resp.cluster_metrics();
}

Result<std::vector<ypb::NodeReportProto>> ApplicationClient::GetClusterNodes(std::vector<ypb::NodeStateProto> states) {
  ypb::GetClusterNodesRequestProto req;
  for (auto s : states) req.add_nodestates(s);
  ypb::GetClusterNodesResponseProto resp;
  LOOM_RETURN_IF_ERROR(ipc_.Call("getClusterNodes", req, &resp));
  return std::vector<ypb::NodeReportProto>(resp.nodereports().begin(), resp.nodereports().end());
}

Result<ypb::QueueInfoProto> ApplicationClient::GetQueueInfo(const std::string& queue, bool include_applications) {
  ypb::GetQueueInfoRequestProto req;
  // All four fields written out, as Java's YarnClient does (ipc-queue fact 1).
  req.set_queuename(queue);
  req.set_includeapplications(include_applications);
  req.set_includechildqueues(false);
  req.set_recursive(false);
  ypb::GetQueueInfoResponseProto resp;
  LOOM_RETURN_IF_ERROR(ipc_.Call("getQueueInfo", req, &resp));
  if (resp.has_queueinfo()) return resp.queueinfo();
  std::string known;
  if (auto acls = GetQueueUserAcls(); acls.ok()) {
    std::vector<std::string> names;
    for (const auto& a : *acls) {
      bool may_submit = std::find(a.useracls().begin(), a.useracls().end(), ypb::QACL_SUBMIT_APPLICATIONS) !=
                        a.useracls().end();
      // "root" is the parent of every queue; nothing can be submitted to it.
      if (may_submit && a.queuename() != "root") names.push_back(a.queuename());
    }
    known = " (queues: " + (names.empty() ? std::string("none open to this user") : Join(names, ", ")) + ")";
  }
  return Status::NotFound("unknown YARN queue '" + queue + "'" + known);
}

Result<std::vector<ypb::QueueUserACLInfoProto>> ApplicationClient::GetQueueUserAcls() {
  ypb::GetQueueUserAclsInfoRequestProto req;
  ypb::GetQueueUserAclsInfoResponseProto resp;
  LOOM_RETURN_IF_ERROR(ipc_.Call("getQueueUserAcls", req, &resp));
  return std::vector<ypb::QueueUserACLInfoProto>(resp.queueuseracls().begin(), resp.queueuseracls().end());
}

Result<std::vector<ypb::ApplicationReportProto>> ApplicationClient::GetApplications(
    std::vector<ypb::YarnApplicationStateProto> states, std::vector<std::string> tags) {
  ypb::GetApplicationsRequestProto req;
  for (auto s : states) req.add_application_states(s);
  // The RM stores tags lowercased and compares them as sent: lowercase them, as Java's
  // GetApplicationsRequest does.
  for (const std::string& t : tags) req.add_applicationtags(ToLower(t));
  ypb::GetApplicationsResponseProto resp;
  LOOM_RETURN_IF_ERROR(ipc_.Call("getApplications", req, &resp));
  return std::vector<ypb::ApplicationReportProto>(resp.applications().begin(), resp.applications().end());
}

// ---- AmRmClient ----

namespace {
IpcOptions AmOptions(std::string host, int port, Token token) {
  return {.host = std::move(host), .port = port, .protocol = kAmProtocol, .token = std::move(token)};
}
}  // namespace

AmRmClient::AmRmClient(std::string host, int port, Token amrm_token)
    : ipc_({AmOptions(std::move(host), port, std::move(amrm_token))}, FailoverSettings{}) {}

AmRmClient::AmRmClient(const RmAddresses& schedulers, Token amrm_token, FailoverSettings failover)
    : ipc_(EachRm(schedulers, [&](std::string h, int p) { return AmOptions(std::move(h), p, amrm_token); }),
           failover) {}

Result<ypb::RegisterApplicationMasterResponseProto> AmRmClient::Register(const std::string& host, int rpc_port,
                                                                         const std::string& tracking_url) {
  host_ = host;
  rpc_port_ = rpc_port;
  tracking_url_ = tracking_url;
  return RegisterAgain();
}

Result<ypb::RegisterApplicationMasterResponseProto> AmRmClient::RegisterAgain() {
  ypb::RegisterApplicationMasterRequestProto req;
  req.set_host(host_);
  req.set_rpc_port(rpc_port_);
  req.set_tracking_url(tracking_url_);  // Java sends it even when empty
  ypb::RegisterApplicationMasterResponseProto resp;
  LOOM_RETURN_IF_ERROR(ipc_.Call("registerApplicationMaster", req, &resp));
  response_id_ = 0;  // the RM restarts its count at registration
  for (const auto& t : resp.nm_tokens_from_previous_attempts()) StoreNmToken(t);
  return resp;
}

std::vector<ypb::ResourceRequestProto> AmRmClient::ChangedAsks(
    const std::vector<ypb::ResourceRequestProto>& asks) const {
  std::vector<ypb::ResourceRequestProto> changed;
  for (const auto& ask : asks) {
    std::string key = AskKey(ask);
    auto it = outstanding_.find(key);
    bool same = it == outstanding_.end() ? ask.num_containers() == 0
                                         : it->second.SerializeAsString() == ask.SerializeAsString();
    if (!same || unconfirmed_.count(key) > 0) changed.push_back(ask);
  }
  return changed;
}

ypb::AllocateRequestProto AmRmClient::AllocateRequest(const std::vector<ypb::ResourceRequestProto>& asks,
                                                      const std::vector<ypb::ContainerIdProto>& releases,
                                                      float progress) const {
  ypb::AllocateRequestProto req;
  for (const auto& a : asks) *req.add_ask() = a;
  for (const auto& r : releases) *req.add_release() = r;
  req.mutable_blacklist_request();  // Java always sends one, empty
  req.set_response_id(response_id_);
  req.set_progress(progress);
  return req;
}

Result<ypb::AllocateResponseProto> AmRmClient::Allocate(const std::vector<ypb::ResourceRequestProto>& asks,
                                                        const std::vector<ypb::ContainerIdProto>& releases,
                                                        float progress) {
  std::vector<ypb::ResourceRequestProto> changed = ChangedAsks(asks);
  for (const auto& ask : changed) {
    std::string key = AskKey(ask);
    if (ask.num_containers() > 0) {
      outstanding_[key] = ask;
    } else {
      outstanding_.erase(key);
    }
    unconfirmed_.insert(key);
  }
  for (const auto& r : releases) pending_releases_[ContainerIdString(r)] = r;

  ypb::AllocateResponseProto resp;
  Status st = ipc_.Call("allocate", AllocateRequest(changed, releases, progress), &resp);
  bool resync = st.ok() ? HasCommand(resp, ypb::AM_RESYNC) : RemoteExceptionClass(st) == kNotRegistered;
  if (resync) {
    // The RM restarted or failed over and forgot us: register again and hand it everything we
    // still want, from response id 0 (AMRMClientImpl does the same).
    spdlog::warn("ResourceManager {} asks the AM to resync ({}); registering again",
                 ipc_.Describe(), st.ok() ? "AM_RESYNC" : st.message());
    LOOM_RETURN_IF_ERROR(RegisterAgain().status());
    std::vector<ypb::ResourceRequestProto> all;
    for (const auto& [key, ask] : outstanding_) all.push_back(ask);
    std::vector<ypb::ContainerIdProto> all_releases;
    for (const auto& [key, id] : pending_releases_) all_releases.push_back(id);
    resp.Clear();
    st = ipc_.Call("allocate", AllocateRequest(all, all_releases, progress), &resp);
    if (st.ok() && HasCommand(resp, ypb::AM_RESYNC)) {
      st = Status::Unavailable("ResourceManager " + ipc_.Describe() + " asked for a resync right after re-registering");
    }
  }
  LOOM_RETURN_IF_ERROR(st);
  unconfirmed_.clear();
  if (HasCommand(resp, ypb::AM_SHUTDOWN)) {
    return Status::Aborted("the ResourceManager asked the AM to shut down (AM_SHUTDOWN)");
  }
  TakeResponse(resp);
  return resp;
}

void AmRmClient::TakeResponse(const ypb::AllocateResponseProto& resp) {
  response_id_ = resp.response_id();  // echoed in the next allocate
  for (const auto& t : resp.nm_tokens()) StoreNmToken(t);
  if (resp.has_am_rm_token()) ipc_.UpdateToken(FromProto(resp.am_rm_token()));  // the RM rolled its key
  for (const auto& s : resp.completed_container_statuses()) {
    pending_releases_.erase(ContainerIdString(s.container_id()));
  }
}

void AmRmClient::StoreNmToken(const ypb::NMTokenProto& t) {
  std::lock_guard lock(mu_);
  nm_tokens_[NodeIdString(t.nodeid())] = FromProto(t.token());
}

std::optional<Token> AmRmClient::NmToken(const std::string& node) const {
  std::lock_guard lock(mu_);
  auto it = nm_tokens_.find(node);
  if (it == nm_tokens_.end()) return std::nullopt;
  return it->second;
}

Status AmRmClient::Finish(ypb::FinalApplicationStatusProto status, const std::string& diagnostics,
                          const std::string& tracking_url, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  constexpr auto kRetryInterval = std::chrono::milliseconds(100);
  ypb::FinishApplicationMasterRequestProto req;
  if (!diagnostics.empty()) req.set_diagnostics(diagnostics);
  if (!tracking_url.empty()) req.set_tracking_url(tracking_url);
  req.set_final_application_status(status);
  for (;;) {
    ypb::FinishApplicationMasterResponseProto resp;
    Status st = ipc_.Call("finishApplicationMaster", req, &resp);
    if (!st.ok() && RemoteExceptionClass(st) == kNotRegistered) {
      LOOM_RETURN_IF_ERROR(RegisterAgain().status());
      continue;
    }
    LOOM_RETURN_IF_ERROR(st);
    // The RM unregisters asynchronously; Java polls every 100 ms until it says so.
    if (resp.isunregistered()) return Status::Ok();
    if (std::chrono::steady_clock::now() + kRetryInterval > deadline) {
      return Status::DeadlineExceeded("ResourceManager " + ipc_.Describe() + " did not unregister the AM within " +
                                      std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(kRetryInterval);
  }
}

// ---- NmClient ----

Status NmClient::StartContainer(const ypb::ContainerProto& container, const Token& nm_token,
                                const ypb::ContainerLaunchContextProto& context) {
  IpcClient ipc(NmOptions(container, nm_token));
  ypb::StartContainersRequestProto req;
  auto* start = req.add_start_container_request();
  *start->mutable_container_launch_context() = context;
  *start->mutable_container_token() = container.container_token();
  ypb::StartContainersResponseProto resp;
  LOOM_RETURN_IF_ERROR(ipc.Call("startContainers", req, &resp));
  return ContainerFailures(resp.failed_requests(), "start", container);
}

Status NmClient::StopContainer(const ypb::ContainerProto& container, const Token& nm_token) {
  IpcClient ipc(NmOptions(container, nm_token));
  ypb::StopContainersRequestProto req;
  *req.add_container_id() = container.id();
  ypb::StopContainersResponseProto resp;
  LOOM_RETURN_IF_ERROR(ipc.Call("stopContainers", req, &resp));
  return ContainerFailures(resp.failed_requests(), "stop", container);
}

Result<ypb::ContainerStatusProto> NmClient::GetContainerStatus(const ypb::ContainerProto& container,
                                                               const Token& nm_token) {
  IpcClient ipc(NmOptions(container, nm_token));
  ypb::GetContainerStatusesRequestProto req;
  *req.add_container_id() = container.id();
  ypb::GetContainerStatusesResponseProto resp;
  LOOM_RETURN_IF_ERROR(ipc.Call("getContainerStatuses", req, &resp));
  LOOM_RETURN_IF_ERROR(ContainerFailures(resp.failed_requests(), "report on", container));
  if (resp.status().empty()) {
    return Status::NotFound("NodeManager " + NodeIdString(container.nodeid()) + " returned no status for " +
                            ContainerIdString(container.id()));
  }
  return resp.status(0);
}

}  // namespace loom::hadoop
