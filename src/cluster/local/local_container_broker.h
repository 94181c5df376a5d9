#pragma once
// LocalContainerBroker: containers on this machine. A "container" is a per-task working
// directory (src dir copied in, venv unpacked, as a YARN NodeManager localizes them), a cgroup
// where available, and the executor started as a child in its own session. Memory and GPUs are
// reserved from the pool it is given (the job's share of the host, granted by the
// ResourceLedger); GPUs are pinned with CUDA_VISIBLE_DEVICES.
//
// Thread-safe. A reaper thread notices each executor's exit the moment it happens (pidfd +
// epoll, no polling), cleans up everything the task left behind and reports the completion.
// Each executor is recorded in the job dir from its launch until it is reaped, which is how
// a user who is not root finds it (job_processes.h).
// Launch() must be called from a thread that outlives the containers (the AM's event loop),
// because PR_SET_PDEATHSIG fires when the launching thread exits.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "cluster/container_broker.h"
#include "cluster/local/cgroup.h"
#include "cluster/local/host_inventory.h"
#include "core/subprocess.h"
#include "history/job_dir.h"

namespace loom::cluster::local {

class LocalContainerBroker : public ContainerBroker {
 public:
  // `pool`: what this job may hand out. `host_has_gpus`: the host has GPUs even if the pool
  // has none, so a task without a GPU must still be kept from them.
  // `hold_fd` (or -1): a descriptor every executor inherits, so that whatever it holds (the
  // job's ledger record) is held until the job's last process is gone.
  // `executor_secret` (or empty): handed to each executor through a pipe (LOOM_SECRET_FD) in
  // place of the path of a secret file (LOOM_SECRET_FILE), which user code could read too.
  LocalContainerBroker(HostInventory pool, history::JobDir job_dir, bool host_has_gpus = false, int hold_fd = -1,
                       std::string executor_secret = "");
  ~LocalContainerBroker() override;

  Status Start(ContainerEvents* events) override;
  Status Request(const ContainerRequest& request) override;
  Status Launch(const Container& container, const LaunchSpec& spec) override;
  Status Stop(const std::string& container_id, std::chrono::milliseconds grace) override;
  void Shutdown(std::chrono::milliseconds grace) override;
  std::string Describe() const override;

  // The environment marker every process of a container carries.
  static std::string MarkerFor(const std::string& container_id) { return "LOOM_CONTAINER_ID=" + container_id; }

 private:
  struct Slot {
    Container container;
    Resources resources;
    std::vector<int> gpus;
    std::optional<Subprocess> executor;
    int pidfd = -1;
    std::optional<TaskCgroup> cgroup;
    std::optional<std::chrono::steady_clock::time_point> kill_at;
    bool stopping = false;
  };

  // Grants queued requests that fit now. Returns the grants; call OnAllocated outside the lock.
  std::vector<Container> AllocateLocked();
  void ReleaseLocked(Slot& slot);
  void ForceKill(Slot& slot);
  void ReaperLoop();
  void Wake();
  Status Localize(const LaunchSpec& spec, const std::string& work_dir);

  const int hold_fd_;
  const std::string executor_secret_;
  const HostInventory inventory_;
  const history::JobDir job_dir_;
  const std::string job_id_;
  const bool use_cgroups_;
  const bool pin_gpus_;  // set CUDA_VISIBLE_DEVICES, empty for a task without GPUs
  ContainerEvents* events_ = nullptr;

  std::mutex mu_;
  std::condition_variable drained_;
  std::deque<ContainerRequest> pending_;
  std::map<std::string, Slot> slots_;
  int64_t free_memory_mib_;
  std::vector<int> free_gpus_;
  int next_container_ = 1;
  bool shutting_down_ = false;

  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread reaper_;
  bool reaper_stop_ = false;
};

}  // namespace loom::cluster::local
