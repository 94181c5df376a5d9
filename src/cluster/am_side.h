#pragma once
// AmSide: a backend as the ApplicationMaster sees it, in the AM's own process (`loom am
// --backend NAME`). It readies the AM's job dir, says how executors reach the AM and what
// they are given, makes the ContainerBroker, and has the last word with the cluster once the
// job is over. The AM itself (am/) never learns which backend it runs on; the CLI picks the
// AmSide from the list in cli/backends.cc.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cluster/container_broker.h"
#include "core/config/config.h"
#include "core/job_spec.h"
#include "core/status.h"
#include "history/event_log.h"
#include "history/job_dir.h"

namespace loom::cluster {

// How the AM is placed and what its executors get.
struct AmSetup {
  std::string secret_file;                // the control plane's secret (0600), read by the AM
  // When set: the secret the job's executors hold and every control call needs; the secret
  // file's then only reads the job's state (JobState), for a client that follows the job. For
  // a backend whose tasks can read the job's secret file (local: same machine, same user).
  std::string executor_secret;
  std::string bind_address = "127.0.0.1";  // where the AM's servers listen
  std::string advertise_host = "127.0.0.1";  // how executors (and the tracking URL) reach it
  std::string executor_binary;             // the `loom` that containers run as `loom executor`
  std::map<std::string, std::string> executor_env;  // base environment of every executor
  // Where the AM runs, as the backend names it (container, node_id, node_http), for logs.
  std::map<std::string, std::string> location;
  // How long the AM keeps answering after the job ended, for a client that copies its events.
  std::chrono::milliseconds events_linger{0};
};

// A piece of a task's log as its node serves it (AmSide::ReadTaskLog).
struct TaskLogPiece {
  std::string bytes;
  int64_t file_length = 0;  // the whole file's, when it was read
};

class AmSide {
 public:
  virtual ~AmSide() = default;
  // Readies `dir` (the AM's job dir) from what the backend shipped; `env` is the AM's
  // environment. Errors end the AM before it starts anything.
  virtual Result<AmSetup> Prepare(const history::JobDir& dir, const std::map<std::string, std::string>& env) = 0;
  // Waits until the cluster may run the job's whole gang now, on backends that queue jobs
  // themselves (local: the machine's ResourceLedger); what it grants is the broker's for the
  // job's whole life. Called once, after Prepare and before MakeBroker, with SIGTERM, SIGINT
  // and SIGHUP blocked in every thread: while the job waits it takes them itself. While it
  // waits it appends BACKEND_STATE events {state: QUEUED, reason, position} to `events`
  // whenever they change. Returns Cancelled (naming the signal) when a stop signal came while
  // the job waited: the caller ends the job KILLED. Other errors fail the AM.
  virtual Status Admit(const history::JobDir& dir, const config::Config& conf, const JobSpec& spec,
                       history::EventLog& events) {
    return Status::Ok();
  }
  // The broker for this job. `am_port` gives the AM's control-plane port once it listens
  // (-1 before); `tracking_url` is the AM's status page ("" if it has none).
  virtual Result<std::unique_ptr<ContainerBroker>> MakeBroker(const history::JobDir& dir, const config::Config& conf,
                                                              std::function<int()> am_port,
                                                              const std::string& tracking_url) = 0;
  // A task's log `file` (stdout, stderr, executor.log; am.log for the AM's own container) as the
  // node that runs `container` serves it, for the AM's dashboard, on backends whose containers'
  // logs are not in the AM's job dir (YARN: the NodeManager's web services). `size`: absent,
  // the whole file; N > 0, its first N bytes; N < 0, its last |N|; 0, none (its length only).
  // NotFound where the node has no such log or does not serve it (any more).
  virtual Result<TaskLogPiece> ReadTaskLog(const std::string& container, const std::string& node_http,
                                           const std::string& file, std::optional<int64_t> size) const {
    return Status::NotFound("this backend keeps task logs in the job dir");
  }
  // After the job ended and every container is gone: the backend's clean-up and its report of
  // the outcome (SUCCEEDED, FAILED or KILLED) to the cluster.
  virtual void Finish(const history::JobDir& dir, const std::string& state, const std::string& diagnostics) {}
};

}  // namespace loom::cluster
