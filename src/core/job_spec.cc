#include "core/job_spec.h"

#include <algorithm>
#include <set>

#include "core/config/key_registry.h"
#include "core/files.h"
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

Result<std::map<std::string, std::string>> ParseEnvList(const Config& conf, const std::string& key) {
  std::map<std::string, std::string> env;
  for (const std::string& kv : GetList(conf, key)) {
    LOOM_ASSIGN_OR_RETURN(auto pair, ParseKeyValue(kv));
    env[pair.first] = pair.second;
  }
  return env;
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

}  // namespace

Result<JobSpec> BuildJobSpec(const Config& conf, const std::string& base_dir, bool check_files) {
  LOOM_RETURN_IF_ERROR(config::Validate(conf));
  std::vector<std::string> problems;
  JobSpec spec;
  spec.name = GetString(conf, "loom.application.name");
  std::string fw = ToLower(GetString(conf, "loom.application.framework"));
  spec.framework = fw == "pytorch"      ? Framework::kPyTorch
                   : fw == "mxnet"      ? Framework::kMXNet
                   : fw == "horovod"    ? Framework::kHorovod
                   : fw == "standalone" ? Framework::kStandalone
                                        : Framework::kTensorFlow;
  spec.gang = ToLower(GetString(conf, "loom.application.distributed-mode")) == "gang";
  spec.success_policy = GetString(conf, "loom.application.success-policy") == "any" ? SuccessPolicy::kAny
                                                                                    : SuccessPolicy::kAll;
  if (GetBool(conf, "loom.application.enable-preprocess")) {
    problems.push_back("loom.application.enable-preprocess=true: TonY's preprocess mode is not supported");
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

  auto exec_env = ParseEnvList(conf, "loom.execution.envs");
  auto cont_env = ParseEnvList(conf, "loom.containers.envs");
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
  auto range = Split(GetString(conf, "loom.task.port-range"), '-');
  spec.port_low = static_cast<int>(*ParseInt(range[0]));
  spec.port_high = static_cast<int>(*ParseInt(range[1]));
  spec.am_resources = {GetMemoryMib(conf, "loom.am.memory"), static_cast<int>(GetInt(conf, "loom.am.vcores")),
                       static_cast<int>(GetInt(conf, "loom.am.gpus"))};

  std::vector<std::string> names = config::TaskTypeNames(conf);
  if (names.empty()) {
    problems.push_back("no task types: set loom.<type>.instances (e.g. --conf loom.worker.instances=2)");
  }
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return std::make_pair(RankOrder(a), a) < std::make_pair(RankOrder(b), b);
  });
  std::set<std::string> untracked, sidecar, stop_on_failure;
  for (auto& t : GetList(conf, "loom.application.untracked.jobtypes")) untracked.insert(t);
  for (auto& t : GetList(conf, "loom.application.sidecar.jobtypes")) sidecar.insert(t);
  for (auto& t : GetList(conf, "loom.application.stop-on-failure-jobtypes")) stop_on_failure.insert(t);

  Result<std::string> entry = EntryPointCommand(conf, base_dir, spec.src_dir, spec.python_venv_format, check_files);
  if (!entry.ok()) problems.push_back(entry.status().message());
  std::string containers_command = GetString(conf, "loom.containers.command");

  for (const std::string& name : names) {
    std::string k = "loom." + name + ".";
    TaskTypeSpec t;
    t.name = name;
    t.instances = static_cast<int>(GetInt(conf, k + "instances"));
    if (t.instances == 0) continue;  // a type switched off
    t.resources = {GetMemoryMib(conf, k + "memory"), static_cast<int>(GetInt(conf, k + "vcores")),
                   static_cast<int>(GetInt(conf, k + "gpus"))};
    t.node_label = GetString(conf, k + "node-label");
    // TonY's src[::name][#archive]: the src part is a path on the submitting host.
    for (const std::string& f : GetList(conf, k + "resources")) t.extra_files.push_back(f);
    for (const std::string& f : GetList(conf, "loom.containers.resources")) t.extra_files.push_back(f);
    for (std::string& f : t.extra_files) {
      size_t end = std::min(f.find("::"), f.find('#'));
      std::string src = f.substr(0, end);
      if (check_files && !PathExists(resolve(src))) {
        problems.push_back(k + "resources: " + src + " does not exist");
      }
      f = resolve(src) + (end == std::string::npos ? "" : f.substr(end));
    }
    int64_t max_instances = GetInt(conf, k + "max-instances");
    if (max_instances >= 0 && t.instances > max_instances) {
      problems.push_back(k + "instances=" + std::to_string(t.instances) + " exceeds " + k +
                         "max-instances=" + std::to_string(max_instances));
    }
    t.command = GetString(conf, k + "command");
    if (t.command.empty()) t.command = containers_command;
    if (t.command.empty() && entry.ok()) t.command = *entry;
    if (t.command.empty() && entry.ok()) {
      problems.push_back("nothing to run for type '" + name + "': give --executes or " + k + "command");
    }
    t.role = sidecar.count(name) ? TaskRole::kSidecar
             : untracked.count(name) ? TaskRole::kUntracked
                                     : TaskRole::kTracked;
    t.stop_on_failure = stop_on_failure.count(name) > 0;
    std::string policy = ToLower(GetString(conf, k + "restart-policy"));
    t.restart_policy = policy == "on-failure" ? RestartPolicy::kOnFailure
                       : policy == "exit-code" ? RestartPolicy::kExitCode
                                               : RestartPolicy::kNever;
    t.max_restarts = static_cast<int>(GetInt(conf, k + "max-restarts"));
    spec.types.push_back(std::move(t));
  }
  if (!names.empty() && spec.types.empty()) {
    problems.push_back("every task type has 0 instances: nothing to run");
  }
  if (!spec.types.empty() && spec.TrackedTasks() == 0) {
    problems.push_back("no tracked task type: every type is untracked or a sidecar, so the job could never finish");
  }

  // Group dependency timeouts: loom.application.dependency.<X>.timeout.after.<G> = seconds.
  for (const auto& [key, entry] : conf.entries()) {
    std::vector<std::string> parts = Split(key, '.', false);
    if (parts.size() != 7 || parts[1] != "application" || parts[2] != "dependency") continue;
    DependencyTimeout d;
    d.type = parts[3];
    d.group = parts[6];
    d.seconds = GetInt(conf, key);
    d.ignored = GetBool(conf, key + ".ignored");
    d.group_types = GetList(conf, "loom.application.group." + d.group);
    if (d.group_types.empty()) {
      problems.push_back(entry.original_key + ": group '" + d.group + "' is not defined (set loom.application.group." +
                         d.group + "=type,...)");
      continue;
    }
    if (!spec.FindType(d.type)) {
      problems.push_back(entry.original_key + ": task type '" + d.type + "' is not part of the job");
      continue;
    }
    for (const std::string& t : d.group_types) {
      if (!spec.FindType(t)) problems.push_back("loom.application.group." + d.group + ": task type '" + t + "' is not part of the job");
    }
    spec.dependency_timeouts.push_back(d);
  }

  auto cap = [&](const char* key, int64_t total, const std::string& what) {
    int64_t limit = GetInt(conf, key);
    if (limit >= 0 && total > limit) {
      problems.push_back(std::string(key) + "=" + std::to_string(limit) + " but the job asks for " +
                         std::to_string(total) + " " + what);
    }
  };
  Resources total = spec.TotalResources();
  cap("loom.task.max-total-instances", spec.TotalTasks(), "tasks");
  cap("loom.task.max-total-gpus", total.gpus, "GPUs");
  cap("loom.task.max-total-vcores", total.vcores, "vcores");
  cap("loom.task.max-total-memory", total.memory_mib, "MiB");

  if (spec.framework == Framework::kStandalone && spec.TotalTasks() != 1) {
    problems.push_back("loom.application.framework=standalone runs exactly 1 task, but " +
                       std::to_string(spec.TotalTasks()) + " are configured");
  }
  if (spec.framework == Framework::kMXNet) {
    const TaskTypeSpec* sched = spec.FindType("scheduler");
    if (!sched || sched->instances != 1) {
      problems.push_back("loom.application.framework=mxnet needs loom.scheduler.instances=1 (DMLC_PS_ROOT_URI)");
    }
  }
  if (!problems.empty()) {
    return Status::InvalidArgument("invalid job:\n  " + Join(problems, "\n  "));
  }
  return spec;
}

}  // namespace loom
