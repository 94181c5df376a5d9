#include "core/job_state.h"

#include <algorithm>
#include <array>
#include <ostream>

#include "core/strings.h"

namespace loom {

int StageOf(const JobSpec& spec, const std::string& type) {
  if (spec.prepare_stage.empty()) return 0;
  auto in = [&](const std::vector<std::string>& list) { return std::find(list.begin(), list.end(), type) != list.end(); };
  if (in(spec.prepare_stage)) return 0;
  // Only the prepare list given: the training stage is every other type (TonY's rule).
  if (spec.training_stage.empty()) return 1;
  return in(spec.training_stage) ? 1 : 0;
}

bool HasTrainingStage(const JobSpec& spec) {
  for (const auto& t : spec.types) {
    if (t.instances > 0 && StageOf(spec, t.name) == 1) return true;
  }
  return false;
}

JobSpec StageSpec(const JobSpec& spec, int stage) {
  JobSpec out = spec;
  out.types.clear();
  for (const auto& t : spec.types) {
    if (StageOf(spec, t.name) == stage) out.types.push_back(t);
  }
  return out;
}

namespace {
std::string StageNames(const JobSpec& spec, int stage) {
  std::vector<std::string> names;
  for (const auto& t : spec.types) {
    if (t.instances > 0 && StageOf(spec, t.name) == stage) names.push_back(t.name);
  }
  return Join(names, ", ");
}
}  // namespace

std::string PrepareStageNames(const JobSpec& spec) { return Join(spec.prepare_stage, ", "); }

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

std::optional<TaskState> ParseTaskState(std::string_view name) {
  // Through TaskStateName, so that there is one list of spellings (job_state_test checks that
  // this list has every state).
  static constexpr std::array kAll = {TaskState::kPending, TaskState::kLaunched, TaskState::kRegistered,
                                      TaskState::kRunning, TaskState::kSucceeded, TaskState::kFailed,
                                      TaskState::kKilled,  TaskState::kLost};
  for (TaskState s : kAll) {
    if (TaskStateName(s) == name) return s;
  }
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& os, TaskState s) { return os << TaskStateName(s); }

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
  // Only the first stage is awaited; the training stage joins when it starts.
  awaiting_registration_ = static_cast<int>(
      std::count_if(tasks_.begin(), tasks_.end(), [&](const TaskRecord& r) { return StageOf(spec, r.id.type) == 0; }));
  state_ = JobState::kRunning;
}

bool JobTracker::Started(const TaskId& id) const { return StageOf(spec_, id.type) <= stage_; }

std::vector<TaskId> JobTracker::StartTrainingStageIfReady() {
  if (stage_ != 0 || IsTerminal(state_) || !HasTrainingStage(spec_)) return {};
  for (const auto& r : tasks_) {
    if (r.role == TaskRole::kTracked && StageOf(spec_, r.id.type) == 0 && r.state != TaskState::kSucceeded) return {};
  }
  stage_ = 1;
  std::vector<TaskId> started;
  for (const auto& r : tasks_) {
    if (StageOf(spec_, r.id.type) != 1) continue;
    started.push_back(r.id);
    if (r.state == TaskState::kPending || r.state == TaskState::kLaunched) ++awaiting_registration_;
  }
  return started;
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

namespace {
// "a", "a and b", "a, b and c"; a long list ends "and N more".
std::string ListForHumans(const std::vector<std::string>& items) {
  constexpr size_t kShown = 4;
  if (items.size() <= 1) return items.empty() ? "" : items[0];
  if (items.size() > kShown + 1) {
    std::vector<std::string> head(items.begin(), items.begin() + kShown);
    return Join(head, ", ") + " and " + std::to_string(items.size() - kShown) + " more";
  }
  std::vector<std::string> head(items.begin(), items.end() - 1);
  return Join(head, ", ") + " and " + items.back();
}

// The tracked tasks Loom stopped, grouped by why: "evaluator:0 stopped by the AM: ...".
std::string StoppedTrackedTasks(const std::vector<TaskRecord>& tasks) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_reason;  // in task order
  for (const auto& r : tasks) {
    if (r.role != TaskRole::kTracked || r.state != TaskState::kKilled) continue;
    std::string why = r.diagnostics.empty() ? "was stopped by Loom" : r.diagnostics;
    auto it = std::find_if(by_reason.begin(), by_reason.end(), [&](const auto& e) { return e.first == why; });
    if (it == by_reason.end()) it = by_reason.insert(by_reason.end(), {why, {}});
    it->second.push_back(r.id.ToString());
  }
  std::vector<std::string> parts;
  for (const auto& [why, ids] : by_reason) parts.push_back(ListForHumans(ids) + " " + why);
  return Join(parts, "; ");
}
}  // namespace

std::vector<TaskId> JobTracker::OnTaskFinished(const TaskId& id, int exit_code, bool stopped_by_loom,
                                               const std::string& diagnostics) {
  TaskRecord* t = Mutable(id);
  if (!t || IsTerminal(t->state)) return {};
  if ((t->state == TaskState::kPending || t->state == TaskState::kLaunched) && Started(id)) --awaiting_registration_;
  t->exit_code = exit_code;
  t->diagnostics = diagnostics;
  bool failed = exit_code != 0 && !stopped_by_loom;
  t->state = stopped_by_loom && exit_code != 0 ? TaskState::kKilled
             : failed                          ? TaskState::kFailed
                                               : TaskState::kSucceeded;
  if (IsTerminal(state_)) return {};

  // The training stage starts only after the whole prepare stage succeeded: a tracked prepare
  // task that did not succeed means it never will (TonY would start it after any completion).
  if (stage_ == 0 && t->role == TaskRole::kTracked && t->state != TaskState::kSucceeded &&
      StageOf(spec_, id.type) == 0 && HasTrainingStage(spec_)) {
    std::string what = "prepare stage failed: task " + id.ToString() + (failed ? " failed" : " was stopped");
    if (!diagnostics.empty()) what += ": " + diagnostics;
    return Finish(JobState::kFailed, what + "; the training stage (" + StageNames(spec_, 1) + ") was not started");
  }

  // loom.application.framework=mpi: a task that holds ranks ends only when Loom stops it, after
  // the launcher; one that ends before, even with exit code 0, took its share of the ranks along.
  if (spec_.framework == Framework::kMpi && t->role == TaskRole::kUntracked && !stopped_by_loom) {
    return Finish(JobState::kFailed, "MPI task " + id.ToString() + " ended before the launcher" +
                                         (diagnostics.empty() ? "" : " (" + diagnostics + ")") +
                                         ": the ranks it hosted are gone");
  }
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
  // A tracked task the AM stopped (a group dependency's `.ignored` timeout) did not succeed:
  // the diagnostics name it and why, instead of counting it as a success.
  std::string stopped = StoppedTrackedTasks(tasks_);
  int tracked_succeeded = 0;
  std::vector<std::string> succeeded;
  for (const auto& r : tasks_) {
    if (r.role == TaskRole::kTracked && r.state == TaskState::kSucceeded) {
      ++tracked_succeeded;
      succeeded.push_back(r.id.ToString());
    }
  }
  if (!stopped.empty() && tracked_failed == 0) {
    return Finish(JobState::kSucceeded, (succeeded.empty() ? "" : ListForHumans(succeeded) + " succeeded; ") + stopped);
  }
  if (tracked_failed == 0) return Finish(JobState::kSucceeded, "all " + std::to_string(tracked) + " tracked tasks succeeded");
  if (tracked_failed >= tracked) return Finish(JobState::kFailed, "every tracked task failed; first: " + first_failure);
  // Stopped tasks are neither successes nor failures: they are named on their own.
  return Finish(JobState::kSucceeded, std::to_string(tracked_succeeded) + " of " + std::to_string(tracked) +
                                          " tracked tasks succeeded (" + spec_.KeyName("loom.application.success-policy") +
                                          "=any); " + first_failure + (stopped.empty() ? "" : "; " + stopped));
}

}  // namespace loom
