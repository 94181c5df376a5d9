#pragma once
// MiniLoom: runs the real `loom` binary against a private $LOOM_HOME, for integration tests
// with real processes (in the spirit of Kudu's mini-cluster). Liveness checks read /proc, and of
// Loom's own bookkeeping only the local executors' pid records, without which a user who is not
// root cannot see them (cluster/local/job_processes.h; unprivileged_test checks them against
// what /proc shows).

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cluster/local/job_processes.h"
#include "core/eventually.h"
#include "core/files.h"
#include "core/subprocess.h"
#include "history/job_view.h"

namespace loom::testing {

// The matchers and literals nearly every integration test uses, named once for all of them.
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

// The scripts the integration jobs run, relative to the source tree (MiniLoom::Source).
inline const std::string kScripts = "tests/integration/scripts";

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
  std::chrono::steady_clock::duration took{};  // from start to exit (MiniLoom::Run)
};

// `--conf SETTING` for each of `settings` ("key=value").
inline std::vector<std::string> Confs(const std::vector<std::string>& settings) {
  std::vector<std::string> args;
  for (const std::string& s : settings) {
    args.push_back("--conf");
    args.push_back(s);
  }
  return args;
}

// The line of `text` that starts with `prefix`, without it.
inline std::string LineAfter(const std::string& text, const std::string& prefix) {
  size_t pos = text.find(prefix);
  if (pos == std::string::npos) return "";
  size_t end = text.find('\n', pos);
  return text.substr(pos + prefix.size(), end == std::string::npos ? std::string::npos : end - pos - prefix.size());
}

class MiniLoom {
 public:
  MiniLoom() {
    home_ = std::filesystem::temp_directory_path() /
            ("loom_it_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    // A home of this name is an earlier process's that had this pid and did not clean up (it was
    // killed): its jobs are not this test's.
    std::error_code ec;
    std::filesystem::remove_all(home_, ec);
    std::filesystem::create_directories(home_);
    std::lock_guard<std::mutex> lock(homes_mu_);
    homes_.insert(home_.string());
  }
  ~MiniLoom() {
    // Nothing a test started may outlive it, even when the test failed half-way.
    for (const auto& id : JobIds()) cluster::local::KillJobProcesses(Dir(id));
    {
      std::lock_guard<std::mutex> lock(homes_mu_);
      homes_.erase(home_.string());
    }
    std::error_code ec;
    std::filesystem::remove_all(home_, ec);
  }

  static std::string Binary() { return LOOM_TEST_BINARY; }
  static std::string Source(const std::string& rel) { return std::string(LOOM_TEST_SOURCE_DIR) + "/" + rel; }
  std::string home() const { return home_.string(); }

  std::map<std::string, std::string> Env() const {
    auto env = CurrentEnvironment();
    env["LOOM_HOME"] = home_.string();
    // A ledger of its own: a test's jobs never queue behind a user's (or another test's) jobs.
    env["LOOM_LEDGER_DIR"] = (home_ / "ledger").string();
    return env;
  }

  // Starts `loom args...` with stdout/stderr to files; the caller waits.
  Subprocess Start(const std::vector<std::string>& args, const std::string& name,
                   const std::map<std::string, std::string>& extra_env = {}) {
    SpawnOptions o;
    o.argv = {Binary()};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.env = Env();
    for (const auto& [k, v] : extra_env) o.env[k] = v;
    o.stdout_path = (home_ / (name + ".out")).string();
    o.stderr_path = (home_ / (name + ".err")).string();
    o.cwd = home_.string();
    auto child = Subprocess::Spawn(o);
    EXPECT_TRUE(child.ok()) << child.status().ToString();
    return std::move(child).value();
  }

  RunResult Collect(Subprocess& child, const std::string& name) {
    RunResult r;
    auto info = child.Wait();
    r.exit_code = info.ok() ? info->ShellCode() : -1;
    r.out = ReadFile((home_ / (name + ".out")).string()).value_or("");
    r.err = ReadFile((home_ / (name + ".err")).string()).value_or("");
    return r;
  }

  RunResult Run(const std::vector<std::string>& args, const std::map<std::string, std::string>& extra_env = {}) {
    std::string name = "run" + std::to_string(runs_++);
    auto start = std::chrono::steady_clock::now();
    Subprocess child = Start(args, name, extra_env);
    RunResult r = Collect(child, name);
    r.took = std::chrono::steady_clock::now() - start;
    return r;
  }

  std::vector<std::string> JobIds() const {
    std::vector<std::string> ids;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(home_ / "jobs", ec)) ids.push_back(e.path().filename());
    std::sort(ids.begin(), ids.end());
    return ids;
  }
  std::string OnlyJobId() const {
    auto ids = JobIds();
    EXPECT_EQ(ids.size(), 1u);
    return ids.empty() ? "" : ids.back();
  }
  history::JobDir Dir(const std::string& id) const { return history::JobDir((home_ / "jobs" / id).string()); }
  history::JobView View(const std::string& id) const {
    auto v = history::LoadJobView(Dir(id));
    return v.ok() ? *v : history::JobView{};
  }
  std::string TaskOutput(const std::string& id, const TaskId& task, bool err = false) const {
    return ReadFile(err ? Dir(id).task_stderr(task) : Dir(id).task_stdout(task)).value_or("");
  }
  // Waits until there is a job and `ready(id)` holds of the first; `*id` is that job's as soon
  // as there is one (for a failure's message too). False on timeout.
  bool WaitForJob(const std::function<bool(const std::string& id)>& ready, std::chrono::milliseconds timeout,
                  std::string* id) const {
    return loom::testing::Eventually(
        [&] {
          auto ids = JobIds();
          if (ids.empty()) return false;
          *id = ids[0];
          return ready(*id);
        },
        timeout);
  }
  // Waits until the (only) job has `tasks` tasks, all RUNNING; returns its id, "" on timeout.
  std::string WaitUntilRunning(size_t tasks, std::chrono::milliseconds timeout) const {
    std::string id;
    bool ok = WaitForJob(
        [&](const std::string& job) {
          auto v = View(job);
          return v.tasks.size() == tasks &&
                 std::all_of(v.tasks.begin(), v.tasks.end(), [](const auto& t) { return t.state == TaskState::kRunning; });
        },
        timeout, &id);
    return ok ? id : "";
  }

  // Processes of the job still alive: those that carry the marker every Loom process carries,
  // and its local executors, which hide their environ (cluster/local/job_processes.h). Static:
  // the job's directory is looked for in the home of every MiniLoom alive.
  static std::vector<pid_t> JobProcesses(const std::string& id) {
    std::optional<history::JobDir> dir;
    {
      std::lock_guard<std::mutex> lock(homes_mu_);
      for (const auto& home : homes_) {
        if (std::filesystem::exists(home + "/jobs/" + id)) dir.emplace(home + "/jobs/" + id);
      }
    }
    return dir ? cluster::local::JobProcesses(*dir) : FindProcessesWithEnv("LOOM_JOB_ID=" + id);
  }

  // Of job `id`'s live processes, those of task `task` ("worker:1"): its executor (`loom
  // executor`) when `executor`, else the processes it started. Only the job's own: a task id
  // alone matches any job's task on the machine, a user's included.
  static std::vector<pid_t> TaskProcesses(const std::string& id, const std::string& task, bool executor) {
    std::vector<pid_t> of_job = JobProcesses(id), out;
    for (pid_t p : FindProcessesWithEnv("LOOM_TASK_ID=" + task)) {
      if (std::find(of_job.begin(), of_job.end(), p) == of_job.end()) continue;
      if ((CountRole({p}, "executor") == 1) == executor) out.push_back(p);
    }
    return out;
  }

  // Waits until the (only) job has `tasks` tasks, all RUNNING, and at least `processes` processes
  // alive; returns its id, "" (with a failure that says how far it got) on timeout.
  std::string WaitUntilRunningWithProcesses(size_t tasks, size_t processes) const {
    std::string id = WaitUntilRunning(tasks, std::chrono::seconds(30));
    if (id.empty()) {
      ADD_FAILURE() << "no job with " << tasks << " tasks running";
    } else if (!loom::testing::Eventually([&] { return JobProcesses(id).size() >= processes; }, std::chrono::seconds(15))) {
      ADD_FAILURE() << JobProcesses(id).size() << " processes of " << id << ", not " << processes;
      id.clear();
    }
    return id;
  }

  // The command lines of `pids`, for failure messages.
  static std::string DescribeProcesses(const std::vector<pid_t>& pids) {
    std::string out;
    for (pid_t p : pids) {
      std::string cmd = ReadFile("/proc/" + std::to_string(p) + "/cmdline").value_or("");
      std::replace(cmd.begin(), cmd.end(), '\0', ' ');
      out += std::to_string(p) + ": " + cmd + "\n";
    }
    return out;
  }

  // Whether every process of job `id` has ended within `timeout`; a failure lists those left.
  static ::testing::AssertionResult ProcessesEndWithin(const std::string& id, std::chrono::milliseconds timeout) {
    if (loom::testing::Eventually([&] { return JobProcesses(id).empty(); }, timeout)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "processes of " << id << " left:\n" << DescribeProcesses(JobProcesses(id));
  }

  // How many of `pids` run `loom ROLE` (argv[1] is ROLE).
  static size_t CountRole(const std::vector<pid_t>& pids, const std::string& role) {
    size_t n = 0;
    for (pid_t p : pids) {
      std::string cmd = ReadFile("/proc/" + std::to_string(p) + "/cmdline").value_or("");
      size_t end = cmd.find('\0');
      if (end != std::string::npos && cmd.compare(end + 1, role.size() + 1, role + std::string(1, '\0')) == 0) ++n;
    }
    return n;
  }

 private:
  static inline int counter_ = 0;
  static inline std::mutex homes_mu_;
  static inline std::set<std::string> homes_;
  int runs_ = 0;
  std::filesystem::path home_;
};

// `loom submit` of `script` in the source tree's `src` under /usr/bin/python3, then `extra`.
inline std::vector<std::string> PythonSubmitArgs(const std::string& src, const std::string& script,
                                                 std::vector<std::string> extra) {
  std::vector<std::string> args = {"submit", "--src_dir", MiniLoom::Source(src), "--executes", script,
                                   "--python_binary_path", "/usr/bin/python3"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// `loom submit` of tasks that sleep until stopped, each with a child of its own, under `settings`.
inline std::vector<std::string> SleepersWithChildren(const std::vector<std::string>& settings) {
  std::vector<std::string> extra = {"--task_params", "--spawn-child"};
  for (std::string& arg : Confs(settings)) extra.push_back(std::move(arg));
  return PythonSubmitArgs(kScripts, "sleep_forever.py", std::move(extra));
}

}  // namespace loom::testing
