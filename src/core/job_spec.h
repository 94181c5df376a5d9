#pragma once
// JobSpec: the validated, typed view of a job's configuration that the client, the AM and the
// executors all share. Built only through BuildJobSpec, which checks everything a job needs
// before anything starts.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/history_location.h"
#include "core/status.h"

namespace loom {

enum class Framework { kTensorFlow, kPyTorch, kMXNet, kHorovod, kStandalone, kMpi };
std::string FrameworkName(Framework f);

// How a task type's outcome counts toward the job's.
enum class TaskRole {
  kTracked,    // the job waits for it; its failure fails the job (see SuccessPolicy)
  kUntracked,  // not waited for; stopped when every tracked task is done (default: ps)
  kSidecar,    // not waited for; failures ignored (default: tensorboard)
};

enum class SuccessPolicy {
  kAll,  // every tracked task must succeed (Loom's default)
  kAny,  // TonY's rule: fails only on chief / stop-on-failure failure, or when all tracked fail
};

struct TaskId {
  std::string type;
  int index = 0;
  std::string ToString() const { return type + ":" + std::to_string(index); }
  // Directory-safe name: "worker-1".
  std::string DirName() const { return type + "-" + std::to_string(index); }
  bool operator==(const TaskId&) const = default;
  auto operator<=>(const TaskId&) const = default;
};
Result<TaskId> ParseTaskId(const std::string& s);  // "worker:1"

struct Resources {
  int64_t memory_mib = 0;
  int vcores = 0;
  int gpus = 0;
  std::string ToString() const;
};

// Per-type restart of single tasks, as Kubeflow's restartPolicy.
enum class RestartPolicy {
  kNever,
  kOnFailure,  // any failure
  kExitCode,   // exit codes 128-255 (signals, OOM kills) are retried; 1-127 are permanent
};

struct TaskTypeSpec {
  std::string name;
  int instances = 0;
  Resources resources;
  std::string command;  // the full user command line for this type
  std::vector<std::string> extra_files;
  std::string node_label;
  TaskRole role = TaskRole::kTracked;
  bool stop_on_failure = false;
  RestartPolicy restart_policy = RestartPolicy::kNever;
  int max_restarts = 3;
  // The Docker image its containers run in (YARN's Docker runtime); empty: none. Set only when
  // loom.docker.enabled=true: loom.docker.<type>.image, else loom.docker.containers.image.
  std::string docker_image;
  // loom.<type>.processes: how many processes the executor of each task starts (torchrun's
  // --nproc_per_node); each is one rank of the job's world, with LOCAL_RANK 0..processes-1.
  int processes = 1;
  // loom.<type>.process-gpus: true ("split", the default) gives each process its share of the
  // task's GPUs (gpus / processes of them); false ("all") lets every process see them all.
  bool split_gpus = true;
  // framework=pytorch|horovod: whether its tasks hold ranks of the job's one world (RANK, counted
  // in WORLD_SIZE): the types of loom.application.world.jobtypes (chief, master, worker by
  // default). A task outside it that called init_process_group would leave the others waiting
  // for a rank nobody takes, so only declared types join. A sidecar never does.
  bool holds_rank = true;
  // Whether a task of this type that ended with `exit_code` (shell convention) is restarted.
  bool Restartable(int exit_code) const;
};

// loom.application.dependency.<type>.timeout.after.<group>: `type` may run at most `seconds`
// after every task of the group's types finished (TonY#603/#621: workers or evaluators hanging
// after the chief is done). `ignored` stops it quietly instead of failing the job.
struct DependencyTimeout {
  std::string type;
  std::string group;
  std::vector<std::string> group_types;
  int64_t seconds = 0;
  bool ignored = false;
};

// How a --python_venv file is packed, from its name. Every backend accepts every format and
// gives the task the same tree: an archive unpacked as `venv/` in its working dir (symlinks
// kept), a .pex as the file `venv`, run as the interpreter.
enum class VenvFormat {
  kNone,
  kZip,    // .zip
  kTarGz,  // .tar.gz or .tgz (conda-pack's output)
  kPex,    // .pex: `python venv script.py` runs the script in the pex's environment
};
// The format of `path` by its extension (case-insensitive). InvalidArgument names
// --python_venv and the accepted formats.
Result<VenvFormat> VenvFormatOf(const std::string& path);

// How --executes runs: as a program on the tasks' PATH, written as given (`bash run.sh`), or as
// a script shipped with the job. `loom submit` decides, on the PATH the tasks get, and records
// the decision in the job's config (StagedJobConfig) so the AM, with a PATH of its own, builds
// the command that was validated.
enum class ExecutesAs { kNone, kProgram, kScript };

// The key StagedJobConfig records ExecutesAs under ("program" or "script"), and its source there.
// Only Loom's own config.xml carries that source (config::Config::MergeXmlFile with
// recorded_sources); BuildJobSpec refuses the key from anywhere else.
inline constexpr char kExecutesAsKey[] = "loom.internal.executes-as";
inline constexpr char kExecutesAsSource[] = "--executes (decided by loom submit)";

struct JobSpec {
  std::string name;
  Framework framework = Framework::kTensorFlow;
  bool gang = true;  // distributed-mode GANG (else FCFS)
  // Types in rank order: chief, master, worker, then the rest by name.
  std::vector<TaskTypeSpec> types;
  SuccessPolicy success_policy = SuccessPolicy::kAll;

  std::string src_dir;      // absolute, may be empty
  std::string python_venv;  // absolute path of a .zip, .tar.gz, .tgz or .pex, may be empty
  // The interpreter a Python --executes runs with (--python_binary_path as given: absolute, on
  // PATH, or relative: inside the venv); empty when no type runs a Python entry point.
  std::string python_binary;
  VenvFormat python_venv_format = VenvFormat::kNone;
  ExecutesAs executes_as = ExecutesAs::kNone;  // kNone: no --executes
  std::map<std::string, std::string> execution_env;  // user process (--shell_env)
  std::map<std::string, std::string> container_env;  // container (--container_env)

  int heartbeat_interval_ms = 1000;
  int max_missed_heartbeats = 25;
  int64_t application_timeout_ms = 0;
  int64_t execution_timeout_ms = 0;
  int stderr_tail_lines = 20;
  int stop_grace_ms = 5000;
  int am_retry_count = 0;  // whole-gang restarts after a failure (TonY's tony.am.retry-count)
  int64_t allocation_timeout_ms = 0;    // the whole gang allocated and registered within; 0: none
  int64_t registration_timeout_ms = 0;  // each launched container registered within; 0: none
  std::vector<DependencyTimeout> dependency_timeouts;
  int port_low = 20000, port_high = 32000;
  Resources am_resources;

  // TonY's two stages (loom.application.prepare-stage / training-stage): the training types are
  // started only after every tracked task of the prepare types has succeeded. Both empty: one
  // stage. When only one list is given, the other holds every remaining type (TonY's rule).
  std::vector<std::string> prepare_stage;
  std::vector<std::string> training_stage;
  // loom.application.tensorboard-log-dir (or --sidecar_tensorboard_log_dir): the job has a
  // sidecar `tensorboard` task serving this dir; it gets TB_PORT and TB_LOG_DIR. Empty: none.
  std::string tensorboard_log_dir;
  // Docker (YARN's Docker runtime; refused on backends without one). Per type: docker_image.
  bool docker_enabled = false;
  std::string docker_mounts;  // loom.docker.containers.mount, YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS
  int64_t am_startup_timeout_ms = 0;         // the AM must have started within; 0: no limit
  int64_t executor_registry_timeout_ms = 0;  // an executor retries registering for; 0: forever
  int metrics_interval_ms = 5000;            // how often executors sample their task's metrics
  bool gpu_metrics = true;                   // loom.task.gpu-metrics.enabled
  std::string gpu_exec_path = "nvidia-smi";  // loom.gpu-exec-path: what samples the GPUs
  // loom.history.location: where the job's final record is copied when it ends (unset: nowhere
  // but its job dir and, on YARN, its staging dir). Each backend checks the forms it takes.
  HistoryLocation history_location;

  // "tony." or "loom.": the prefix the user wrote their keys in (config::UserPrefix), so that
  // code holding only the spec (the AM, executors, backends) names keys as the user does.
  std::string key_prefix = "loom.";
  // The keys the user set, canonical -> as written ("loom.task.port-range" -> "tony.task.port-range"),
  // for configs that mix the two prefixes.
  std::map<std::string, std::string> key_spellings;
  // `canonical_key` as the user wrote it if they set it, else (or for text holding such keys)
  // in the user's prefix.
  std::string KeyName(const std::string& canonical_key) const;

  const TaskTypeSpec* FindType(const std::string& name) const;
  int TotalTasks() const;
  int TrackedTasks() const;
  std::vector<TaskId> AllTasks() const;  // in rank order
  // chief:0 if there is a chief type, else worker:0 if there is a worker type.
  std::optional<TaskId> Chief() const;
  Resources TotalResources() const;
};

// Validates `conf` (keys, values and their combination) and builds the spec. `base_dir` resolves
// a relative src dir / venv. `check_files` checks that the src dir, venv and entry point exist
// (the client does; an AM on another host cannot). Errors are InvalidArgument and name the key
// or flag at fault.
// A config carrying kExecutesAsKey (from StagedJobConfig) builds the command that was decided at
// submit; that key from any other source is refused.
Result<JobSpec> BuildJobSpec(const config::Config& conf, const std::string& base_dir,
                             bool check_files = true);

// What `loom submit` writes as the job's config.xml, for the AM: `conf` with its defaults filled
// in and the decisions taken at submit (`spec`, built from `conf`) recorded.
config::Config StagedJobConfig(const config::Config& conf, const JobSpec& spec);

}  // namespace loom
