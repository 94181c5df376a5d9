// `loom am` and `loom executor`: the roles Loom starts itself. This is the one place that picks
// concrete backends and wires them to the backend-agnostic AM.

#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "am/application_master.h"
#include "am/status_page.h"
#include "cli/commands.h"
#include "cluster/local/host_inventory.h"
#include "cluster/local/local_container_broker.h"
#include "cluster/yarn/history_upload.h"
#include "cluster/yarn/yarn_container_broker.h"
#include "cluster/yarn/yarn_job_submitter.h"
#include "control/auth.h"
#include "core/files.h"
#include "core/strings.h"
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
  std::string backend = "local";
  CLI::App app("ApplicationMaster of one job (started by loom submit)", "am");
  app.add_option("--job-dir", job_dir, "The job directory")->required();
  app.add_option("--backend", backend, "local, or yarn (the AM runs in a YARN container)")
      ->check(CLI::IsMember({"local", "yarn"}));
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
  if (backend == "yarn") {
    // The client shipped the job's files as LocalResources in the working dir; the AM keeps
    // its own job dir beside them.
    Status s = MakeDirs(dir.tasks_dir());
    for (const char* f : {cluster::yarn::kConfigResource, cluster::yarn::kJobJsonResource}) {
      auto text = ReadFile(f);
      if (s.ok()) s = text.ok() ? WriteFileAtomic(dir.root() + "/" + f, *text) : text.status();
    }
    if (!s.ok()) {
      spdlog::error("AM cannot set up its job dir: {}", s.ToString());
      return kExitJobFailed;
    }
  }
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
  history::EventLog events(dir.events());
  am::AmOptions opts;
  am::ApplicationMaster* master_ptr = nullptr;  // the YARN broker registers the AM's port
  std::unique_ptr<cluster::ContainerBroker> broker_owner;
  cluster::yarn::YarnContainerBroker* yarn = nullptr;
  std::string job_id = env.count("LOOM_JOB_ID") && !env["LOOM_JOB_ID"].empty() ? env["LOOM_JOB_ID"] : dir.job_id();
  am::StatusPage page(dir, job_id);
  if (backend == "yarn") {
    auto yopts = cluster::yarn::YarnBrokerOptionsFromContainer(env);
    if (!yopts.ok()) return AmFailed(dir, "AM cannot reach YARN: " + yopts.status().message());
    // The secret came in the container's credentials; executors get it the same way, and the
    // AM's copy lives in its container's private working dir.
    if (Status s = WriteFileAtomic(dir.secret(), yopts->job_secret + "\n", 0600); !s.ok()) return AmFailed(dir, s.message());
    env[control::kSecretFileEnv] = dir.secret();
    for (const auto& [key, var] : {std::pair{"container", "CONTAINER_ID"}, {"node_host", "NM_HOST"}}) {
      if (env.count(var)) opts.location[key] = env[var];
    }
    if (env.count("NM_HOST") && env.count("NM_PORT")) opts.location["node_id"] = env["NM_HOST"] + ":" + env["NM_PORT"];
    if (env.count("NM_HOST") && env.count("NM_HTTP_PORT")) opts.location["node_http"] = env["NM_HOST"] + ":" + env["NM_HTTP_PORT"];
    yopts->am_port = [&master_ptr] { return master_ptr ? master_ptr->port() : -1; };
    // The application's tracking URL: YARN's UI links to it (through the RM's proxy).
    if (auto port = page.Start("0.0.0.0"); port.ok()) {
      yopts->tracking_url = "http://" + yopts->nm_host + ":" + std::to_string(*port) + "/";
    } else {
      spdlog::warn("no status page: {}", port.status().ToString());
    }
    auto owned = std::make_unique<cluster::yarn::YarnContainerBroker>(std::move(*yopts));
    yarn = owned.get();
    broker_owner = std::move(owned);
  } else {
    auto inventory = cluster::local::HostInventory::Detect(conf);
    if (!inventory.ok()) return AmFailed(dir, inventory.status().message());
    broker_owner = std::make_unique<cluster::local::LocalContainerBroker>(*inventory, dir);
  }
  cluster::ContainerBroker& broker = *broker_owner;
  std::string secret_file = env.count(control::kSecretFileEnv) ? env[control::kSecretFileEnv] : dir.secret();
  auto secret = control::ReadSecretFile(secret_file);
  if (!secret.ok()) return AmFailed(dir, secret.status().message());
  opts.spec = *spec;
  opts.job_dir = dir;
  // On YARN the job dir is the container's own; the job keeps the id the client gave it.
  opts.job_id = job_id;
  opts.secret = *secret;
  opts.secret_file = secret_file;
  opts.executor_binary = SelfExecutable();
  opts.bind_address = "127.0.0.1";
  opts.advertise_host = "127.0.0.1";
  opts.executor_env = env;
  opts.executor_env.erase(control::kSecretFileEnv);
  if (yarn) {
    // Executors run on other nodes: they reach the AM at its node's address, find `loom` as a
    // LocalResource, and get only a portable environment (the NodeManager sets the rest).
    opts.bind_address = "0.0.0.0";
    opts.advertise_host = env.count("NM_HOST") ? env["NM_HOST"] : "localhost";
    opts.executor_binary = std::string("./") + cluster::yarn::kLoomBinaryResource;
    opts.executor_env.clear();
    for (const auto& [k, v] : env) {
      if (k == "PATH" || k == "LANG" || k == "TZ" || StartsWith(k, "LC_") || StartsWith(k, "LOOM_TEST_")) {
        opts.executor_env[k] = v;
      }
    }
    opts.events_linger = std::chrono::milliseconds(3000);
  }
  am::ApplicationMaster master(std::move(opts), broker, events);
  master_ptr = &master;

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
  std::optional<cluster::yarn::StagingManifest> manifest;
  std::optional<cluster::yarn::HistoryUploader> history_copy;
  if (yarn) {
    if (auto text = ReadFile(cluster::yarn::kManifestResource); text.ok()) {
      if (auto m = cluster::yarn::StagingManifest::FromJson(*text); m.ok()) manifest = std::move(*m);
    }
    if (manifest) history_copy.emplace(manifest->webhdfs, manifest->user, manifest->dir, dir, std::chrono::seconds(2));
  }
  auto state = master.Run();
  if (yarn) {
    // The job is over: its record to HDFS and its staging files gone first, then unregister
    // with the outcome (`yarn application -status` shows it); after that the NodeManager may
    // end this container at any moment.
    history_copy.reset();
    if (manifest) (void)cluster::yarn::CleanStaging(manifest->webhdfs, manifest->user, manifest->dir, &dir);
    auto view = history::LoadJobView(dir);
    std::string final_state = state.ok() ? JobStateName(*state) : "FAILED";
    std::string diagnostics = state.ok() ? (view.ok() ? view->diagnostics : "") : state.status().message();
    if (Status s = yarn->Finish(final_state, diagnostics); !s.ok()) spdlog::error("unregistering: {}", s.ToString());
  }
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
  if (auto alias = env.find("LOOM_SECRET_CREDENTIAL"); alias != env.end()) {
    // On YARN the secret is in the container's credentials: a private file for the executor.
    auto token_file = env.find("HADOOP_TOKEN_FILE_LOCATION");
    if (token_file == env.end()) return UsageError("executor: LOOM_SECRET_CREDENTIAL without HADOOP_TOKEN_FILE_LOCATION");
    auto creds = cluster::yarn::ReadCredentialsFile(token_file->second);
    if (!creds.ok()) return UsageError("executor: " + creds.status().message());
    std::string secret;
    for (const auto& [name, value] : creds->secrets) {
      if (name == alias->second) secret = value;
    }
    if (secret.empty()) return UsageError("executor: " + token_file->second + " holds no " + alias->second);
    std::string path = AbsolutePath(".loom.secret");
    if (Status s = WriteFileAtomic(path, secret + "\n", 0600); !s.ok()) return UsageError("executor: " + s.message());
    env[control::kSecretFileEnv] = path;
  }
  return executor::RunTaskExecutor(env);
}

}  // namespace loom::cli
