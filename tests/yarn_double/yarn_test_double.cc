// YarnTestDouble, the façade tests hold: ports and addresses, the client's Hadoop conf dir,
// what a test reads back (reports, containers, served calls, processes) and the …ForTest hooks.
// The double itself is YarnDoubleImpl (yarn_double_impl.h).

#include "yarn_test_double.h"

#include <signal.h>

#include <algorithm>

#include "core/files.h"
#include "fake_hdfs.h"
#include "yarn_double_impl.h"

namespace loom::yarn_double {

namespace {

std::string Property(const std::string& name, const std::string& value) {
  return "  <property><name>" + name + "</name><value>" + value + "</value></property>\n";
}

std::string Configuration(const std::string& properties) {
  return "<?xml version=\"1.0\"?>\n<configuration>\n" + properties + "</configuration>\n";
}

}  // namespace

// ---- YarnTestDouble ----------------------------------------------------------------------------

YarnTestDouble::YarnTestDouble(Options options) : impl_(std::make_unique<YarnDoubleImpl>(std::move(options))) {}
YarnTestDouble::~YarnTestDouble() { Stop(); }

Status YarnTestDouble::Start() { return impl_->Start(); }
void YarnTestDouble::Stop() { impl_->Stop(); }
int YarnTestDouble::rm_port() const { return impl_->rm_server_ ? impl_->rm_server_->port() : 0; }
int YarnTestDouble::scheduler_port() const { return impl_->scheduler_server_ ? impl_->scheduler_server_->port() : 0; }
int YarnTestDouble::nm_port() const { return impl_->nm_server_ ? impl_->nm_server_->port() : 0; }
int YarnTestDouble::namenode_rpc_port() const { return impl_->namenode_rpc_ ? impl_->namenode_rpc_->port() : 0; }
int YarnTestDouble::rm_port(int rm) const {
  const auto& s = rm == 0 ? impl_->rm_server_ : impl_->rm2_server_;
  return s ? s->port() : 0;
}
int YarnTestDouble::scheduler_port(int rm) const {
  const auto& s = rm == 0 ? impl_->scheduler_server_ : impl_->scheduler2_server_;
  return s ? s->port() : 0;
}
Status YarnTestDouble::FailoverForTest(int rm) {
  if (!impl_->options_.rm_ha || rm < 0 || rm > 1) {
    return Status::InvalidArgument("FailoverForTest: needs Options::rm_ha and rm 0 or 1");
  }
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->active_rm_ = rm;
  for (auto& [id, app] : impl_->apps_) {
    if (!app->Final()) app->registered = false;
  }
  impl_->cv_.notify_all();
  return Status::Ok();
}
int YarnTestDouble::nm_http_port() const { return impl_->nm_http_port_; }
int YarnTestDouble::rm_web_port() const { return impl_->rm_web_port_; }
std::string YarnTestDouble::rm_web_address() const { return "127.0.0.1:" + std::to_string(rm_web_port()); }
int YarnTestDouble::node_count() const { return static_cast<int>(impl_->nodes_.size()); }
int YarnTestDouble::nm_port(int node) const {
  return node >= 0 && node < node_count() ? impl_->nodes_[static_cast<size_t>(node)]->port() : 0;
}
std::string YarnTestDouble::node_host(int node) const {
  return node >= 0 && node < node_count() ? impl_->nodes_[static_cast<size_t>(node)]->host : "";
}

Status YarnTestDouble::WriteHadoopConfDir(const std::string& dir) const {
  const Options& o = impl_->options_;
  LOOM_RETURN_IF_ERROR(MakeDirs(dir));
  std::string default_fs = o.hdfs ? o.hdfs->default_fs() : "hdfs://127.0.0.1:9000";
  std::string nn_http = "127.0.0.1:" + std::to_string(o.hdfs ? o.hdfs->namenode_http_port() : 9870);
  std::string nn_rpc = default_fs.substr(default_fs.find("://") + 3);
  std::string nn_ha;
  if (o.standby_namenode && o.hdfs != nullptr) {  // nameservice loomns: nn1 standby, nn2 active
    default_fs = "hdfs://loomns";
    nn_ha = Property("dfs.nameservices", "loomns") + Property("dfs.ha.namenodes.loomns", "nn1,nn2") +
            Property("dfs.namenode.rpc-address.loomns.nn1", nn_rpc) +
            Property("dfs.namenode.rpc-address.loomns.nn2", nn_rpc) +
            Property("dfs.namenode.http-address.loomns.nn1",
                     "127.0.0.1:" + std::to_string(o.hdfs->standby_namenode_http_port())) +
            Property("dfs.namenode.http-address.loomns.nn2", nn_http);
  }
  // cluster-conf/ of the Kerberos recording: the principals are explicit (no _HOST).
  std::string core_security, hdfs_security, yarn_security;
  if (o.kerberos.enabled) {
    core_security = Property("hadoop.security.authentication", "kerberos") +
                    Property("hadoop.http.authentication.type", "kerberos");
    hdfs_security = Property("dfs.namenode.kerberos.principal", o.kerberos.nn_principal) +
                    Property("dfs.web.authentication.kerberos.principal", o.kerberos.http_principal);
    yarn_security = Property("yarn.resourcemanager.principal", o.kerberos.rm_principal);
  }
  LOOM_RETURN_IF_ERROR(WriteFileAtomic(
      dir + "/core-site.xml", Configuration(Property("fs.defaultFS", default_fs) +
                                            Property("hadoop.rpc.protection", o.rpc_protection) + core_security)));
  LOOM_RETURN_IF_ERROR(WriteFileAtomic(
      dir + "/hdfs-site.xml", Configuration(Property("dfs.replication", "1") + Property("dfs.namenode.rpc-address", nn_rpc) +
                                            Property("dfs.namenode.http-address", nn_http) + nn_ha + hdfs_security)));
  std::string rm = "127.0.0.1:" + std::to_string(rm_port());
  std::string sched = "127.0.0.1:" + std::to_string(scheduler_port());
  std::string ha;
  if (o.rm_ha) {  // as ResourceManagerHA.md's sample, with failover sleeps short enough for tests
    ha = Property("yarn.resourcemanager.ha.enabled", "true") + Property("yarn.resourcemanager.ha.rm-ids", "rm1,rm2") +
         Property("yarn.client.failover-sleep-base-ms", "100") + Property("yarn.client.failover-sleep-max-ms", "400");
    for (int i = 0; i < 2; ++i) {
      std::string id = "rm" + std::to_string(i + 1);
      ha += Property("yarn.resourcemanager.hostname." + id, "127.0.0.1") +
            Property("yarn.resourcemanager.address." + id, "127.0.0.1:" + std::to_string(rm_port(i))) +
            Property("yarn.resourcemanager.scheduler.address." + id, "127.0.0.1:" + std::to_string(scheduler_port(i))) +
            Property("yarn.resourcemanager.webapp.address." + id, rm_web_address());  // one proxy for both
    }
  }
  std::string yarn =
      Property("yarn.resourcemanager.hostname", "127.0.0.1") + Property("yarn.resourcemanager.address", rm) +
      Property("yarn.resourcemanager.scheduler.address", sched) +
      Property("yarn.resourcemanager.webapp.address", rm_web_address()) +
      Property("yarn.nodemanager.hostname", "127.0.0.1") +
      Property("yarn.nodemanager.address", "127.0.0.1:" + std::to_string(nm_port())) +
      Property("yarn.nodemanager.webapp.address", "127.0.0.1:" + std::to_string(nm_http_port())) +
      Property("yarn.nodemanager.local-dirs", o.work_dir + "/nm-local") +
      Property("yarn.nodemanager.log-dirs", o.work_dir + "/logs") +
      Property("yarn.nodemanager.resource.memory-mb", std::to_string(o.node_memory_mb)) +
      Property("yarn.nodemanager.resource.cpu-vcores", std::to_string(o.node_vcores)) +
      Property("yarn.nodemanager.vmem-check-enabled", "false") +
      Property("yarn.nodemanager.env-whitelist",
               "JAVA_HOME,HADOOP_COMMON_HOME,HADOOP_HDFS_HOME,HADOOP_CONF_DIR,CLASSPATH_PREPEND_DISTCACHE,"
               "HADOOP_YARN_HOME,HADOOP_HOME,PATH,LANG,TZ,HADOOP_MAPRED_HOME") +
      Property("yarn.scheduler.minimum-allocation-mb", std::to_string(o.min_allocation_mb)) + ha + yarn_security;
  if (o.node_gpus > 0) {
    yarn += Property("yarn.resource-types", kGpuResource) +
            Property("yarn.nodemanager.resource-plugins", kGpuResource);
  }
  if (!o.log_aggregation.empty()) {  // as in the recorded log-aggregation runs (README §14)
    const std::string controller = o.log_aggregation == "IFile"
        ? "org.apache.hadoop.yarn.logaggregation.filecontroller.ifile.LogAggregationIndexedFileController"
        : "org.apache.hadoop.yarn.logaggregation.filecontroller.tfile.LogAggregationTFileController";
    yarn += Property("yarn.log-aggregation-enable", "true") +
            Property("yarn.nodemanager.remote-app-log-dir", o.remote_app_log_dir) +
            Property("yarn.log-aggregation.file-formats", o.log_aggregation) +
            Property("yarn.log-aggregation.file-controller." + o.log_aggregation + ".class", controller);
  }
  return WriteFileAtomic(dir + "/yarn-site.xml", Configuration(yarn));
}

Result<::hadoop::yarn::ApplicationReportProto> YarnTestDouble::ApplicationReport(const std::string& app_id) const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  for (const auto& [id, app] : impl_->apps_) {
    if (app->id_str == app_id) return impl_->ReportLocked(*app);
  }
  return Status::NotFound("no application " + app_id);
}

std::vector<std::string> YarnTestDouble::ApplicationIds() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  std::vector<std::string> ids;
  for (const auto& [id, app] : impl_->apps_) ids.push_back(app->id_str);
  return ids;
}

std::vector<YarnTestDouble::ContainerInfo> YarnTestDouble::Containers() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  std::vector<ContainerInfo> out;
  for (const auto& [id, c] : impl_->containers_) {
    ContainerInfo i;
    i.id = c->id;
    i.app_id = AppIdString(impl_->cluster_ts_, c->app);
    i.is_am = c->is_am;
    i.state = c->complete ? ::hadoop::yarn::C_COMPLETE : c->start_requested ? ::hadoop::yarn::C_RUNNING : ::hadoop::yarn::C_NEW;
    i.pid = c->pid;
    i.exit_status = c->exit_status;
    i.diagnostics = c->diagnostics;
    i.memory_mb = c->resource.memory;
    i.vcores = c->resource.vcores;
    i.gpus = c->resource.gpus;
    i.work_dir = c->work_dir;
    i.log_dir = c->log_dir;
    i.node = c->node;
    i.node_id = impl_->NodeOf(*c).Address();
    i.launch_env = c->launch_env;
    out.push_back(std::move(i));
  }
  return out;
}

std::vector<YarnTestDouble::ServedCall> YarnTestDouble::ServedCalls() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->served_;
}

std::vector<std::string> YarnTestDouble::ServedMethods() const {
  std::vector<std::string> names;
  for (const auto& c : ServedCalls()) names.push_back(c.method);
  return names;
}

Result<hadoop::Token> YarnTestDouble::AmRmToken(const std::string& app_id) const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  for (const auto& [id, app] : impl_->apps_) {
    if (app->id_str == app_id) return app->amrm_token;
  }
  return Status::NotFound("no application " + app_id);
}

Status YarnTestDouble::WaitForAppState(const std::string& app_id, ::hadoop::yarn::YarnApplicationStateProto state,
                                       std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(impl_->mu_);
  auto reached = [&] {
    for (const auto& [id, app] : impl_->apps_) {
      if (app->id_str == app_id) return app->state >= state;
    }
    return false;
  };
  if (impl_->cv_.wait_for(lock, timeout, reached)) return Status::Ok();
  return Status::DeadlineExceeded("application " + app_id + " did not reach " +
                                  ::hadoop::yarn::YarnApplicationStateProto_Name(state));
}

Status YarnTestDouble::WaitForAppEnd(const std::string& app_id, std::chrono::milliseconds timeout) const {
  return WaitForAppState(app_id, ::hadoop::yarn::FINISHED, timeout);
}

std::vector<pid_t> YarnTestDouble::LiveContainerProcesses() const {
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(impl_->mu_);
    for (const auto& [id, c] : impl_->containers_) ids.push_back(id);
  }
  std::vector<pid_t> pids;
  for (const std::string& id : ids) {
    for (pid_t p : FindProcessesWithEnv(impl_->Marker(id))) pids.push_back(p);
  }
  return pids;
}

std::vector<pid_t> YarnTestDouble::StrayProcesses() const {
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(impl_->mu_);
    for (const auto& [id, c] : impl_->containers_) {
      if (c->complete) ids.push_back(id);
    }
  }
  std::vector<pid_t> pids;
  for (const std::string& id : ids) {
    for (pid_t p : FindProcessesWithEnv(impl_->Marker(id))) pids.push_back(p);
  }
  return pids;
}

Status YarnTestDouble::InstallAppForTest(const hadoop::Token& amrm_token, bool am_registered,
                                         int64_t am_memory_mb, int am_vcores) {
  ::hadoop::yarn::AMRMTokenIdentifierProto id;
  if (!id.ParseFromString(amrm_token.identifier)) return Status::InvalidArgument("not an AMRMTokenIdentifier");
  std::lock_guard<std::mutex> lock(impl_->mu_);
  const auto& attempt = id.appattemptid();
  if (attempt.application_id().cluster_timestamp() != impl_->cluster_ts_) {
    return Status::InvalidArgument("the token's cluster timestamp differs from the double's");
  }
  auto app = std::make_unique<App>();
  app->id = attempt.application_id().id();
  app->attempt = attempt.attemptid();
  app->id_str = AppIdString(impl_->cluster_ts_, app->id);
  app->attempt_str = AttemptIdString(attempt);
  app->user = impl_->options_.user;
  app->name = "test-app";
  app->start_ms = NowMs();
  app->amrm_token = amrm_token;
  app->am_pending = false;
  app->activated = true;  // its AM counts against the queue's AM share
  app->test_app = true;
  app->registered = am_registered;
  app->state = am_registered ? yp::RUNNING : yp::ACCEPTED;
  if (am_registered) {
    ::hadoop::yarn::AllocateResponseProto initial;
    initial.set_response_id(0);
    app->last_response = initial.SerializeAsString();
  }
  impl_->next_app_ = std::max(impl_->next_app_, app->id + 1);
  App& raw = *app;
  impl_->apps_[app->id] = std::move(app);
  if (am_memory_mb > 0) {
    Container* am = impl_->AllocateLocked(raw, Res{am_memory_mb, am_vcores, 0}, 0, -1, true);
    am->start_requested = true;  // "running" without a process
    raw.am_container = am->id;
  }
  return Status::Ok();
}

int YarnTestDouble::AskedForTest(int32_t app_id, const std::string& resource_name) const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  auto it = impl_->apps_.find(app_id);
  if (it == impl_->apps_.end()) return 0;
  int n = 0;
  for (const auto& [key, ask] : it->second->asks) {
    if (key.resource_name == resource_name) n += ask.num_containers();
  }
  return n;
}

Result<int> YarnTestDouble::NodeHeartbeatForTest(int node) {
  std::vector<std::string> launches;
  int placed = 0;
  {
    std::lock_guard<std::mutex> lock(impl_->mu_);
    if (node < 0 || node >= node_count()) return Status::NotFound("no node " + std::to_string(node));
    if (!impl_->nodes_[static_cast<size_t>(node)]->Usable()) {
      return Status::FailedPrecondition("node " + std::to_string(node) + " is lost");
    }
    impl_->ActivateLocked(NowMs());
    placed = impl_->NodeHeartbeatLocked(node, &launches);
  }
  for (const std::string& id : launches) impl_->LaunchAm(id);
  return placed;
}

Status YarnTestDouble::ForgetEndedApplicationsForTest() {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  for (const auto& [id, app] : impl_->apps_) {
    if (!app->Final()) return Status::FailedPrecondition(app->id_str + " still runs");
  }
  impl_->apps_.clear();
  return Status::Ok();
}

Status YarnTestDouble::LoseNodeForTest(int node) {
  std::vector<pid_t> groups;
  std::vector<std::string> ids;
  IpcServer* server = nullptr;
  {
    std::lock_guard<std::mutex> lock(impl_->mu_);
    if (node < 0 || node >= node_count()) return Status::NotFound("no node " + std::to_string(node));
    Node& n = *impl_->nodes_[static_cast<size_t>(node)];
    if (!n.Usable()) return Status::FailedPrecondition("node " + std::to_string(node) + " is already lost");
    n.lost_ms = NowMs();
    server = n.server;
    for (auto& [id, c] : impl_->containers_) {
      if (c->node != node || c->complete) continue;
      ids.push_back(id);
      c->stop_requested = true;  // a launch under way must not start its process
      if (c->stop_diagnostics.empty()) c->stop_diagnostics = "The NodeManager is gone.";
      if (c->running && c->pid > 0) groups.push_back(c->pid);
    }
  }
  server->Stop();  // nothing answers on its port any more
  for (pid_t g : groups) ::kill(-g, SIGKILL);
  for (const std::string& id : ids) KillProcessesWithEnv(impl_->Marker(id));
  impl_->cv_.notify_all();
  return Status::Ok();
}

Status YarnTestDouble::InstallNmTokenForTest(const hadoop::Token& nm_token) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->nm_tokens_[nm_token.identifier] = nm_token.password;
  return Status::Ok();
}

void YarnTestDouble::SetNoncesForTest(std::vector<std::string> nonces) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->test_nonces_.assign(nonces.begin(), nonces.end());
}

std::string YarnTestDouble::nm_http_address() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  std::string host = impl_->nodes_.empty() ? impl_->options_.node_host : impl_->nodes_[0]->host;
  return host + ":" + std::to_string(impl_->nm_http_port_);
}

Status YarnTestDouble::WaitForLogAggregation(const std::string& app_id, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(impl_->mu_);
  const App* found = nullptr;
  auto done = [&] {
    for (const auto& [id, app] : impl_->apps_) {
      if (app->id_str == app_id) found = app.get();
    }
    return found != nullptr && found->log_aggregation != 0;
  };
  if (impl_->options_.log_aggregation.empty()) return Status::FailedPrecondition("log aggregation is off");
  if (!impl_->cv_.wait_for(lock, timeout, done)) {
    return Status::DeadlineExceeded("the logs of " + app_id + " were not aggregated");
  }
  if (found->log_aggregation < 0) return Status::FailedPrecondition("log aggregation failed: " + found->log_aggregation_error);
  return Status::Ok();
}

}  // namespace loom::yarn_double
