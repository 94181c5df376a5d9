#include "core/job_spec.h"

#include <algorithm>

#include "core/config/key_registry.h"
#include "core/files.h"
#include "core/job_spec_internal.h"
#include "core/job_world.h"
#include "core/strings.h"

namespace loom {

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

// The keys the user set, canonical -> as written, so that messages name them as the user does.
void ReadKeySpellings(const Config& conf, JobSpec& spec) {
  spec.key_prefix = config::UserPrefix(conf);
  for (const auto& [key, e] : conf.entries()) {
    if (StartsWith(e.original_key, "tony.") || StartsWith(e.original_key, "loom.")) {
      if (e.source != config::kDefaultSource) spec.key_spellings[key] = e.original_key;
    }
  }
}

Framework ReadFramework(const Config& conf) {
  std::string fw = ToLower(GetString(conf, "loom.application.framework"));
  return fw == "pytorch"      ? Framework::kPyTorch
         : fw == "mxnet"      ? Framework::kMXNet
         : fw == "horovod"    ? Framework::kHorovod
         : fw == "standalone" ? Framework::kStandalone
         : fw == "mpi"        ? Framework::kMpi
                              : Framework::kTensorFlow;
}

// TonY's fail-on-worker-failure-enabled is the success policy under another name: true fails
// the job on any worker failure (all), false is TonY's own rule (any). Unset, the policy decides.
void ReadSuccessPolicy(const Config& conf, JobSpec& spec, std::vector<std::string>& problems) {
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
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
}

// The job's files on the submitting host: --src_dir and --python_venv, made absolute.
void ReadPythonFiles(const Config& conf, const std::string& base_dir, bool check_files, JobSpec& spec,
                     std::vector<std::string>& problems) {
  spec.src_dir = SubmitterPath(base_dir, GetString(conf, "loom.application.src-dir"));
  if (check_files && !spec.src_dir.empty() && !IsDirectory(spec.src_dir)) {
    problems.push_back("--src_dir " + GetString(conf, "loom.application.src-dir") + " is not a directory");
  }
  spec.python_venv = SubmitterPath(base_dir, GetString(conf, "loom.application.python-venv"));
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
}

Result<std::map<std::string, std::string>> ParseEnvList(const std::vector<std::string>& kvs) {
  std::map<std::string, std::string> env;
  for (const std::string& kv : kvs) {
    LOOM_ASSIGN_OR_RETURN(auto pair, ParseKeyValue(kv));
    env[pair.first] = pair.second;
  }
  return env;
}

// --shell_env and --container_env.
void ReadEnvs(const Config& conf, JobSpec& spec) {
  auto exec_env = ParseEnvList(GetList(conf, "loom.execution.envs"));
  auto cont_env = ParseEnvList(GetList(conf, "loom.containers.envs"));
  if (exec_env.ok()) spec.execution_env = *exec_env;
  if (cont_env.ok()) spec.container_env = *cont_env;
}

// The job-wide settings that cannot be wrong by now (config::Validate has checked each value):
// heartbeats, timeouts, metrics, the port range and the AM's size.
void ReadSettings(const Config& conf, JobSpec& spec) {
  spec.heartbeat_interval_ms = static_cast<int>(GetInt(conf, "loom.task.heartbeat-interval-ms"));
  spec.max_missed_heartbeats = static_cast<int>(GetInt(conf, "loom.task.max-missed-heartbeats"));
  spec.application_timeout_ms = std::max<int64_t>(0, GetInt(conf, "loom.application.timeout"));
  // tony.worker.timeout: TonY's name for it before TonY#596 (it timed every task, not only workers).
  bool old_timeout = conf.IsExplicit("loom.worker.timeout") && !conf.IsExplicit("loom.task.executor.execution-timeout-ms");
  spec.execution_timeout_ms = std::max<int64_t>(
      0, old_timeout ? GetInt(conf, "loom.worker.timeout") : GetInt(conf, "loom.task.executor.execution-timeout-ms"));
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
}

// What a framework needs of the job's tasks besides its types' own keys.
void CheckFrameworkTasks(const Config& conf, const JobSpec& spec, std::vector<std::string>& problems) {
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
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
}

// The ExecutesAs that `loom submit` recorded in config.xml (StagedJobConfig), taken out of
// `conf`, which must not carry it otherwise: it is no key of the registry, and a user who set it
// would choose a command that submit never checked.
Result<ExecutesAs> TakeRecordedExecutesAs(Config& conf) {
  const config::ConfigEntry* e = conf.Entry(kExecutesAsKey);
  if (!e) return ExecutesAs::kNone;
  std::string shown = e->original_key + " (from " + e->source + ")";
  if (e->source != kExecutesAsSource) {
    return Status::InvalidArgument("invalid configuration:\n  " + shown +
                                   ": Loom sets this key itself, at submit, to record how --executes runs; "
                                   "remove it");
  }
  std::string value = e->value;
  conf.Unset(kExecutesAsKey);
  if (value == "program") return ExecutesAs::kProgram;
  if (value == "script") return ExecutesAs::kScript;
  return Status::InvalidArgument("invalid configuration:\n  " + shown + "='" + value +
                                 "': expected program or script");
}

}  // namespace

Result<JobSpec> BuildJobSpec(const Config& given, const std::string& base_dir, bool check_files) {
  Config conf = given;
  LOOM_ASSIGN_OR_RETURN(ExecutesAs recorded, TakeRecordedExecutesAs(conf));
  LOOM_RETURN_IF_ERROR(config::Validate(conf));
  // Every message names keys as the user wrote them (tony.* or loom.*); their order is the order
  // of the steps here.
  std::vector<std::string> problems;
  JobSpec spec;
  spec.executes_as = recorded;  // BuildTaskTypes follows it, or decides
  ReadKeySpellings(conf, spec);
  spec.name = GetString(conf, "loom.application.name");
  spec.framework = ReadFramework(conf);
  spec.gang = ToLower(GetString(conf, "loom.application.distributed-mode")) == "gang";
  ReadSuccessPolicy(conf, spec, problems);
  ReadPythonFiles(conf, base_dir, check_files, spec, problems);
  ReadEnvs(conf, spec);
  ReadSettings(conf, spec);

  BuildTaskTypes(conf, base_dir, check_files, spec, problems);
  if (spec.framework == Framework::kMpi && !spec.types.empty()) ApplyMpi(conf, spec, problems);
  ApplyWorldTypes(conf, spec, problems);
  if (!spec.types.empty() && spec.TrackedTasks() == 0) {
    problems.push_back("no tracked task type: every type is untracked or a sidecar, so the job could never finish");
  }
  ApplyStages(conf, spec, problems);
  ApplyDependencyTimeouts(conf, spec, problems);
  CheckCaps(conf, spec, problems);
  CheckFrameworkTasks(conf, spec, problems);
  if (auto location = ParseHistoryLocation(conf); location.ok()) {
    spec.history_location = *location;
  } else {
    problems.push_back(location.status().message());
  }
  if (!problems.empty()) {
    return Status::InvalidArgument("invalid job:\n  " + Join(problems, "\n  "));
  }
  return spec;
}

Config StagedJobConfig(const Config& conf, const JobSpec& spec) {
  Config staged = config::WithDefaults(conf);
  if (spec.executes_as != ExecutesAs::kNone) {
    staged.Set(kExecutesAsKey, spec.executes_as == ExecutesAs::kProgram ? "program" : "script", kExecutesAsSource);
  }
  return staged;
}

}  // namespace loom
