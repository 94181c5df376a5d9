// Chaos: jobs in which a random worker, executor or the AM is SIGKILLed or SIGSTOPped at a
// random moment while the job runs. Every job must end FAILED, within its timeouts, and leave no
// process behind (checked from /proc, not from Loom's bookkeeping). Label `slow`.

#include <signal.h>

#include <random>

#include <gmock/gmock.h>

#include "cluster/local/cgroup.h"
#include "history/event_log.h"
#include "mini_loom.h"

namespace loom::testing {
namespace {

using namespace std::chrono_literals;

enum class Victim { kWorker, kExecutor, kAm };
const char* Name(Victim v) { return v == Victim::kWorker ? "worker" : v == Victim::kExecutor ? "executor" : "AM"; }

// The victim among this job's own processes only (MiniLoom::TaskProcesses).
pid_t FindPid(MiniLoom& loom, const std::string& id, Victim victim, int task_index) {
  if (victim == Victim::kAm) return static_cast<pid_t>(std::stoi(ReadFile(loom.Dir(id).am_pid()).value_or("0")));
  std::vector<pid_t> pids =
      MiniLoom::TaskProcesses(id, "worker:" + std::to_string(task_index), victim == Victim::kExecutor);
  return pids.empty() ? 0 : pids.front();
}

// A process that looks like another job's worker and executor (the same LOOM_TASK_ID, another
// LOOM_JOB_ID): the chaos must never touch it.
Subprocess StartBystander(int task_index, bool as_executor) {
  SpawnOptions o;
  o.argv = {"/usr/bin/python3", "-c", "import time; time.sleep(3600)"};
  if (as_executor) o.argv.push_back("executor");  // its command line reads like an executor's
  o.env = {{"LOOM_JOB_ID", "job_someone_elses"}, {"LOOM_TASK_ID", "worker:" + std::to_string(task_index)}};
  auto child = Subprocess::Spawn(o);
  EXPECT_TRUE(child.ok()) << child.status().ToString();
  return std::move(child).value();
}

// Whether `pid` is alive and not stopped.
bool Running(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat").value_or("");
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'T' && stat[paren + 2] != 'Z';
}

TEST(Chaos, RandomKillsAndStopsEndEveryJobCleanly) {
  const int kJobs = 30;
  std::mt19937 rng(20261121);  // fixed: a failure can be replayed
  // Started first, so that a search by task id alone would find them before the job's own.
  std::vector<Subprocess> bystanders;
  for (int task = 0; task < 2; ++task) {
    for (bool executor : {false, true}) bystanders.push_back(StartBystander(task, executor));
  }
  for (int job = 0; job < kJobs; ++job) {
    Victim victim = static_cast<Victim>(rng() % 3);
    int sig = rng() % 2 ? SIGKILL : SIGSTOP;
    int task = static_cast<int>(rng() % 2);
    auto delay = std::chrono::milliseconds(100 + rng() % 1900);
    SCOPED_TRACE(std::string("job ") + std::to_string(job) + ": " + SignalName(sig) + " to " + Name(victim) +
                 " (worker:" + std::to_string(task) + ") after " + std::to_string(delay.count()) + " ms");
    MiniLoom loom;
    Subprocess submit = loom.Start(
        {"submit", "--src_dir", MiniLoom::Source(kScripts), "--executes", "fail_with.py",
         "--python_binary_path", "/usr/bin/python3", "--task_params", "--task none:0 --others-sleep 5", "--conf",
         "loom.worker.instances=2", "--conf", "loom.task.heartbeat-interval-ms=100", "--conf",
         "loom.task.max-missed-heartbeats=10", "--conf", "loom.task.stop-grace-ms=500", "--conf",
         "loom.task.executor.execution-timeout-ms=8000", "--conf", "loom.application.timeout=20000"},
        "submit");
    std::string id = loom.WaitUntilRunning(2, 30s);
    ASSERT_FALSE(id.empty());
    std::this_thread::sleep_for(delay);
    pid_t pid = FindPid(loom, id, victim, task);
    ASSERT_GT(pid, 1);
    ::kill(pid, sig);
    auto start = std::chrono::steady_clock::now();
    RunResult r = loom.Collect(submit, "submit");
    auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    history::JobView view = loom.View(id);
    EXPECT_EQ(view.state, "FAILED") << view.diagnostics;
    EXPECT_LT(took, 15s) << view.diagnostics;  // well inside the 20 s application timeout
    // Nothing of the job survives: not the AM, executors, workers nor their children.
    EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 2s))
        << MiniLoom::JobProcesses(id).size() << " processes left; " << view.diagnostics;
    // ... nor its cgroups, whoever had to clean up (the AM, or the client after the AM died).
    if (auto self = cluster::local::TaskCgroup::WritableSelfCgroup()) {
      EXPECT_TRUE(loom::testing::Eventually([&] { return !PathExists(*self + "/loom/" + id); }, 3s))
          << "cgroups left under " << *self << "/loom/" << id;
    }
    for (const Subprocess& b : bystanders) {
      ASSERT_TRUE(Running(b.pid())) << "the chaos hit pid " << b.pid() << ", another job's process";
    }
    if (sig == SIGSTOP) ::kill(pid, SIGCONT);  // harmless if it is gone
    std::printf("chaos job %2d: %-7s to %-8s after %4lld ms -> %s in %lld ms: %s\n", job, SignalName(sig).c_str(),
                Name(victim), static_cast<long long>(delay.count()), view.state.c_str(),
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()),
                view.diagnostics.substr(0, view.diagnostics.find('\n')).c_str());
  }
}

}  // namespace
}  // namespace loom::testing
