#pragma once
// YarnContainerBroker: the AM's side of YARN. Registers with the RM scheduler using the
// AMRMToken from $HADOOP_TOKEN_FILE_LOCATION, asks for one container per task (its own
// allocation_request_id, so asks never overwrite each other), heartbeats (allocate) from its
// own thread, launches `loom executor` on NodeManagers with the staged files as
// LocalResources, and unregisters with the job's final state.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "cluster/container_broker.h"
#include "cluster/yarn/rpc/yarn_clients.h"
#include "cluster/yarn/staging.h"

namespace loom::cluster::yarn {

struct YarnBrokerOptions {
  StagingManifest manifest;
  Token amrm_token;
  std::string job_secret;  // the control plane's secret, from the AM's credentials
  std::string nm_host;  // this AM's node ($NM_HOST): registered as the AM host
  // The AM's control-plane port, known once its server is up (registered as rpc_port).
  std::function<int()> am_port;
  std::string tracking_url;
  std::chrono::milliseconds heartbeat{1000};
  std::chrono::milliseconds fast_heartbeat{100};  // while containers are wanted
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
  Status Launch(const Container& container, const LaunchSpec& spec) override;
  Status Stop(const std::string& container_id, std::chrono::milliseconds grace) override;
  void Shutdown(std::chrono::milliseconds grace) override;
  std::string Describe() const override;

  // Unregisters (finishApplicationMaster, retried until the RM confirms) with the job's final
  // state: SUCCEEDED, FAILED or KILLED. Call after Shutdown.
  Status Finish(const std::string& state, const std::string& diagnostics);

 private:
  struct Pending {
    TaskId task;
    hadoop::yarn::ResourceRequestProto ask;
  };
  struct Held {
    TaskId task;
    hadoop::yarn::ContainerProto container;
    bool launched = false;
    bool completed = false;
  };
  void HeartbeatLoop();
  void Handle(const hadoop::yarn::AllocateResponseProto& response);

  YarnBrokerOptions opts_;
  std::unique_ptr<AmRmClient> rm_;
  ContainerEvents* events_ = nullptr;

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  int64_t next_request_id_ = 1;
  std::map<int64_t, Pending> pending_;                  // allocation_request_id -> wanted task
  std::vector<hadoop::yarn::ResourceRequestProto> asks_;  // changed asks for the next heartbeat
  std::vector<hadoop::yarn::ContainerIdProto> releases_;
  std::map<std::string, Held> held_;  // by container id string
  std::thread heartbeat_;
  Status fatal_;  // the RM ended us (AM_SHUTDOWN, lost token)
};

// `loom am --backend yarn`: reads the staging manifest and the AMRMToken from the container.
Result<YarnBrokerOptions> YarnBrokerOptionsFromContainer(const std::map<std::string, std::string>& env);

}  // namespace loom::cluster::yarn
