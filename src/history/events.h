#pragma once
// The kinds of events in events.jsonl (see job_dir.h), each with the fields its writer sets.
// Every event also has "ts" (ms since the epoch) and "event" (its kind). Readers (JobView,
// `loom submit`'s lines) ignore fields and kinds they do not know.

namespace loom::history::events {

// The client: job_id, name, backend, tasks ["worker:0", ...].
inline constexpr char kJobSubmitted[] = "JOB_SUBMITTED";
// A backend took the job: backend, id (e.g. the YARN application), where (e.g. the RM).
inline constexpr char kBackendSubmitted[] = "BACKEND_SUBMITTED";
// The backend's own state changed: id, state, reason (why it waits), tracking_url. The local
// backend's queue has no id: state QUEUED with reason and position (1 = next), re-sent when
// they change, then ADMITTED with waited_ms and gpus (the indices granted).
inline constexpr char kBackendState[] = "BACKEND_STATE";
// The AM is up: pid, address, backend; container, node_id, node_http where it has them;
// status_url, its status page.
inline constexpr char kAmStarted[] = "AM_STARTED";
// A task changed state: task, state; address, exit_code, diagnostics, peak_rss_bytes,
// container, host, node_id, node_http as they become known; max_gpu_utilization_percent and
// peak_gpu_memory_bytes at its end when its GPUs were sampled; gpus (its CUDA_VISIBLE_DEVICES,
// where the backend pinned them at start-up); waiting (PENDING: why no
// container is asked for yet, "" once it is).
inline constexpr char kTaskState[] = "TASK_STATE";
// Tasks still without a container: tasks [{task, resources, waited_ms, reason}].
inline constexpr char kTasksPending[] = "TASKS_PENDING";
// The AM gave a container back unused: container, host, reason.
inline constexpr char kContainerReleased[] = "CONTAINER_RELEASED";
// Every task registered: cluster_spec.
inline constexpr char kGangComplete[] = "GANG_COMPLETE";
// One task restarted alone: task, exit_code, restart.
inline constexpr char kTaskRestarting[] = "TASK_RESTARTING";
// The whole gang restarted: attempt, reason.
inline constexpr char kJobRestarting[] = "JOB_RESTARTING";
// What running tasks use: a task's first sample, then a change of 10% at most every 10 s
// (25% at most every second), so a steady task writes nothing:
// tasks [{task, rss_bytes}] (rss_bytes: the task's process group, as its executor sampled it).
inline constexpr char kTaskMetrics[] = "TASK_METRICS";
// A group-dependency timeout fired: type, group, ignored.
inline constexpr char kDependencyTimeout[] = "DEPENDENCY_TIMEOUT";
// A two-stage job's training stage started (the prepare stage succeeded): stage, tasks.
inline constexpr char kStageStarted[] = "STAGE_STARTED";
// The job's TensorBoard answers: task, url ("http://host:TB_PORT/").
inline constexpr char kTensorBoard[] = "TENSORBOARD";
// Something the user should know about the job as a whole, once: message, task (the first it
// concerns). E.g. YARN only counts a node's GPUs: other applications are not fenced off.
inline constexpr char kJobWarning[] = "JOB_WARNING";
// The AM decided the job's end: state, diagnostics.
inline constexpr char kJobFinished[] = "JOB_FINISHED";

}  // namespace loom::history::events
