#pragma once
// LocalAmSide: the AM of a local job runs beside its job dir; executors are its children.
// Before the job runs, Admit() waits in the machine's ResourceLedger until the job's whole gang
// fits beside every other local job; what the ledger grants (GPU indices, memory) is the
// broker's pool for the job's whole life, so a gang restart or a restarted task keeps its
// GPUs. The reservation is given back by Finish(), by the destructor, or by the kernel when
// the AM dies.

#include <optional>

#include "cluster/am_side.h"
#include "cluster/local/host_inventory.h"
#include "cluster/local/resource_ledger.h"

namespace loom::cluster::local {

// The environment every local executor starts with, from the AM's (the submitter's): what a
// YARN container gets, so that a job that runs here runs there. That is the names that pass
// into containers on every backend (cluster/container_env.h), the user's identity (USER,
// LOGNAME, HOME, which a NodeManager sets itself; from the password database where `am_env`
// lacks them), and the forwarded credentials (MLFLOW_TRACKING_TOKEN, ...), which ride in a YARN
// container's credentials. Nothing else: not LOOM_HOME, whose job dirs hold the secret file.
std::map<std::string, std::string> LocalContainerEnv(const std::map<std::string, std::string>& am_env);

class LocalAmSide : public AmSide {
 public:
  Result<AmSetup> Prepare(const history::JobDir& dir, const std::map<std::string, std::string>& env) override;
  // Waits for the job's turn in ResourceLedger::DefaultDir(). FailedPrecondition when the
  // ledger cannot be used, InvalidArgument when the job can never fit this host.
  Status Admit(const history::JobDir& dir, const config::Config& conf, const JobSpec& spec,
               history::EventLog& events) override;
  Result<std::unique_ptr<ContainerBroker>> MakeBroker(const history::JobDir& dir, const config::Config& conf,
                                                      std::function<int()> am_port,
                                                      const std::string& tracking_url) override;
  // Every container is gone: the job's resources go to the next job in line, and its record to
  // its history location (loom.history.location) once it has its end.
  void Finish(const history::JobDir& dir, const std::string& state, const std::string& diagnostics) override;

 private:
  std::optional<HostInventory> host_;  // as the job sees the host (its loom.local.* settings)
  std::unique_ptr<ResourceLedger> ledger_;
  Admission admission_;
  // The secret the job's executors hold, made by the AM, given to each through a pipe
  // (LocalContainerBroker); the secret file in the job dir then only lets a client read the
  // job's state (AmSetup::executor_secret).
  std::string executor_secret_;
  int64_t reserved_memory_mib_ = 0;
};

}  // namespace loom::cluster::local
