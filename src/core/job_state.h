#pragma once
// JobTracker: the job's state machine and failure policy, free of I/O and threads so that it
// can be tested exhaustively. The AM feeds it what happens to tasks and acts on its decisions.
// Not thread-safe: the AM calls it from its event loop only.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
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
std::string TaskStateName(TaskState s);
bool IsTerminal(TaskState s);

enum class JobState { kNew, kRunning, kSucceeded, kFailed, kKilled };
std::string JobStateName(JobState s);
bool IsTerminal(JobState s);

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

  void OnLaunched(const TaskId& id);
  // Returns true when this registration completes the gang (every task registered).
  bool OnRegistered(const TaskId& id, const std::string& host, int port);
  bool GangComplete() const;
  void OnRunning(const TaskId& id);
  // A task's process ended. `stopped_by_loom` marks a kill Loom ordered (never a failure).
  // Returns the tasks to stop now (untracked ones after success; everything after a failure).
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
  int awaiting_registration_ = 0;    // tasks still pending or launched
  JobState state_ = JobState::kNew;
  std::string diagnostics_;
  std::optional<TaskId> chief_;
};

}  // namespace loom
