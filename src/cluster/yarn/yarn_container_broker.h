#pragma once
// YarnContainerBroker: the AM's side of YARN. Registers with the RM scheduler using the
// AMRMToken from $HADOOP_TOKEN_FILE_LOCATION, asks for one container per task (its own
// allocation_request_id, so asks never overwrite each other), heartbeats (allocate) from its
// own thread, launches `loom executor` on NodeManagers with the staged files as
// LocalResources, and unregisters with the job's final state.
//
// Locality: the CapacityScheduler hands out one OFF_SWITCH container (an ask for "*" alone)
// per NodeManager heartbeat, so a gang of 8 asking for "*" takes 8 heartbeats (8+ s). With
// the cluster's nodes (the manifest's snapshot, kept current by allocate's updated_nodes) the
// broker spreads the tasks over nodes with room and asks for each on its node, its rack and
// "*" under one allocation_request_id with relax_locality: every NodeManager then takes all
// of its tasks in one heartbeat, and a node that cannot still lets the task go elsewhere after
// the scheduler's locality delay.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "cluster/container_broker.h"
#include "cluster/yarn/gpu_pinning.h"
#include "cluster/yarn/staging.h"
#include "core/clock.h"
#include "hadoop/ipc/yarn_clients.h"

namespace loom::cluster::yarn {

// A container asked for and not yet allocated, and why it waits as far as the AM can tell.
struct PendingRequest {
  TaskId task;
  Resources resources;
  std::string node;  // the host asked for ("": any)
  std::chrono::milliseconds waited{0};
  // "the queue's headroom is 2048 MiB, 2 vcores", "waiting for a heartbeat of <host> with
  // room", "no known node is large enough", ...
  std::string reason;
  std::string ToString() const;  // "worker:1 (4g memory, 1 vcores) waiting 12 s: <reason>"
};

struct YarnBrokerOptions {
  StagingManifest manifest;
  hadoop::Token amrm_token;
  std::string job_secret;  // the control plane's secret, from the AM's credentials
  // The submitter's forwarded credentials (core/forwarded_env.h), alias -> value, from the AM's
  // credentials: passed on in every container's.
  std::vector<std::pair<std::string, std::string>> forwarded_secrets;
  // The HDFS delegation tokens the submitter got (alias -> token, PassedOnTokens of the AM's
  // credentials): passed on in every container's, for user code ($HADOOP_TOKEN_FILE_LOCATION).
  std::vector<std::pair<std::string, hadoop::Token>> delegation_tokens;
  std::string nm_host;  // this AM's node ($NM_HOST): registered as the AM host
  // The AM's control-plane port, known once its server is up (registered as rpc_port).
  std::function<int()> am_port;
  std::string tracking_url;
  std::chrono::milliseconds heartbeat{1000};
  std::chrono::milliseconds fast_heartbeat{100};  // while containers are wanted
  // While containers are wanted, called from the heartbeat thread every
  // `pending_report_interval` with those still pending (see PendingRequests()); unset: they
  // are logged instead.
  std::function<void(const std::vector<PendingRequest>&)> on_pending;
  std::chrono::milliseconds pending_report_interval{10000};
  // A container the broker gave back unused (no task waits for it: YARN sent more than asked),
  // with why; called from the heartbeat thread. Unset: logged only.
  std::function<void(const std::string& container_id, const std::string& host, const std::string& why)> on_released;
  // What the heartbeat's intervals, the pending reports, the tasks' waiting times and
  // Shutdown's wait are read on; outlives the broker. A test's FakeClock drives them (each
  // Advance wakes the heartbeat thread), as core/clock.h says.
  Clock* clock = &Clock::Real();
};

// A NodeManager's container diagnostics say the same thing more than once (the launch
// exception and the exit each append "Container exited with a non-zero exit code ...", and
// the stderr tail with it): the text with each block once, timestamps ignored when comparing.
std::string WithoutRepeatedBlocks(const std::string& diagnostics);

class YarnContainerBroker : public ContainerBroker {
 public:
  explicit YarnContainerBroker(YarnBrokerOptions options);
  ~YarnContainerBroker() override;

  Status Start(ContainerEvents* events) override;
  Status Request(const ContainerRequest& request) override;
  Status RequestAll(const std::vector<ContainerRequest>& requests) override;
  Status Launch(const Container& container, const LaunchSpec& spec) override;
  Status Stop(const std::string& container_id, std::chrono::milliseconds grace) override;
  void Shutdown(std::chrono::milliseconds grace) override;
  std::string Describe() const override;

  // Unregisters (finishApplicationMaster, retried until the RM confirms) with the job's final
  // state: SUCCEEDED, FAILED or KILLED. Call after Shutdown.
  Status Finish(const std::string& state, const std::string& diagnostics);

  // The containers asked for and not yet allocated, oldest first. Thread-safe.
  std::vector<PendingRequest> PendingRequests() const;

 private:
  struct Pending {
    TaskId task;
    Resources resources;
    std::string node;  // the host planned for it, "" for anywhere
    int64_t key = 0;   // its AskKey's allocation_request_id
    Clock::TimePoint since;
  };
  // Tasks of one size and node label share a scheduler key, whose asks are their totals per
  // host, rack and "*". The CapacityScheduler goes through an application's keys in order and
  // stops at the first that has nothing for the heartbeating node (locality delay): with one key
  // per task, asked on alternate nodes, a gang got one container per heartbeat; with one key, a
  // node's heartbeat places its whole share. A key is both an allocation_request_id and a
  // priority of the same number: an RM before Hadoop 2.9 knows no request ids and keeps one ask
  // per priority and location (the classic model, as Hadoop 2.x's AMRMClient asks), and its
  // containers come back with the priority alone.
  struct AskKey {
    int64_t id = 0;
    Resources resources;
    std::string node_label;
    std::map<std::string, int> sent;  // resource name -> the count last asked (totals replace)
  };
  // What the broker knows of a NodeManager.
  struct NodeView {
    ManifestNode node;
    bool usable = true;  // RUNNING, as far as the last report said
  };
  struct Held {
    TaskId task;
    ::hadoop::yarn::ContainerProto container;
    bool launched = false;
    bool completed = false;
  };
  void HeartbeatLoop();
  void Handle(const ::hadoop::yarn::AllocateResponseProto& response);
  // The usable node with the most free memory that still fits `r` after what is planned
  // there; "" when none (or none known).
  std::string PickNodeLocked(const Resources& r) const;
  Resources FreeOnLocked(const NodeView& n) const;
  // The key for tasks of `r` and `node_label`, made on first use.
  AskKey& KeyForLocked(const Resources& r, const std::string& node_label);
  // Queues `key`'s asks as the totals of its pending tasks now: one per host planned, per
  // rack of those, "*" for all; a name no longer wanted is asked with 0.
  void AskLocked(AskKey& key);
  // The container's GPU wiring (ExecutorEnv::planned_gpus, nm_web) when it has GPUs.
  std::map<std::string, std::string> GpuEnvLocked(const std::string& id, const ::hadoop::yarn::ContainerProto& c);
  // Takes allocate's updated_nodes: new nodes, and lost ones whose tasks go elsewhere.
  void UpdateNodesLocked(const ::hadoop::yarn::AllocateResponseProto& response);
  std::vector<PendingRequest> PendingLocked() const;

  YarnBrokerOptions opts_;
  std::unique_ptr<hadoop::AmRmClient> rm_;
  ContainerEvents* events_ = nullptr;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool draining_ = false;  // Shutdown waits for the containers' completion
  bool heartbeat_now_ = false;  // allocate without waiting out the interval
  int64_t next_request_ = 1;
  std::map<int64_t, Pending> pending_;  // wanted tasks, in the order they were asked for
  std::map<int64_t, AskKey> keys_;      // by allocation_request_id
  std::vector<::hadoop::yarn::ResourceRequestProto> asks_;  // changed asks for the next heartbeat
  std::vector<::hadoop::yarn::ContainerIdProto> releases_;
  std::map<std::string, Held> held_;  // by container id string
  GpuPlan gpu_plan_;  // the devices planned for each held container with GPUs
  std::map<std::string, NodeView> nodes_;  // by host
  std::optional<::hadoop::yarn::ResourceProto> headroom_;  // allocate's `limit`, last heard
  Clock::TimePoint next_pending_report_;
  int clock_watch_ = 0;  // opts_.clock's Watch, while the heartbeat runs
  std::thread heartbeat_;
  Status fatal_;  // the RM ended us (AM_SHUTDOWN, lost token)
};

// `loom am --backend yarn`: reads the staging manifest and the AMRMToken from the container.
// The tokens of the AM's credentials that its tasks get: all but the AMRMToken (what
// DistributedShell's AM passes on too; container/worker-container_tokens.bin), in file order.
std::vector<std::pair<std::string, hadoop::Token>> PassedOnTokens(const hadoop::Credentials& am_credentials);
// A task container's credentials: `tokens`, the job secret and the forwarded credentials.
hadoop::Credentials TaskContainerCredentials(const std::string& job_secret,
                                     const std::vector<std::pair<std::string, std::string>>& forwarded_secrets,
                                     const std::vector<std::pair<std::string, hadoop::Token>>& tokens);
// The token of the job's fs.defaultFS among `tokens`, for the AM's own WebHDFS calls: the one
// whose service is the manifest's file system's (ha-hdfs:<nameservice>, or its ip:port), else
// the first HDFS_DELEGATION_TOKEN; nullopt when there is none (a cluster without Kerberos).
std::optional<hadoop::Token> DefaultFsToken(const StagingManifest& manifest,
                                    const std::vector<std::pair<std::string, hadoop::Token>>& tokens);

Result<YarnBrokerOptions> YarnBrokerOptionsFromContainer(const std::map<std::string, std::string>& env);

}  // namespace loom::cluster::yarn
