// `loom gc` and `loom rm`: removing ended jobs' directories (cli/retention.h).

#include "cli/retention.h"

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/backends.h"
#include "cli/commands.h"
#include "cluster/local/job_processes.h"
#include "core/files.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "history/event_log.h"
#include "history/job_record.h"
#include "history/job_view.h"

namespace loom::cli {

namespace fs = std::filesystem;

Result<int64_t> ParseAge(std::string_view text) {
  std::string t = Trim(text);
  const std::string expected = "expected an age such as 7d, 12h, 30m, 45s or 0";
  if (t.empty()) return Status::InvalidArgument("empty age: " + expected);
  int64_t unit_ms = 0;
  switch (t.back()) {
    case 'd': unit_ms = 86400000; break;
    case 'h': unit_ms = 3600000; break;
    case 'm': unit_ms = 60000; break;
    case 's': unit_ms = 1000; break;
    default: break;
  }
  std::string digits = unit_ms ? t.substr(0, t.size() - 1) : t;
  Result<int64_t> n = ParseInt(digits);
  if (!n.ok() || *n < 0 || digits.empty() || !std::isdigit(static_cast<unsigned char>(digits[0]))) {
    return Status::InvalidArgument("'" + t + "': " + expected);
  }
  if (!unit_ms && *n != 0) return Status::InvalidArgument("'" + t + "' has no unit: " + expected);
  if (*n > int64_t{100} * 365 * 86400000 / std::max<int64_t>(unit_ms, 1)) {
    return Status::InvalidArgument("'" + t + "' is more than 100 years: " + expected);
  }
  return *n * unit_ms;
}

std::string FormatAge(int64_t ms) {
  if (ms <= 0) return "0s";
  if (ms % 86400000 == 0 || ms >= 2 * 86400000) return std::to_string(ms / 86400000) + "d";
  if (ms % 3600000 == 0 || ms >= 2 * 3600000) return std::to_string(ms / 3600000) + "h";
  if (ms % 60000 == 0 || ms >= 2 * 60000) return std::to_string(ms / 60000) + "m";
  return std::to_string(ms / 1000) + "s";
}

JobLiveness LivenessOf(const history::JobDir& dir) {
  JobLiveness job;
  if (auto view = history::LoadJobView(dir); view.ok()) {
    job.ended = view->final;
    job.state = view->state;
    job.ended_ms = view->final ? view->finished_ms : 0;
  }
  struct stat st {};
  if (job.ended && job.ended_ms <= 0 && ::stat(dir.status().c_str(), &st) == 0) {
    job.ended_ms = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  }
  // The job's marker misses a local executor, whose environ is root's alone to read; the pid
  // records of the local backend do not (cluster/local/job_processes.h).
  for (pid_t p : cluster::local::JobProcesses(dir)) job.processes.push_back(p);
  return job;
}

std::optional<std::string> WhyKept(const JobLiveness& job, int64_t older_than_ms, int64_t now_ms) {
  std::vector<std::string> pids;
  for (int p : job.processes) pids.push_back(std::to_string(p));
  std::string running = (pids.size() == 1 ? "pid " : "pids ") + Join(pids, ", ");
  if (!job.ended) {
    return "still " + job.state + (pids.empty() ? ": its record has no end yet" : " (" + running + ")");
  }
  if (!pids.empty()) return "ended " + job.state + ", but " + running + " of it still run";
  if (now_ms - job.ended_ms < older_than_ms) {
    return "ended " + FormatAge(now_ms - job.ended_ms) + " ago, younger than " + FormatAge(older_than_ms);
  }
  return std::nullopt;
}

int64_t TreeBytes(const std::string& path) {
  int64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec) && !it->is_symlink(size_ec)) {
      uintmax_t size = it->file_size(size_ec);
      if (!size_ec) total += static_cast<int64_t>(size);
    }
  }
  return total;
}

std::string FormatBytes(int64_t bytes) {
  char buf[32];
  if (bytes < 1000 * 1000) std::snprintf(buf, sizeof(buf), "%.1f kB", bytes / 1e3);
  else if (bytes < int64_t{1000} * 1000 * 1000) std::snprintf(buf, sizeof(buf), "%.1f MB", bytes / 1e6);
  else std::snprintf(buf, sizeof(buf), "%.2f GB", bytes / 1e9);
  return buf;
}

namespace {

// A directory `loom submit` made: it has the job's own record.
bool IsJobDir(const history::JobDir& dir) {
  return PathExists(dir.job_json()) || PathExists(dir.events());
}

// A record that does not say the job ended may be out of date: its backend knows (a local AM
// that died without a word gets its end written now). Nothing is killed here.
void SyncIfNotEnded(const history::JobDir& dir) {
  if (PathExists(dir.status())) return;
  if (auto backend = BackendForJob(dir); backend.ok()) (void)(*backend)->Sync(dir);
}

// What `loom gc --work-only` removes of an ended job: each task's work dir.
std::vector<std::string> WorkDirs(const history::JobDir& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator(dir.tasks_dir(), ec)) {
    std::string work = task.path().string() + "/work";
    if (IsDirectory(work)) out.push_back(work);
  }
  return out;
}

// Removes `path` whole; the error names it.
Status RemoveTree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return Status::Internal("cannot remove " + path + ": " + ec.message());
  return Status::Ok();
}

// Where a job's directory goes before it is deleted: out of jobs/ in one rename, so that no
// reader (list, status, a second gc) ever sees a half-removed job.
std::string RemovingDir() { return history::LoomHome() + "/.removing"; }

// Removes a job's directory: renamed out of jobs/ first (atomic), then deleted. Where the
// rename cannot be made (jobs/ on another file system), deleted in place.
Status RemoveJobDir(const history::JobDir& dir) {
  std::error_code ec;
  fs::create_directories(RemovingDir(), ec);
  const std::string parked = RemovingDir() + "/" + dir.job_id();
  fs::remove_all(parked, ec);  // an earlier removal of the same id that was cut short
  if (::rename(dir.root().c_str(), parked.c_str()) == 0) return RemoveTree(parked);
  return RemoveTree(dir.root());
}

// What an earlier gc or rm left in .removing/ when it was cut short.
void FinishCutShortRemovals() {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(RemovingDir(), ec)) (void)RemoveTree(e.path().string());
}

// `loom rm` takes only a job of this $LOOM_HOME: the directory, its links resolved, lies right
// under $LOOM_HOME/jobs, and its job.json (when it has one) names the same job. A path to any
// other directory holding a job.json (a copy, a backup, a symlink) is refused.
Result<history::JobDir> JobOfThisHome(const history::JobDir& dir) {
  const std::string jobs = history::LoomHome() + "/jobs";
  std::error_code ec, jobs_ec;
  fs::path real = fs::canonical(dir.root(), ec);
  fs::path real_jobs = fs::canonical(jobs, jobs_ec);
  if (ec || jobs_ec || real.parent_path() != real_jobs) {
    return Status::InvalidArgument(dir.root() + " is not a job directory under " + jobs +
                                   " (loom rm removes only this $LOOM_HOME's jobs)");
  }
  history::JobDir resolved(real.string());
  if (PathExists(resolved.job_json())) {
    LOOM_ASSIGN_OR_RETURN(history::JobRecord job, history::JobRecord::Read(resolved));
    if (!job.job_id.empty() && job.job_id != resolved.job_id()) {
      return Status::InvalidArgument(resolved.root() + " holds job " + job.job_id + "'s record, not job " +
                                     resolved.job_id() + "'s");
    }
  }
  return resolved;
}

}  // namespace

int GcCommand(std::vector<std::string> args) {
  std::string age_text;
  bool work_only = false, dry_run = false;
  CLI::App app("Remove ended jobs' directories under $LOOM_HOME", "gc");
  app.add_option("--older-than", age_text,
                 std::string("Only jobs that ended at least this long ago: 7d, 12h, 30m, 45s, 0 (default: $") +
                     kGcAgeEnv + ", else " + kGcDefaultAge + ")");
  app.add_flag("--work-only", work_only,
               "Remove only the tasks' work dirs (unpacked venvs, copies of --src_dir); keep the record and logs");
  app.add_flag("--dry-run", dry_run, "Say what would be removed, remove nothing");
  if (int rc = ParseCommandLine(app, args); rc >= 0) return rc;
  std::string source = "--older-than";
  if (age_text.empty()) {
    const char* env = std::getenv(kGcAgeEnv);
    age_text = env && *env ? env : kGcDefaultAge;
    source = env && *env ? std::string("$") + kGcAgeEnv : "the default";
  }
  Result<int64_t> older_than = ParseAge(age_text);
  if (!older_than.ok()) return UsageError("gc: " + source + " " + older_than.status().message());

  FinishCutShortRemovals();
  const std::string jobs = history::LoomHome() + "/jobs";
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(jobs, ec)) {
    if (e.is_directory()) ids.push_back(e.path().filename().string());
  }
  std::sort(ids.begin(), ids.end());
  const char* verb = dry_run ? "would remove" : "removed";
  int64_t freed = 0;
  int removed = 0, kept_young = 0, errors = 0;
  for (const std::string& id : ids) {
    history::JobDir dir(jobs + "/" + id);
    if (!IsJobDir(dir)) continue;
    SyncIfNotEnded(dir);
    JobLiveness job = LivenessOf(dir);
    int64_t now = history::NowMillis();
    if (std::optional<std::string> why = WhyKept(job, *older_than, now)) {
      if (!job.ended || !job.processes.empty()) std::printf("kept %s: %s\n", id.c_str(), why->c_str());
      else ++kept_young;
      continue;
    }
    std::vector<std::string> targets = work_only ? WorkDirs(dir) : std::vector<std::string>{dir.root()};
    if (targets.empty()) continue;  // --work-only: nothing left to remove
    int64_t bytes = 0;
    for (const std::string& t : targets) bytes += TreeBytes(t);
    Status s;
    for (const std::string& t : targets) {
      if (s.ok() && !dry_run) s = work_only ? RemoveTree(t) : RemoveJobDir(dir);
    }
    if (!s.ok()) {
      std::fprintf(stderr, "loom: gc: %s\n", s.message().c_str());
      ++errors;
      continue;
    }
    ++removed;
    freed += bytes;
    std::printf("%s %s%s (%s, ended %s ago): %s\n", verb, id.c_str(), work_only ? "'s work dirs" : "",
                job.state.c_str(), FormatAge(now - job.ended_ms).c_str(), FormatBytes(bytes).c_str());
  }
  const char* what = work_only ? (removed == 1 ? " job's work dirs" : " jobs' work dirs") : (removed == 1 ? " job" : " jobs");
  std::printf("loom gc: %s %d%s, %s", verb, removed, what, FormatBytes(freed).c_str());
  if (kept_young) {
    std::printf("; kept %d that ended less than %s ago (%s %s)", kept_young, FormatAge(*older_than).c_str(),
                source.c_str(), age_text.c_str());
  }
  std::printf("\n");
  return errors ? kExitJobFailed : kExitOk;
}

int RmCommand(std::vector<std::string> args) {
  std::vector<std::string> jobs;
  CLI::App app("Remove ended jobs' directories", "rm");
  app.add_option("job", jobs, "Job ids or job directories under $LOOM_HOME")->required();
  if (int rc = ParseCommandLine(app, args); rc >= 0) return rc;
  int rc = kExitOk;
  for (const std::string& job : jobs) {
    // Only what this machine holds: a job found through a cluster is not made here to be removed.
    Result<history::JobDir> dir = history::JobDir::Find(job);
    if (dir.ok() && IsJobDir(*dir)) dir = JobOfThisHome(*dir);
    if (!dir.ok() || !IsJobDir(*dir)) {
      rc = std::max(rc, UsageError("rm: " + (dir.ok() ? dir->root() + " is not a job directory (no job.json)"
                                                       : dir.status().message())));
      continue;
    }
    SyncIfNotEnded(*dir);
    JobLiveness live = LivenessOf(*dir);
    if (std::optional<std::string> why = WhyKept(live, 0, history::NowMillis())) {
      std::string next = live.ended ? "; try again once they have exited" : "; stop it first: loom kill " + dir->job_id();
      rc = std::max(rc, UsageError("rm: job " + dir->job_id() + " " + *why + next));
      continue;
    }
    int64_t bytes = TreeBytes(dir->root());
    if (Status s = RemoveJobDir(*dir); !s.ok()) {
      std::fprintf(stderr, "loom: rm: %s\n", s.message().c_str());
      rc = std::max(rc, kExitJobFailed);
      continue;
    }
    std::printf("removed %s (%s): %s\n", dir->job_id().c_str(), live.state.c_str(), FormatBytes(bytes).c_str());
  }
  return rc;
}

}  // namespace loom::cli
