#pragma once
// LocalJobSubmitter: runs a job's ApplicationMaster as a process on this machine, in its own
// session so that a terminal's Ctrl-C reaches only the client (which then kills the job).

#include <optional>

#include "cluster/job_submitter.h"
#include "cluster/local/host_inventory.h"
#include "core/subprocess.h"

namespace loom::cluster::local {

class LocalJobSubmitter : public JobSubmitter {
 public:
  // `loom_binary` is the executable to run as `loom am`.
  LocalJobSubmitter(HostInventory inventory, std::string loom_binary)
      : inventory_(std::move(inventory)), loom_binary_(std::move(loom_binary)) {}
  ~LocalJobSubmitter() override;

  Status CheckFits(const JobSpec& spec) const override { return inventory_.CheckFits(spec); }
  Status Submit(const history::JobDir& dir) override;
  Status Kill(const history::JobDir& dir, std::chrono::milliseconds grace) override;

  // The AM's pid for `dir`, if it is alive and really that job's AM (not a recycled pid).
  static std::optional<pid_t> LiveAmPid(const history::JobDir& dir);

 private:
  HostInventory inventory_;
  std::string loom_binary_;
  std::optional<Subprocess> am_;
};

}  // namespace loom::cluster::local
