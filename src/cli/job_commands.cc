// `loom status|logs|kill|list`: each asks the job's backend to bring the job directory up to
// date (cli/backends.h), then reads it; logs come through the backend too.

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "cli/am_startup.h"
#include "cli/backends.h"
#include "cli/commands.h"
#include "core/config/config.h"
#include "core/files.h"
#include "core/job_state.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "history/event_log.h"
#include "history/job_view.h"

namespace loom::cli {
namespace {

void PrintView(const history::JobView& v) {
  std::printf("Job %s", v.id.c_str());
  if (!v.name.empty()) std::printf(" (%s)", v.name.c_str());
  std::printf("  %s", v.state.c_str());
  int64_t end = v.finished_ms ? v.finished_ms : history::NowMillis();
  if (v.submitted_ms) std::printf("  %s", history::FormatDuration(end - v.submitted_ms).c_str());
  if (v.attempt) std::printf("  (gang restarted %d time%s)", v.attempt, v.attempt > 1 ? "s" : "");
  std::printf("\n");
  if (!v.diagnostics.empty()) std::printf("  %s\n", v.diagnostics.c_str());
  if (v.state == "QUEUED") std::printf("  queued, position %d: %s\n", v.queue_position, v.queue_reason.c_str());
  // The AM's own page while it serves it; a backend with a tracking URL (YARN's proxy to that
  // same page) names it in its Describe lines instead.
  if (!v.dashboard_url.empty() && v.tracking_url.empty()) std::printf("  Dashboard: %s\n", v.dashboard_url.c_str());
  if (!v.tensorboard_url.empty()) std::printf("  TensorBoard: %s\n", v.tensorboard_url.c_str());
  for (const std::string& w : v.warnings) std::printf("  warning: %s\n", w.c_str());
  std::fputs(history::RenderTaskTable(v).c_str(), stdout);
  for (const auto& t : v.tasks) {
    if (t.state == TaskState::kFailed && !t.diagnostics.empty()) std::printf("\n%s: %s\n", t.id.c_str(), t.diagnostics.c_str());
  }
  // Tasks Loom stopped say why, one line per reason ("ps:0: stopped by the AM: tracked tasks
  // finished").
  std::vector<std::pair<std::string, std::vector<std::string>>> stopped;
  for (const auto& t : v.tasks) {
    if (t.state != TaskState::kKilled || t.diagnostics.empty()) continue;
    auto it = std::find_if(stopped.begin(), stopped.end(), [&](const auto& e) { return e.first == t.diagnostics; });
    if (it == stopped.end()) it = stopped.insert(stopped.end(), {t.diagnostics, {}});
    it->second.push_back(t.id);
  }
  for (const auto& [why, ids] : stopped) std::printf("  %s: %s\n", Join(ids, ", ").c_str(), why.c_str());
  for (const auto& t : v.tasks) {
    if (!t.gpus.empty() && !IsTerminal(t.state)) std::printf("  %s GPUs %s\n", t.id.c_str(), t.gpus.c_str());
  }
  for (const auto& t : v.tasks) {
    if (t.state == TaskState::kPending && !t.waiting.empty()) std::printf("  %s waiting %s\n", t.id.c_str(), t.waiting.c_str());
  }
}

// The job's directory and its backend, synced: what every command starts from.
struct OpenJob {
  history::JobDir dir;
  std::unique_ptr<cluster::Backend> backend;
  bool synced = true;  // false: the backend could not be asked; the record is as last seen
};

Result<OpenJob> Open(const std::string& id) {
  LOOM_ASSIGN_OR_RETURN(history::JobDir dir, FindJob(id));
  LOOM_ASSIGN_OR_RETURN(auto backend, BackendForJob(dir));
  bool synced = true;
  if (Status s = backend->Sync(dir); !s.ok()) {
    std::fprintf(stderr, "loom: warning: %s\n", s.WithContext("cannot ask the " + backend->name() + " backend about " + dir.job_id()).ToString().c_str());
    synced = false;
  }
  (void)EnforceAmStartupTimeout(dir, *backend, AmStartupTimeoutOf(dir));  // also when no client follows it
  return OpenJob{std::move(dir), std::move(backend), synced};
}

// Why a job could not be opened, and the exit code: 2 for what the user named wrong (no such
// job), 1 when the cluster that knows it could not be asked (README: "or the cluster could not
// be reached").
int OpenFailed(const Status& s) {
  if (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kInvalidArgument) return UsageError(s.message());
  std::fprintf(stderr, "loom: %s\n", s.ToString().c_str());
  return kExitJobFailed;
}

// Prints complete lines of one stream, each prefixed with its task when several are shown
// (as torchrun's --tee does); the rest waits for its newline.
class LinePrinter {
 public:
  explicit LinePrinter(std::string prefix) : prefix_(std::move(prefix)) {}
  void Add(const std::string& bytes, bool flush_partial) {
    pending_ += bytes;
    size_t start = 0;
    for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
      Print(std::string_view(pending_).substr(start, nl + 1 - start));
    }
    pending_.erase(0, start);
    if (flush_partial && !pending_.empty()) {
      pending_ += '\n';
      Print(pending_);
      pending_.clear();
    }
  }

 private:
  void Print(std::string_view line) {
    if (!prefix_.empty()) std::fputs(prefix_.c_str(), stdout);
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  std::string prefix_;
  std::string pending_;
};

}  // namespace

int ParseCommandLine(CLI::App& app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    return UsageError(app.get_name() + ": " + e.what());
  }
  return -1;
}

int StatusCommand(std::vector<std::string> args) {
  std::string job;
  bool json_out = false;
  CLI::App app("Show a job and its tasks", "status");
  app.add_option("job", job, "Job id, job directory, or the backend's id (application_...)")->required();
  app.add_flag("--json", json_out, "Print the job as JSON");
  if (int rc = ParseCommandLine(app, args); rc >= 0) return rc;
  auto open = Open(job);
  if (!open.ok()) return OpenFailed(open.status());
  auto view = history::LoadJobView(open->dir);
  if (!view.ok()) return UsageError(view.status().message());
  if (json_out) {
    nlohmann::json j = history::ToJson(*view);
    j["backend_details"] = open->backend->Describe(open->dir);
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    PrintView(*view);
    for (const std::string& line : open->backend->Describe(open->dir)) std::printf("  %s\n", line.c_str());
  }
  // A job whose backend could not be asked may have ended since: not a success to report.
  bool unknown = !open->synced && !PathExists(open->dir.status());
  return unknown || view->state == "FAILED" || view->state == "KILLED" ? kExitJobFailed : kExitOk;
}

int LogsCommand(std::vector<std::string> args) {
  std::string job, task, file;
  bool stderr_only = false, follow = false;
  int process = -1;  // -1: every process (not the user's to give: --process takes LOCAL_RANKs)
  CLI::App app("Print a task's output", "logs");
  app.add_option("job", job, "Job id, job directory, or the backend's id (application_...)")->required();
  app.add_option("--task", task, "TYPE:INDEX, or am for the ApplicationMaster (default: every task)");
  app.add_flag("--stderr", stderr_only, "Print stderr instead of stdout");
  app.add_option("--file", file, "Another log file of the task: executor.log (am.log for --task am)");
  CLI::Option* process_opt = app.add_option(
      "--process", process, "With --task: only process LOCAL_RANK of the task (loom.<type>.processes; default: every one)");
  app.add_flag("-f,--follow", follow, "Keep printing until the job ends");
  if (int rc = ParseCommandLine(app, args); rc >= 0) return rc;
  if (process_opt->count() > 0 && process < 0) {
    return UsageError("--process " + std::to_string(process) + ": a LOCAL_RANK, 0 or more");
  }
  auto open = Open(job);
  if (!open.ok()) return OpenFailed(open.status());
  const history::JobDir& dir = open->dir;
  cluster::Backend& backend = *open->backend;
  auto view = history::LoadJobView(dir);
  if (!view.ok()) return UsageError(view.status().message());
  if (file.empty()) file = stderr_only ? "stderr" : "stdout";
  if (file.find('/') != std::string::npos) return UsageError("--file " + file + ": a file name, not a path");
  if (process >= 0 && (task.empty() || task == "am")) {
    return UsageError("--process " + std::to_string(process) + " needs --task TYPE:INDEX");
  }
  // loom.<type>.processes: process i of a task writes stdout.<i> / stderr.<i> (0: stdout, stderr).
  config::Config conf;
  (void)conf.MergeXmlFile(dir.config(), /*recorded_sources=*/true);  // none (an imported job): 1 each
  auto processes_of = [&](const std::string& type) {
    // framework mpi: a task's processes are ranks, whose output is the launcher's (mpirun's).
    if (ToLower(conf.Get("loom.application.framework").value_or("")) == "mpi") return 1;
    std::optional<std::string> value = conf.Get("loom." + type + ".processes");
    Result<int64_t> n = value ? ParseInt(*value) : Result<int64_t>(int64_t{1});
    return n.ok() && *n > 1 ? static_cast<int>(*n) : 1;
  };
  const bool per_process = file == "stdout" || file == "stderr";
  std::vector<cluster::LogTarget> targets;
  std::vector<std::string> labels;  // "worker:0", or "worker:0/1" for process 1 of several
  auto add_task = [&](const TaskId& id) {
    int n = per_process ? processes_of(id.type) : 1;
    // A restarted task's earlier containers first, where each keeps its own logs (YARN), as
    // `yarn logs` shows them; then its current one ("").
    std::vector<std::string> containers;
    for (const auto& t : view->tasks) {
      if (t.id != id.ToString() || !backend.LogsPerContainer()) continue;
      for (const auto& past : t.earlier) containers.push_back(past.container);
    }
    containers.push_back("");
    for (const std::string& container : containers) {
      for (int i = 0; i < n; ++i) {
        if (process >= 0 && i != process) continue;
        targets.push_back({id, i == 0 ? file : file + "." + std::to_string(i), container});
        std::string label = n == 1 ? id.ToString() : id.ToString() + "/" + std::to_string(i);
        labels.push_back(container.empty() ? label : label + " (earlier container " + container + ")");
      }
    }
  };
  if (task == "am") {
    targets.push_back({std::nullopt, file == "stdout" || file == "stderr" ? "am.log" : file});
    labels.push_back("am");
  } else if (!task.empty()) {
    auto id = ParseTaskId(task);
    if (!id.ok()) return UsageError("--task " + id.status().message());
    bool known = false;
    for (const auto& t : view->tasks) known |= t.id == id->ToString();
    if (!known) {
      std::vector<std::string> names;
      for (const auto& t : view->tasks) names.push_back(t.id);
      return UsageError("job " + dir.job_id() + " has no task " + task + " (tasks: " + Join(names, ", ") + ", am)");
    }
    if (process >= 0 && (!per_process || process >= processes_of(id->type))) {
      if (!per_process) return UsageError("--process: " + file + " is the task's, not a process's");
      int n = processes_of(id->type);
      return UsageError("--process " + std::to_string(process) + ": task " + task + " has " + std::to_string(n) +
                        " process" + (n == 1 ? "" : "es") + " (" + config::Spelled(conf, "loom." + id->type + ".processes") +
                        "=" + std::to_string(n) + "), LOCAL_RANK 0" + (n == 1 ? "" : ".." + std::to_string(n - 1)));
    }
    add_task(*id);
  }
  // Every task: those the record knows now, and when following, those it learns later (a job
  // found from another client right after its submit knows none yet).
  const bool every_task = task.empty();
  std::set<std::string> added;
  auto add_known_tasks = [&](const history::JobView& v) {
    for (const auto& t : v.tasks) {
      if (!added.insert(t.id).second) continue;
      if (auto id = ParseTaskId(t.id); id.ok()) add_task(*id);
    }
  };
  if (every_task) add_known_tasks(*view);
  // Labelled when several are shown, or may be: the tasks of a record that names none yet.
  const bool several = targets.size() > 1 || (follow && every_task && targets.empty());
  std::vector<int64_t> offsets;
  std::vector<LinePrinter> printers;
  std::vector<std::string> missing;
  auto track_targets = [&] {
    while (offsets.size() < targets.size()) {
      printers.emplace_back(follow && several ? "[" + labels[offsets.size()] + "] " : "");
      offsets.push_back(0);
      missing.emplace_back();
    }
  };
  track_targets();
  // One pass over every stream; returns whether anything was printed.
  auto print_all = [&](bool last) {
    bool any = false;
    for (size_t i = 0; i < targets.size(); ++i) {
      auto bytes = backend.ReadLog(dir, targets[i], offsets[i]);
      if (!bytes.ok()) {
        missing[i] = bytes.status().message();
        continue;
      }
      missing[i].clear();
      if (bytes->empty() && !last) continue;
      if (several && !follow && !bytes->empty()) {
        std::printf("==> %s %s <==\n", labels[i].c_str(), targets[i].file.c_str());
      }
      offsets[i] += static_cast<int64_t>(bytes->size());
      printers[i].Add(*bytes, last || !follow);
      any |= !bytes->empty();
    }
    std::fflush(stdout);
    return any;
  };
  print_all(!follow);
  if (follow) {
    while (!PathExists(dir.status())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      print_all(false);
      if (Status s = backend.Sync(dir); !s.ok()) break;
      if (every_task) {
        if (auto now = history::LoadJobView(dir); now.ok()) add_known_tasks(*now);
        track_targets();
      }
    }
    print_all(true);
  }
  // A stream that could not be read says why, once (e.g. the NodeManager no longer has it).
  bool printed_nothing = true, found_none = true;
  for (int64_t o : offsets) printed_nothing &= o == 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    found_none &= !missing[i].empty();
    if (!missing[i].empty() && (printed_nothing || !several)) {
      std::fprintf(stderr, "loom: %s %s: %s\n", labels[i].c_str(), targets[i].file.c_str(), missing[i].c_str());
    }
  }
  // Not one of the logs asked for exists anywhere, and the job has ended (while it runs they
  // may still come: its API clients poll): not a success.
  return found_none && !targets.empty() && PathExists(dir.status()) ? kExitJobFailed : kExitOk;
}

int KillCommand(std::vector<std::string> args) {
  std::string job;
  CLI::App app("Stop a job and everything it runs", "kill");
  app.add_option("job", job, "Job id, job directory, or the backend's id (application_...)")->required();
  if (int rc = ParseCommandLine(app, args); rc >= 0) return rc;
  auto open = Open(job);
  if (!open.ok()) return OpenFailed(open.status());
  const history::JobDir& dir = open->dir;
  if (PathExists(dir.status())) {
    auto view = history::LoadJobView(dir);
    std::printf("Job %s already ended: %s\n", dir.job_id().c_str(), view.ok() ? view->state.c_str() : "?");
    return kExitOk;
  }
  std::string cause = "killed by loom kill (user " + ClientUser() + ")";
  if (Status s = open->backend->Kill(dir, std::chrono::milliseconds(10000), cause); !s.ok()) {
    std::fprintf(stderr, "loom: %s\n", s.WithContext("killing " + dir.job_id()).ToString().c_str());
    return kExitJobFailed;
  }
  auto view = history::LoadJobView(dir);
  std::printf("Job %s %s\n", dir.job_id().c_str(), view.ok() ? view->state.c_str() : "KILLED");
  for (const std::string& line : open->backend->Describe(dir)) std::printf("  %s\n", line.c_str());
  return kExitOk;
}

int ListCommand(std::vector<std::string> args) {
  CLI::App app("List jobs", "list");
  if (int rc = ParseCommandLine(app, args); rc >= 0) return rc;
  std::string jobs_dir = history::LoomHome() + "/jobs";
  std::vector<history::JobView> views;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(jobs_dir, ec)) {
    if (!entry.is_directory()) continue;
    history::JobDir dir(entry.path().string());
    if (!PathExists(dir.status())) {
      // A job still running as far as its record says: its backend knows better.
      if (auto backend = BackendForJob(dir); backend.ok()) {
        (void)(*backend)->Sync(dir);
        (void)EnforceAmStartupTimeout(dir, **backend, AmStartupTimeoutOf(dir));
      }
    }
    if (auto v = history::LoadJobView(dir); v.ok()) views.push_back(*v);
  }
  std::sort(views.begin(), views.end(), [](const auto& a, const auto& b) { return a.submitted_ms > b.submitted_ms; });
  std::printf("%-26s  %-22s  %-7s  %-10s  %-8s  %-5s  %s\n", "JOB", "NAME", "BACKEND", "STATE", "TIME", "TASKS", "ID");
  for (const auto& v : views) {
    int64_t end = v.finished_ms ? v.finished_ms : history::NowMillis();
    std::string state = v.state;
    if (!v.final && v.backend_state.rfind("ACCEPTED", 0) == 0) state = "ACCEPTED";
    // A queued local job: its place in line, and (where the backend's id would be) why.
    std::string id_or_reason = v.backend_id;
    if (state == "QUEUED") {
      state = "QUEUED #" + std::to_string(v.queue_position);
      id_or_reason += (id_or_reason.empty() ? "" : " ") + v.queue_reason;
    }
    std::printf("%-26s  %-22s  %-7s  %-10s  %-8s  %-5zu  %s\n", v.id.c_str(), v.name.substr(0, 22).c_str(),
                v.backend.empty() ? "local" : v.backend.c_str(), state.c_str(),
                v.submitted_ms ? history::FormatDuration(end - v.submitted_ms).c_str() : "-", v.tasks.size(),
                id_or_reason.c_str());
  }
  return kExitOk;
}

}  // namespace loom::cli
