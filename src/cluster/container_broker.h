#pragma once
// ContainerBroker: all the ApplicationMaster knows about a cluster. It asks for containers,
// launches a command in each, stops them, and hears when they end. One implementation per
// backend (local, yarn, slurm); the AM never sees which.

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/job_spec.h"
#include "core/status.h"

namespace loom::cluster {

struct ContainerRequest {
  TaskId task;
  Resources resources;
  std::string node_label;
};

struct Container {
  std::string id;
  TaskId task;
  std::string host;
  // Variables the backend adds to the container (CUDA_VISIBLE_DEVICES for pinned GPUs, ...).
  std::map<std::string, std::string> env;
  // Where the backend keeps the container's logs, for `loom logs` (YARN: the NodeManager's
  // NodeId and web address); empty where the job dir has them.
  std::string node_id;
  std::string node_http;
};

// A file or directory shipped into the container's working directory, as YARN localizes it.
struct LocalResource {
  std::string source;  // path on the submitting host
  std::string name;    // name in the working dir; "." spreads a directory's contents
  bool archive = false;  // unzip instead of copy
};

struct LaunchSpec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::vector<LocalResource> resources;
};

struct ContainerExit {
  std::string container_id;
  TaskId task;
  int exit_code = 0;        // the container's main process (the executor), shell convention
  std::string diagnostics;  // the backend's words on why it ended, if any
  bool by_cluster = false;  // the cluster ended it (lost node, preempted, over its memory)
};

// Callbacks from the broker; may come from any thread.
class ContainerEvents {
 public:
  virtual ~ContainerEvents() = default;
  virtual void OnAllocated(const Container& container) = 0;
  virtual void OnCompleted(const ContainerExit& exit) = 0;
  // A request that can never be met, or a launch that failed.
  virtual void OnContainerError(const TaskId& task, const Status& error) = 0;
};

class ContainerBroker {
 public:
  virtual ~ContainerBroker() = default;
  // `events` must outlive the broker.
  virtual Status Start(ContainerEvents* events) = 0;
  // Asks for one container; it arrives later through OnAllocated.
  virtual Status Request(const ContainerRequest& request) = 0;
  // Asks for several at once: a cluster that is asked over the network hears of them all in
  // one message (a gang lands together). Stops at the first error.
  virtual Status RequestAll(const std::vector<ContainerRequest>& requests) {
    for (const ContainerRequest& r : requests) {
      if (Status s = Request(r); !s.ok()) return s;
    }
    return Status::Ok();
  }
  virtual Status Launch(const Container& container, const LaunchSpec& spec) = 0;
  // Asks the container to stop (SIGTERM-like), forcing it after `grace`. OnCompleted follows.
  virtual Status Stop(const std::string& container_id, std::chrono::milliseconds grace) = 0;
  // Stops every container and returns when all are gone. Idempotent.
  virtual void Shutdown(std::chrono::milliseconds grace) = 0;
  // One line for logs: the backend and what it has.
  virtual std::string Describe() const = 0;
};

}  // namespace loom::cluster
