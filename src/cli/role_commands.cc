// `loom am` and `loom executor`: the roles Loom starts itself. This is the one place that picks
// concrete backends and wires them to the backend-agnostic AM.

#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "am/application_master.h"
#include "cli/commands.h"
#include "cluster/local/host_inventory.h"
#include "cluster/local/local_container_broker.h"
#include "control/auth.h"
#include "core/files.h"
#include "core/subprocess.h"
#include "core/test_hooks.h"
#include "executor/task_executor.h"
#include "history/event_log.h"
#include "history/job_view.h"

namespace loom::cli {

namespace {

// Records a failure of the AM itself (before or instead of running the job).
int AmFailed(const history::JobDir& dir, const std::string& why) {
  spdlog::error("{}", why);
  (void)history::WriteFinalStatus(dir, {{"job_id", dir.job_id()}, {"state", "FAILED"}, {"diagnostics", why},
                                        {"finished_ms", history::NowMillis()}});
  return kExitJobFailed;
}

}  // namespace

int AmCommand(std::vector<std::string> args) {
  std::string job_dir;
  CLI::App app("ApplicationMaster of one job (started by loom submit)", "am");
  app.add_option("--job-dir", job_dir, "The job directory")->required();
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return UsageError(std::string("am: ") + e.what());
  }
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ [am] %v");
  // SIGTERM (loom kill) and friends are taken by a thread, so they become a clean kill.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&mask, s);
  ::pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  history::JobDir dir(AbsolutePath(job_dir));
  config::Config conf;
  if (Status s = conf.MergeXmlFile(dir.config()); !s.ok()) return AmFailed(dir, "AM cannot read its config: " + s.message());
  std::string cwd = dir.root();
  if (auto job = ReadFile(dir.job_json()); job.ok()) {
    try {
      cwd = nlohmann::json::parse(*job).value("cwd", cwd);
    } catch (const nlohmann::json::exception&) {
    }
  }
  auto spec = BuildJobSpec(conf, cwd, /*check_files=*/false);
  if (!spec.ok()) return AmFailed(dir, "AM cannot build the job: " + spec.status().message());
  auto env = CurrentEnvironment();
  std::string secret_file = env.count(control::kSecretFileEnv) ? env[control::kSecretFileEnv] : dir.secret();
  auto secret = control::ReadSecretFile(secret_file);
  if (!secret.ok()) return AmFailed(dir, secret.status().message());
  auto inventory = cluster::local::HostInventory::Detect(conf);
  if (!inventory.ok()) return AmFailed(dir, inventory.status().message());

  cluster::local::LocalContainerBroker broker(*inventory, dir);
  history::EventLog events(dir.events());
  am::AmOptions opts;
  opts.spec = *spec;
  opts.job_dir = dir;
  opts.job_id = dir.job_id();
  opts.secret = *secret;
  opts.secret_file = secret_file;
  opts.executor_binary = SelfExecutable();
  opts.bind_address = "127.0.0.1";
  opts.advertise_host = "127.0.0.1";
  opts.executor_env = env;
  opts.executor_env.erase(control::kSecretFileEnv);
  am::ApplicationMaster master(std::move(opts), broker, events);

  std::thread signals([&master, mask] {
    int sig = 0;
    if (::sigwait(&mask, &sig) == 0) {
      master.RequestKill("killed: the AM received " + SignalName(sig) + (sig == SIGTERM ? " (loom kill)" : ""));
    }
  });
  signals.detach();  // it lives until the process exits
  if (auto crash = TestHook(env, "LOOM_TEST_AM_CRASH_MS", "")) {
    std::thread([crash] {
      std::this_thread::sleep_for(std::chrono::milliseconds(*crash));
      spdlog::warn("test hook: AM crashing");
      std::abort();
    }).detach();
  }
  auto state = master.Run();
  if (!state.ok()) return AmFailed(dir, state.status().message());
  return *state == JobState::kSucceeded ? kExitOk : kExitJobFailed;
}

int ExecutorCommand(std::vector<std::string> args) {
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    std::puts("loom executor: the agent in a task's container; configured by LOOM_* variables set by the AM");
    return 0;
  }
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ [executor] %v");
  return executor::RunTaskExecutor(CurrentEnvironment());
}

}  // namespace loom::cli
