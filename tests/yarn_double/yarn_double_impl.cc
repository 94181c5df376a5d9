// YarnDoubleImpl's life cycle (the servers of the RM, the NodeManagers and the NameNode RPC,
// the dispatcher's timers, the shutdown that ends every container) and the helpers the RM and
// NM parts share. The façade, YarnTestDouble, is in yarn_test_double.cc.

#include "yarn_double_impl.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "core/files.h"
#include "core/inet_address.h"
#include "fake_hdfs.h"
#include "hadoop/wire/sasl_digest.h"
#include "log_aggregation.h"
#include "nm_web_server.h"
#include "rm_web_server.h"

namespace loom::yarn_double {

namespace {

// Reserves a port number without serving it (the NM http port only appears in records).
Result<std::pair<int, int>> ReservePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("socket", errno);
  sockaddr_in addr = Ipv4Address(INADDR_LOOPBACK, 0);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    ::close(fd);
    return Status::FromErrno("reserve a port", err);
  }
  return std::pair<int, int>{fd, ntohs(addr.sin_port)};
}

}  // namespace

// ---- YarnDoubleImpl: life cycle and shared helpers -------------------------------------------

YarnDoubleImpl::YarnDoubleImpl(YarnTestDouble::Options options) : options_(std::move(options)) {
  cluster_ts_ = options_.cluster_timestamp ? options_.cluster_timestamp : NowMs();
  nodes_registered_ms_ = NowMs() + options_.nodes_register_after_ms;
  instance_ = std::to_string(::getpid()) + "-" + std::to_string(static_cast<uint32_t>(RandomInt32()));
  amrm_key_id_ = RandomInt32();
  nm_key_id_ = RandomInt32();
  container_key_id_ = RandomInt32();
}

YarnDoubleImpl::~YarnDoubleImpl() { Stop(); }

Status YarnDoubleImpl::Start() {
  if (options_.work_dir.empty()) return Status::InvalidArgument("YarnTestDouble: work_dir is required");
  if (options_.kerberos.enabled && options_.hdfs == nullptr) {
    return Status::InvalidArgument("YarnTestDouble: Options::kerberos needs Options::hdfs (its NameNode)");
  }
  LOOM_RETURN_IF_ERROR(MakeDirs(options_.work_dir + "/nm-local"));
  LOOM_RETURN_IF_ERROR(MakeDirs(options_.work_dir + "/logs"));
  // The RM's web proxy first: every report names its port.
  rm_web_server_ = std::make_unique<RmWebServer>(*this);
  LOOM_RETURN_IF_ERROR(rm_web_server_->Start("127.0.0.1"));
  rm_web_port_ = rm_web_server_->port();
  auto token_user = [](const std::string& identifier) {
    yp::AMRMTokenIdentifierProto id;  // NMTokenIdentifierProto has the same field 1
    return id.ParseFromString(identifier) ? AttemptIdString(id.appattemptid()) : std::string();
  };
  // `rm`: which ResourceManager serves it under Options::rm_ha (a standby one refuses every call).
  auto make = [&](const char* name, const char* protocol, bool simple, auto handler, auto password, int rm = 0) {
    IpcServerOptions o;
    o.name = name;
    o.protocol = protocol;
    o.allow_simple = simple;
    o.idle_close_ms = options_.ipc_idle_close_ms;
    o.rpc_protection = options_.rpc_protection;
    if (options_.kerberos.enabled && std::string_view(protocol) == kClientProtocol) {
      // K1: the RM client port speaks Kerberos; the scheduler port stays TOKEN only.
      o.kerberos_principal = options_.kerberos.rm_principal;
      o.kerberos_keytab = options_.kerberos.rm_keytab;
    }
    o.next_nonce = [this] { return NextNonce(); };
    o.password_for = [this, password](const std::string& identifier) { return (this->*password)(identifier); };
    o.token_user = token_user;
    o.handle = [this, handler, name, rm](const std::string& method, std::string_view req, const ConnectionInfo& c) {
      CallResult r = options_.rm_ha && rm != active_rm_.load()
                         ? CallResult(RpcError{"org.apache.hadoop.ipc.StandbyException",
                                               "Operation category READ is not supported in state standby"})
                         : (this->*handler)(method, req, c);
      std::lock_guard<std::mutex> lock(mu_);
      RecordLocked(name, method, r, req);
      return r;
    };
    return std::make_unique<IpcServer>(std::move(o));
  };
  // The client port offers TOKEN + SIMPLE (like the NN in dshell/04). Its tokens would be RM
  // delegation tokens, which the double never issues, so only SIMPLE gets through.
  rm_server_ = make("rm", kClientProtocol, true, &YarnDoubleImpl::HandleClient, &YarnDoubleImpl::NoDelegationToken);
  scheduler_server_ =
      make("scheduler", kSchedulerProtocol, false, &YarnDoubleImpl::HandleScheduler, &YarnDoubleImpl::AmRmPassword);
  if (options_.rm_ha) {
    active_rm_ = options_.active_rm == 0 ? 0 : 1;
    rm2_server_ = make("rm2", kClientProtocol, true, &YarnDoubleImpl::HandleClient,
                       &YarnDoubleImpl::NoDelegationToken, 1);
    scheduler2_server_ = make("scheduler2", kSchedulerProtocol, false, &YarnDoubleImpl::HandleScheduler,
                              &YarnDoubleImpl::AmRmPassword, 1);
  }
  // The NodeManagers. Node 0's server is nm_server_; each has its own address, port and dirs.
  auto make_nm = [&](int node, const std::string& bind_ip) {
    IpcServerOptions o;
    o.name = "nm";
    o.protocol = kNmProtocol;
    o.bind_ip = bind_ip;
    o.idle_close_ms = options_.ipc_idle_close_ms;
    o.rpc_protection = options_.rpc_protection;
    o.next_nonce = [this] { return NextNonce(); };
    o.password_for = [this](const std::string& identifier) { return NmPassword(identifier); };
    o.token_user = token_user;
    o.handle = [this, node](const std::string& method, std::string_view req, const ConnectionInfo& c) {
      CallResult r = HandleNmOn(node, method, req, c);
      std::lock_guard<std::mutex> lock(mu_);
      RecordLocked("nm", method, r);
      return r;
    };
    return std::make_unique<IpcServer>(std::move(o));
  };
  const int node_count = std::max(1, options_.node_count);
  for (int i = 0; i < node_count; ++i) {
    auto node = std::make_unique<Node>();
    node->index = i;
    node->host = i < static_cast<int>(options_.node_hosts.size()) ? options_.node_hosts[static_cast<size_t>(i)]
                 : i == 0                                          ? options_.node_host
                                                                   : "127.0.0." + std::to_string(i + 1);
    in_addr ip{};
    node->bind_ip = ::inet_pton(AF_INET, node->host.c_str(), &ip) == 1 ? node->host : "127.0.0.1";
    std::string root = i == 0 ? options_.work_dir : options_.work_dir + "/nm" + std::to_string(i);
    node->local_dir = root + "/nm-local";
    node->log_dir = root + "/logs";
    LOOM_RETURN_IF_ERROR(MakeDirs(node->local_dir));
    LOOM_RETURN_IF_ERROR(MakeDirs(node->log_dir));
    if (i == 0) {
      nm_server_ = make_nm(0, node->bind_ip);
      node->server = nm_server_.get();
    } else {
      node->own_server = make_nm(i, node->bind_ip);
      node->server = node->own_server.get();
    }
    nodes_.push_back(std::move(node));
  }
  LOOM_RETURN_IF_ERROR(rm_server_->Start());
  LOOM_RETURN_IF_ERROR(scheduler_server_->Start());
  if (rm2_server_) LOOM_RETURN_IF_ERROR(rm2_server_->Start());
  if (scheduler2_server_) LOOM_RETURN_IF_ERROR(scheduler2_server_->Start());
  if (options_.standby_namenode && options_.hdfs != nullptr) LOOM_RETURN_IF_ERROR(options_.hdfs->StartStandbyNameNode());
  if (options_.kerberos.enabled) {
    NameNodeRpcOptions nn;
    nn.kerberos_principal = options_.kerberos.nn_principal;
    nn.kerberos_keytab = options_.kerberos.nn_keytab;
    nn.rpc_protection = options_.rpc_protection;
    nn.tokens = &options_.hdfs->tokens();
    nn.idle_close_ms = options_.ipc_idle_close_ms;
    namenode_rpc_ = std::make_unique<NameNodeRpc>(std::move(nn));
    LOOM_RETURN_IF_ERROR(namenode_rpc_->Start());
    options_.hdfs->set_rpc_port(namenode_rpc_->port());
    LOOM_RETURN_IF_ERROR(options_.hdfs->RequireSpnego(options_.kerberos.http_keytab, options_.kerberos.http_principal));
  }
  const int64_t now = NowMs();
  for (auto& node : nodes_) {
    LOOM_RETURN_IF_ERROR(node->server->Start());
    LOOM_ASSIGN_OR_RETURN(auto reserved, ReservePort());
    node->http_fd = reserved.first;
    node->http_port = reserved.second;
    // NodeManagers heartbeat on their own clocks: spread over the interval.
    node->next_heartbeat_ms = now + int64_t{options_.nm_heartbeat_ms} * (node->index + 1) / node_count;
  }
  nm_http_fd_ = nodes_[0]->http_fd;
  nm_http_port_ = nodes_[0]->http_port;
  LOOM_RETURN_IF_ERROR(StartNmWebServers(*this));
  {
    std::lock_guard<std::mutex> lock(mu_);
    started_ = true;
  }
  dispatcher_ = std::thread([this] { DispatchLoop(); });
  return Status::Ok();
}

void YarnDoubleImpl::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (rm_web_server_) rm_web_server_->Stop();
  StopNmWebServers(*this);
  // No more calls: every connection thread is joined before the containers go.
  for (auto* s : {&rm_server_, &scheduler_server_, &nm_server_, &rm2_server_, &scheduler2_server_}) {
    if (*s) (*s)->Stop();
  }
  if (namenode_rpc_) namenode_rpc_->Stop();
  for (auto& node : nodes_) {
    if (node->own_server) node->own_server->Stop();
  }
  if (dispatcher_.joinable()) dispatcher_.join();
  std::vector<pid_t> groups;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, c] : containers_) {
      if (c->running && c->pid > 0) {
        c->stop_requested = true;
        if (c->stop_diagnostics.empty()) c->stop_diagnostics = "Container killed by the NodeManager on shutdown.";
        groups.push_back(c->pid);
      }
    }
  }
  for (pid_t g : groups) ::kill(-g, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (std::chrono::steady_clock::now() < deadline &&
         std::any_of(groups.begin(), groups.end(), [](pid_t g) { return ProcessGroupAlive(g); })) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (pid_t g : groups) ::kill(-g, SIGKILL);
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, c] : containers_) ids.push_back(id);
  }
  for (const std::string& id : ids) KillProcessesWithEnv(Marker(id));
  // The waiters end once their bash is reaped; they take mu_, so it is not held here.
  for (const std::string& id : ids) {
    std::thread waiter;
    {
      std::lock_guard<std::mutex> lock(mu_);
      waiter = std::move(containers_[id]->waiter);
    }
    if (waiter.joinable()) waiter.join();
  }
  if (nm_http_fd_ >= 0) ::close(nm_http_fd_);
  nm_http_fd_ = -1;
  for (auto& node : nodes_) {
    if (node->index > 0 && node->http_fd >= 0) ::close(node->http_fd);
    node->http_fd = -1;
  }
}

PasswordLookup YarnDoubleImpl::NoDelegationToken(const std::string&) {
  return RpcError{"org.apache.hadoop.security.token.SecretManager$InvalidToken",
                  "token (RM_DELEGATION_TOKEN) can't be found in cache"};
}

std::string YarnDoubleImpl::NextNonce() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!test_nonces_.empty()) {
    std::string n = test_nonces_.front();
    test_nonces_.pop_front();
    return n;
  }
  if (options_.fixed_nonce_for_test) return options_.nonce_for_test;
  return hadoop::NewCnonce();  // 40 characters of the Base64 alphabet, like Hadoop's nonces
}

Res YarnDoubleImpl::NodeCapacity() const {
  return Res{options_.node_memory_mb, options_.node_vcores, options_.node_gpus};
}

Res YarnDoubleImpl::UsedLocked() const {
  Res used{0, 0, options_.gpus_held_elsewhere};
  for (const auto& [id, c] : containers_) {
    if (!c->rm_done && !c->complete) used = used + c->resource;
  }
  return used;
}

Res YarnDoubleImpl::UsedOnLocked(int node) const {
  Res used{0, 0, node == 0 ? options_.gpus_held_elsewhere : 0};
  for (const auto& [id, c] : containers_) {
    if (c->node == node && !c->rm_done && !c->complete) used = used + c->resource;
  }
  return used;
}

Res YarnDoubleImpl::ClusterCapacityLocked() const {
  Res total;
  for (const auto& n : nodes_) {
    if (!n->expired) total = total + NodeCapacity();
  }
  return total;
}

App* YarnDoubleImpl::FindAppLocked(int32_t id) {
  auto it = apps_.find(id);
  return it == apps_.end() ? nullptr : it->second.get();
}

App* YarnDoubleImpl::AppOfAttemptLocked(const yp::ApplicationAttemptIdProto& attempt) {
  if (attempt.application_id().cluster_timestamp() != cluster_ts_) return nullptr;
  App* app = FindAppLocked(attempt.application_id().id());
  return app && app->attempt == attempt.attemptid() ? app : nullptr;
}

void YarnDoubleImpl::RecordLocked(const std::string& server, const std::string& method, const CallResult& r,
                                  std::string_view request) {
  YarnTestDouble::ServedCall call{server, method, std::holds_alternative<std::string>(r)};
  yp::AllocateRequestProto allocate;
  if (method == "allocate" && allocate.ParseFromArray(request.data(), static_cast<int>(request.size()))) {
    for (const auto& ask : allocate.ask()) {
      if (ask.resource_name() == "*") call.any_asked += ask.num_containers();
    }
  }
  served_.push_back(std::move(call));
  cv_.notify_all();
}

// Timers of the RM and NM: AM launches, SIGKILL escalation, AM stop after unregistering,
// unused allocations, application lifetimes.
void YarnDoubleImpl::DispatchLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    int64_t now = NowMs();
    TickLocked(now);
    std::vector<std::string> launches;
    ScheduleAmsLocked(&launches);
    int64_t next = std::min(now + 50, HeartbeatsLocked(now, &launches));  // NodeManager heartbeats
    if (!launches.empty()) {
      lock.unlock();
      for (const std::string& id : launches) LaunchAm(id);
      lock.lock();
      continue;
    }
    // Log aggregation: the NodeManagers upload an ended application's logs (no lock held).
    if (std::vector<int32_t> due = AppsDueForLogAggregationLocked(*this); !due.empty()) {
      lock.unlock();
      std::vector<Status> results;
      for (int32_t app : due) results.push_back(UploadAggregatedLogs(*this, app));
      lock.lock();
      for (size_t k = 0; k < due.size(); ++k) {
        if (App* app = FindAppLocked(due[k])) {
          app->log_aggregation = results[k].ok() ? 1 : -1;
          app->log_aggregation_error = results[k].message();
        }
      }
      cv_.notify_all();
      continue;
    }
    cv_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(1, next - now)));
  }
}

void YarnDoubleImpl::TickLocked(int64_t now) {
  for (auto& n : nodes_) {
    if (n->lost_ms && !n->expired && now >= n->lost_ms + options_.nm_liveness_expiry_ms) ExpireNodeLocked(*n);
  }
  for (auto& [id, c] : containers_) {
    if (c->running && c->sigkill_at_ms && now >= c->sigkill_at_ms) {
      ::kill(-c->pid, SIGKILL);
      c->sigkill_at_ms = 0;
    }
    if (!c->start_requested && !c->rm_done && !c->complete && now - c->allocated_ms > kContainerTokenExpiryMs) {
      c->rm_done = true;
      CompleteLocked(*c, -100, "Container expired since it was unused");
    }
  }
  for (auto& [id, app] : apps_) {
    if (app->am_stop_at_ms && now >= app->am_stop_at_ms) {
      app->am_stop_at_ms = 0;
      auto it = containers_.find(app->am_container);
      if (it != containers_.end() && !it->second->complete) {
        KillContainerLocked(*it->second, "Container killed by the ApplicationMaster.", options_.nm_sigkill_delay_ms);
      }
    }
    if (app->lifetime_s > 0 && !app->Final() && now >= app->start_ms + app->lifetime_s * 1000) {
      EndAppLocked(*app, yp::KILLED, yp::APP_KILLED,
                   "Application is killed by ResourceManager as it has exceeded the lifetime period.");
      KillAppContainersLocked(*app, "Container killed by the ResourceManager.", options_.rm_kill_grace_ms, true);
    }
  }
}

std::string YarnDoubleImpl::Marker(const std::string& container_id) const {
  return "LOOM_YARN_DOUBLE_CONTAINER=" + instance_ + ":" + container_id;
}

}  // namespace loom::yarn_double
