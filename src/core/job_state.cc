#include "core/job_state.h"

namespace loom {

std::string TaskStateName(TaskState s) {
  switch (s) {
    case TaskState::kPending: return "PENDING";
    case TaskState::kLaunched: return "LAUNCHED";
    case TaskState::kRegistered: return "REGISTERED";
    case TaskState::kRunning: return "RUNNING";
    case TaskState::kSucceeded: return "SUCCEEDED";
    case TaskState::kFailed: return "FAILED";
    case TaskState::kKilled: return "KILLED";
    case TaskState::kLost: return "LOST";
  }
  return "?";
}

bool IsTerminal(TaskState s) {
  return s == TaskState::kSucceeded || s == TaskState::kFailed || s == TaskState::kKilled ||
         s == TaskState::kLost;
}

std::string JobStateName(JobState s) {
  switch (s) {
    case JobState::kNew: return "NEW";
    case JobState::kRunning: return "RUNNING";
    case JobState::kSucceeded: return "SUCCEEDED";
    case JobState::kFailed: return "FAILED";
    case JobState::kKilled: return "KILLED";
  }
  return "?";
}

bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kKilled;
}

JobTracker::JobTracker(const JobSpec& spec) : spec_(spec), chief_(spec.Chief()) {
  for (const auto& type : spec.types) {
    for (int i = 0; i < type.instances; ++i) {
      TaskRecord r;
      r.id = {type.name, i};
      r.role = type.role;
      index_[r.id] = tasks_.size();
      tasks_.push_back(r);
    }
  }
  awaiting_registration_ = static_cast<int>(tasks_.size());
  state_ = JobState::kRunning;
}

const TaskRecord* JobTracker::Find(const TaskId& id) const {
  auto it = index_.find(id);
  return it == index_.end() ? nullptr : &tasks_[it->second];
}

TaskRecord* JobTracker::Mutable(const TaskId& id) { return const_cast<TaskRecord*>(Find(id)); }

bool JobTracker::IsChief(const TaskId& id) const { return chief_ && *chief_ == id; }

void JobTracker::OnLaunched(const TaskId& id) {
  TaskRecord* t = Mutable(id);
  if (t && t->state == TaskState::kPending) t->state = TaskState::kLaunched;
}

bool JobTracker::OnRegistered(const TaskId& id, const std::string& host, int port) {
  TaskRecord* t = Mutable(id);
  if (!t || IsTerminal(t->state)) return false;
  t->host = host;
  t->port = port;
  if (t->state != TaskState::kPending && t->state != TaskState::kLaunched) return false;  // a repeat
  t->state = TaskState::kRegistered;
  return --awaiting_registration_ == 0;
}

bool JobTracker::GangComplete() const { return awaiting_registration_ == 0; }

void JobTracker::OnRunning(const TaskId& id) {
  TaskRecord* t = Mutable(id);
  if (t && !IsTerminal(t->state)) t->state = TaskState::kRunning;
}

std::vector<TaskId> JobTracker::LiveTasks() const {
  std::vector<TaskId> out;
  for (const auto& t : tasks_) {
    if (!IsTerminal(t.state)) out.push_back(t.id);
  }
  return out;
}

void JobTracker::RestartTask(const TaskId& id) {
  TaskRecord* t = Mutable(id);
  if (!t || IsTerminal(t->state) || IsTerminal(state_)) return;
  if (t->state != TaskState::kPending && t->state != TaskState::kLaunched) ++awaiting_registration_;
  t->state = TaskState::kPending;
  t->port = 0;
}

std::vector<TaskId> JobTracker::Finish(JobState final_state, const std::string& reason) {
  if (IsTerminal(state_)) return {};
  state_ = final_state;
  diagnostics_ = reason;
  return LiveTasks();
}

std::vector<TaskId> JobTracker::OnTaskFinished(const TaskId& id, int exit_code, bool stopped_by_loom,
                                               const std::string& diagnostics) {
  TaskRecord* t = Mutable(id);
  if (!t || IsTerminal(t->state)) return {};
  if (t->state == TaskState::kPending || t->state == TaskState::kLaunched) --awaiting_registration_;
  t->exit_code = exit_code;
  t->diagnostics = diagnostics;
  bool failed = exit_code != 0 && !stopped_by_loom;
  t->state = stopped_by_loom && exit_code != 0 ? TaskState::kKilled
             : failed                          ? TaskState::kFailed
                                               : TaskState::kSucceeded;
  if (IsTerminal(state_)) return {};

  if (failed && t->role != TaskRole::kSidecar) {
    const TaskTypeSpec* type = spec_.FindType(id.type);
    std::string what = "task " + id.ToString() + " failed";
    if (!diagnostics.empty()) what += ": " + diagnostics;
    if (IsChief(id)) return Finish(JobState::kFailed, "chief " + what);
    if (type && type->stop_on_failure) return Finish(JobState::kFailed, "stop-on-failure " + what);
    if (t->role == TaskRole::kUntracked) return Finish(JobState::kFailed, "untracked " + what);
    if (spec_.success_policy == SuccessPolicy::kAll) return Finish(JobState::kFailed, what);
  }

  // Every tracked task done: decide, then stop what is left (untracked and sidecars).
  int tracked = 0, tracked_done = 0, tracked_failed = 0;
  std::string first_failure;
  for (const auto& r : tasks_) {
    if (r.role != TaskRole::kTracked) continue;
    ++tracked;
    if (IsTerminal(r.state)) ++tracked_done;
    if (r.state == TaskState::kFailed || r.state == TaskState::kLost) {
      if (!tracked_failed++) first_failure = "task " + r.id.ToString() + " failed: " + r.diagnostics;
    }
  }
  if (tracked_done < tracked) return {};
  if (tracked_failed == 0) return Finish(JobState::kSucceeded, "all " + std::to_string(tracked) + " tracked tasks succeeded");
  if (tracked_failed >= tracked) return Finish(JobState::kFailed, "every tracked task failed; first: " + first_failure);
  return Finish(JobState::kSucceeded, std::to_string(tracked - tracked_failed) + " of " + std::to_string(tracked) +
                                          " tracked tasks succeeded (success-policy=any)");
}

}  // namespace loom
