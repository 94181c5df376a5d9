// `loom status|logs|kill|list`: everything they know comes from the job directory.

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/commands.h"
#include "cluster/local/local_job_submitter.h"
#include "cluster/yarn/yarn_job_submitter.h"
#include "core/files.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "history/event_log.h"
#include "history/job_view.h"

namespace loom::cli {
namespace {

// Parses `args` into `app`; returns -1 to go on, else the exit code.
int Parse(CLI::App& app, std::vector<std::string> args) {
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

void PrintView(const history::JobView& v) {
  std::printf("Job %s", v.id.c_str());
  if (!v.name.empty()) std::printf(" (%s)", v.name.c_str());
  std::printf("  %s", v.state.c_str());
  int64_t end = v.finished_ms ? v.finished_ms : history::NowMillis();
  if (v.submitted_ms) std::printf("  %s", history::FormatDuration(end - v.submitted_ms).c_str());
  if (v.attempt) std::printf("  (gang restarted %d time%s)", v.attempt, v.attempt > 1 ? "s" : "");
  std::printf("\n");
  if (!v.diagnostics.empty()) std::printf("  %s\n", v.diagnostics.c_str());
  std::fputs(history::RenderTaskTable(v).c_str(), stdout);
  for (const auto& t : v.tasks) {
    if (t.state == "FAILED" && !t.diagnostics.empty()) std::printf("\n%s: %s\n", t.id.c_str(), t.diagnostics.c_str());
  }
}

// Copies `path` from `*offset` to stdout; returns whether anything was printed.
bool PrintFrom(const std::string& path, std::streamoff* offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(*offset);
  char buf[65536];
  bool any = false;
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    std::fwrite(buf, 1, static_cast<size_t>(in.gcount()), stdout);
    *offset += in.gcount();
    any = true;
  }
  std::fflush(stdout);
  return any;
}

}  // namespace

int StatusCommand(std::vector<std::string> args) {
  std::string job;
  bool json_out = false;
  CLI::App app("Show a job and its tasks", "status");
  app.add_option("job", job, "Job id or job directory")->required();
  app.add_flag("--json", json_out, "Print status.json / the events as JSON");
  if (int rc = Parse(app, args); rc >= 0) return rc;
  auto dir = history::JobDir::Find(job);
  if (!dir.ok()) return UsageError(dir.status().message());
  auto view = history::LoadJobView(*dir);
  if (!view.ok()) return UsageError(view.status().message());
  if (!view->final && view->state != "SUBMITTED" && !cluster::local::LocalJobSubmitter::LiveAmPid(*dir)) {
    view->state += " (AM not running)";
  }
  if (json_out) {
    nlohmann::json tasks = nlohmann::json::array();
    for (const auto& t : view->tasks) {
      tasks.push_back({{"task", t.id}, {"state", t.state}, {"address", t.address}, {"exit_code", t.exit_code},
                       {"diagnostics", t.diagnostics}, {"peak_rss_bytes", t.peak_rss_bytes}});
    }
    nlohmann::json j = {{"job_id", view->id}, {"name", view->name}, {"state", view->state},
                        {"diagnostics", view->diagnostics}, {"tasks", tasks}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    PrintView(*view);
  }
  return view->state == "FAILED" || view->state == "KILLED" ? kExitJobFailed : kExitOk;
}

int LogsCommand(std::vector<std::string> args) {
  std::string job, task;
  bool stderr_only = false, follow = false;
  CLI::App app("Print a task's output", "logs");
  app.add_option("job", job, "Job id or job directory")->required();
  app.add_option("--task", task, "TYPE:INDEX (default: every task)");
  app.add_flag("--stderr", stderr_only, "Print stderr instead of stdout");
  app.add_flag("-f,--follow", follow, "Keep printing until the job ends");
  if (int rc = Parse(app, args); rc >= 0) return rc;
  auto dir = history::JobDir::Find(job);
  if (!dir.ok()) return UsageError(dir.status().message());
  std::vector<TaskId> tasks;
  if (!task.empty()) {
    auto id = ParseTaskId(task);
    if (!id.ok()) return UsageError("--task " + id.status().message());
    if (!IsDirectory(dir->task_dir(*id))) return UsageError("job " + dir->job_id() + " has no task " + task);
    tasks.push_back(*id);
  } else {
    auto view = history::LoadJobView(*dir);
    if (view.ok()) {
      for (const auto& t : view->tasks) {
        if (auto id = ParseTaskId(t.id); id.ok()) tasks.push_back(*id);
      }
    }
  }
  std::vector<std::string> files;
  for (const TaskId& t : tasks) files.push_back(stderr_only ? dir->task_stderr(t) : dir->task_stdout(t));
  std::vector<std::streamoff> offsets(files.size(), 0);
  auto print_all = [&] {
    for (size_t i = 0; i < files.size(); ++i) {
      if (files.size() > 1 && !follow && PathExists(files[i])) {
        std::printf("==> %s %s <==\n", tasks[i].ToString().c_str(), stderr_only ? "stderr" : "stdout");
      }
      PrintFrom(files[i], &offsets[i]);
    }
  };
  print_all();
  if (!follow) return kExitOk;
  int ino = ::inotify_init1(IN_CLOEXEC);
  for (const TaskId& t : tasks) {
    (void)MakeDirs(dir->task_dir(t));
    ::inotify_add_watch(ino, dir->task_dir(t).c_str(), IN_MODIFY | IN_CREATE);
  }
  ::inotify_add_watch(ino, dir->root().c_str(), IN_CREATE | IN_MOVED_TO);
  while (!PathExists(dir->status())) {
    pollfd pfd{ino, POLLIN, 0};
    ::poll(&pfd, 1, 1000);
    char buf[4096];
    if (pfd.revents & POLLIN) (void)!::read(ino, buf, sizeof(buf));
    print_all();
  }
  print_all();
  ::close(ino);
  return kExitOk;
}

int KillCommand(std::vector<std::string> args) {
  std::string job;
  CLI::App app("Stop a job and everything it runs", "kill");
  app.add_option("job", job, "Job id or job directory")->required();
  if (int rc = Parse(app, args); rc >= 0) return rc;
  auto dir = history::JobDir::Find(job);
  if (!dir.ok()) return UsageError(dir.status().message());
  if (PathExists(dir->status())) {
    auto view = history::LoadJobView(*dir);
    std::printf("Job %s already ended: %s\n", dir->job_id().c_str(), view.ok() ? view->state.c_str() : "?");
    return kExitOk;
  }
  if (auto yarn_job = cluster::yarn::YarnJobRecord::Read(*dir); yarn_job.ok()) {
    cluster::yarn::YarnJobSubmitter yarn({}, "", SelfExecutable(), {});
    if (Status s = yarn.Kill(*dir, std::chrono::milliseconds(10000)); !s.ok()) {
      std::fprintf(stderr, "loom: %s\n", s.ToString().c_str());
      return kExitJobFailed;
    }
    // The client following the job records YARN's own words; if none is, this is the record.
    (void)history::WriteFinalStatus(*dir, {{"job_id", dir->job_id()},
                                           {"state", "KILLED"},
                                           {"diagnostics", "killed by loom kill (YARN application " +
                                                               yarn_job->application_id + ")"},
                                           {"finished_ms", history::NowMillis()}});
  } else {
    cluster::local::LocalJobSubmitter submitter({}, SelfExecutable());
    (void)submitter.Kill(*dir, std::chrono::milliseconds(10000));
  }
  // The AM writes KILLED; if it was already dead, the record is ours to finish.
  (void)history::WriteFinalStatus(*dir, {{"job_id", dir->job_id()},
                                         {"state", "KILLED"},
                                         {"diagnostics", "killed by loom kill (the AM was not running)"},
                                         {"finished_ms", history::NowMillis()}});
  auto view = history::LoadJobView(*dir);
  std::printf("Job %s %s\n", dir->job_id().c_str(), view.ok() ? view->state.c_str() : "KILLED");
  return kExitOk;
}

int ListCommand(std::vector<std::string> args) {
  CLI::App app("List jobs", "list");
  if (int rc = Parse(app, args); rc >= 0) return rc;
  std::string jobs_dir = history::LoomHome() + "/jobs";
  std::vector<history::JobView> views;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(jobs_dir, ec)) {
    if (!entry.is_directory()) continue;
    if (auto v = history::LoadJobView(history::JobDir(entry.path().string())); v.ok()) views.push_back(*v);
  }
  std::sort(views.begin(), views.end(), [](const auto& a, const auto& b) { return a.submitted_ms > b.submitted_ms; });
  std::printf("%-26s  %-22s  %-10s  %-8s  %s\n", "JOB", "NAME", "STATE", "TIME", "TASKS");
  for (const auto& v : views) {
    int64_t end = v.finished_ms ? v.finished_ms : history::NowMillis();
    std::printf("%-26s  %-22s  %-10s  %-8s  %zu\n", v.id.c_str(), v.name.substr(0, 22).c_str(), v.state.c_str(),
                v.submitted_ms ? history::FormatDuration(end - v.submitted_ms).c_str() : "-", v.tasks.size());
  }
  return kExitOk;
}

}  // namespace loom::cli
