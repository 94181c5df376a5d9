// `loom am` and `loom executor`: the roles Loom starts itself. The AM's backend comes from the
// list in backends.cc, wired here to the backend-agnostic ApplicationMaster.

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "am/application_master.h"
#include "am/dashboard.h"
#include "cli/backends.h"
#include "cli/commands.h"
#include "cluster/yarn/gpu_pinning.h"
#include "cluster/yarn/staging.h"
#include "control/auth.h"
#include "control/executor_env.h"
#include "core/files.h"
#include "core/forwarded_env.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "core/test_hooks.h"
#include "executor/task_executor.h"
#include "hadoop/wire/credentials.h"
#include "history/event_log.h"
#include "history/events.h"
#include "history/job_record.h"
#include "history/job_view.h"

namespace loom::cli {

namespace {

// Records a failure of the AM itself (before or instead of running the job).
int AmFailed(const history::JobDir& dir, const std::string& why) {
  spdlog::error("{}", why);
  (void)history::WriteFinalStatus(dir, "FAILED", why);
  return kExitJobFailed;
}

// Records a job killed before it ran (a stop signal while it was queued). Whoever sent the
// kill may have ended the job first with its own state (loom.am.startup-timeout: FAILED): then
// that end stands, in events.jsonl too.
int AmKilled(const history::JobDir& dir, history::EventLog& events, const std::string& why) {
  spdlog::warn("{}", why);
  Result<bool> ours = history::EndJobIfFirst(dir, "KILLED", why);
  if (ours.ok() && *ours) (void)events.Append(history::events::kJobFinished, {{"state", "KILLED"}, {"diagnostics", why}});
  return kExitJobFailed;
}

}  // namespace

int AmCommand(std::vector<std::string> args) {
  std::string job_dir;
  std::string backend_name = "local";
  CLI::App app("ApplicationMaster of one job (started by loom submit)", "am");
  app.add_option("--job-dir", job_dir, "The job directory")->required();
  app.add_option("--backend", backend_name, "The backend it runs on: " + BackendNames());
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    return UsageError(std::string("am: ") + e.what());
  }
  const BackendEntry* backend = FindBackend(backend_name);
  if (!backend) return UsageError("am: --backend " + backend_name + ": no such backend (" + BackendNames() + ")");
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ [am] %v");
  // SIGTERM and friends are taken by a thread, so they become a clean kill; Loom's own kills
  // (`loom kill`, a signal to `loom submit`) record their cause in the job dir first.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&mask, s);
  ::pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  history::JobDir dir(AbsolutePath(job_dir));
  auto env = CurrentEnvironment();
  std::unique_ptr<cluster::AmSide> side = backend->am_side();
  auto setup = side->Prepare(dir, env);
  if (!setup.ok()) {
    spdlog::error("AM cannot set up: {}", setup.status().ToString());
    return AmFailed(dir, "AM cannot set up: " + setup.status().message());
  }
  config::Config conf;
  if (Status s = conf.MergeXmlFile(dir.config(), /*recorded_sources=*/true); !s.ok()) return AmFailed(dir, "AM cannot read its config: " + s.message());
  std::string cwd = dir.root();
  // No recorded cwd: relative paths resolve in the job dir.
  if (auto job = history::JobRecord::Read(dir); job.ok() && !job->cwd.empty()) cwd = job->cwd;
  auto spec = BuildJobSpec(conf, cwd, /*check_files=*/false);
  if (!spec.ok()) return AmFailed(dir, "AM cannot build the job: " + spec.status().message());
  auto secret = control::ReadSecretFile(setup->secret_file);
  if (!secret.ok()) return AmFailed(dir, secret.status().message());
  // On YARN the job dir is the container's own; the job keeps the id the client gave it.
  std::string job_id = !env[control::kJobIdEnv].empty() ? env[control::kJobIdEnv] : dir.job_id();

  // The AM's dashboard: the application's tracking URL where the cluster has a UI for it.
  am::Dashboard dashboard(dir, job_id, side.get());
  std::string tracking_url;
  if (auto port = dashboard.Start(setup->bind_address); port.ok()) {
    tracking_url = "http://" + setup->advertise_host + ":" + std::to_string(*port) + "/";
  } else {
    spdlog::warn("no dashboard: {}", port.status().ToString());
  }
  history::EventLog events(dir.events());
  // The backend may hold the job in its queue first (the local ledger): that time is not the
  // job's, so loom.application.timeout starts only in master.Run().
  if (Status admitted = side->Admit(dir, conf, *spec, events); !admitted.ok()) {
    if (admitted.code() != StatusCode::kCancelled) return AmFailed(dir, "AM cannot start the job: " + admitted.message());
    side->Finish(dir, "KILLED", admitted.message());
    return AmKilled(dir, events, admitted.message());
  }
  am::ApplicationMaster* master_ptr = nullptr;  // the broker may register the AM's port
  auto broker = side->MakeBroker(dir, conf, [&master_ptr] { return master_ptr ? master_ptr->port() : -1; }, tracking_url);
  if (!broker.ok()) return AmFailed(dir, broker.status().message());

  am::AmOptions opts;
  opts.spec = *spec;
  opts.job_dir = dir;
  opts.job_id = job_id;
  opts.secret = setup->executor_secret.empty() ? *secret : setup->executor_secret;
  if (!setup->executor_secret.empty()) opts.observer_secret = *secret;  // the file's: JobState only
  opts.setup = *setup;
  opts.status_url = tracking_url;
  am::ApplicationMaster master(std::move(opts), **broker, events);
  master_ptr = &master;

  std::thread signals([&master, mask, dir] {
    int sig = 0;
    if (::sigwait(&mask, &sig) == 0) {
      // Loom's own kills (loom kill, a signal to loom submit) record their cause first.
      std::string cause = history::KillCause(dir);
      master.RequestKill(!cause.empty() ? cause : "killed: the AM received " + SignalName(sig) + " from outside Loom");
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
  auto view = history::LoadJobView(dir);
  std::string final_state = state.ok() ? JobStateName(*state) : "FAILED";
  std::string diagnostics = state.ok() ? (view.ok() ? view->diagnostics : "") : state.status().message();
  side->Finish(dir, final_state, diagnostics);
  // A page that polls every 2 s sees the end before the AM goes.
  dashboard.LingerForWatchers(std::chrono::seconds(10), std::chrono::seconds(5));
  dashboard.Stop();
  if (!state.ok()) return AmFailed(dir, state.status().message());
  return *state == JobState::kSucceeded ? kExitOk : kExitJobFailed;
}

int ExecutorCommand(std::vector<std::string> args) {
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    std::puts("loom executor: the agent in a task's container; configured by LOOM_* variables set by the AM");
    return 0;
  }
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ [executor] %v");
  auto env = CurrentEnvironment();
  auto wiring = control::ExecutorEnv::FromEnv(env);
  std::optional<std::string> secret;  // YARN and local: handed over in memory, never through a file
  if (wiring.ok() && wiring->secret_fd >= 0) {
    // Local: the secret the AM made for its executors, through a pipe that is closed here, so
    // that no user process inherits it; the secret file in the job dir grants no more than a
    // look at the job's state (cluster/am_side.h). Not dumpable, as on YARN below.
    auto from_pipe = control::ReadSecretFd(wiring->secret_fd);
    if (!from_pipe.ok()) return UsageError("executor: " + from_pipe.status().message());
    secret = *from_pipe;
    if (::prctl(PR_SET_DUMPABLE, 0) != 0) spdlog::warn("prctl(PR_SET_DUMPABLE, 0): {}", std::strerror(errno));
  } else if (wiring.ok() && wiring->secret_file.empty()) {
    // On YARN the secret is in the container's credentials, which the NodeManager wrote into
    // the working dir that user code shares (same Unix user): read what the executor needs,
    // hand user code its tokens alone, then remove the file before any user process starts.
    auto token_file = env.find("HADOOP_TOKEN_FILE_LOCATION");
    if (token_file == env.end()) return UsageError("executor: the secret's credential without HADOOP_TOKEN_FILE_LOCATION");
    const std::string container_file = token_file->second;
    auto creds = hadoop::ReadCredentialsFile(container_file);
    if (!creds.ok()) return UsageError("executor: " + creds.status().message());
    secret = creds->FindSecret(wiring->secret_credential);
    if (!secret) return UsageError("executor: " + container_file + " holds no " + wiring->secret_credential);
    // The submitter's forwarded credentials (MLFLOW_TRACKING_TOKEN, ...) for the user process;
    // a value the job set itself (loom.execution.envs, in the container's env) wins.
    for (const auto& [alias, value] : creds->secrets) {
      if (StartsWith(alias, kSecretEnvAliasPrefix)) env.emplace(alias.substr(std::strlen(kSecretEnvAliasPrefix)), value);
    }
    // User code's HADOOP_TOKEN_FILE_LOCATION: the HDFS delegation tokens alone, never the
    // container's file with the secret keys above (also when there is no token).
    if (Status s = cluster::yarn::HandTokensToUserCode(*creds, AbsolutePath(cluster::yarn::kUserTokenFile), &env);
        !s.ok()) {
      return UsageError("executor: " + s.message());
    }
    // The NodeManager gives each container its own copy and reads it no more once the
    // container runs; a file left behind would show user code the job secret.
    if (::unlink(container_file.c_str()) != 0 && errno != ENOENT) {
      return UsageError("executor: cannot remove " + container_file + " (it holds the job secret): " +
                        std::strerror(errno));
    }
    // Nor may another process of the same user read the secret from this one's memory,
    // environment or descriptors (/proc/<pid>/mem, environ, fd). User processes exec, which
    // makes them dumpable again; the executor only looks at its own /proc/self.
    if (::prctl(PR_SET_DUMPABLE, 0) != 0) spdlog::warn("prctl(PR_SET_DUMPABLE, 0): {}", std::strerror(errno));
  }
  if (wiring.ok() && !wiring->planned_gpus.empty()) {
    // YARN sets no GPU variable: the devices it assigned, else the AM's plan (gpu_pinning.h).
    control::ExecutorEnv pinned = *wiring;
    pinned.gpu_note = cluster::yarn::PinContainerGpus(*wiring, env);
    pinned.AddTo(env);
  }
  return executor::RunTaskExecutor(env, std::move(secret));
}

}  // namespace loom::cli
