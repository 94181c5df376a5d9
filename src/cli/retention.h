#pragma once
// Retention of ended jobs under $LOOM_HOME (`loom gc`, `loom rm`): a job's directory holds its
// tasks' work dirs (copies of --src_dir, unpacked venvs: hundreds of MB a job), kept until the
// user removes them. Nothing is removed from a job that may still run: its record must say it
// ended (status.json) *and* no process of it may be left (every Loom process of a job carries
// LOOM_JOB_ID=<id>, its AM first), as /proc shows it now.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "history/job_dir.h"

namespace loom::cli {

// `loom gc`'s default age when --older-than is not given: this variable, else 7 days.
inline constexpr char kGcAgeEnv[] = "LOOM_GC_OLDER_THAN";
inline constexpr char kGcDefaultAge[] = "7d";

// "7d", "12h", "30m", "45s" or "0" (any ended job) as milliseconds; InvalidArgument otherwise.
Result<int64_t> ParseAge(std::string_view text);

// What decides whether a job may go.
struct JobLiveness {
  bool ended = false;          // its record's final status (status.json) is written
  std::string state;           // as its record says: RUNNING, SUCCEEDED, ...
  int64_t ended_ms = 0;        // when it ended (status.json's finished_ms, else the file's mtime)
  std::vector<int> processes;  // its live processes (cluster/local/job_processes.h)
};

// The job's liveness now, from its directory and /proc.
JobLiveness LivenessOf(const history::JobDir& dir);

// Why the job must stay, or nullopt when it may be removed: it ended, nothing of it runs, and
// it ended at least `older_than_ms` before `now_ms` (0: any ended job).
std::optional<std::string> WhyKept(const JobLiveness& job, int64_t older_than_ms, int64_t now_ms);

// The bytes of the files under `path` (not following links).
int64_t TreeBytes(const std::string& path);
// "246.1 MB"
std::string FormatBytes(int64_t bytes);
// "7d", "3h", "12m", "40s": the largest whole unit, as ParseAge reads it.
std::string FormatAge(int64_t ms);

}  // namespace loom::cli
