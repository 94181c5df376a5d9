#pragma once
// LocalBackend: jobs on this machine. The AM is a process of its own session (so a terminal's
// Ctrl-C reaches only the client, which then kills the job); its pid is in the job dir, and
// every process of the job carries LOOM_JOB_ID=<id> in its environment, which is how leftovers
// are found after a crash.

#include <optional>

#include "cluster/backend.h"
#include "cluster/local/host_inventory.h"
#include "core/subprocess.h"

namespace loom::cluster::local {

class LocalBackend : public Backend {
 public:
  // `loom_binary` is the executable to run as `loom am`.
  LocalBackend(HostInventory inventory, std::string loom_binary)
      : inventory_(std::move(inventory)), loom_binary_(std::move(loom_binary)) {}
  ~LocalBackend() override;

  std::string name() const override { return "local"; }
  // The job could ever run here, and the resource ledger it will book its share in is usable
  // (found only by the AM, it would fail the job after the submit).
  Status CheckFits(const JobSpec& spec) override;
  Status Submit(const JobSpec& spec, const history::JobDir& dir) override;
  // An AM that is gone without a final status ends the job FAILED, and takes its leftovers.
  Status Sync(const history::JobDir& dir) override;
  int AmExitFd(const history::JobDir& dir) override;
  // The AM reads the recorded cause when SIGTERM arrives (cli/role_commands.cc).
  Status Kill(const history::JobDir& dir, std::chrono::milliseconds grace, const std::string& cause) override;
  Result<std::string> ReadLog(const history::JobDir& dir, const LogTarget& target, int64_t offset) override;

  // The AM's pid for `dir`, if it is alive and really that job's AM (not a recycled pid).
  static std::optional<pid_t> LiveAmPid(const history::JobDir& dir);

 private:
  void RemoveLeftovers(const history::JobDir& dir);
  // The job's record to its history location (loom.history.location) once this client wrote
  // its end; a failure is said on stderr.
  void CopyToHistoryLocation(const history::JobDir& dir);

  HostInventory inventory_;
  std::string loom_binary_;
  std::optional<Subprocess> am_;
};

}  // namespace loom::cluster::local
