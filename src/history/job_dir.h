#pragma once
// The job directory: the durable record of a job, and the only thing `loom status|logs|list`
// and the portal read. Its whole layout is here, as in Mesos' slave/paths.hpp:
//
//   $LOOM_HOME (default ~/.loom)
//   └── jobs/<job-id>/
//       ├── config.xml        final merged configuration (every default filled in)
//       ├── job.json          what was submitted: id, name, user, backend, submit time, command
//       ├── events.jsonl      append-only job and task transitions, one JSON object per line
//       │                     (their kinds and fields: history/events.h)
//       ├── metrics.jsonl     each task's samples over time (CPU, RSS, GPUs), written by the AM,
//       │                     one JSON object per line (history/metrics_log.h)
//       ├── status.json       final status, written once by whoever ends the job
//       ├── secret            the job's control-plane secret (0600), removed once the job ended
//       ├── kill_cause        why the job is being killed, written before the kill is sent
//       ├── am.pid, am.addr   the running AM (local backend)
//       ├── executors/<container-id>  each running executor: pid, start time, boot (local
//       │                     backend; removed once reaped: cluster/local/job_processes.h)
//       ├── am.log            the AM's own log
//       └── tasks/<type>-<index>/
//           ├── stdout, stderr   the user process's output
//           ├── executor.log     the executor's own log
//           └── work/            the task's working directory (local backend): its copy of the
//                                src dir, its unpacked venv; kept until `loom gc|rm` (cli/retention.h)

#include <string>

#include "core/job_spec.h"

namespace loom::history {

// $LOOM_HOME, or ~/.loom.
std::string LoomHome();

class JobDir {
 public:
  JobDir() = default;
  explicit JobDir(std::string root) : root_(std::move(root)) {}
  // The directory of `job_id` under $LOOM_HOME.
  static JobDir ForJob(const std::string& job_id);
  // Accepts a job id or a path to a job directory.
  static Result<JobDir> Find(const std::string& id_or_path);

  const std::string& root() const { return root_; }
  std::string job_id() const;
  std::string config() const { return root_ + "/config.xml"; }
  std::string job_json() const { return root_ + "/job.json"; }
  std::string events() const { return root_ + "/events.jsonl"; }
  std::string metrics() const { return root_ + "/metrics.jsonl"; }
  std::string status() const { return root_ + "/status.json"; }
  std::string secret() const { return root_ + "/secret"; }
  std::string kill_cause() const { return root_ + "/kill_cause"; }
  std::string am_pid() const { return root_ + "/am.pid"; }
  std::string am_addr() const { return root_ + "/am.addr"; }
  std::string am_log() const { return root_ + "/am.log"; }
  std::string executors_dir() const { return root_ + "/executors"; }
  std::string executor(const std::string& container_id) const { return executors_dir() + "/" + container_id; }
  std::string tasks_dir() const { return root_ + "/tasks"; }
  std::string task_dir(const TaskId& t) const { return tasks_dir() + "/" + t.DirName(); }
  std::string task_stdout(const TaskId& t) const { return task_dir(t) + "/stdout"; }
  std::string task_stderr(const TaskId& t) const { return task_dir(t) + "/stderr"; }
  std::string task_work(const TaskId& t) const { return task_dir(t) + "/work"; }

 private:
  std::string root_;
};

// A new, unique job id: job_<yyyymmddHHMMSS>_<4 hex>.
std::string NewJobId();

}  // namespace loom::history
