#include "core/job_spec.h"

#include <algorithm>
#include <set>

#include "core/config/key_registry.h"
#include "core/files.h"
#include "core/mpi_command.h"
#include "core/strings.h"

namespace loom {

using config::Config;
using config::GetBool;
using config::GetInt;
using config::GetList;
using config::GetMemoryMib;
using config::GetString;

std::string FrameworkName(Framework f) {
  switch (f) {
    case Framework::kTensorFlow: return "tensorflow";
    case Framework::kPyTorch: return "pytorch";
    case Framework::kMXNet: return "mxnet";
    case Framework::kHorovod: return "horovod";
    case Framework::kStandalone: return "standalone";
    case Framework::kMpi: return "mpi";
  }
  return "?";
}

Result<TaskId> ParseTaskId(const std::string& s) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::InvalidArgument("'" + s + "' is not a task id (expected TYPE:INDEX, e.g. worker:0)");
  }
  auto index = ParseInt(s.substr(colon + 1));
  if (!index.ok() || *index < 0) {
    return Status::InvalidArgument("'" + s + "' is not a task id (expected TYPE:INDEX, e.g. worker:0)");
  }
  return TaskId{s.substr(0, colon), static_cast<int>(*index)};
}

std::string Resources::ToString() const {
  std::string s = FormatMib(memory_mib) + " memory, " + std::to_string(vcores) + " vcores";
  if (gpus) s += ", " + std::to_string(gpus) + " GPUs";
  return s;
}

bool TaskTypeSpec::Restartable(int exit_code) const {
  switch (restart_policy) {
    case RestartPolicy::kNever: return false;
    case RestartPolicy::kOnFailure: return exit_code != 0;
    case RestartPolicy::kExitCode: return exit_code >= 128 && exit_code <= 255;
  }
  return false;
}

std::string JobSpec::KeyName(const std::string& canonical_key) const {
  if (auto it = key_spellings.find(canonical_key); it != key_spellings.end()) return it->second;
  return config::Respell(canonical_key, key_prefix);
}

const TaskTypeSpec* JobSpec::FindType(const std::string& n) const {
  for (const auto& t : types) {
    if (t.name == n) return &t;
  }
  return nullptr;
}

int JobSpec::TotalTasks() const {
  int n = 0;
  for (const auto& t : types) n += t.instances;
  return n;
}

int JobSpec::TrackedTasks() const {
  int n = 0;
  for (const auto& t : types) {
    if (t.role == TaskRole::kTracked) n += t.instances;
  }
  return n;
}

std::vector<TaskId> JobSpec::AllTasks() const {
  std::vector<TaskId> out;
  for (const auto& t : types) {
    for (int i = 0; i < t.instances; ++i) out.push_back({t.name, i});
  }
  return out;
}

std::optional<TaskId> JobSpec::Chief() const {
  if (FindType("chief")) return TaskId{"chief", 0};
  if (FindType("worker")) return TaskId{"worker", 0};
  return std::nullopt;
}

Resources JobSpec::TotalResources() const {
  Resources r;
  for (const auto& t : types) {
    r.memory_mib += t.resources.memory_mib * t.instances;
    r.vcores += t.resources.vcores * t.instances;
    r.gpus += t.resources.gpus * t.instances;
  }
  return r;
}

Result<VenvFormat> VenvFormatOf(const std::string& path) {
  std::string lower = ToLower(path);
  if (EndsWith(lower, ".zip")) return VenvFormat::kZip;
  if (EndsWith(lower, ".tar.gz") || EndsWith(lower, ".tgz")) return VenvFormat::kTarGz;
  if (EndsWith(lower, ".pex")) return VenvFormat::kPex;
  return Status::InvalidArgument("--python_venv " + path +
                                 ": unsupported format; accepted: .zip, .tar.gz, .tgz (conda-pack) or .pex");
}

namespace {

int RankOrder(const std::string& type) {
  if (type == "chief") return 0;
  if (type == "master") return 1;
  if (type == "worker") return 2;
  return 3;
}

Result<std::map<std::string, std::string>> ParseEnvList(const std::vector<std::string>& kvs) {
  std::map<std::string, std::string> env;
  for (const std::string& kv : kvs) {
    LOOM_ASSIGN_OR_RETURN(auto pair, ParseKeyValue(kv));
    env[pair.first] = pair.second;
  }
  return env;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The candidate `name` is one or two edits away from (a typo of), if any. Names of three letters
// or fewer get one edit only: every two-letter name is two edits from `ps`.
std::optional<std::string> NearMiss(const std::string& name, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_d = 3;
  for (const std::string& c : candidates) {
    if (c == name) continue;
    size_t d = EditDistance(name, c);
    size_t limit = std::min(name.size(), c.size()) <= 3 ? 1 : 2;
    if (d <= limit && d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

// TonY's sidecar TensorBoard: TonY runs tensorboard's main module with tony.python-exec-path.
std::string TensorBoardCommand(const Config& conf) {
  std::string python = Trim(GetString(conf, "loom.python-exec-path"));
  std::string run = python.empty() ? "tensorboard" : ShellQuote(python) + " -m tensorboard.main";
  // TensorBoard 2.x serves localhost only by default; the link is for other hosts too.
  return run + " --logdir \"$TB_LOG_DIR\" --port \"$TB_PORT\" --host 0.0.0.0";
}

// Where a `loom.max-total-*` cap is exceeded, a problem naming it.
void CheckCap(const Config& conf, const std::string& key, int64_t total, const std::string& what,
              std::vector<std::string>& problems) {
  int64_t limit = GetInt(conf, key);
  if (limit >= 0 && total > limit) {
    problems.push_back(config::Spelled(conf, key) + "=" + std::to_string(limit) + " but the job asks for " +
                       std::to_string(total) + " " + what);
  }
}

// The command a type runs when it has no loom.<type>.command of its own. `base_dir` resolves a
// relative script when there is no src dir (the task's own working dir is elsewhere).
Result<std::string> EntryPointCommand(const Config& conf, const std::string& base_dir, const std::string& src_dir,
                                      VenvFormat venv, bool check_files) {
  std::string executes = Trim(GetString(conf, "loom.application.executes"));
  if (executes.empty()) return std::string();
  // TonY's README passes the script with its src dir in front; the task runs inside the src dir.
  if (!src_dir.empty()) {
    std::string rel_src = GetString(conf, "loom.application.src-dir");
    for (const std::string& prefix : {AbsolutePath(src_dir) + "/", rel_src + "/"}) {
      if (prefix.size() > 1 && StartsWith(executes, prefix)) executes = executes.substr(prefix.size());
    }
    while (StartsWith(executes, "./")) executes = executes.substr(2);
  }
  std::string script = Split(executes, ' ').front();
  std::string rest = executes.substr(script.size());
  bool is_python = EndsWith(script, ".py");
  if (src_dir.empty() && script[0] != '/') script = AbsolutePath(base_dir + "/" + script);
  std::string script_path = src_dir.empty() ? script : src_dir + "/" + script;
  if (check_files && !PathExists(script_path)) {
    return Status::InvalidArgument("--executes: " + Split(executes, ' ').front() + " does not exist" +
                                   (src_dir.empty() ? std::string() : " in --src_dir " + src_dir));
  }
  std::string cmd;
  if (is_python) {
    std::string python = GetString(conf, "loom.application.python-binary-path");
    bool inside_venv = !python.empty() && python[0] != '/' && python.find('/') != std::string::npos;
    if (venv == VenvFormat::kPex) {
      if (inside_venv) {
        return Status::InvalidArgument("--python_binary_path " + python +
                                       ": a relative path names a file inside an unpacked venv, but a .pex "
                                       "venv is a single file; give an interpreter on PATH or an absolute path");
      }
      // A pex given a script runs it with the pex's own environment, like an interpreter.
      cmd = ShellQuote(python) + " venv " + ShellQuote(script) + rest;
    } else {
      // A relative interpreter path lives inside the unpacked venv, as in TonY.
      if (venv != VenvFormat::kNone && inside_venv) python = "venv/" + python;
      cmd = ShellQuote(python) + " " + ShellQuote(script) + rest;
    }
  } else if (src_dir.empty()) {
    cmd = ShellQuote(script) + rest;
  } else {
    // Run as ./script; the executor runs it through its #! interpreter if it lacks the
    // execute bit (TonY makes the entry point executable).
    cmd = script.find('/') == std::string::npos ? "./" + executes : executes;
  }
  std::string params = Trim(GetString(conf, "loom.application.task-params"));
  if (!params.empty()) cmd += " " + params;
  return cmd;
}

// A type that is neither well-known nor declared and has no command of its own, but is one or
// two edits from a well-known or an intended type, is a typo: `tony.workr.instances=1` would
// otherwise start `workr:0` running the worker's script. Also catches per-type keys
// (tony.workr.memory, tony.docker.workr.image) of a type the job does not have.
void CheckTypeSpelling(const Config& conf, const std::vector<std::string>& names,
                       std::vector<std::string>& problems) {
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
  const std::vector<std::string>& well_known = config::WellKnownTaskTypes();
  std::vector<std::string> declared = GetList(conf, "loom.application.custom-types");
  auto has_command = [&](const std::string& type) {
    return !Trim(GetString(conf, "loom." + type + ".command")).empty();
  };
  auto intended = [&](const std::string& type) {
    return Contains(well_known, type) || Contains(declared, type) || has_command(type);
  };
  std::vector<std::string> candidates = well_known;
  for (const std::string& n : names) {
    if (intended(n) && !Contains(candidates, n)) candidates.push_back(n);
  }
  for (const std::string& n : names) {
    if (intended(n)) continue;
    if (auto near = NearMiss(n, candidates)) {
      problems.push_back("unknown task type '" + n + "' (" + key("loom." + n + ".instances") + "); did you mean " +
                         *near + "? It is none of Loom's well-known types (" + Join(well_known, ", ") +
                         "). Fix the spelling, or, if '" + n + "' is meant, declare it with " +
                         key("loom.application.custom-types") + "=" + n + " or give it its own " +
                         key("loom." + n + ".command"));
    }
  }
  // Per-type keys of a type that is not part of the job: harmless (TonY's own files set
  // tony.ps.memory for jobs without ps) unless the type is a near miss of one that is.
  std::vector<std::string> job_types = well_known;
  for (const std::string& n : names) {
    if (!Contains(job_types, n)) job_types.push_back(n);
  }
  for (const auto& [canonical, entry] : conf.entries()) {
    std::string type, shown;
    if (auto split = config::SplitTypeKey(canonical)) {
      type = split->first;
      shown = "loom." + split->first + "." + split->second;
    } else {
      std::vector<std::string> parts = Split(canonical, '.', false);
      if (parts.size() != 4 || parts[1] != "docker" || parts[3] != "image" || parts[2] == "containers") continue;
      type = parts[2];
      shown = "loom.docker." + type + ".image";
    }
    if (Contains(job_types, type) || Contains(declared, type)) continue;
    if (auto near = NearMiss(type, job_types)) {
      std::string fixed = shown;
      fixed.replace(fixed.find("." + type + ".") + 1, type.size(), *near);
      problems.push_back(entry.original_key + ": the job has no task type '" + type + "'; did you mean " +
                         key(fixed) + "?");
    }
  }
}

// loom.application.framework=mpi (runtime/mpi.h): one tracked `launcher` task runs mpirun, and
// every other type but the sidecars holds ranks: untracked, it runs no command of its own and
// stays up until the launcher ends, so the job's result is the launcher's.
void ApplyMpi(const Config& conf, JobSpec& spec, std::vector<std::string>& problems) {
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
  const std::string mpi = key("loom.application.framework") + "=mpi";
  TaskTypeSpec* launcher = nullptr;
  int holders = 0, slots = 0;
  for (TaskTypeSpec& t : spec.types) {
    if (t.name == "launcher") {
      launcher = &t;
      continue;
    }
    if (t.role == TaskRole::kSidecar) continue;
    t.role = TaskRole::kUntracked;
    holders += t.instances;
    slots += t.instances * std::max(1, t.processes);
    if (t.restart_policy != RestartPolicy::kNever) {
      problems.push_back(key("loom." + t.name + ".restart-policy") + "=" +
                         ToLower(GetString(conf, "loom." + t.name + ".restart-policy")) + ": under " + mpi +
                         " a task that holds ranks cannot be restarted alone (mpirun has lost its ranks by then); " +
                         key("loom.am.retry-count") + " restarts the whole job");
    }
  }
  if (!launcher) {
    problems.push_back(mpi + " runs mpirun in a 'launcher' task, but " + key("loom.launcher.instances") +
                       "=0: remove the key (Loom adds one launcher)");
  } else {
    if (launcher->instances != 1) {
      problems.push_back(mpi + " runs exactly 1 launcher (it runs mpirun), but " + key("loom.launcher.instances") +
                         "=" + std::to_string(launcher->instances));
    }
    if (launcher->role != TaskRole::kTracked) {
      problems.push_back(mpi + ": the launcher's result is the job's, so it cannot be untracked or a sidecar: "
                               "remove 'launcher' from " + key("loom.application.untracked.jobtypes") + " and " +
                         key("loom.application.sidecar.jobtypes"));
    }
    // The job's command runs under mpirun, unless it already does, or the launcher has a
    // command of its own (a script that calls mpirun itself, say).
    if (Trim(GetString(conf, "loom.launcher.command")).empty()) {
      launcher->command = MpiLauncherCommand(launcher->command, slots);
    }
    if (launcher->processes != 1) {
      problems.push_back(key("loom.launcher.processes") + "=" + std::to_string(launcher->processes) +
                         ": the launcher runs one mpirun; the ranks per task are the processes of the types "
                         "that hold them (e.g. " + key("loom.worker.processes") + ")");
    }
  }
  if (holders == 0) {
    problems.push_back(mpi + " needs tasks to hold the ranks: add a type, e.g. " + key("loom.worker.instances") +
                       "=2 (each with " + key("loom.worker.processes") + " ranks)");
  }
}

}  // namespace

Result<JobSpec> BuildJobSpec(const Config& conf, const std::string& base_dir, bool check_files) {
  LOOM_RETURN_IF_ERROR(config::Validate(conf));
  // Every message names keys as the user wrote them (tony.* or loom.*).
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
  std::vector<std::string> problems;
  JobSpec spec;
  spec.key_prefix = config::UserPrefix(conf);
  for (const auto& [key, e] : conf.entries()) {
    if (StartsWith(e.original_key, "tony.") || StartsWith(e.original_key, "loom.")) {
      if (e.source != config::kDefaultSource) spec.key_spellings[key] = e.original_key;
    }
  }
  spec.name = GetString(conf, "loom.application.name");
  std::string fw = ToLower(GetString(conf, "loom.application.framework"));
  spec.framework = fw == "pytorch"      ? Framework::kPyTorch
                   : fw == "mxnet"      ? Framework::kMXNet
                   : fw == "horovod"    ? Framework::kHorovod
                   : fw == "standalone" ? Framework::kStandalone
                   : fw == "mpi"        ? Framework::kMpi
                                        : Framework::kTensorFlow;
  spec.gang = ToLower(GetString(conf, "loom.application.distributed-mode")) == "gang";

  // TonY's fail-on-worker-failure-enabled is the success policy under another name: true fails
  // the job on any worker failure (all), false is TonY's own rule (any). Unset, the policy decides.
  std::string policy = ToLower(Trim(GetString(conf, "loom.application.success-policy")));
  spec.success_policy = policy == "any" ? SuccessPolicy::kAny : SuccessPolicy::kAll;
  if (conf.IsExplicit("loom.application.fail-on-worker-failure-enabled")) {
    bool fail_on_worker = GetBool(conf, "loom.application.fail-on-worker-failure-enabled");
    SuccessPolicy alias = fail_on_worker ? SuccessPolicy::kAll : SuccessPolicy::kAny;
    if (conf.IsExplicit("loom.application.success-policy") && alias != spec.success_policy) {
      problems.push_back(key("loom.application.fail-on-worker-failure-enabled") + "=" +
                         (fail_on_worker ? "true" : "false") + " contradicts " +
                         key("loom.application.success-policy") + "=" + policy + ": " +
                         key("loom.application.fail-on-worker-failure-enabled") +
                         "=true means success-policy all, =false means success-policy any; set only one of them");
    }
    spec.success_policy = alias;
  }

  auto resolve = [&](const std::string& p) {
    if (p.empty()) return p;
    return AbsolutePath(p[0] == '/' ? p : base_dir + "/" + p);
  };
  spec.src_dir = resolve(GetString(conf, "loom.application.src-dir"));
  if (check_files && !spec.src_dir.empty() && !IsDirectory(spec.src_dir)) {
    problems.push_back("--src_dir " + GetString(conf, "loom.application.src-dir") + " is not a directory");
  }
  spec.python_venv = resolve(GetString(conf, "loom.application.python-venv"));
  if (!spec.python_venv.empty()) {
    std::string given = GetString(conf, "loom.application.python-venv");
    if (check_files && !PathExists(spec.python_venv)) {
      problems.push_back("--python_venv " + given + " does not exist");
    } else if (check_files && IsDirectory(spec.python_venv)) {
      problems.push_back("--python_venv " + given + " is a directory; give a .zip, .tar.gz, .tgz or .pex file");
    }
    Result<VenvFormat> format = VenvFormatOf(given);
    if (format.ok()) {
      spec.python_venv_format = *format;
    } else {
      problems.push_back(format.status().message());
    }
  }

  auto exec_env = ParseEnvList(GetList(conf, "loom.execution.envs"));
  auto cont_env = ParseEnvList(GetList(conf, "loom.containers.envs"));
  if (exec_env.ok()) spec.execution_env = *exec_env;
  if (cont_env.ok()) spec.container_env = *cont_env;

  spec.heartbeat_interval_ms = static_cast<int>(GetInt(conf, "loom.task.heartbeat-interval-ms"));
  spec.max_missed_heartbeats = static_cast<int>(GetInt(conf, "loom.task.max-missed-heartbeats"));
  spec.application_timeout_ms = std::max<int64_t>(0, GetInt(conf, "loom.application.timeout"));
  spec.execution_timeout_ms = std::max<int64_t>(0, GetInt(conf, "loom.task.executor.execution-timeout-ms"));
  spec.stderr_tail_lines = static_cast<int>(GetInt(conf, "loom.task.executor.execution.error-message-max-depth"));
  spec.stop_grace_ms = static_cast<int>(GetInt(conf, "loom.task.stop-grace-ms"));
  spec.am_retry_count = static_cast<int>(GetInt(conf, "loom.am.retry-count"));
  spec.allocation_timeout_ms = std::max<int64_t>(0, GetInt(conf, "loom.container.allocation.timeout"));
  spec.registration_timeout_ms = std::max<int64_t>(0, GetInt(conf, "loom.container.registration.timeout"));
  spec.am_startup_timeout_ms = std::max<int64_t>(0, GetInt(conf, "loom.am.startup-timeout"));
  spec.executor_registry_timeout_ms = GetInt(conf, "loom.task.executor.registry-timeout-sec") * 1000;
  spec.metrics_interval_ms = static_cast<int>(GetInt(conf, "loom.task.metrics-interval-ms"));
  spec.gpu_metrics = GetBool(conf, "loom.task.gpu-metrics.enabled");
  spec.gpu_exec_path = GetString(conf, "loom.gpu-exec-path");
  auto range = Split(GetString(conf, "loom.task.port-range"), '-');
  spec.port_low = static_cast<int>(*ParseInt(range[0]));
  spec.port_high = static_cast<int>(*ParseInt(range[1]));
  spec.am_resources = {GetMemoryMib(conf, "loom.am.memory"), static_cast<int>(GetInt(conf, "loom.am.vcores")),
                       static_cast<int>(GetInt(conf, "loom.am.gpus"))};

  std::vector<std::string> names = config::TaskTypeNames(conf);
  CheckTypeSpelling(conf, names, problems);
  for (const std::string& t : GetList(conf, "loom.application.custom-types")) {
    if (!Contains(names, t)) {
      problems.push_back(key("loom.application.custom-types") + ": '" + t + "' is not a task type of the job (set " +
                         key("loom." + t + ".instances") + " to define it)");
    }
  }
  // TonY's sidecar TensorBoard: the log dir adds a `tensorboard` type unless the user has one.
  spec.tensorboard_log_dir = Trim(GetString(conf, "loom.application.tensorboard-log-dir"));
  // A relative dir is the submitter's, like --src_dir (a task runs in a dir of its own); a URI
  // (hdfs://, gs://) is TensorBoard's to read.
  if (spec.tensorboard_log_dir.find("://") == std::string::npos) spec.tensorboard_log_dir = resolve(spec.tensorboard_log_dir);
  bool tensorboard_added = !spec.tensorboard_log_dir.empty() && !Contains(names, "tensorboard");
  if (tensorboard_added) names.push_back("tensorboard");
  // MPI's launcher, which runs mpirun: added with small defaults unless the user defined it.
  bool launcher_added = spec.framework == Framework::kMpi && !Contains(names, "launcher");
  if (launcher_added) names.push_back("launcher");
  if (names.empty()) {
    problems.push_back(config::Respell("no task types: set loom.<type>.instances (e.g. --conf loom.worker.instances=2)",
                                       config::UserPrefix(conf)));
  }
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return std::make_pair(RankOrder(a), a) < std::make_pair(RankOrder(b), b);
  });
  std::set<std::string> untracked, sidecar, stop_on_failure;
  for (auto& t : GetList(conf, "loom.application.untracked.jobtypes")) untracked.insert(t);
  for (auto& t : GetList(conf, "loom.application.sidecar.jobtypes")) sidecar.insert(t);
  for (auto& t : GetList(conf, "loom.application.stop-on-failure-jobtypes")) stop_on_failure.insert(t);

  // Docker: the image keys ask for YARN's Docker runtime; they are refused rather than ignored
  // while it is off.
  spec.docker_enabled = GetBool(conf, "loom.docker.enabled");
  spec.docker_mounts = Trim(GetString(conf, "loom.docker.containers.mount"));
  std::string default_image = Trim(GetString(conf, "loom.docker.containers.image"));
  if (!spec.docker_enabled) {
    for (const auto& [canonical, entry] : conf.entries()) {
      std::vector<std::string> parts = Split(canonical, '.', false);
      bool docker_key = parts.size() == 4 && parts[1] == "docker" &&
                        (parts[3] == "image" || (parts[2] == "containers" && parts[3] == "mount"));
      if (docker_key && !Trim(entry.value).empty()) {
        problems.push_back(entry.original_key + "=" + entry.value + " asks for Docker, but " +
                           key("loom.docker.enabled") + " is false: set " + key("loom.docker.enabled") +
                           "=true, or remove the key");
      }
    }
  }

  Result<std::string> entry = EntryPointCommand(conf, base_dir, spec.src_dir, spec.python_venv_format, check_files);
  if (!entry.ok()) problems.push_back(entry.status().message());
  std::string containers_command = GetString(conf, "loom.containers.command");

  for (const std::string& name : names) {
    std::string k = "loom." + name + ".";
    bool tensorboard = name == "tensorboard" && !spec.tensorboard_log_dir.empty();
    TaskTypeSpec t;
    t.name = name;
    t.instances = static_cast<int>(GetInt(conf, k + "instances"));
    t.resources = {GetMemoryMib(conf, k + "memory"), static_cast<int>(GetInt(conf, k + "vcores")),
                   static_cast<int>(GetInt(conf, k + "gpus"))};
    if (tensorboard_added && name == "tensorboard") {
      // TonY's sizes for its sidecar (1 instance, 2 vcores, 2g, no GPU); loom.tensorboard.* win.
      t.instances = 1;
      if (!conf.IsExplicit(k + "memory")) t.resources.memory_mib = 2048;
      if (!conf.IsExplicit(k + "vcores")) t.resources.vcores = 2;
      if (!conf.IsExplicit(k + "gpus")) t.resources.gpus = 0;
    }
    if (launcher_added && name == "launcher") {
      // One mpirun needs little; loom.launcher.* win.
      t.instances = 1;
      if (!conf.IsExplicit(k + "memory")) t.resources.memory_mib = 512;
      if (!conf.IsExplicit(k + "gpus")) t.resources.gpus = 0;
    }
    if (t.instances == 0) {
      if (tensorboard) {
        problems.push_back(key(k + "instances") + "=0 switches off the TensorBoard that " +
                           key("loom.application.tensorboard-log-dir") + " asks for; remove one of the two");
      }
      continue;  // a type switched off
    }
    t.node_label = GetString(conf, k + "node-label");
    // TonY's src[::name][#archive]: the src part is a path on the submitting host.
    for (const std::string& f : GetList(conf, k + "resources")) t.extra_files.push_back(f);
    for (const std::string& f : GetList(conf, "loom.containers.resources")) t.extra_files.push_back(f);
    for (std::string& f : t.extra_files) {
      size_t end = std::min(f.find("::"), f.find('#'));
      std::string src = f.substr(0, end);
      if (check_files && !PathExists(resolve(src))) {
        problems.push_back(key(k + "resources") + ": " + src + " does not exist");
      }
      f = resolve(src) + (end == std::string::npos ? "" : f.substr(end));
    }
    int64_t max_instances = GetInt(conf, k + "max-instances");
    if (max_instances >= 0 && t.instances > max_instances) {
      problems.push_back(key(k + "instances") + "=" + std::to_string(t.instances) + " exceeds " +
                         key(k + "max-instances") + "=" + std::to_string(max_instances));
    }
    t.command = GetString(conf, k + "command");
    if (tensorboard) {
      // TonY's TensorBoard task always runs TensorBoard, whatever the job's entry point.
      if (t.command.empty()) t.command = TensorBoardCommand(conf);
    } else {
      if (t.command.empty()) t.command = containers_command;
      if (t.command.empty() && entry.ok()) t.command = *entry;
      // An MPI task that holds ranks runs no command of its own: the launcher's mpirun starts them.
      if (t.command.empty() && entry.ok() && (spec.framework != Framework::kMpi || name == "launcher")) {
        problems.push_back("nothing to run for type '" + name + "': give --executes or " + key(k + "command"));
      }
    }
    // TonY makes its TensorBoard a sidecar whatever sidecar.jobtypes says.
    t.role = sidecar.count(name) || tensorboard ? TaskRole::kSidecar
             : untracked.count(name)            ? TaskRole::kUntracked
                                                : TaskRole::kTracked;
    t.stop_on_failure = stop_on_failure.count(name) > 0;
    std::string restart = ToLower(GetString(conf, k + "restart-policy"));
    t.restart_policy = restart == "on-failure" ? RestartPolicy::kOnFailure
                       : restart == "exit-code" ? RestartPolicy::kExitCode
                                                : RestartPolicy::kNever;
    t.max_restarts = static_cast<int>(GetInt(conf, k + "max-restarts"));
    t.processes = static_cast<int>(GetInt(conf, k + "processes"));
    t.split_gpus = ToLower(Trim(GetString(conf, k + "process-gpus"))) != "all";
    if (t.processes > 1 && t.role == TaskRole::kSidecar) {
      // A sidecar is outside the job's world (no ranks): several copies of it would only
      // collide on its port (TB_PORT).
      problems.push_back(key(k + "processes") + "=" + std::to_string(t.processes) + ": '" + name +
                         "' is a sidecar type, which runs one process per task; remove the key");
    } else if (t.processes > 1 && t.split_gpus && t.resources.gpus % t.processes != 0) {
      std::string n = std::to_string(t.processes), g = std::to_string(t.resources.gpus);
      problems.push_back(key(k + "gpus") + "=" + g + ", " + key(k + "processes") + "=" + n + ": " + g +
                         " GPUs over " + n + " processes cannot be split evenly: set " + key(k + "process-gpus") +
                         "=all (every process sees all " + g + "), or make " + key(k + "gpus") +
                         " a multiple of " + n);
    }
    if (spec.docker_enabled) {
      t.docker_image = Trim(GetString(conf, "loom.docker." + name + ".image"));
      if (t.docker_image.empty()) t.docker_image = default_image;
      if (t.docker_image.empty()) {
        problems.push_back(key("loom.docker.enabled") + "=true, but task type '" + name + "' has no image: set " +
                           key("loom.docker." + name + ".image") + " or " + key("loom.docker.containers.image"));
      }
    }
    spec.types.push_back(std::move(t));
  }
  if (!names.empty() && spec.types.empty()) {
    problems.push_back("every task type has 0 instances: nothing to run");
  }
  if (spec.framework == Framework::kMpi && !spec.types.empty()) ApplyMpi(conf, spec, problems);
  if (!spec.types.empty() && spec.TrackedTasks() == 0) {
    problems.push_back("no tracked task type: every type is untracked or a sidecar, so the job could never finish");
  }

  // TonY's two stages. Given one list, the other is every remaining type.
  std::vector<std::string> prepare = GetList(conf, "loom.application.prepare-stage");
  std::vector<std::string> training = GetList(conf, "loom.application.training-stage");
  if (!prepare.empty() || !training.empty()) {
    bool stages_ok = true;
    auto check_stage = [&](const char* stage_key, std::vector<std::string>& list) {
      std::vector<std::string> unique;
      for (const std::string& t : list) {
        if (!spec.FindType(t)) {
          std::vector<std::string> have;
          for (const auto& jt : spec.types) have.push_back(jt.name);
          problems.push_back(key(stage_key) + ": task type '" + t + "' is not a type of the job (its types: " +
                             Join(have, ", ") + ")");
          stages_ok = false;
        } else if (!Contains(unique, t)) {
          unique.push_back(t);
        }
      }
      list = unique;
    };
    check_stage("loom.application.prepare-stage", prepare);
    check_stage("loom.application.training-stage", training);
    for (const std::string& t : prepare) {
      if (Contains(training, t)) {
        problems.push_back("task type '" + t + "' is in both " + key("loom.application.prepare-stage") + " and " +
                           key("loom.application.training-stage") + "; a type belongs to one stage");
        stages_ok = false;
      }
    }
    bool fill_prepare = prepare.empty(), fill_training = training.empty();
    for (const auto& t : spec.types) {
      if (fill_prepare && !Contains(training, t.name)) prepare.push_back(t.name);
      if (fill_training && !Contains(prepare, t.name)) training.push_back(t.name);
    }
    bool prepare_tracked = false;
    for (const std::string& t : prepare) prepare_tracked |= spec.FindType(t)->role == TaskRole::kTracked;
    if (stages_ok && !prepare_tracked && !training.empty()) {
      problems.push_back(key("loom.application.prepare-stage") + "=" + Join(prepare, ",") +
                         ": the prepare stage has no tracked type (untracked and sidecar tasks are never waited "
                         "for), so it would never finish for the training stage to start; put a tracked type in it");
    }
    spec.prepare_stage = prepare;
    spec.training_stage = training;
  }

  // Group dependency timeouts: loom.application.dependency.<X>.timeout.after.<G> = seconds.
  for (const auto& [canonical, conf_entry] : conf.entries()) {
    std::vector<std::string> parts = Split(canonical, '.', false);
    if (!StartsWith(canonical, "loom.application.dependency.") || parts.size() != 7) continue;
    DependencyTimeout d;
    d.type = parts[3];
    d.group = parts[6];
    d.seconds = GetInt(conf, canonical);
    d.ignored = GetBool(conf, canonical + ".ignored");
    std::string group_key = "loom.application.group." + d.group;
    d.group_types = GetList(conf, "loom.application.group." + d.group);
    if (d.group_types.empty()) {
      problems.push_back(conf_entry.original_key + ": group '" + d.group + "' is not defined (set " + key(group_key) +
                         "=type,...)");
      continue;
    }
    if (!spec.FindType(d.type)) {
      problems.push_back(conf_entry.original_key + ": task type '" + d.type + "' is not part of the job");
      continue;
    }
    for (const std::string& t : d.group_types) {
      if (!spec.FindType(t)) problems.push_back(key(group_key) + ": task type '" + t + "' is not part of the job");
    }
    spec.dependency_timeouts.push_back(d);
  }

  Resources total = spec.TotalResources();
  CheckCap(conf, "loom.task.max-total-instances", spec.TotalTasks(), "tasks", problems);
  CheckCap(conf, "loom.task.max-total-gpus", total.gpus, "GPUs", problems);
  CheckCap(conf, "loom.task.max-total-vcores", total.vcores, "vcores", problems);
  CheckCap(conf, "loom.task.max-total-memory", total.memory_mib, "MiB", problems);

  std::string framework_key = key("loom.application.framework");
  if (spec.framework == Framework::kStandalone && spec.TotalTasks() != 1) {
    problems.push_back(framework_key + "=standalone runs exactly 1 task, but " + std::to_string(spec.TotalTasks()) +
                       " are configured");
  }
  if (spec.framework == Framework::kMXNet) {
    const TaskTypeSpec* sched = spec.FindType("scheduler");
    if (!sched || sched->instances != 1) {
      problems.push_back(framework_key + "=mxnet needs " + key("loom.scheduler.instances") + "=1 (DMLC_PS_ROOT_URI)");
    } else if (sched->processes != 1) {
      problems.push_back(framework_key + "=mxnet has one scheduler process: remove " +
                         key("loom.scheduler.processes") + "=" + std::to_string(sched->processes));
    }
  }
  if (!problems.empty()) {
    return Status::InvalidArgument("invalid job:\n  " + Join(problems, "\n  "));
  }
  return spec;
}

}  // namespace loom
