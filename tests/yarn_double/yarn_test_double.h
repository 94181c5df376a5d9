#pragma once
// YarnTestDouble: a TEST DOUBLE of a Hadoop 3.3.6 YARN ResourceManager and one NodeManager,
// used because no Hadoop (no Java) can run in Loom's tests. It speaks real Hadoop IPC (RPC v9,
// protobuf engine, SASL DIGEST-MD5 with YARN's tokens) on 127.0.0.1 ephemeral ports, and
// follows the exchanges recorded from a real 3.3.6 cluster in tests/data/yarn-captures/:
//   RM client port ("8032", TOKEN + SIMPLE)   ApplicationClientProtocolPB
//   RM scheduler port ("8030", TOKEN only)    ApplicationMasterProtocolPB (AMRMToken)
//   NM port ("45454", TOKEN only)             ContainerManagementProtocolPB (NMToken)
// Containers are real local processes: the NM writes launch_container.sh and container_tokens
// like the recorded NodeManager, localizes LocalResources from a FakeHdfs (timestamps must
// match), and runs each container in its own process group, which Stop() kills.
// What it is not: no web UI or proxy (tracking URLs are not served), one node, one queue
// ("default"), one AM attempt, no memory enforcement, no log aggregation, no security beyond
// the token checks the recorded servers do.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cluster/yarn/proto/yarn.pb.h"
#include "cluster/yarn/wire/credentials.h"
#include "core/status.h"

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
    std::string node_host = "localhost";  // NodeId host, like the recording (NM_HOST)
    std::string user = "root";            // default user when a connection names none
    bool fixed_nonce_for_test = false;    // every SASL challenge uses nonce_for_test
    std::string nonce_for_test;
    int64_t cluster_timestamp = 0;  // 0: now (ms)
    // Beyond the brief, all with the recorded cluster's values as defaults:
    int64_t min_allocation_mb = 128;  // yarn.scheduler.minimum-allocation-mb: memory asks round up to it
    int max_containers_per_allocate = 0;  // 0: grant all that fit; 1 reproduces dshell/05's one-by-one grants
    int ipc_idle_close_ms = 20000;        // servers drop connections idle this long (Hadoop: 2 x 10 s)
    int nm_sigkill_delay_ms = 250;        // yarn.nodemanager.sleep-delay-before-sigkill.ms
    int rm_kill_grace_ms = 2000;          // forceKillApplication: SIGKILL this long after SIGTERM
    int am_exit_grace_ms = 1000;          // after unregistering, the AM container is stopped if still alive
  };

  // One container as the NM sees it.
  struct ContainerInfo {
    std::string id;      // container_<ts>_0001_01_000002
    std::string app_id;  // application_<ts>_0001
    bool is_am = false;
    hadoop::yarn::ContainerStateProto state = hadoop::yarn::C_NEW;  // C_NEW: allocated, not started
    pid_t pid = -1;                 // the launch script's bash (its process group), -1 if never started
    int exit_status = -1000;        // YARN's exit status once C_COMPLETE
    std::string diagnostics;
    int64_t memory_mb = 0;
    int vcores = 0;
    int64_t gpus = 0;
    std::string work_dir;  // <work>/nm-local/usercache/<user>/appcache/<app>/<container>
    std::string log_dir;   // <work>/logs/<app>/<container>
  };

  // One RPC the double answered.
  struct ServedCall {
    std::string server;  // "rm", "scheduler" or "nm"
    std::string method;  // e.g. "allocate"
    bool ok = false;     // SUCCESS (false: ERROR/FATAL reply)
  };

  explicit YarnTestDouble(Options options);
  ~YarnTestDouble();  // Stop()
  YarnTestDouble(const YarnTestDouble&) = delete;
  YarnTestDouble& operator=(const YarnTestDouble&) = delete;

  // Listens on three 127.0.0.1 ephemeral ports (RM client, RM scheduler, NM) and reserves a
  // fourth for the NM http port number (nothing answers there).
  Status Start();
  // Closes every socket and ends every container: SIGTERM to each process group, SIGKILL after
  // a short grace, plus any process still carrying a container's marker. Idempotent.
  void Stop();

  int rm_port() const;
  int scheduler_port() const;
  int nm_port() const;
  int nm_http_port() const;

  // core-site.xml (fs.defaultFS), hdfs-site.xml (dfs.namenode.http-address of the FakeHdfs) and
  // yarn-site.xml (RM address, scheduler address, NM settings) like cluster-conf/ of the recording.
  Status WriteHadoopConfDir(const std::string& dir) const;

  // ---- what a test can look at ----
  // The report getApplicationReport would return; NotFound for an unknown id.
  Result<hadoop::yarn::ApplicationReportProto> ApplicationReport(const std::string& app_id) const;
  // Every application id, in submission order.
  std::vector<std::string> ApplicationIds() const;
  std::vector<ContainerInfo> Containers() const;
  std::vector<ServedCall> ServedCalls() const;
  std::vector<std::string> ServedMethods() const;  // the method names of ServedCalls()
  // The AMRMToken issued to an application's attempt (what its container_tokens holds).
  Result<cluster::yarn::Token> AmRmToken(const std::string& app_id) const;
  // Waits until the application is FINISHED, FAILED or KILLED; DeadlineExceeded otherwise.
  Status WaitForAppEnd(const std::string& app_id, std::chrono::milliseconds timeout) const;
  // Waits until the application has reached `state` or a later one.
  Status WaitForAppState(const std::string& app_id, hadoop::yarn::YarnApplicationStateProto state,
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
  Status InstallAppForTest(const cluster::yarn::Token& amrm_token, bool am_registered, int64_t am_memory_mb = 0,
                           int am_vcores = 1);
  // An NMToken the NM accepts (e.g. the one recorded in dshell/05's allocate response).
  Status InstallNmTokenForTest(const cluster::yarn::Token& nm_token);
  // The nonces of the next SASL connections, in order (then fixed_nonce_for_test / random).
  void SetNoncesForTest(std::vector<std::string> nonces);

 private:
  std::unique_ptr<YarnDoubleImpl> impl_;
};

}  // namespace loom::yarn_double
