#pragma once
// JobView: a job as `loom status|list|submit` show it, rebuilt from the job directory alone
// (job.json, events.jsonl and status.json), so it works whether the AM is alive or not.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "history/job_dir.h"

namespace loom::history {

struct TaskView {
  std::string id;  // "worker:0"
  std::string state = "PENDING";
  std::string address;
  int exit_code = 0;
  std::string diagnostics;
  int64_t peak_rss_bytes = 0;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  int restarts = 0;  // of this task alone (its type's restart-policy)
};

struct JobView {
  std::string id;
  std::string name;
  std::string backend;
  std::string state = "SUBMITTED";
  std::string diagnostics;
  int64_t submitted_ms = 0;
  int64_t finished_ms = 0;
  bool final = false;  // status.json exists
  int attempt = 0;     // gang restarts so far (loom.am.retry-count)
  std::vector<TaskView> tasks;

  TaskView* FindTask(const std::string& id);
  // Folds one events.jsonl entry into the view; entries of the wrong shape are ignored.
  void Apply(const nlohmann::json& event);

 private:
  void ApplyChecked(const nlohmann::json& event);
};

Result<JobView> LoadJobView(const JobDir& dir);

// Writes status.json if no one has yet: the first final status wins, across processes.
// Returns AlreadyExists when another writer was first.
Status WriteFinalStatus(const JobDir& dir, const nlohmann::json& status);

// A fixed-width table of the tasks: TASK STATE ADDRESS EXIT RSS.
std::string RenderTaskTable(const JobView& view);
std::string FormatDuration(int64_t ms);

}  // namespace loom::history
