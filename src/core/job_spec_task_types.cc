#include "core/job_spec_internal.h"

#include <algorithm>

#include "core/config/key_registry.h"
#include "core/entry_point_command.h"
#include "core/strings.h"

namespace loom {

namespace {

int RankOrder(const std::string& type) {
  if (type == "chief") return 0;
  if (type == "master") return 1;
  if (type == "worker") return 2;
  return 3;
}

// TonY's sidecar TensorBoard: TonY runs tensorboard's main module with tony.python-exec-path.
std::string TensorBoardCommand(const Config& conf) {
  std::string python = Trim(GetString(conf, "loom.python-exec-path"));
  std::string run = python.empty() ? "tensorboard" : ShellQuote(python) + " -m tensorboard.main";
  // TensorBoard 2.x serves localhost only by default; the link is for other hosts too.
  return run + " --logdir \"$TB_LOG_DIR\" --port \"$TB_PORT\" --host 0.0.0.0";
}

struct TypeNames {
  std::vector<std::string> names;  // in rank order
  std::vector<std::string> added;  // the ones Loom added, which get Loom's sizes
};

// The job's task types: those the configuration defines, and the ones Loom adds unless the user
// defined them (TensorBoard's sidecar for a log dir, MPI's launcher).
TypeNames JobTypeNames(const Config& conf, const JobSpec& spec, std::vector<std::string>& problems) {
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
  TypeNames out;
  std::vector<std::string>& names = out.names;
  names = config::TaskTypeNames(conf);
  CheckTypeSpelling(conf, names, problems);
  for (const std::string& t : GetList(conf, "loom.application.custom-types")) {
    if (!IsListed(names, t)) {
      problems.push_back(key("loom.application.custom-types") + ": '" + t + "' is not a task type of the job (set " +
                         key("loom." + t + ".instances") + " to define it)");
    }
  }
  if (!spec.tensorboard_log_dir.empty() && !IsListed(names, "tensorboard")) {
    names.push_back("tensorboard");
    out.added.push_back("tensorboard");
  }
  // MPI's launcher, which runs mpirun: added with small defaults unless the user defined it.
  if (spec.framework == Framework::kMpi && !IsListed(names, "launcher")) {
    names.push_back("launcher");
    out.added.push_back("launcher");
  }
  if (names.empty()) {
    problems.push_back(config::Respell("no task types: set loom.<type>.instances (e.g. --conf loom.worker.instances=2)",
                                       config::UserPrefix(conf)));
  }
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return std::make_pair(RankOrder(a), a) < std::make_pair(RankOrder(b), b);
  });
  return out;
}

// Docker: the image keys ask for YARN's Docker runtime; they are refused rather than ignored
// while it is off.
void ReadDocker(const Config& conf, JobSpec& spec, std::vector<std::string>& problems) {
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
  spec.docker_enabled = GetBool(conf, "loom.docker.enabled");
  spec.docker_mounts = Trim(GetString(conf, "loom.docker.containers.mount"));
  if (spec.docker_enabled) return;
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

// The instances and resources of type `t.name`. A type Loom `added` gets Loom's sizes for it,
// unless the user set them.
void ReadSize(const Config& conf, bool added, TaskTypeSpec& t) {
  const std::string k = "loom." + t.name + ".";
  t.instances = static_cast<int>(GetInt(conf, k + "instances"));
  t.resources = {GetMemoryMib(conf, k + "memory"), static_cast<int>(GetInt(conf, k + "vcores")),
                 static_cast<int>(GetInt(conf, k + "gpus"))};
  if (added && t.name == "tensorboard") {
    // TonY's sizes for its sidecar (1 instance, 2 vcores, 2g, no GPU); loom.tensorboard.* win.
    t.instances = 1;
    if (!conf.IsExplicit(k + "memory")) t.resources.memory_mib = 2048;
    if (!conf.IsExplicit(k + "vcores")) t.resources.vcores = 2;
    if (!conf.IsExplicit(k + "gpus")) t.resources.gpus = 0;
  }
  if (added && t.name == "launcher") {
    // One mpirun needs little; loom.launcher.* win.
    t.instances = 1;
    if (!conf.IsExplicit(k + "memory")) t.resources.memory_mib = 512;
    if (!conf.IsExplicit(k + "gpus")) t.resources.gpus = 0;
  }
}

// TonY's src[::name][#archive] (loom.<type>.resources, then loom.containers.resources): the src
// part is a path on the submitting host, made absolute here.
void ReadExtraFiles(const Config& conf, const std::string& base_dir, bool check_files, TaskTypeSpec& t,
                    std::vector<std::string>& problems) {
  const std::string k = "loom." + t.name + ".";
  for (const std::string& f : GetList(conf, k + "resources")) t.extra_files.push_back(f);
  for (const std::string& f : GetList(conf, "loom.containers.resources")) t.extra_files.push_back(f);
  for (std::string& f : t.extra_files) {
    size_t end = std::min(f.find("::"), f.find('#'));
    std::string src = f.substr(0, end);
    if (check_files && !PathExists(SubmitterPath(base_dir, src))) {
      problems.push_back(config::Spelled(conf, k + "resources") + ": " + src + " does not exist");
    }
    f = SubmitterPath(base_dir, src) + (end == std::string::npos ? "" : f.substr(end));
  }
}

void CheckMaxInstances(const Config& conf, const TaskTypeSpec& t, std::vector<std::string>& problems) {
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
  const std::string k = "loom." + t.name + ".";
  int64_t max_instances = GetInt(conf, k + "max-instances");
  if (max_instances >= 0 && t.instances > max_instances) {
    problems.push_back(key(k + "instances") + "=" + std::to_string(t.instances) + " exceeds " +
                       key(k + "max-instances") + "=" + std::to_string(max_instances));
  }
}

// What type `name` runs: loom.<type>.command, else loom.containers.command, else the job's
// entry point, whose interpreter then becomes the job's python_binary.
std::string TypeCommand(const Config& conf, const std::string& name, bool tensorboard,
                        const Result<EntryPoint>& entry, JobSpec& spec, std::vector<std::string>& problems) {
  const std::string k = "loom." + name + ".";
  std::string command = GetString(conf, k + "command");
  if (tensorboard) {
    // TonY's TensorBoard task always runs TensorBoard, whatever the job's entry point.
    if (command.empty()) command = TensorBoardCommand(conf);
    return command;
  }
  if (command.empty()) command = GetString(conf, "loom.containers.command");
  if (command.empty() && entry.ok()) {
    command = entry->command;
    if (!command.empty()) spec.python_binary = entry->python;
  }
  // An MPI task that holds ranks runs no command of its own: the launcher's mpirun starts them.
  if (command.empty() && entry.ok() && (spec.framework != Framework::kMpi || name == "launcher")) {
    problems.push_back("nothing to run for type '" + name + "': give --executes or " +
                       config::Spelled(conf, k + "command"));
  }
  return command;
}

TaskRole RoleOf(const Config& conf, const std::string& name, bool tensorboard) {
  // TonY makes its TensorBoard a sidecar whatever sidecar.jobtypes says.
  if (IsListed(GetList(conf, "loom.application.sidecar.jobtypes"), name) || tensorboard) return TaskRole::kSidecar;
  if (IsListed(GetList(conf, "loom.application.untracked.jobtypes"), name)) return TaskRole::kUntracked;
  return TaskRole::kTracked;
}

void ReadRestarts(const Config& conf, TaskTypeSpec& t) {
  const std::string k = "loom." + t.name + ".";
  std::string restart = ToLower(GetString(conf, k + "restart-policy"));
  t.restart_policy = restart == "on-failure" ? RestartPolicy::kOnFailure
                     : restart == "exit-code" ? RestartPolicy::kExitCode
                                              : RestartPolicy::kNever;
  t.max_restarts = static_cast<int>(GetInt(conf, k + "max-restarts"));
}

// The processes per task and how they share its GPUs; needs the type's role and resources.
void ReadProcesses(const Config& conf, TaskTypeSpec& t, std::vector<std::string>& problems) {
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
  const std::string k = "loom." + t.name + ".";
  t.processes = static_cast<int>(GetInt(conf, k + "processes"));
  t.split_gpus = ToLower(Trim(GetString(conf, k + "process-gpus"))) != "all";
  if (t.processes > 1 && t.role == TaskRole::kSidecar) {
    // A sidecar is outside the job's world (no ranks): several copies of it would only
    // collide on its port (TB_PORT).
    problems.push_back(key(k + "processes") + "=" + std::to_string(t.processes) + ": '" + t.name +
                       "' is a sidecar type, which runs one process per task; remove the key");
  } else if (t.processes > 1 && t.split_gpus && t.resources.gpus % t.processes != 0) {
    std::string n = std::to_string(t.processes), g = std::to_string(t.resources.gpus);
    problems.push_back(key(k + "gpus") + "=" + g + ", " + key(k + "processes") + "=" + n + ": " + g +
                       " GPUs over " + n + " processes cannot be split evenly: set " + key(k + "process-gpus") +
                       "=all (every process sees all " + g + "), or make " + key(k + "gpus") +
                       " a multiple of " + n);
  }
}

// With Docker on: loom.docker.<type>.image, else loom.docker.containers.image.
void ReadDockerImage(const Config& conf, TaskTypeSpec& t, std::vector<std::string>& problems) {
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
  t.docker_image = Trim(GetString(conf, "loom.docker." + t.name + ".image"));
  if (t.docker_image.empty()) t.docker_image = Trim(GetString(conf, "loom.docker.containers.image"));
  if (t.docker_image.empty()) {
    problems.push_back(key("loom.docker.enabled") + "=true, but task type '" + t.name + "' has no image: set " +
                       key("loom.docker." + t.name + ".image") + " or " + key("loom.docker.containers.image"));
  }
}

}  // namespace

void BuildTaskTypes(const Config& conf, const std::string& base_dir, bool check_files, JobSpec& spec,
                    std::vector<std::string>& problems) {
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
  // TonY's sidecar TensorBoard: the log dir adds a `tensorboard` type unless the user has one.
  spec.tensorboard_log_dir = Trim(GetString(conf, "loom.application.tensorboard-log-dir"));
  // A relative dir is the submitter's, like --src_dir (a task runs in a dir of its own); a URI
  // (hdfs://, gs://) is TensorBoard's to read.
  if (spec.tensorboard_log_dir.find("://") == std::string::npos) {
    spec.tensorboard_log_dir = SubmitterPath(base_dir, spec.tensorboard_log_dir);
  }
  TypeNames names = JobTypeNames(conf, spec, problems);
  ReadDocker(conf, spec, problems);
  Result<EntryPoint> entry = EntryPointCommand(conf, base_dir, spec, check_files);
  if (entry.ok()) {
    spec.executes_as = entry->executes_as;  // what StagedJobConfig records for the AM
  } else {
    problems.push_back(entry.status().message());
  }

  for (const std::string& name : names.names) {
    bool tensorboard = name == "tensorboard" && !spec.tensorboard_log_dir.empty();
    TaskTypeSpec t;
    t.name = name;
    ReadSize(conf, IsListed(names.added, name), t);
    if (t.instances == 0) {
      if (tensorboard) {
        problems.push_back(key("loom." + name + ".instances") + "=0 switches off the TensorBoard that " +
                           key("loom.application.tensorboard-log-dir") + " asks for; remove one of the two");
      }
      continue;  // a type switched off
    }
    t.node_label = GetString(conf, "loom." + name + ".node-label");
    ReadExtraFiles(conf, base_dir, check_files, t, problems);
    CheckMaxInstances(conf, t, problems);
    t.command = TypeCommand(conf, name, tensorboard, entry, spec, problems);
    t.role = RoleOf(conf, name, tensorboard);
    t.stop_on_failure = IsListed(GetList(conf, "loom.application.stop-on-failure-jobtypes"), name);
    ReadRestarts(conf, t);
    ReadProcesses(conf, t, problems);
    if (spec.docker_enabled) ReadDockerImage(conf, t, problems);
    spec.types.push_back(std::move(t));
  }
  if (!names.names.empty() && spec.types.empty()) {
    problems.push_back("every task type has 0 instances: nothing to run");
  }
}

}  // namespace loom
