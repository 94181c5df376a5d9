#pragma once
// JobView: a job as `loom status|list|submit` show it, rebuilt from the job directory alone
// (job.json, events.jsonl and status.json), so it works whether the AM is alive or not.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/job_state.h"
#include "history/job_dir.h"
#include "history/metrics_log.h"

namespace loom::history {

// A container a task ran in before its current one (a restart: alone, or the whole gang).
struct PastContainer {
  std::string container, node_id, node_http;
};

struct TaskView {
  std::string id;  // "worker:0"
  TaskState state = TaskState::kPending;
  // A TASK_STATE whose state this Loom cannot read (a newer writer's spelling, or a damaged
  // file) leaves `state` at the last one it could, which the view and EndJob go by, and is
  // kept here as written, so that what is shown is still what the file says. "" once a state
  // it can read follows.
  std::string unknown_state;
  std::string address;
  int exit_code = 0;
  std::string diagnostics;
  int64_t peak_rss_bytes = 0;  // the report's at the end; while it runs, the highest sample
  int64_t rss_bytes = 0;       // the last sample while it runs (TASK_METRICS)
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  int restarts = 0;  // of this task alone (its type's restart-policy)
  // Where it runs, as its backend names it (a YARN container id and NodeManager).
  std::string container;
  std::string node_id;    // the NodeManager's host:port
  std::string node_http;  // the NodeManager's web address
  std::string waiting;    // while PENDING: why it has no container yet, as the backend says
  std::string gpus;       // its CUDA_VISIBLE_DEVICES, where the backend pinned them at start-up
  std::vector<PastContainer> earlier;  // oldest first; their logs stay the task's (`loom logs`)
  // Its latest sample in metrics.jsonl (CPU, RSS, GPUs) while it runs: none before its first,
  // once it ended, or where the record has no metrics.jsonl (a job of an older Loom).
  std::optional<TaskSample> latest;
  // Its CPU in cores over its run, from its exit report: the busiest interval and the average
  // (none where not measured).
  std::optional<double> peak_cpu_cores, avg_cpu_cores;

  // The state as `loom status`, its --json and the status page show it: TaskStateName, or the
  // unreadable spelling as written.
  std::string StateText() const;
};

struct JobView {
  std::string id;
  std::string name;
  std::string user;  // who submitted it (job.json)
  std::string backend;
  // SUBMITTED, QUEUED, RUNNING, then the end as status.json or JOB_FINISHED spells it. Text,
  // not core's JobState: that is the AM's machine (NEW..KILLED), which has no SUBMITTED or
  // QUEUED, and the end is written in text by several writers, the YARN follower among them.
  std::string state = "SUBMITTED";
  std::string diagnostics;
  int64_t submitted_ms = 0;
  int64_t finished_ms = 0;
  bool final = false;  // status.json exists
  int attempt = 0;     // gang restarts so far (loom.am.retry-count)
  std::vector<TaskView> tasks;
  // The AM's container, on backends that have them.
  std::string am_container, am_node_id, am_node_http;
  // The backend's own word on the job (YARN: "ACCEPTED: <the scheduler's reason>") and id.
  std::string backend_state, backend_id;
  // While the job waits for its turn (state QUEUED, local backend): its place among the jobs
  // it competes with (1 = next) and why it waits ("waiting for 1 GPU held by job_...").
  int queue_position = 0;
  std::string queue_reason;
  std::string tracking_url;  // where the cluster's UI shows the job, if it has one
  // The AM's own status page (am/status_page.h; AM_STARTED's status_url) while the AM serves
  // it: "" before it started and once the job ended (a dead link is never shown).
  std::string dashboard_url;
  // The job's TensorBoard once it answers ("http://host:TB_PORT/") and the task serving it;
  // both "" again once that task or the job ended (nothing answers there any more).
  std::string tensorboard_url, tensorboard_task;
  // What the user should know about the job as a whole (JOB_WARNING), each once, in order.
  std::vector<std::string> warnings;

  TaskView* FindTask(const std::string& id);
  // Folds one events.jsonl entry into the view; entries of the wrong shape are ignored.
  void Apply(const nlohmann::json& event);
  // The job's record says it ended (status.json): what served it answers no more.
  void MarkEnded();
  // Gives each running task its latest sample of `samples` (ReadLatestSamples), unless the
  // sample is older than the task's start (a restarted task's earlier run).
  void ApplySamples(const std::map<std::string, TaskSample>& samples);
  // The tasks ApplySamples has use for: those that run, in a job not ended.
  std::set<std::string> RunningTasks() const;

 private:
  void ApplyChecked(const nlohmann::json& event);
};

Result<JobView> LoadJobView(const JobDir& dir);

// Writes status.json if no one has yet: the first final status wins, across processes.
// Returns AlreadyExists when another writer was first. Its one shape: job_id (the dir's),
// state, diagnostics, finished_ms (now), then `extra`'s fields (the AM's attempts and tasks),
// which may set any of those.
Status WriteFinalStatus(const JobDir& dir, const std::string& state, const std::string& diagnostics,
                        const nlohmann::json& extra = nlohmann::json::object());

// Ends the job's record: every task not yet in a final state gets a TASK_STATE `task_state`
// row (the cluster ended it with the job; exit code 143 where it had started), then
// status.json is written with `state` and `diagnostics` (and `extra` fields) unless someone
// wrote it first. Idempotent.
Status EndJob(const JobDir& dir, const std::string& state, const std::string& diagnostics,
              const nlohmann::json& extra = nlohmann::json::object(), TaskState task_state = TaskState::kKilled);
// EndJob that says whether this call's end stands: true when it wrote status.json, false when
// someone ended the job first (their state is the job's). Whoever's end stands writes the
// JOB_FINISHED event, so that events.jsonl and status.json never disagree.
Result<bool> EndJobIfFirst(const JobDir& dir, const std::string& state, const std::string& diagnostics,
                           const nlohmann::json& extra = nlohmann::json::object(),
                           TaskState task_state = TaskState::kKilled);

// Why the job is being killed, recorded by whoever asks for the kill before it sends it
// (`loom kill`, `loom submit` taking a signal), for whoever then writes the job's end (the
// local AM, a YARN client): "killed: Ctrl-C (SIGINT) to loom submit". The first cause wins
// (AlreadyExists for the later ones), across processes.
Status RecordKillCause(const JobDir& dir, const std::string& cause);
// The recorded cause, or "" when none was recorded (a signal from outside Loom).
std::string KillCause(const JobDir& dir);

// The job as one JSON object: the single shape of `loom status --json`, the AM's
// /status.json and the history.
nlohmann::json ToJson(const JobView& view);

// A fixed-width table of the tasks: TASK STATE ADDRESS EXIT RSS CPU TIME, and GPU where a task
// has GPU samples. CPU (cores) and RSS are the latest sample while a task runs; once it ended,
// CPU is its average and RSS its peak. GPU: each device's utilisation and memory used.
std::string RenderTaskTable(const JobView& view);
std::string FormatDuration(int64_t ms);

}  // namespace loom::history
