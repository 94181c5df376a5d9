#pragma once
// JobTracker: the job's state machine and failure policy, free of I/O and threads so that it
// can be tested exhaustively. The AM feeds it what happens to tasks and acts on its decisions.
// Not thread-safe: the AM calls it from its event loop only.

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job_spec.h"

namespace loom {

enum class TaskState {
  kPending,     // waiting for a container
  kLaunched,    // executor started, not yet registered
  kRegistered,  // executor registered, waiting for the gang
  kRunning,     // user process running
  kSucceeded,
  kFailed,
  kKilled,      // stopped by Loom (job over, or killed), not a failure
  kLost,        // executor vanished without reporting
};
// The spelling of a state in events.jsonl, status.json and `loom status`: "RUNNING".
std::string TaskStateName(TaskState s);
// TaskStateName's inverse, for whoever reads a state back from a file: nullopt for a spelling
// this Loom does not know (a newer writer's, or a damaged file), which the reader must handle.
std::optional<TaskState> ParseTaskState(std::string_view name);
bool IsTerminal(TaskState s);
// Prints TaskStateName, so that test failures and logs name the state rather than its number.
std::ostream& operator<<(std::ostream& os, TaskState s);

enum class JobState { kNew, kRunning, kSucceeded, kFailed, kKilled };
std::string JobStateName(JobState s);
bool IsTerminal(JobState s);

// TonY's two stages (loom.application.prepare-stage / training-stage). Stage 0 is started at
// once; stage 1, the training types of a job that has a prepare stage, only after every
// tracked task of the prepare stage has succeeded. Types in neither list start at once, as
// TonY schedules every type without a dependency at once. A job without a prepare stage has
// stage 0 only.
int StageOf(const JobSpec& spec, const std::string& type);
bool HasTrainingStage(const JobSpec& spec);
// The spec as one stage sees it: only the types of `stage` (ranks, world sizes and the chief
// are per stage: a stage is its own cluster).
JobSpec StageSpec(const JobSpec& spec, int stage);
// "dbloader, db": the types of the prepare stage, for messages.
std::string PrepareStageNames(const JobSpec& spec);

// The exit code of a task Loom stopped that could not report its own, on every backend: the
// shell's 128 + SIGTERM. Its state is KILLED, its diagnostics "stopped by the AM: <why>".
inline constexpr int kStoppedExitCode = 143;

struct TaskRecord {
  TaskId id;
  TaskRole role = TaskRole::kTracked;
  TaskState state = TaskState::kPending;
  std::string host;
  int port = 0;
  int exit_code = 0;  // shell convention: 128+signal when killed by a signal
  std::string diagnostics;
};

class JobTracker {
 public:
  explicit JobTracker(const JobSpec& spec);

  JobState state() const { return state_; }
  // The first cause of the final state; empty while running.
  const std::string& diagnostics() const { return diagnostics_; }
  const std::vector<TaskRecord>& tasks() const { return tasks_; }
  const TaskRecord* Find(const TaskId& id) const;

  // The stage now running (0, then 1 once the training stage has started).
  int stage() const { return stage_; }
  // Whether `id` belongs to a stage that has started (its container may be asked for).
  bool Started(const TaskId& id) const;
  // Starts the training stage once every tracked prepare-stage task has succeeded: returns
  // its tasks, whose containers are to be asked for now; empty otherwise (and ever after).
  std::vector<TaskId> StartTrainingStageIfReady();

  void OnLaunched(const TaskId& id);
  // Returns true when this registration completes the gang: every task of the stage now
  // running registered (a stage is its own gang).
  bool OnRegistered(const TaskId& id, const std::string& host, int port);
  bool GangComplete() const;
  void OnRunning(const TaskId& id);
  // A task's process ended. `stopped_by_loom` marks a kill Loom ordered (never a failure).
  // Returns the tasks to stop now (untracked ones after success; everything after a failure).
  // A tracked prepare-stage task that ends without success, while the prepare stage runs,
  // fails the job whatever the success policy: the training stage would never start.
  std::vector<TaskId> OnTaskFinished(const TaskId& id, int exit_code, bool stopped_by_loom,
                                     const std::string& diagnostics);
  // A failed task gets another run of its own (its type's restart-policy): back to PENDING,
  // and the gang waits for its registration again. Only for a task that is not terminal.
  void RestartTask(const TaskId& id);
  // Ends the job (kill, timeout, AM error). The first final state wins; later calls are ignored.
  std::vector<TaskId> Finish(JobState final_state, const std::string& reason);

  // Tasks not yet in a terminal state.
  std::vector<TaskId> LiveTasks() const;

 private:
  TaskRecord* Mutable(const TaskId& id);
  bool IsChief(const TaskId& id) const;

  const JobSpec& spec_;
  std::vector<TaskRecord> tasks_;
  std::map<TaskId, size_t> index_;  // into tasks_
  int awaiting_registration_ = 0;    // tasks of the started stages still pending or launched
  int stage_ = 0;
  JobState state_ = JobState::kNew;
  std::string diagnostics_;
  std::optional<TaskId> chief_;
};

}  // namespace loom
