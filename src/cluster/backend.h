#pragma once
// Backend: the client's side of a cluster backend. A backend owns its jobs' whole lifecycle:
// it checks and submits them, keeps their job directory (the durable record that `loom
// status|logs|list` and the portal read) up to date, reads their logs, kills them and cleans up
// after them. The CLI lists the backends in one place (cli/backends.cc) and never branches on a
// backend's name: adding a backend is adding a folder under cluster/ and one entry there.
//
// Threads: a Backend object is used by one client thread; it may run threads of its own
// (the yarn backend mirrors its application while `loom submit` follows). Nothing here blocks
// signals: the CLI blocks SIGINT/SIGTERM/SIGHUP before it creates any backend.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/job_spec.h"
#include "core/status.h"
#include "history/job_dir.h"

namespace loom::cluster {

// One log file of a job: a task's stdout, stderr or executor.log, or the AM's am.log.
struct LogTarget {
  std::optional<TaskId> task;  // nullopt: the ApplicationMaster
  std::string file = "stdout";  // "stdout", "stderr", "executor.log"; "am.log" for the AM
  std::string container;        // "": the task's current container; else an earlier one of it
  std::string Label() const { return task ? task->ToString() : "am"; }
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "local", "yarn", ... as in job.json's "backend".
  virtual std::string name() const = 0;

  // Checks that the job can ever run here (sizes, queue, labels); nothing is started or
  // staged. A failure is the user's to fix (exit 2); kUnavailable means the cluster could not
  // be asked (exit 1).
  virtual Status CheckFits(const JobSpec& spec) = 0;

  // Starts the job's AM. `dir` already holds config.xml, job.json, the secret and the
  // JOB_SUBMITTED event. On failure nothing of the job is left on the cluster.
  virtual Status Submit(const JobSpec& spec, const history::JobDir& dir) = 0;

  // Brings `dir` up to date with what the cluster knows (events, the final status, the AM's
  // address). Once the job has ended: every task has a final row, status.json is written
  // (first writer wins), and the backend's leftovers (staging files, processes) are removed.
  // Safe to call from any client at any time, also long after the job ended.
  virtual Status Sync(const history::JobDir& dir) = 0;

  // A file descriptor that becomes readable when the job's AM process exits, or -1 when the
  // backend cannot tell that way (then Sync() notices the end). The caller closes it.
  virtual int AmExitFd(const history::JobDir& dir) { return -1; }

  // Ends the job and confirms it: returns once the cluster says the job is over (its AM and
  // every container gone) or `grace` passed; then whatever is left is removed by force.
  // `cause` is why, as the job's final diagnostics will say it ("killed by loom kill (user
  // alice)"); it is recorded before anything is sent (history::RecordKillCause), and the
  // first cause of a job wins over later ones.
  virtual Status Kill(const history::JobDir& dir, std::chrono::milliseconds grace, const std::string& cause) = 0;

  // The bytes of a log stream from `offset` on; empty when there is nothing new. NotFound
  // when the stream does not exist (yet, or any more), with the reason.
  virtual Result<std::string> ReadLog(const history::JobDir& dir, const LogTarget& target, int64_t offset) = 0;

  // Whether each container of a task keeps its own logs (YARN), so that those of a restarted
  // task's earlier containers can be read too (LogTarget::container); else a task's logs are
  // one stream across its restarts.
  virtual bool LogsPerContainer() const { return false; }

  // Extra lines for `loom status` and the end of `loom submit` ("application: ...").
  virtual std::vector<std::string> Describe(const history::JobDir& dir) { return {}; }
};

}  // namespace loom::cluster
