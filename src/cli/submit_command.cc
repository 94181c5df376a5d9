// `loom submit`: validate everything, write the job directory, start the AM, follow the job.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/follow.h"
#include "cli/backends.h"
#include "control/auth.h"
#include "core/config/key_registry.h"
#include "core/files.h"
#include "core/job_spec.h"
#include "core/job_world.h"
#include "core/strings.h"
#include "core/forwarded_env.h"
#include "core/subprocess.h"
#include "history/event_log.h"
#include "history/events.h"
#include "history/job_dir.h"
#include "history/job_record.h"
#include "history/job_view.h"

namespace loom::cli {
namespace {

using nlohmann::json;

// TonY's flags take one dash (`-executes`); CLI11 wants two for long names.
std::vector<std::string> NormalizeDashes(std::vector<std::string> args) {
  for (auto& a : args) {
    if (a.size() > 2 && a[0] == '-' && a[1] != '-' && std::isalpha(static_cast<unsigned char>(a[1]))) a = "-" + a;
  }
  return args;
}

struct SubmitFlags {
  std::string executes, task_params, src_dir, python_venv, python_binary_path, conf_file;
  std::vector<std::string> conf, shell_env, container_env;
  std::string cluster = "local";  // a name from cli/backends.cc
  std::string hdfs_classpath, sidecar_tensorboard_log_dir;
  bool quiet = false;
};

// MLflow reads its tracking server, experiment and credentials from MLFLOW_* variables: every
// one of the submitter's reaches every task's user process, on every backend (a YARN container
// does not inherit the client's environment). A variable the job sets itself (--shell_env,
// loom.execution.envs) wins. A value with a comma cannot travel in loom.execution.envs (a
// comma-separated list), so it is left out, with a warning, rather than failing the submit.
// One that holds a credential (core/forwarded_env.h) is not written into the job's config: it
// travels in the containers' credentials on YARN, in the executors' environment locally.
void ForwardMlflowEnv(config::Config& conf) {
  std::vector<std::string> all = config::GetList(conf, "loom.execution.envs");
  std::set<std::string> set_by_job;
  for (const std::string& kv : all) {
    if (auto pair = ParseKeyValue(kv); pair.ok()) set_by_job.insert(pair->first);
  }
  bool added = false;
  for (const auto& [key, value] : CurrentEnvironment()) {
    if (!IsForwardedToTasks(key) || HoldsCredential(key) || set_by_job.count(key)) continue;
    if (value.find(',') != std::string::npos) {
      std::fprintf(stderr, "loom: warning: %s not forwarded to the tasks: its value has a comma, which "
                   "loom.execution.envs cannot carry\n", key.c_str());
      continue;
    }
    all.push_back(key + "=" + value);
    added = true;
  }
  if (!added) return;
  // An entry the user made keeps its spelling and source, so messages still name it as written;
  // a new one counts as a flag's, which leaves UserPrefix (tony. or loom.) as it was.
  const config::ConfigEntry* prior = conf.Entry("loom.execution.envs");
  if (prior) {
    std::string key = prior->original_key, source = prior->source;  // copies: Set replaces *prior
    conf.Set(key, Join(all, ","), source);
  } else {
    conf.Set("loom.execution.envs", Join(all, ","), "--shell_env (MLFLOW_* of the environment)");
  }
}

Result<config::Config> BuildConfig(const SubmitFlags& f) {
  config::Config conf;
  if (!f.conf_file.empty()) LOOM_RETURN_IF_ERROR(conf.MergeXmlFile(f.conf_file));
  for (const std::string& kv : f.conf) {
    auto pair = ParseKeyValue(kv);
    if (!pair.ok()) return Status::InvalidArgument("--conf " + pair.status().message());
    conf.Set(pair->first, pair->second, "--conf");
  }
  auto set_flag = [&](const std::string& value, const char* key, const char* flag) {
    if (!value.empty()) conf.Set(key, value, flag);
  };
  if (!f.hdfs_classpath.empty()) {
    // TonY adds these jars to its JVMs' classpath; Loom runs no JVM, so it would do nothing.
    return Status::InvalidArgument("--hdfs_classpath " + f.hdfs_classpath +
                                   ": TonY puts these HDFS jars on its JVMs' classpath, and Loom runs no JVM; "
                                   "remove the flag (ship what the tasks need with --src_dir or --python_venv)");
  }
  set_flag(f.executes, "loom.application.executes", "--executes");
  set_flag(f.task_params, "loom.application.task-params", "--task_params");
  set_flag(f.src_dir, "loom.application.src-dir", "--src_dir");
  set_flag(f.python_venv, "loom.application.python-venv", "--python_venv");
  set_flag(f.python_binary_path, "loom.application.python-binary-path", "--python_binary_path");
  set_flag(f.sidecar_tensorboard_log_dir, "loom.application.tensorboard-log-dir", "--sidecar_tensorboard_log_dir");
  // --shell_env and --container_env add to what the config files already set.
  auto append_env = [&](const std::vector<std::string>& kvs, const char* key, const char* flag) -> Status {
    if (kvs.empty()) return Status::Ok();
    std::vector<std::string> all = config::GetList(conf, key);
    for (const std::string& kv : kvs) {
      if (!ParseKeyValue(kv).ok()) return Status::InvalidArgument(std::string(flag) + " '" + kv + "': expected KEY=VALUE");
      all.push_back(kv);
    }
    conf.Set(key, Join(all, ","), flag);
    return Status::Ok();
  };
  LOOM_RETURN_IF_ERROR(append_env(f.shell_env, "loom.execution.envs", "--shell_env"));
  LOOM_RETURN_IF_ERROR(append_env(f.container_env, "loom.containers.envs", "--container_env"));
  ForwardMlflowEnv(conf);
  return conf;
}

// Every task's working dir, under $LOOM_HOME/jobs, gets a copy of the src dir (YARN: a tarball
// made there): with $LOOM_HOME inside the src dir the copy would hold itself, and copying went
// on until "File name too long".
Status RefuseLoomHomeInsideSrcDir(const JobSpec& spec) {
  if (spec.src_dir.empty()) return Status::Ok();
  namespace fs = std::filesystem;
  std::error_code ec;
  // weakly_canonical: symlinks resolved, and $LOOM_HOME/jobs need not exist yet.
  fs::path src = fs::weakly_canonical(spec.src_dir, ec);
  if (ec) return Status::Ok();
  fs::path jobs = fs::weakly_canonical(fs::path(history::LoomHome()) / "jobs", ec);
  if (ec) return Status::Ok();
  auto [end, unused] = std::mismatch(src.begin(), src.end(), jobs.begin(), jobs.end());
  if (end != src.end()) return Status::Ok();
  return Status::InvalidArgument("$LOOM_HOME (" + history::LoomHome() + ") is inside --src_dir " + spec.src_dir +
                                 ": each task's copy of the src dir is made under $LOOM_HOME/jobs, so it would copy "
                                 "itself without end; set LOOM_HOME to a directory outside the src dir "
                                 "(the default is ~/.loom), or give a --src_dir that does not hold it");
}

}  // namespace

int UsageError(const std::string& message) {
  std::fprintf(stderr, "loom: %s\n", message.c_str());
  return kExitUsage;
}

int SubmitCommand(std::vector<std::string> raw_args) {
  BlockStopSignals();  // before any thread exists; see follow.h
  SubmitFlags f;
  CLI::App app("Submit a distributed training job", "loom submit");
  app.add_option("--executes", f.executes, "Entry point, relative to --src_dir");
  app.add_option("--task_params", f.task_params, "Arguments for the entry point");
  app.add_option("--src_dir", f.src_dir, "Directory shipped to every task");
  app.add_option("--python_venv", f.python_venv, "Python environment for every task: .zip, .tar.gz/.tgz (conda-pack) or .pex");
  app.add_option("--python_binary_path", f.python_binary_path, "Python interpreter (relative: inside the venv)");
  app.add_option("--shell_env", f.shell_env, "KEY=VALUE for the user process (repeatable)");
  app.add_option("--container_env", f.container_env, "KEY=VALUE for the container (repeatable)");
  app.add_option("--conf_file", f.conf_file, "Hadoop-style XML config (tony.xml)");
  app.add_option("--conf", f.conf, "KEY=VALUE config override (repeatable)");
  app.add_option("--cluster", f.cluster, "Backend: " + BackendNames() + " (default local)");
  app.add_option("--hdfs_classpath", f.hdfs_classpath, "TonY flag for HDFS jars on a JVM classpath; refused (Loom runs no JVM)");
  app.add_option("--sidecar_tensorboard_log_dir", f.sidecar_tensorboard_log_dir, "TonY's sidecar TensorBoard log dir");
  app.add_flag("--quiet", f.quiet, "Print only the job id and the final state");
  std::vector<std::string> args = NormalizeDashes(raw_args);
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    return UsageError(std::string("submit: ") + e.what());
  }
  const BackendEntry* entry = FindBackend(f.cluster);
  if (!entry) return UsageError("--cluster " + f.cluster + ": no such backend (this loom has " + BackendNames() + ")");

  auto conf = BuildConfig(f);
  if (!conf.ok()) return UsageError(conf.status().message());
  std::string cwd = AbsolutePath(".");
  auto spec = BuildJobSpec(*conf, cwd);
  if (!spec.ok()) return UsageError(spec.status().message());
  if (Status s = RefuseLoomHomeInsideSrcDir(*spec); !s.ok()) return UsageError(s.message());
  auto made = entry->for_submit(*conf);
  if (!made.ok()) return UsageError(made.status().message());
  cluster::Backend& backend = **made;
  if (Status fits = backend.CheckFits(*spec); !fits.ok()) {
    if (fits.code() != StatusCode::kUnavailable) return UsageError(fits.message());
    std::fprintf(stderr, "loom: %s\n", fits.ToString().c_str());
    return kExitJobFailed;  // the cluster could not be asked: not the user's mistake
  }

  // Everything is valid: write the job directory, then start the AM.
  if (std::string note = WorldNote(*spec); !note.empty()) std::fprintf(stderr, "loom: note: %s\n", note.c_str());
  std::string job_id = history::NewJobId();
  history::JobDir dir = history::JobDir::ForJob(job_id);
  auto secret = control::GenerateSecret();
  Status s = MakeDirs(dir.tasks_dir());
  if (s.ok()) s = WriteFileAtomic(dir.config(), StagedJobConfig(*conf, *spec).ToXml());
  if (s.ok() && secret.ok()) s = WriteFileAtomic(dir.secret(), *secret + "\n", 0600);
  const history::JobRecord record{job_id, spec->name, ClientUser(), f.cluster, cwd,
                                  FrameworkName(spec->framework), history::NowMillis(), raw_args};
  if (s.ok()) s = record.Write(dir);
  json tasks = json::array();
  for (const TaskId& t : spec->AllTasks()) tasks.push_back(t.ToString());
  history::EventLog log(dir.events());
  if (s.ok()) s = log.Append(history::events::kJobSubmitted, {{"job_id", job_id}, {"name", spec->name}, {"backend", f.cluster}, {"tasks", tasks}});
  if (s.ok() && !secret.ok()) s = secret.status();
  if (s.ok()) s = backend.Submit(*spec, dir);
  if (!s.ok()) {
    std::fprintf(stderr, "loom: cannot start job %s: %s\n", job_id.c_str(), s.ToString().c_str());
    (void)history::EndJob(dir, "FAILED", "cannot start: " + s.message());
    return kExitJobFailed;
  }
  std::printf("Job %s submitted (%s, %d tasks, %s)\n  job dir: %s\n", job_id.c_str(), spec->name.c_str(),
              spec->TotalTasks(), FrameworkName(spec->framework).c_str(), dir.root().c_str());
  std::fflush(stdout);
  FollowMode mode = f.quiet ? FollowMode::kQuiet : ::isatty(STDOUT_FILENO) ? FollowMode::kTable : FollowMode::kLines;
  auto interval = std::chrono::milliseconds(spec->heartbeat_interval_ms);
  return FollowJob(dir, backend, mode, interval, interval * spec->max_missed_heartbeats);
}

}  // namespace loom::cli
