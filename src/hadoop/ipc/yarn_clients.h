#pragma once
// The three YARN protocols over IpcClient, with the semantics Java's YarnClient, AMRMClient and
// NMClient add: response ids, totals-per-key asks, AMRMToken roll, resync, finish retried
// until unregistered, NMToken cache per node.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hadoop/ipc/ipc_client.h"
#include "hadoop/ipc/rm_failover.h"
#include "hadoop/proto/yarn.pb.h"

namespace loom::hadoop {

namespace ypb = ::hadoop::yarn;

// "application_<ts>_<nnnn>", "appattempt_<ts>_<nnnn>_<nnnnnn>", "container_[e<ee>_]<ts>_<nnnn>_<aa>_<nnnnnn>".
std::string ApplicationIdString(const ypb::ApplicationIdProto& id);
std::string AttemptIdString(const ypb::ApplicationAttemptIdProto& id);
std::string ContainerIdString(const ypb::ContainerIdProto& id);
Result<ypb::ApplicationIdProto> ParseApplicationId(std::string_view text);
Result<ypb::ContainerIdProto> ParseContainerId(std::string_view text);
std::string NodeIdString(const ypb::NodeIdProto& id);  // "host:port"

// ResourceManager addresses (host, port) in yarn.resourcemanager.ha.rm-ids order; one without HA.
using RmAddresses = std::vector<std::pair<std::string, int>>;

// Client -> RM (ApplicationClientProtocol), SIMPLE auth as `user`.
class ApplicationClient {
 public:
  ApplicationClient(std::string host, int port, std::string user);
  // RM HA: each call goes to the active ResourceManager, failing over (rm_failover.h).
  ApplicationClient(const RmAddresses& rms, std::string user, FailoverSettings failover);
  Result<ypb::GetNewApplicationResponseProto> GetNewApplication();
  Status SubmitApplication(const ypb::ApplicationSubmissionContextProto& context);
  Result<ypb::ApplicationReportProto> GetApplicationReport(const ypb::ApplicationIdProto& id);
  // One forceKillApplication call; true when the RM says the kill is complete.
  Result<bool> KillApplication(const ypb::ApplicationIdProto& id, const std::string& diagnostics);
  Result<ypb::YarnClusterMetricsProto> GetClusterMetrics();
  Result<std::vector<ypb::NodeReportProto>> GetClusterNodes(std::vector<ypb::NodeStateProto> states = {ypb::NS_RUNNING});
  // getQueueInfo for one queue ("default", "root.default"), without child queues. The RM
  // answers an unknown queue with SUCCESS and no queueInfo (ipc-queue/02): that becomes
  // NotFound "unknown YARN queue 'x' (queues: ...)", listing the queues this user may submit
  // to (getQueueUserAcls; left out if that call fails too). Capacities are fractions.
  // `include_applications` embeds a report of every application in the queue, as `yarn queue
  // -status` asks; it costs the RM a report per application, so Loom leaves it off.
  Result<ypb::QueueInfoProto> GetQueueInfo(const std::string& queue, bool include_applications = false);
  // getQueueUserAcls: every queue with this user's rights on it ("root", "root.default", ...).
  Result<std::vector<ypb::QueueUserACLInfoProto>> GetQueueUserAcls();
  // getApplications filtered by state (none: every state) and by tags (the RM lowercases tags
  // at submission and matches any of them). Types, users, queues and limit are not sent.
  Result<std::vector<ypb::ApplicationReportProto>> GetApplications(
      std::vector<ypb::YarnApplicationStateProto> states = {}, std::vector<std::string> tags = {});

 private:
  FailoverIpcClient ipc_;
};

// AM -> RM scheduler (ApplicationMasterProtocol), TOKEN auth with the AMRMToken.
class AmRmClient {
 public:
  AmRmClient(std::string host, int port, Token amrm_token);
  // RM HA: the scheduler addresses of every ResourceManager. After a failover the new active
  // RM answers ApplicationMasterNotRegisteredException (or AM_RESYNC) and Allocate registers
  // again, as AMRMClientImpl does; the AMRMToken is valid on every RM of the cluster.
  AmRmClient(const RmAddresses& schedulers, Token amrm_token, FailoverSettings failover);
  Result<ypb::RegisterApplicationMasterResponseProto> Register(const std::string& host, int rpc_port,
                                                               const std::string& tracking_url);
  // One heartbeat. `asks` are the current totals per key (send only changed keys; 0 cancels);
  // `releases` are containers given back. Handles the response id, takes a rolled AMRMToken
  // and the NMTokens (see NmTokens()), and on AM_RESYNC / ApplicationMasterNotRegistered
  // re-registers and re-sends every outstanding ask before returning the next response.
  Result<ypb::AllocateResponseProto> Allocate(const std::vector<ypb::ResourceRequestProto>& asks,
                                              const std::vector<ypb::ContainerIdProto>& releases, float progress);
  // finishApplicationMaster, retried every 100 ms until the RM says unregistered (or `timeout`).
  Status Finish(ypb::FinalApplicationStatusProto status, const std::string& diagnostics,
                const std::string& tracking_url, std::chrono::milliseconds timeout);
  // The NMToken for a node ("host:port"), from every allocate so far.
  std::optional<Token> NmToken(const std::string& node) const;

 private:
  Result<ypb::RegisterApplicationMasterResponseProto> RegisterAgain();
  // Asks that differ from what the RM already has (or whose sending failed).
  std::vector<ypb::ResourceRequestProto> ChangedAsks(const std::vector<ypb::ResourceRequestProto>& asks) const;
  ypb::AllocateRequestProto AllocateRequest(const std::vector<ypb::ResourceRequestProto>& asks,
                                            const std::vector<ypb::ContainerIdProto>& releases, float progress) const;
  void TakeResponse(const ypb::AllocateResponseProto& response);
  void StoreNmToken(const ypb::NMTokenProto& t);

  FailoverIpcClient ipc_;
  std::string host_;
  int rpc_port_ = -1;
  std::string tracking_url_;
  int32_t response_id_ = 0;
  std::map<std::string, ypb::ResourceRequestProto> outstanding_;  // key -> last ask sent, for resync
  std::set<std::string> unconfirmed_;  // keys of asks sent in an allocate that failed: send again
  std::map<std::string, ypb::ContainerIdProto> pending_releases_;  // released, not yet reported completed
  mutable std::mutex mu_;
  std::map<std::string, Token> nm_tokens_;
};

// AM -> NMs (ContainerManagementProtocol), TOKEN auth with each node's NMToken; one
// connection per call as Java does.
class NmClient {
 public:
  // Per-container failures in the response become errors naming the container.
  static Status StartContainer(const ypb::ContainerProto& container, const Token& nm_token,
                               const ypb::ContainerLaunchContextProto& context);
  static Status StopContainer(const ypb::ContainerProto& container, const Token& nm_token);
  static Result<ypb::ContainerStatusProto> GetContainerStatus(const ypb::ContainerProto& container,
                                                              const Token& nm_token);
};

// A TokenProto from the wire as a Token, and back.
Token FromProto(const ::hadoop::common::TokenProto& t);
::hadoop::common::TokenProto ToProto(const Token& t);

}  // namespace loom::hadoop
