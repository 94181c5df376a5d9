#pragma once
// Internals of YarnTestDouble: one state guarded by one mutex, shared by the RM part
// (resource_manager.cc: AM launch, application life cycle; capacity_scheduler.cc: the
// scheduler; rm_client_calls.cc, rm_scheduler_calls.cc: the client and scheduler protocols)
// and the NM part (node_manager.cc: container manager protocol, localization, processes).
// Every *Locked method expects mu_ held.

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/subprocess.h"
#include "hadoop/proto/yarn.pb.h"
#include "hadoop/wire/credentials.h"
#include "hadoop/testing/ipc_server.h"
#include "namenode_rpc.h"
#include "yarn_records.h"
#include "yarn_test_double.h"

namespace loom::yarn_double {

class NmWebServer;
class RmWebServer;


inline constexpr char kClientProtocol[] = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB";
inline constexpr char kSchedulerProtocol[] = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB";
inline constexpr char kNmProtocol[] = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB";
inline constexpr int64_t kContainerTokenExpiryMs = 600000;  // yarn.resourcemanager.rm.container-allocation.expiry-interval-ms

struct Container {
  std::string id;
  yp::ContainerIdProto id_proto;
  int32_t app = 0;
  int32_t attempt = 1;
  bool is_am = false;
  Res resource;
  int32_t priority = 0;
  int64_t allocation_request_id = -1;
  int node = 0;       // index into YarnDoubleImpl::nodes_
  hadoop::Token token;  // the container token the RM issued
  std::string user;

  // NM side.
  bool start_requested = false;  // startContainers accepted it (or the RM launched the AM)
  bool running = false;          // a process exists (until it is reaped)
  bool complete = false;
  int exit_status = -1000;
  std::string diagnostics;
  pid_t pid = -1;
  std::unique_ptr<Subprocess> process;
  std::thread waiter;
  bool stop_requested = false;
  std::string stop_diagnostics;  // why it is being killed, first line of its diagnostics
  int64_t sigkill_at_ms = 0;     // SIGKILL the group then if it is still alive
  std::string work_dir, log_dir;
  // The launch context's environment as the NodeManager received it (before expansion): what
  // a test checks to see the container was asked to run in a Docker image. The double runs
  // every container as a plain process, as a NodeManager with the DefaultContainerExecutor
  // does (it ignores YARN_CONTAINER_RUNTIME_TYPE).
  std::map<std::string, std::string> launch_env;
  // Options::linux_container_executor: the GPU indices its NodeManager assigned (nm_gpus.cc).
  std::vector<int> gpu_devices;

  // RM side.
  bool rm_done = false;  // the RM considers it finished (its status is queued for the AM, or it is the AM)
  int64_t allocated_ms = 0, started_ms = 0, finished_ms = 0;
};

// One of a NodeManager's caches of localized resources (the trackers of its
// ResourceLocalizationService), laid out as <root>/<N>/<HDFS file name> with N from 10.
struct NmCache {
  std::map<std::string, std::string> localized;  // resource (url, timestamp, type) -> local path
  std::set<std::string> in_progress;             // being localized: other requests wait for it
  int next_filecache = 10;
};

struct App {
  int32_t id = 0;
  int32_t attempt = 1;
  std::string id_str, attempt_str;
  yp::ApplicationSubmissionContextProto asc;
  std::string user, name, queue = "default", type = "YARN";
  std::vector<std::string> tags;
  int32_t priority = 0;
  yp::YarnApplicationStateProto state = yp::SUBMITTED;
  yp::FinalApplicationStatusProto final_status = yp::APP_UNDEFINED;
  std::string diagnostics;
  int64_t start_ms = 0, launch_ms = 0, finish_ms = 0, lifetime_s = 0;
  Res am_resource;
  hadoop::Token amrm_token;
  // Options::kerberos: the CLC's HDFS delegation tokens the RM renewed at submission, to cancel
  // when the application ends (cancel_tokens_when_complete).
  std::vector<hadoop::Token> renewed_tokens;
  bool am_pending = true;  // the AM container is still to be allocated
  std::string am_container;
  bool test_app = false;   // InstallAppForTest: no AM container
  // ApplicationMasterService state.
  bool registered = false;
  std::string host = "N/A";
  int32_t rpc_port = -1;
  std::string tracking_url;
  int finish_calls = 0;
  int64_t am_stop_at_ms = 0;  // after unregistering: stop the AM container then if alive
  int32_t last_response_id = 0;
  std::string last_response;  // serialized, for a resent allocate
  struct AskKey {
    int32_t priority;
    int64_t allocation_request_id;
    std::string resource_name;
    auto operator<=>(const AskKey&) const = default;
  };
  std::map<AskKey, yp::ResourceRequestProto> asks;  // totals still wanted; a new ask replaces
  std::vector<yp::ContainerStatusProto> completed;  // finished containers not yet reported
  std::set<int> nm_token_nodes;  // nodes whose NMToken this attempt got (one per node)
  // The CapacityScheduler's view (capacity_scheduler.cc).
  bool activated = false;        // counted against its queue's AM share
  std::string am_limit_details;  // what the AM-limit diagnostics said last, without the date
  std::vector<std::string> newly_allocated;         // placed on heartbeats, for the next allocate
  std::vector<yp::NodeReportProto> updated_nodes;   // nodes that changed state, for the next allocate
  std::map<std::pair<int32_t, int64_t>, int> missed;  // scheduler key -> missed opportunities
  float progress = 0;
  int64_t next_container = 2;
  bool Final() const { return state == yp::FINISHED || state == yp::FAILED || state == yp::KILLED; }
  // Options::log_aggregation: 0 not yet, 1 uploaded (the NMs no longer serve its logs), -1 failed.
  int log_aggregation = 0;
  std::string log_aggregation_error;
};

// One NodeManager. Node 0 is the one the double always had: its server is nm_server_, its
// http port nm_http_port_, its dirs <work>/nm-local and <work>/logs.
struct Node {
  int index = 0;
  std::string host;     // its NodeId host
  std::string bind_ip;  // where its NM listens
  IpcServer* server = nullptr;           // nm_server_ for node 0
  std::unique_ptr<IpcServer> own_server;  // the others'
  int http_fd = -1, http_port = 0;        // its web port (nm_web_server.cc); node 0's is also nm_http_port_
  std::string local_dir, log_dir;         // yarn.nodemanager.local-dirs / log-dirs
  int64_t next_heartbeat_ms = 0;
  int64_t lost_ms = 0;   // LoseNodeForTest: gone since then (0: alive)
  bool expired = false;  // the RM has declared it LOST
  int port() const { return server ? server->port() : 0; }
  std::string Address() const { return host + ":" + std::to_string(port()); }
  bool Usable() const { return lost_ms == 0; }
};

class YarnDoubleImpl {
 public:
  explicit YarnDoubleImpl(YarnTestDouble::Options options);
  ~YarnDoubleImpl();
  Status Start();
  void Stop();

  YarnTestDouble::Options options_;
  int64_t cluster_ts_ = 0;
  int64_t nodes_registered_ms_ = 0;  // Options::nodes_register_after_ms: when the NMs register
  std::string instance_;  // marks this double's container processes
  std::unique_ptr<IpcServer> rm_server_, scheduler_server_, nm_server_;
  std::unique_ptr<IpcServer> rm2_server_, scheduler2_server_;  // Options::rm_ha: rm2's
  std::unique_ptr<NameNodeRpc> namenode_rpc_;                  // Options::kerberos
  std::atomic<int> active_rm_{0};                               // Options::rm_ha: 0 rm1, 1 rm2
  int nm_http_fd_ = -1, nm_http_port_ = 0;
  std::vector<std::unique_ptr<NmWebServer>> nm_web_servers_;  // one per node (nm_web_server.cc)
  std::unique_ptr<RmWebServer> rm_web_server_;  // the RM's web proxy (rm_web_server.cc)
  int rm_web_port_ = 0;  // its port, known before any application exists
  std::vector<std::unique_ptr<Node>> nodes_;  // fixed after Start(): index = Container::node
  int32_t amrm_key_id_ = 0, nm_key_id_ = 0, container_key_id_ = 0;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool stopping_ = false;
  bool started_ = false;
  std::thread dispatcher_;
  std::map<int32_t, std::unique_ptr<App>> apps_;
  std::map<std::string, std::unique_ptr<Container>> containers_;  // by id string
  std::map<std::string, std::string> nm_tokens_;                  // identifier -> password
  std::deque<std::string> test_nonces_;
  int32_t next_app_ = 1;
  std::vector<YarnTestDouble::ServedCall> served_;
  // Every NodeManager's caches by root dir (README §13 fact 6): <local dir>/filecache holds
  // PUBLIC resources for every application, <local dir>/usercache/<user>/filecache PRIVATE ones
  // for every application of the user, .../appcache/<app>/filecache APPLICATION ones.
  std::map<std::string, NmCache> nm_caches_;

  // ---- shared helpers (yarn_double_impl.cc) ----
  std::string NextNonce();
  PasswordLookup NoDelegationToken(const std::string& identifier);
  bool WithGpu() const { return options_.node_gpus > 0; }
  Res NodeCapacity() const;  // one node's
  Res UsedLocked() const;  // every container allocated and not finished
  Res UsedOnLocked(int node) const;
  Res ClusterCapacityLocked() const;  // the nodes the RM has not declared LOST
  const Node& NodeOf(const Container& c) const { return *nodes_[static_cast<size_t>(c.node)]; }
  App* FindAppLocked(int32_t id);
  App* AppOfAttemptLocked(const yp::ApplicationAttemptIdProto& attempt);
  void RecordLocked(const std::string& server, const std::string& method, const CallResult& r,
                    std::string_view request = {});
  void DispatchLoop();
  void TickLocked(int64_t now);

  // ---- RM (resource_manager.cc; the protocols in rm_client_calls.cc, rm_scheduler_calls.cc) ----
  CallResult HandleClient(const std::string& method, std::string_view req, const ConnectionInfo& conn);
  CallResult HandleScheduler(const std::string& method, std::string_view req, const ConnectionInfo& conn);
  PasswordLookup AmRmPassword(const std::string& identifier);
  yp::ApplicationReportProto ReportLocked(const App& app) const;
  // "http://<node_host>:<RM web port>": the RM's web address as it names itself (the recorded
  // RM's http://localhost:8088), in tracking URLs and diagnostics.
  std::string RmWebUrl() const;
  // An application's trackingUrl and originalTrackingUrl, as RMAppAttemptImpl keeps them:
  // `proxied` the web proxy's http://<rm>/proxy/<app>/, `original` the AM's own URL ("N/A":
  // none registered, or none given at unregistering); both the RM's application page
  // http://<rm>/cluster/app/<app> once KILLED or FAILED (rm-rest/13, 14, 18).
  struct TrackingUrls {
    std::string proxied, original;
  };
  TrackingUrls TrackingUrlsLocked(const App& app) const;
  // Activates applications (ActivateLocked); without heartbeats (nm_heartbeat_ms 0) also
  // allocates pending AM containers that fit, to be launched.
  void ScheduleAmsLocked(std::vector<std::string>* to_launch);
  Container* AllocateLocked(App& app, const Res& r, int32_t priority, int64_t allocation_request_id, bool is_am,
                            int node = 0);
  void OnContainerFinishedLocked(Container& c);
  void EndAppLocked(App& app, yp::YarnApplicationStateProto state, yp::FinalApplicationStatusProto final_status,
                    const std::string& diagnostics);
  void KillAppContainersLocked(App& app, const std::string& why, int grace_ms, bool include_am);
  void LaunchAm(const std::string& container_id);
  // The scheduler (capacity_scheduler.cc). Queues: Options::queues or the recorded "default".
  std::vector<YarnTestDouble::Options::Queue> QueuesLocked() const;
  std::optional<YarnTestDouble::Options::Queue> FindQueueLocked(const std::string& name) const;
  // Activates ACCEPTED applications within their queue's AM share, sets the diagnostics of
  // those that must wait.
  void ActivateLocked(int64_t now);
  // One heartbeat of `node`: places AM and task containers there. Returns how many.
  int NodeHeartbeatLocked(int node, std::vector<std::string>* am_launches);
  // NodeManagers whose heartbeat is due; the time of the next one.
  int64_t HeartbeatsLocked(int64_t now, std::vector<std::string>* am_launches);
  // A lost node past the liveness expiry: LOST, its containers completed.
  void ExpireNodeLocked(Node& n);
  yp::NodeReportProto NodeReportLocked(const Node& n) const;
  Res QueueUsedLocked(const std::string& queue) const;

  // ---- NM (node_manager.cc) ----
  CallResult HandleNm(const std::string& method, std::string_view req, const ConnectionInfo& conn);  // node 0
  CallResult HandleNmOn(int node, const std::string& method, std::string_view req, const ConnectionInfo& conn);
  PasswordLookup NmPassword(const std::string& identifier);
  // Localizes, writes the launch files and starts the process; no lock held.
  void LaunchContainer(const std::string& container_id, const yp::ContainerLaunchContextProto& clc,
                       const std::string& tokens);
  void OnProcessExit(const std::string& container_id, ExitInfo info);
  // SIGTERM now, SIGKILL after grace_ms; a container not yet started just completes.
  void KillContainerLocked(Container& c, const std::string& why, int grace_ms);
  void CompleteLocked(Container& c, int exit_status, const std::string& diagnostics);
  yp::ContainerStatusProto StatusLocked(const Container& c) const;
  std::string Marker(const std::string& container_id) const;

  // Options::kerberos: why a NameNode client of the cluster (the RM's DelegationTokenRenewer,
  // an NM's localizer) could not reach the NameNode that an HDFS delegation token's service
  // names, in Hadoop's words; "" when it names this double's NameNode RPC server
  // ("127.0.0.1:<port>", "localhost:<port>") or its nameservice ("ha-hdfs:loomns" with
  // Options::standby_namenode), as hdfs's token selector and renewer resolve it (K5.5).
  std::string HdfsTokenServiceRefusal(const std::string& service) const;
  // Options::kerberos: why an NM's localizer cannot read HDFS with the container's CLC `tokens`
  // (HDTS bytes): it authenticates to the NameNode with the first HDFS_DELEGATION_TOKEN whose
  // service names it (it has no Kerberos login), which the NameNode must know (not cancelled,
  // not expired); "" when it can (kerberos/ rpc/07).
  std::string LocalizerTokenRefusal(const std::string& tokens) const;
};

}  // namespace loom::yarn_double
