#pragma once
// YarnTestDouble: a TEST DOUBLE of a Hadoop 3.3.6 YARN ResourceManager and its NodeManagers,
// used because no Hadoop (no Java) can run in Loom's tests. It speaks real Hadoop IPC (RPC v9,
// protobuf engine, SASL DIGEST-MD5 with YARN's tokens) on 127.0.0.1 ephemeral ports, and
// follows the exchanges recorded from a real 3.3.6 cluster in tests/data/yarn-captures/:
//   RM client port ("8032", TOKEN + SIMPLE;   ApplicationClientProtocolPB
//     TOKEN + KERBEROS with Options::kerberos)
//   RM scheduler port ("8030", TOKEN only)    ApplicationMasterProtocolPB (AMRMToken)
//   NM port ("45454", TOKEN only)             ContainerManagementProtocolPB (NMToken)
// Containers are real local processes: the NM writes launch_container.sh and container_tokens
// like the recorded NodeManager, localizes LocalResources from a FakeHdfs (timestamps must
// match), and runs each container in its own process group, which Stop() kills.
// The scheduler is the CapacityScheduler's shape: leaf queues with capacities and an AM share,
// several NodeManagers on loopback addresses, containers placed on NodeManager heartbeats with
// node-locality and the one-OFF_SWITCH-per-heartbeat rule, nodes that can be lost.
// Each NodeManager's web server serves its containers' logs like the recorded one (nm-web/;
// nm_web_server.h), and with Options::log_aggregation the NodeManagers upload an ended
// application's logs to the FakeHdfs in the recorded TFile or IFile format (log_aggregation.h).
// The RM's web server is its web proxy (rm-rest/; rm_web_server.h): reports give
// http://<node_host>:<rm_web_port()>/proxy/<app>/ as the tracking URL and the AM's own URL as
// the original one, and /proxy/<app>/... reaches the AM's web server, or redirects or answers
// 404 as the recorded RM does.
// What it is not: no other web UI (no RM REST API, no /cluster pages, no HTTPS to AMs), no
// queue hierarchy below root, no preemption, one AM attempt, no memory enforcement, no rolling
// or compressed log aggregation, no security beyond the token and Kerberos checks the recorded
// servers do.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "hadoop/proto/yarn.pb.h"
#include "hadoop/wire/credentials.h"

namespace loom::yarn_double {

class FakeHdfs;
class YarnDoubleImpl;

class YarnTestDouble {
 public:
  struct Options {
    std::string work_dir;  // nm-local/ and logs/ go here
    FakeHdfs* hdfs = nullptr;  // where LocalResources are localized from; required for resources
    int64_t node_memory_mb = 8192;
    int node_vcores = 8;
    int node_gpus = 0;  // > 0: the RM knows resource type yarn.io/gpu and the node has that many
    // How a NodeManager hands out GPUs (yarn-captures gpu/, facts.md §2): false, as under the
    // DefaultContainerExecutor, it only counts yarn.io/gpu, and its GET
    // /ws/v1/node/resources/yarn.io%2Fgpu lists no device (gpu/01-31); true, as under the
    // LinuxContainerExecutor, each container gets the lowest free devices when it starts, listed
    // there as its own until it completes (gpu/41, 46). The double fences nothing off either way.
    bool linux_container_executor = false;
    // Devices 0..N-1 of node 0 held by a container of an application outside the double: the RM
    // counts them used, and under the LinuxContainerExecutor the endpoint lists them as its.
    int gpus_held_elsewhere = 0;
    std::string node_host = "localhost";  // NodeId host, like the recording (NM_HOST)
    std::string user = "root";            // default user when a connection names none
    bool fixed_nonce_for_test = false;    // every SASL challenge uses nonce_for_test
    std::string nonce_for_test;
    // hadoop.rpc.protection of the RM scheduler and NodeManager ports (their DIGEST-MD5 qop:
    // authentication, integrity, privacy or a list), also written to WriteHadoopConfDir's
    // core-site.xml as a real cluster's clients would find it.
    std::string rpc_protection = "authentication";
    int64_t cluster_timestamp = 0;  // 0: now (ms)
    // Beyond the brief, all with the recorded cluster's values as defaults:
    int64_t min_allocation_mb = 128;  // yarn.scheduler.minimum-allocation-mb: memory asks round up to it
    int max_containers_per_allocate = 0;  // 0: grant all that fit; 1 reproduces dshell/05's one-by-one grants
    int ipc_idle_close_ms = 20000;        // servers drop connections idle this long (Hadoop: 2 x 10 s)
    int nm_sigkill_delay_ms = 250;        // yarn.nodemanager.sleep-delay-before-sigkill.ms
    int rm_kill_grace_ms = 2000;          // forceKillApplication: SIGKILL this long after SIGTERM
    int am_exit_grace_ms = 1000;          // after unregistering, the AM container is stopped if still alive
    // A Hadoop 2.8 ResourceManager (yarn-captures hadoop2/h285-*): allocate drops
    // ResourceRequestProto.allocation_request_id (field 8, new in 2.9), so asks are kept one per
    // priority and location and the last one wins, and containers come back without it.
    bool hadoop_2_8 = false;
    // Non-empty: the host that application reports give for a registered AM instead of the one
    // it registered, as a gateway sees a node it cannot resolve or reach (its name only in the
    // nodes' /etc/hosts, or a network the gateway has no route to). Its executors still reach it.
    std::string am_host_in_reports;

    // ---- the CapacityScheduler: queues, NodeManagers, heartbeats ----
    struct Queue {
      std::string name;               // a leaf under root: "default" or "root.default" reach it
      float capacity = 1.0f;          // guaranteed share of the cluster, a fraction
      float max_capacity = 1.0f;      // most of the cluster the queue may ever use, a fraction
      float max_am_percentage = 0.1f;  // maximum-am-resource-percent: the queue's AM share
    };
    // The leaf queues; empty: one "default" with capacity 1, maximum 1 and an AM share of 0.1,
    // as recorded (ipc-queue/06). An application waits ACCEPTED while its queue's AMs would
    // exceed the AM share (rm-rest 08, 16), and no queue grows past its maximum capacity.
    std::vector<Queue> queues;
    // NodeManagers, each with node_memory_mb / node_vcores / node_gpus, its own IPC port and
    // http port, and its own dirs (node 0: <work>/nm-local and <work>/logs; node i:
    // <work>/nm<i>/...).
    int node_count = 1;
    // Their NodeId hosts. Empty: node 0 is node_host, node i is "127.0.0.<i+1>". A host that is
    // an IPv4 address is also where its NM listens (any 127/8 address is loopback on Linux);
    // other hosts listen on 127.0.0.1.
    std::vector<std::string> node_hosts;
    // yarn.resourcemanager.nodemanagers.heartbeat-interval-ms: the scheduler places containers
    // when a NodeManager heartbeats, at most one OFF_SWITCH container (an ask for "*" alone)
    // per heartbeat, but every NODE_LOCAL one that fits. 0: no heartbeats, the scheduler places
    // everything during the AM's allocate call (and AMs at once), as the double did before;
    // the replays of recorded exchanges use that. -1: heartbeats only from NodeHeartbeatForTest.
    int nm_heartbeat_ms = 1000;
    // Missed scheduling opportunities before a container may go to another node than the one
    // asked for (rack-local, then off-switch). -1: the number of nodes, which is where
    // Hadoop's node-locality-delay (40) ends up on clusters of fewer than 40 nodes.
    int node_locality_delay = -1;
    // yarn.nm.liveness-monitor.expiry-interval-ms (Hadoop: 600000): how long after
    // LoseNodeForTest the RM declares the node LOST and its containers completed.
    int nm_liveness_expiry_ms = 2000;
    // The NodeManagers register with the RM this long after Start(), as after an RM restart
    // (they come back each within yarn.resourcemanager.connect.retry-interval.ms): until then
    // getClusterNodes lists none and nothing is placed.
    int nodes_register_after_ms = 0;

    // ---- log aggregation (README §14) ----
    // "" (off, the default, as in nm-web/), "TFile" or "IFile" (yarn.log-aggregation.file-formats).
    // When an application has ended and its containers have completed, each NodeManager
    // writes their logs into `hdfs` at <remote_app_log_dir>/<user>/bucket-logs-<tfile|ifile>/
    // <seq % 10000, 4 digits>/<app id>/<host>_<port>, and then answers "Unknown container" for
    // them. Off, a NodeManager serves a finished application's logs until the double stops.
    std::string log_aggregation;
    std::string remote_app_log_dir = "/tmp/logs";  // yarn.nodemanager.remote-app-log-dir

    // ---- ResourceManager HA ----
    // Two ResourceManagers, rm1 and rm2, sharing the one RM state (as through Hadoop's RM state
    // store), each with its own client and scheduler port. The standby one answers every call
    // on both with org.apache.hadoop.ipc.StandbyException (ERROR, ERROR_APPLICATION, "Operation
    // category READ is not supported in state standby"), as Hadoop's Server sends an
    // IOException. WriteHadoopConfDir then writes yarn.resourcemanager.ha.* and fast
    // yarn.client.failover-sleep-* values; rm_port() / scheduler_port() are rm1's.
    bool rm_ha = false;
    int active_rm = 1;  // 0: rm1, 1: rm2 (rm1 standby: clients must skip it)
    // NameNode HA: `hdfs` gets a standby NameNode (FakeHdfs::StartStandbyNameNode) and the conf
    // dir names nameservice "loomns" with nn1 = the standby and nn2 = the active one.
    bool standby_namenode = false;

    // ---- Kerberos (yarn-captures kerberos/, K1-K5) ----
    // A Kerberized cluster, with principals and keytabs of a real KDC (tests/kerberos/
    // kdc_harness.h). With `enabled` (it needs `hdfs`):
    //  * the RM client port (rm1 and rm2) offers TOKEN + KERBEROS/GSSAPI for rm_principal; no
    //    port offers SIMPLE ("SIMPLE authentication is not enabled.  Available:[TOKEN,
    //    KERBEROS]"); rpc_protection applies to GSSAPI too; an application's user is the short
    //    name of the submitter's principal (root@LOOM.TEST -> root);
    //  * a NameNode RPC server (namenode_rpc.h: getDelegationToken, renew, cancel; TOKEN +
    //    KERBEROS for nn_principal) on hdfs's token store, whose port becomes fs.defaultFS;
    //  * hdfs's WebHDFS requires SPNEGO for http_principal (FakeHdfs::RequireSpnego);
    //  * submitApplication renews every HDFS_DELEGATION_TOKEN of the AM's CLC `tokens` as
    //    rm_principal (only tokens whose renewer is the RM's short name renew: any other makes the
    //    application FAILED at once with "Failed to renew token: Kind: HDFS_DELEGATION_TOKEN, ..."
    //    and the NameNode's reason), and cancels them, as rm_principal, when the application
    //    ends if its cancel_tokens_when_complete (default true) is set; see hdfs->tokens();
    //  * WriteHadoopConfDir adds hadoop.security.authentication=kerberos,
    //    hadoop.http.authentication.type=kerberos, yarn.resourcemanager.principal,
    //    dfs.namenode.kerberos.principal and dfs.web.authentication.kerberos.principal.
    struct Kerberos {
      bool enabled = false;
      std::string realm = "LOOM.TEST";  // informational: the principals below carry their realm
      std::string rm_principal = "rm/localhost@LOOM.TEST";
      std::string rm_keytab;
      std::string nn_principal = "nn/localhost@LOOM.TEST";
      std::string nn_keytab;
      std::string http_principal = "HTTP/localhost@LOOM.TEST";
      std::string http_keytab;
    };
    Kerberos kerberos;

    // ---- a node with an older OS ----
    // Not empty: every NodeManager runs each container's launch_container.sh under `chroot
    // <container_chroot>`, as on a node whose OS (its /bin/bash, libc, python3) is that root's
    // while the test's RM and NM stay on this machine. The containers' dirs under work_dir must
    // be at the same paths inside the root, and the root must have /proc and /dev (tests/
    // integration/old_userland.h mounts all of that). Localization still writes into work_dir
    // from this machine, as a NodeManager's localizer does. Empty: this machine's root.
    std::string container_chroot;
  };

  // One container as the NM sees it.
  struct ContainerInfo {
    std::string id;      // container_<ts>_0001_01_000002
    std::string app_id;  // application_<ts>_0001
    bool is_am = false;
    ::hadoop::yarn::ContainerStateProto state = ::hadoop::yarn::C_NEW;  // C_NEW: allocated, not started
    pid_t pid = -1;                 // the launch script's bash (its process group), -1 if never started
    int exit_status = -1000;        // YARN's exit status once C_COMPLETE
    std::string diagnostics;
    int64_t memory_mb = 0;
    int vcores = 0;
    int64_t gpus = 0;
    std::string work_dir;  // <work>/nm-local/usercache/<user>/appcache/<app>/<container>
    std::string log_dir;   // <work>/logs/<app>/<container>
    int node = 0;          // the NodeManager it was allocated on
    std::string node_id;   // that node's "host:port"
    // Its launch context's environment as the NodeManager received it (unexpanded), e.g.
    // YARN_CONTAINER_RUNTIME_TYPE=docker. The double runs every container as a plain process,
    // as a NodeManager with the DefaultContainerExecutor does. Empty until it is started.
    std::map<std::string, std::string> launch_env;
  };

  // One RPC the double answered.
  struct ServedCall {
    std::string server;  // "rm", "scheduler" or "nm"
    std::string method;  // e.g. "allocate"
    bool ok = false;     // SUCCESS (false: ERROR/FATAL reply)
    int64_t any_asked = 0;  // allocate: the containers its asks for "*" want, all priorities
  };

  explicit YarnTestDouble(Options options);
  ~YarnTestDouble();  // Stop()
  YarnTestDouble(const YarnTestDouble&) = delete;
  YarnTestDouble& operator=(const YarnTestDouble&) = delete;

  // Listens on 127.0.0.1 ephemeral ports: RM client, RM scheduler, and per NodeManager its
  // IPC port and its web server (container logs).
  Status Start();
  // Closes every socket and ends every container: SIGTERM to each process group, SIGKILL after
  // a short grace, plus any process still carrying a container's marker. Idempotent.
  void Stop();

  int rm_port() const;
  int scheduler_port() const;
  // With Options::rm_ha: ResourceManager `rm` (0: rm1, 1: rm2)'s ports.
  int rm_port(int rm) const;
  int scheduler_port(int rm) const;
  // RM failover (Options::rm_ha): `rm` becomes active, the other standby. The new active RM
  // has recovered every application, but not the AMs' registrations: an AM's next allocate
  // gets ApplicationMasterNotRegisteredException and must register again (work-preserving
  // recovery). InvalidArgument without rm_ha or for an unknown index.
  Status FailoverForTest(int rm);
  int nm_port() const;  // node 0's
  // Options::kerberos: the NameNode RPC server's port (also in hdfs->default_fs()); 0 otherwise.
  int namenode_rpc_port() const;
  int nm_http_port() const;
  // "host:port" of node 0's NM web server, as in ContainerProto.node_http_address.
  std::string nm_http_address() const;
  // The RM's web server (its web proxy, rm_web_server.h): its port, and "127.0.0.1:<port>",
  // which WriteHadoopConfDir writes as yarn.resourcemanager.webapp.address. Reports name it
  // http://<node_host>:<port>/ as the recorded RM names itself http://localhost:8088/.
  int rm_web_port() const;
  std::string rm_web_address() const;
  // Waits until the NodeManagers have uploaded `app_id`'s logs (Options::log_aggregation set):
  // Ok, FailedPrecondition with the reason if the upload failed, DeadlineExceeded.
  Status WaitForLogAggregation(const std::string& app_id, std::chrono::milliseconds timeout) const;
  int node_count() const;
  int nm_port(int node) const;
  std::string node_host(int node) const;

  // core-site.xml (fs.defaultFS), hdfs-site.xml (dfs.namenode.http-address of the FakeHdfs) and
  // yarn-site.xml (RM address, scheduler address, RM web address, NM settings) like cluster-conf/
  // of the recording.
  Status WriteHadoopConfDir(const std::string& dir) const;

  // ---- what a test can look at ----
  // The report getApplicationReport would return; NotFound for an unknown id.
  Result<::hadoop::yarn::ApplicationReportProto> ApplicationReport(const std::string& app_id) const;
  // Every application id, in submission order.
  std::vector<std::string> ApplicationIds() const;
  std::vector<ContainerInfo> Containers() const;
  std::vector<ServedCall> ServedCalls() const;
  std::vector<std::string> ServedMethods() const;  // the method names of ServedCalls()
  // The AMRMToken issued to an application's attempt (what its container_tokens holds).
  Result<hadoop::Token> AmRmToken(const std::string& app_id) const;
  // Waits until the application is FINISHED, FAILED or KILLED; DeadlineExceeded otherwise.
  Status WaitForAppEnd(const std::string& app_id, std::chrono::milliseconds timeout) const;
  // Waits until the application has reached `state` or a later one.
  Status WaitForAppState(const std::string& app_id, ::hadoop::yarn::YarnApplicationStateProto state,
                         std::chrono::milliseconds timeout) const;
  // Live processes started by this double's containers (found by their environment marker,
  // LOOM_YARN_DOUBLE_CONTAINER=<instance>:<container id>, so also ones that left the group).
  std::vector<pid_t> LiveContainerProcesses() const;
  // Those whose container has already completed: what a real NM would leave behind.
  std::vector<pid_t> StrayProcesses() const;

  // ---- test hooks: replaying recorded bytes needs recorded secrets ----
  // Registers an application attempt that already has `amrm_token` (identifier and password,
  // e.g. from container/am-container_tokens.bin), without launching an AM. With
  // am_registered, registerApplicationMaster was already called (negative/04). With
  // am_memory_mb > 0 an AM container _000001 of that size is accounted for (no process), so
  // headroom ("limit") values match a recording.
  Status InstallAppForTest(const hadoop::Token& amrm_token, bool am_registered, int64_t am_memory_mb = 0,
                           int am_vcores = 1);
  // One NodeManager heartbeat now (with nm_heartbeat_ms -1, the only ones): the scheduler
  // places what it can on that node. Returns how many containers it placed (AMs included).
  // NotFound for a node that does not exist; FailedPrecondition for a lost one.
  Result<int> NodeHeartbeatForTest(int node);
  // How many containers application `app_id` (its sequence number, as in application_<ts>_0001)
  // asks for now at `resource_name` ("*", a host or a rack), over all its scheduler keys.
  int AskedForTest(int32_t app_id, const std::string& resource_name) const;
  // The node's NodeManager disappears, as when its machine dies: its IPC server closes, its
  // containers' processes are killed, it heartbeats no more. After nm_liveness_expiry_ms the
  // RM declares it LOST (getClusterNodes, updated_nodes in allocate) and reports its
  // containers completed with exit status -100 (ABORTED) and "Container released on a *lost*
  // node"; an AM container among them fails its application.
  Status LoseNodeForTest(int node);
  // A ResourceManager restarted without a state store: it knows none of the applications that
  // have ended (getApplicationReport: ApplicationNotFoundException), while HDFS keeps their
  // records and aggregated logs. FailedPrecondition while one still runs.
  Status ForgetEndedApplicationsForTest();
  // An NMToken the NM accepts (e.g. the one recorded in dshell/05's allocate response).
  Status InstallNmTokenForTest(const hadoop::Token& nm_token);
  // The nonces of the next SASL connections, in order (then fixed_nonce_for_test / random).
  void SetNoncesForTest(std::vector<std::string> nonces);

 private:
  std::unique_ptr<YarnDoubleImpl> impl_;
};

}  // namespace loom::yarn_double
