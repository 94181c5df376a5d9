#pragma once
// JobSubmitter: the client's side of a backend. It starts a job's ApplicationMaster and can end
// it; the job directory is already written when Submit() is called.

#include <chrono>
#include <string>

#include "core/job_spec.h"
#include "core/status.h"
#include "history/job_dir.h"

namespace loom::cluster {

class JobSubmitter {
 public:
  virtual ~JobSubmitter() = default;
  // Checks that the job can ever run on this backend (resources, labels); nothing is started.
  virtual Status CheckFits(const JobSpec& spec) const = 0;
  // Starts the AM for the job in `dir`.
  virtual Status Submit(const history::JobDir& dir) = 0;
  // Ends the job: its AM stops every task. Returns once the AM is gone or `grace` passed; then
  // whatever is left of the job (processes, cgroups) is removed by force.
  virtual Status Kill(const history::JobDir& dir, std::chrono::milliseconds grace) = 0;
};

}  // namespace loom::cluster
