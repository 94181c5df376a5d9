#include "core/config/key_registry.h"

#include <algorithm>
#include <regex>
#include <set>

#include "core/strings.h"

namespace loom::config {
namespace {

using VT = ValueType;

// First segments of loom.<x>.<...> that are namespaces, never task types.
const std::set<std::string>& ReservedSegments() {
  static const std::set<std::string> kReserved = {
      "application", "am",     "task",   "container", "containers", "execution",
      "docker",      "history", "portal", "keytab",    "https",      "http",
      "secret",      "horovod", "yarn",   "other",     "local",      "gpu-exec-path",
      "python-exec-path", "version-info", "client", "kerberos"};
  return kReserved;
}

bool IsTaskTypeName(const std::string& s) {
  static const std::regex kName("[a-z][a-z0-9_-]*");
  return std::regex_match(s, kName) && !ReservedSegments().count(s);
}

// Why each refused key is refused, and what to do instead. "loom." keys in the text are respelt
// in the user's prefix when shown.
constexpr char kPlacementRefusal[] =
    "YARN placement constraints are not supported yet: Loom sends no scheduling requests, so tasks would be "
    "placed as if the key were not there. Remove it; loom.<type>.node-label or loom.application.node-label "
    "keeps a type on labelled nodes";
constexpr char kJvmRefusal[] =
    "Loom's AM and executors are native programs, not JVMs, so there are no JVM options to apply. Remove the "
    "key (loom.am.memory sizes the AM)";
constexpr char kHadoopRefusal[] =
    "Loom runs no Hadoop Java client: it speaks YARN's and HDFS's protocols itself and finds the cluster "
    "through HADOOP_CONF_DIR (or loom.application.yarn-conf-path / hdfs-conf-path). Remove the key";
constexpr char kHistoryRefusal[] =
    "Loom has no TonY history server with intermediate and finished directories, a mover or a purger: each job's "
    "record is written whole, when the job ends, to loom.history.location/<job id> (and stays in "
    "$LOOM_HOME/jobs/<id>, on YARN also in the job's staging directory), where loom portal reads it; nothing "
    "moves or purges records there (loom gc and loom rm clean $LOOM_HOME/jobs). Remove the key";
constexpr char kPortalRefusal[] =
    "TonY Portal's settings mean nothing to Loom: loom portal (its flags --bind and --port) serves the job "
    "records of $LOOM_HOME/jobs and of loom.history.location read-only, with no keystore, secret or cache of "
    "its own to configure. Remove the key";
constexpr char kClientWaitRefusal[] =
    "Loom's AM never waits for the client to collect the final status (the client reads the job's record), "
    "so there is no wait to time. Remove the key";
constexpr char kHorovodTestRefusal[] =
    "this is a hook of TonY's own Horovod tests (a fake or failing driver); Loom has no such hook. Remove the "
    "key";
constexpr char kHorovodDebugRefusal[] =
    "TonY's Horovod driver debug mode swaps TonY's Horovod driver task for a driver script of your own "
    "(loom.driver.command) that starts Horovod's rendezvous server; Loom has no driver task to swap: with "
    "loom.application.framework=horovod its AM serves horovodrun's gloo rendezvous itself and logs each "
    "rendezvous (loom logs JOB --task am). Remove the key (false is accepted); to run a rendezvous of your own, "
    "run it as a task type with its own loom.<type>.command";
constexpr char kSingleNodeRefusal[] =
    "TonY's single-node mode runs the training inside the AM's own container, with no task containers; Loom's "
    "AM runs no user code. Train on one machine with one task instead: loom.worker.instances=1 (sized with "
    "loom.worker.memory, loom.worker.vcores and loom.worker.gpus), or with loom submit --cluster local. Remove "
    "the key (false is accepted)";
constexpr char kPreprocessRefusal[] =
    "TonY's preprocess mode (the AM runs the user's script before any task) is not supported. Remove the key "
    "or set it to false";
constexpr char kVersionInfoRefusal[] =
    "this is TonY's build information, which TonY reads from its own jar; it is not a setting. Remove the key";
constexpr char kDependsOnRefusal[] =
    "TonY never reads this key either. Order types with loom.application.prepare-stage and "
    "loom.application.training-stage";
constexpr char kMaxTotalRefusal[] =
    "Loom caps only the task count, memory, vcores and gpus: use loom.task.max-total-instances, "
    "loom.task.max-total-memory, loom.task.max-total-vcores or loom.task.max-total-gpus";

constexpr char kMapredRefusal[] =
    "Loom runs no MapReduce and no JVM, so nothing would read a mapred-site.xml. Remove the key; "
    "loom.application.yarn-conf-path and loom.application.hdfs-conf-path name the site files Loom reads";

KeyInfo Refused(KeyInfo k, const char* why, std::vector<std::string> harmless = {}) {
  k.refusal = why;
  k.harmless_values = std::move(harmless);
  return k;
}

}  // namespace

bool KeyInfo::Harmless(const std::string& value) const {
  std::string v = Trim(value);
  if (v.empty()) return true;
  if (type == ValueType::kBool) {
    auto b = ParseBool(v);
    auto d = ParseBool(default_value);
    if (b.ok() && d.ok() && *b == *d) return true;
  }
  if (v == default_value) return true;
  return std::find(harmless_values.begin(), harmless_values.end(), v) != harmless_values.end();
}

const std::vector<std::string>& WellKnownTaskTypes() {
  // TensorFlow's roles, TonY's sidecar TensorBoard, MXNet's scheduler and server, Horovod's driver,
  // MPI's launcher.
  static const std::vector<std::string> kTypes = {"chief",       "master",    "worker", "ps",     "evaluator",
                                                  "tensorboard", "scheduler", "server", "driver", "launcher"};
  return kTypes;
}

const std::vector<KeyInfo>& TaskTypeAttributes() {
  static const std::vector<KeyInfo> kAttrs = {
      {"instances", VT::kNonNegative, "0", "Number of tasks of this type; defines the type."},
      {"memory", VT::kMemory, "2g", "Memory per task (e.g. 512m, 2g; MiB when no unit)."},
      {"vcores", VT::kPositive, "1", "Virtual cores per task."},
      {"gpus", VT::kNonNegative, "0", "GPUs per task (YARN yarn.io/gpu; CUDA_VISIBLE_DEVICES locally)."},
      {"command", VT::kString, "", "Command for this type, replacing --executes/--task_params."},
      {"resources", VT::kList, "", "Extra files for this type: src[::name][#archive], comma-separated."},
      {"node-label", VT::kString, "", "YARN node-label expression for this type."},
      {"max-instances", VT::kInt, "-1", "Upper bound on instances (-1: none)."},
      Refused({"placement-spec", VT::kString, "", "YARN placement constraint for this type."}, kPlacementRefusal),
      Refused({"allocation-tags", VT::kString, "", "YARN allocation tags for this type."}, kPlacementRefusal),
      Refused({"depends-on", VT::kList, "", "TonY key that TonY never reads."}, kDependsOnRefusal),
      {"restart-policy", VT::kEnum, "never",
       "Restart a failed task of this type alone: never, on-failure, or exit-code (1-127 permanent, 128-255 retried).",
       {"never", "on-failure", "exit-code"}},
      {"max-restarts", VT::kNonNegative, "3", "Restarts per task of this type under its restart-policy."},
      {"processes", VT::kPositive, "1",
       "Processes each task starts (torchrun's --nproc_per_node): one rank each, LOCAL_RANK 0..N-1."},
      {"process-gpus", VT::kEnum, "split",
       "How a task's processes share its GPUs: split (gpus/processes each) or all (each sees every one).",
       {"split", "all"}},
  };
  return kAttrs;
}

const std::vector<KeyInfo>& GlobalKeys() {
  static const std::vector<KeyInfo> kKeys = {
      // Application.
      {"loom.application.name", VT::kString, "LoomApplication", "Job name (YARN application name)."},
      {"loom.application.type", VT::kString, "LOOM", "YARN application type."},
      {"loom.application.tags", VT::kList, "", "YARN application tags."},
      {"loom.application.node-label", VT::kString, "", "Default node label for the AM and tasks."},
      Refused({"loom.application.enable-preprocess", VT::kBool, "false", "TonY preprocess mode (not supported)."},
              kPreprocessRefusal),
      Refused({"loom.application.single-node", VT::kBool, "false", "TonY single-node mode: training in the AM."},
              kSingleNodeRefusal),
      {"loom.application.timeout", VT::kTimeoutMs, "0", "Maximum job run time in ms (0: none)."},
      {"loom.application.framework", VT::kEnum, "tensorflow", "Framework contract given to tasks.",
       {"tensorflow", "pytorch", "mxnet", "horovod", "standalone", "mpi"}},
      {"loom.application.num-client-rm-connect-retries", VT::kNonNegative, "3", "Client RM connect retries."},
      {"loom.application.distributed-mode", VT::kEnum, "GANG", "GANG: cluster spec once all tasks registered; FCFS: at once.",
       {"GANG", "FCFS"}},
      {"loom.application.untracked.jobtypes", VT::kList, "ps", "Types the job does not wait for; stopped when tracked tasks finish."},
      {"loom.application.sidecar.jobtypes", VT::kList, "tensorboard", "Types whose failures are ignored and not waited for."},
      {"loom.application.stop-on-failure-jobtypes", VT::kList, "ps", "Types whose failure fails the job at once."},
      {"loom.application.world.jobtypes", VT::kList, "chief,master,worker",
       "framework=pytorch|horovod: the types whose tasks hold ranks (RANK, counted in WORLD_SIZE); other types get "
       "none."},
      // No default: unset, loom.application.success-policy decides (see BuildJobSpec).
      {"loom.application.fail-on-worker-failure-enabled", VT::kBool, "",
       "TonY's alias of the success policy: true = success-policy all (any worker failure fails the job), "
       "false = success-policy any (TonY's rule)."},
      {"loom.application.success-policy", VT::kEnum, "all",
       "all: every tracked task must succeed. any: TonY's rule (job fails only if the chief or a stop-on-failure type fails, or every tracked task fails).",
       {"all", "any"}},
      // TonY's default. true: Kerberos, delegation tokens and wire protection where the cluster's
      // hadoop.security.authentication says kerberos; false is refused on such a cluster.
      {"loom.application.security.enabled", VT::kBool, "true",
       "Kerberos on YARN when the cluster uses it (false: refused on a Kerberized cluster)."},
      {"loom.application.hdfs-conf-path", VT::kString, "", "Explicit hdfs-site.xml."},
      {"loom.application.yarn-conf-path", VT::kString, "", "Explicit yarn-site.xml."},
      Refused({"loom.application.mapred-conf-path", VT::kString, "", "Explicit mapred-site.xml (TonY)."}, kMapredRefusal),
      {"loom.application.prepare-stage", VT::kList, "", "Types that must finish before training-stage types are started."},
      {"loom.application.training-stage", VT::kList, "", "Types started after the prepare stage."},
      {"loom.application.custom-types", VT::kList, "",
       "Task types of the user's own that look like a misspelt well-known type (worker2 next to worker): "
       "declares them intended."},
      Refused({"loom.application.placement-spec", VT::kString, "", "AM-level YARN placement constraint."}, kPlacementRefusal),
      {"loom.application.tensorboard-log-dir", VT::kString, "", "Turns on the sidecar TensorBoard task."},
      Refused({"loom.application.hadoop.location", VT::kString, "", "Hadoop framework location (TonY)."}, kHadoopRefusal),
      Refused({"loom.application.hadoop.classpath", VT::kString, "", "Hadoop classpath (TonY)."}, kHadoopRefusal),
      {"loom.application.executes", VT::kString, "", "Entry point relative to the src dir (--executes)."},
      {"loom.application.task-params", VT::kString, "", "Arguments for the entry point (--task_params)."},
      {"loom.application.src-dir", VT::kString, "", "Source directory shipped to every task (--src_dir)."},
      {"loom.application.python-venv", VT::kString, "", "Python environment for every task: a .zip, .tar.gz/.tgz (unpacked as venv/) or .pex (--python_venv)."},
      {"loom.application.python-binary-path", VT::kString, "python3", "Python interpreter; relative paths are inside the venv (--python_binary_path)."},
      // Kerberized YARN only (the yarn backend refuses them elsewhere: TokenFileSystems).
      {"loom.application.file-systems", VT::kList, "",
       "More hdfs:// file systems (besides fs.defaultFS) whose HDFS delegation tokens the tasks get (tf-yarn's "
       "file_systems)."},
      {"loom.other.namenodes", VT::kList, "", "TonY's name for loom.application.file-systems."},
      {"loom.yarn.queue", VT::kString, "default", "YARN queue."},
      // Kerberos (hadoop.security.authentication=kerberos): unset, the ticket cache of kinit.
      {"loom.kerberos.keytab", VT::kString, "", "Keytab the client logs in with (with loom.kerberos.principal)."},
      {"loom.kerberos.principal", VT::kString, "", "Principal in loom.kerberos.keytab to log in as."},
      // AM.
      {"loom.am.startup-timeout", VT::kTimeoutMs, "0", "Kill the job if its AM has not started within this many ms."},
      {"loom.am.retry-count", VT::kNonNegative, "0", "Whole-gang restarts inside the AM."},
      // 128m, YARN's minimum allocation: the AM's RSS is about 18 MiB, and a stock queue's AM
      // share (10%) then holds several jobs at once instead of one 2 GiB AM at a time.
      {"loom.am.memory", VT::kMemory, "128m", "AM memory."},
      {"loom.am.vcores", VT::kPositive, "1", "AM vcores."},
      {"loom.am.gpus", VT::kNonNegative, "0", "AM GPUs."},
      {"loom.am.node-label", VT::kString, "", "AM node label."},
      // 0 is what Loom does: it never waits.
      Refused({"loom.am.wait-client-signal-stop-timeout-sec", VT::kNonNegative, "15",
               "TonY: how long the AM waits for the client's stop signal."},
              kClientWaitRefusal, {"0"}),
      // Tasks.
      {"loom.task.max-total-instances", VT::kInt, "-1", "Cap on the total number of tasks (-1: none)."},
      {"loom.task.max-total-gpus", VT::kInt, "-1", "Cap on the total number of GPUs (-1: none)."},
      {"loom.task.max-total-vcores", VT::kInt, "-1", "Cap on the total number of vcores (-1: none)."},
      {"loom.task.max-total-memory", VT::kInt, "-1", "Cap on total memory in MiB (-1: none)."},
      Refused({"loom.task.am.jvm.opts", VT::kString, "", "TonY JVM options of the AM."}, kJvmRefusal),
      Refused({"loom.task.executor.jvm.opts", VT::kString, "-Xmx1536m", "TonY JVM options of the executors."}, kJvmRefusal),
      Refused({"loom.task.default.jvm.opts", VT::kString, "", "TonY JVM options of every JVM."}, kJvmRefusal),
      {"loom.task.heartbeat-interval-ms", VT::kPositive, "1000", "Executor heartbeat period."},
      {"loom.task.max-missed-heartbeats", VT::kPositive, "25", "Missed heartbeats before a task is lost."},
      {"loom.task.metrics-interval-ms", VT::kPositive, "5000", "Metrics sampling period."},
      {"loom.task.gpu-metrics.enabled", VT::kBool, "true", "Collect GPU metrics."},
      {"loom.task.executor.execution-timeout-ms", VT::kTimeoutMs, "0", "Maximum run time of a user process (0: none)."},
      // No default: unset, execution-timeout-ms decides (see BuildJobSpec).
      {"loom.worker.timeout", VT::kTimeoutMs, "",
       "TonY's name (before TonY#596) for loom.task.executor.execution-timeout-ms: the maximum run time in ms of "
       "every task's process, not only the workers' (0: none); where both are set, execution-timeout-ms wins."},
      {"loom.task.executor.registry-timeout-sec", VT::kNonNegative, "0", "How long an executor retries registration (0: forever)."},
      {"loom.task.executor.execution.error-message-max-depth", VT::kNonNegative, "20", "stderr lines copied into failure diagnostics."},
      {"loom.task.port-range", VT::kPortRange, "20000-32000", "Ports handed to frameworks; kept outside the kernel's ephemeral range."},
      {"loom.task.stop-grace-ms", VT::kNonNegative, "5000", "SIGTERM-to-SIGKILL grace when stopping a task."},
      // Containers.
      {"loom.container.allocation.timeout", VT::kTimeoutMs, "-1", "Fail if the gang is not allocated and registered in this many ms."},
      {"loom.container.registration.timeout", VT::kTimeoutMs, "-1", "Fail if a launched container does not register in this many ms."},
      {"loom.containers.command", VT::kString, "", "Command for every type without its own."},
      {"loom.containers.resources", VT::kList, "", "Extra files for every task."},
      {"loom.containers.envs", VT::kEnvList, "", "Environment of every container (--container_env)."},
      Refused({"loom.containers.placement-spec", VT::kString, "", "Placement constraint for every type."}, kPlacementRefusal),
      Refused({"loom.containers.allocation-tags", VT::kString, "", "Allocation tags for every type."}, kPlacementRefusal),
      {"loom.execution.envs", VT::kEnvList, "", "Environment of every user process (--shell_env)."},
      // Docker.
      {"loom.docker.enabled", VT::kBool, "false", "Use the YARN Docker runtime."},
      {"loom.docker.containers.image", VT::kString, "", "Docker image for every task."},
      {"loom.docker.containers.mount", VT::kString, "", "Docker mounts."},
      // History and portal.
      // TonY's history server and portal; the harmless values are tony-default.xml's placeholders.
      // The location is Loom's too (core/history_location.h): tony-default.xml's placeholder counts
      // as unset there.
      {"loom.history.location", VT::kString, "",
       "Where each job's final record is copied when it ends, <location>/<job id>/, for loom portal: an HDFS "
       "directory on YARN (hdfs:///path or /path), a local one locally (/path or file:///path)."},
      Refused({"loom.history.intermediate", VT::kString, "", "Intermediate history dir."}, kHistoryRefusal,
              {"/path/to/tony-history/intermediate"}),
      Refused({"loom.history.finished", VT::kString, "", "Finished history dir."}, kHistoryRefusal,
              {"/path/to/tony-history/finished"}),
      Refused({"loom.history.mover-interval-ms", VT::kPositive, "300000", "Portal history mover period."}, kHistoryRefusal),
      Refused({"loom.history.retention-sec", VT::kPositive, "2592000", "History retention."}, kHistoryRefusal),
      Refused({"loom.history.purger-interval-ms", VT::kPositive, "21600000", "Portal purger period."}, kHistoryRefusal),
      Refused({"loom.history.finished-dir-timezone", VT::kString, "UTC", "Time zone of finished dirs."}, kHistoryRefusal),
      Refused({"loom.portal.url", VT::kString, "", "Portal URL printed at the end."}, kPortalRefusal,
              {"https://localhost:19886"}),
      Refused({"loom.portal.cache.max-entries", VT::kPositive, "10000", "Portal cache size."}, kPortalRefusal),
      // TonY's portal logs in with these (loginUserFromKeytab); Loom's client does the same on a
      // Kerberized YARN. tony-default.xml's placeholders ("user1", "/location/to/tony.keytab")
      // count as unset (YarnJobSubmitter).
      {"loom.keytab.user", VT::kString, "", "TonY's name for loom.kerberos.principal."},
      {"loom.keytab.location", VT::kString, "", "TonY's name for loom.kerberos.keytab."},
      Refused({"loom.https.port", VT::kString, "19886", "Portal HTTPS port."}, kPortalRefusal),
      Refused({"loom.https.keystore.path", VT::kString, "", "Portal keystore."}, kPortalRefusal, {"/location/to/tony.jks"}),
      Refused({"loom.https.keystore.type", VT::kString, "JKS", "Portal keystore type."}, kPortalRefusal),
      Refused({"loom.https.keystore.password", VT::kString, "", "Portal keystore password."}, kPortalRefusal, {"password"}),
      Refused({"loom.https.keystore.algorithm", VT::kString, "SunX509", "Portal keystore algorithm."}, kPortalRefusal),
      Refused({"loom.http.port", VT::kString, "disabled", "Portal plain HTTP port."}, kPortalRefusal),
      Refused({"loom.secret.key", VT::kString, "", "Portal secret."}, kPortalRefusal, {"changeme"}),
      // Horovod (TonY test hooks).
      Refused({"loom.horovod.mode.test", VT::kBool, "false", "TonY Horovod test hook."}, kHorovodTestRefusal),
      Refused({"loom.horovod.mode.test.fast.fail", VT::kBool, "false", "TonY Horovod test hook."}, kHorovodTestRefusal),
      Refused({"loom.horovod.driver.mode.debug", VT::kBool, "false", "TonY Horovod driver debug mode."},
              kHorovodDebugRefusal),
      // tony-default.xml sets these two test hooks (false) since TonY 0.4.x.
      Refused({"loom.application.test.horovod-driver-fail-enable", VT::kBool, "false", "TonY Horovod test hook."},
              kHorovodTestRefusal),
      Refused({"loom.application.test.horovod-test-mode-enable", VT::kBool, "false", "TonY Horovod test hook."},
              kHorovodTestRefusal),
      // Misc.
      {"loom.gpu-exec-path", VT::kString, "nvidia-smi", "nvidia-smi to use for GPU discovery and metrics."},
      // TonY runs its sidecar TensorBoard with this Python (default `python`).
      {"loom.python-exec-path", VT::kString, "",
       "Python that runs the sidecar TensorBoard (`<it> -m tensorboard.main`); unset: the `tensorboard` command."},
      // Local backend.
      {"loom.local.gpus", VT::kString, "", "GPUs the local backend may hand out: a count or a list of indices (default: what nvidia-smi finds)."},
      {"loom.local.vcores", VT::kPositive, "", "vcores of this host for the local backend (default: online CPUs)."},
      {"loom.local.memory", VT::kMemory, "", "Memory of this host for the local backend (default: MemTotal)."},
  };
  return kKeys;
}

const std::vector<KeyInfo>& PatternKeys() {
  // FindKey refers to these by position.
  static const std::vector<KeyInfo> kPatterns = {
      {"loom.docker.<type>.image", VT::kString, "", "Docker image of a type."},
      {"loom.application.group.<G>", VT::kList, "", "A named group of types."},
      {"loom.application.dependency.<X>.timeout.after.<G>", VT::kNonNegative, "",
       "Seconds type X may run after group G finished."},
      {"loom.application.dependency.<X>.timeout.after.<G>.ignored", VT::kBool, "false",
       "Mark X untracked instead of failing."},
      // The four Loom knows are global keys; FindKey finds them first.
      Refused({"loom.task.max-total-<resource>", VT::kInt, "-1", "Cap on another total resource."}, kMaxTotalRefusal),
      Refused({"loom.version-info.<x>", VT::kString, "", "TonY build information."}, kVersionInfoRefusal),
  };
  return kPatterns;
}

const KeyInfo* FindKey(const std::string& key) {
  for (const KeyInfo& k : GlobalKeys()) {
    if (k.name == key) return &k;
  }
  std::vector<std::string> parts = Split(key, '.', false);
  if (parts.size() < 3 || parts[0] != "loom") return nullptr;
  // loom.<type>.<attr>
  if (parts.size() == 3 && IsTaskTypeName(parts[1])) {
    for (const KeyInfo& a : TaskTypeAttributes()) {
      if (a.name == parts[2]) return &a;
    }
    return nullptr;
  }
  const std::vector<KeyInfo>& patterns = PatternKeys();
  const KeyInfo& kDockerImage = patterns[0];
  const KeyInfo& kGroup = patterns[1];
  const KeyInfo& kDependency = patterns[2];
  const KeyInfo& kDependencyIgnored = patterns[3];
  const KeyInfo& kMaxTotal = patterns[4];
  const KeyInfo& kVersion = patterns[5];
  if (parts.size() == 4 && parts[1] == "docker" && parts[3] == "image" && IsTaskTypeName(parts[2])) return &kDockerImage;
  if (parts.size() == 4 && parts[1] == "application" && parts[2] == "group") return &kGroup;
  if (parts.size() == 7 && parts[1] == "application" && parts[2] == "dependency" && parts[4] == "timeout" &&
      parts[5] == "after")
    return &kDependency;
  if (parts.size() == 8 && parts[1] == "application" && parts[2] == "dependency" && parts[4] == "timeout" &&
      parts[5] == "after" && parts[7] == "ignored")
    return &kDependencyIgnored;
  if (parts.size() == 3 && parts[1] == "task" && StartsWith(parts[2], "max-total-")) return &kMaxTotal;
  if (parts[1] == "version-info") return &kVersion;
  return nullptr;
}

std::optional<std::string> DefaultValue(const std::string& key) {
  const KeyInfo* info = FindKey(key);
  if (!info || info->default_value.empty()) return std::nullopt;
  return info->default_value;
}

std::vector<std::string> TaskTypeNames(const Config& conf) {
  std::vector<std::string> names;
  for (const auto& [key, e] : conf.entries()) {
    std::vector<std::string> parts = Split(key, '.', false);
    if (parts.size() == 3 && parts[0] == "loom" && parts[2] == "instances" && IsTaskTypeName(parts[1])) {
      names.push_back(parts[1]);
    }
  }
  return names;
}

std::optional<std::pair<std::string, std::string>> SplitTypeKey(const std::string& key) {
  std::vector<std::string> parts = Split(key, '.', false);
  if (parts.size() != 3 || parts[0] != "loom" || !IsTaskTypeName(parts[1])) return std::nullopt;
  return std::make_pair(parts[1], parts[2]);
}

Status ValidateValue(const KeyInfo& info, const std::string& key, const std::string& value) {
  auto expect = [&](const std::string& what) {
    return Status::InvalidArgument(key + "='" + value + "': expected " + what);
  };
  switch (info.type) {
    case VT::kString:
    case VT::kList:
      return Status::Ok();
    case VT::kBool:
      return ParseBool(value).ok() ? Status::Ok() : expect("true or false");
    case VT::kInt:
    case VT::kTimeoutMs:
      return ParseInt(value).ok() ? Status::Ok() : expect("an integer");
    case VT::kNonNegative: {
      auto v = ParseInt(value);
      return v.ok() && *v >= 0 ? Status::Ok() : expect("an integer >= 0");
    }
    case VT::kPositive: {
      auto v = ParseInt(value);
      return v.ok() && *v >= 1 ? Status::Ok() : expect("an integer >= 1");
    }
    case VT::kMemory: {
      auto v = ParseMemoryMib(value);
      if (!v.ok()) return expect("a memory size such as 512m, 2g or 2048 (MiB)");
      return *v > 0 ? Status::Ok() : expect("a memory size above zero");
    }
    case VT::kEnum:
      for (const auto& c : info.choices) {
        if (ToLower(c) == ToLower(Trim(value))) return Status::Ok();
      }
      return expect("one of " + Join(info.choices, ", "));
    case VT::kEnvList:
      for (const auto& kv : Split(value, ',')) {
        if (!ParseKeyValue(kv).ok()) return expect("comma-separated KEY=VALUE pairs ('" + kv + "' is not one)");
      }
      return Status::Ok();
    case VT::kPortRange: {
      auto parts = Split(value, '-');
      if (parts.size() != 2) return expect("LOW-HIGH, e.g. 20000-32000");
      auto lo = ParseInt(parts[0]), hi = ParseInt(parts[1]);
      if (!lo.ok() || !hi.ok() || *lo < 1024 || *hi > 65535 || *lo > *hi) {
        return expect("LOW-HIGH with 1024 <= LOW <= HIGH <= 65535");
      }
      return Status::Ok();
    }
  }
  return Status::Ok();
}

std::optional<std::string> SuggestKey(const std::string& key) {
  std::vector<std::string> candidates;
  for (const KeyInfo& k : GlobalKeys()) candidates.push_back(k.name);
  std::vector<std::string> parts = Split(key, '.', false);
  if (parts.size() >= 3 && parts[0] == "loom") {
    std::string type = parts[1];
    if (IsTaskTypeName(type)) {
      for (const KeyInfo& a : TaskTypeAttributes()) candidates.push_back("loom." + type + "." + a.name);
    }
    for (const std::string& t : {"worker", "ps", "chief", "evaluator"}) {
      for (const KeyInfo& a : TaskTypeAttributes()) candidates.push_back("loom." + std::string(t) + "." + a.name);
    }
  }
  std::optional<std::string> best;
  size_t best_d = std::max<size_t>(3, key.size() / 5) + 1;
  for (const std::string& c : candidates) {
    size_t d = EditDistance(key, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

Status Validate(const Config& conf) {
  std::vector<std::string> problems;
  for (const auto& [key, e] : conf.entries()) {
    std::string shown = e.original_key + " (from " + e.source + ")";
    if (!StartsWith(key, "loom.")) {
      problems.push_back("unknown key " + shown + ": Loom keys start with loom. (or tony.)");
      continue;
    }
    const KeyInfo* info = FindKey(key);
    if (!info) {
      std::string msg = "unknown key " + shown;
      if (auto s = SuggestKey(key)) {
        std::string suggestion = *s;
        if (StartsWith(e.original_key, "tony.")) suggestion = "tony." + suggestion.substr(5);
        msg += "; did you mean " + suggestion + "?";
      }
      problems.push_back(msg);
      continue;
    }
    Status s = ValidateValue(*info, e.original_key, e.value);
    if (!s.ok()) {
      problems.push_back(s.message() + " (from " + e.source + ")");
    } else if (info->refused() && !info->Harmless(e.value)) {
      // A password or secret is not echoed to a terminal or a log.
      bool hidden = key.find("password") != std::string::npos || key.find("secret") != std::string::npos;
      problems.push_back(e.original_key + "=" + (hidden ? std::string("<hidden>") : e.value) + " (from " + e.source +
                         "): " + Respell(info->refusal, UserPrefix(conf)));
    }
  }
  if (problems.empty()) return Status::Ok();
  return Status::InvalidArgument("invalid configuration:\n  " + Join(problems, "\n  "));
}

std::string GetString(const Config& conf, const std::string& key) {
  if (auto v = conf.Get(key)) return *v;
  return DefaultValue(key).value_or("");
}

int64_t GetInt(const Config& conf, const std::string& key) {
  auto v = ParseInt(GetString(conf, key));
  return v.ok() ? *v : 0;
}

bool GetBool(const Config& conf, const std::string& key) {
  auto v = ParseBool(GetString(conf, key));
  return v.ok() && *v;
}

int64_t GetMemoryMib(const Config& conf, const std::string& key) {
  auto v = ParseMemoryMib(GetString(conf, key));
  return v.ok() ? *v : 0;
}

std::vector<std::string> GetList(const Config& conf, const std::string& key) {
  return Split(GetString(conf, key), ',');
}

Config WithDefaults(const Config& conf) {
  Config out = conf;
  for (const KeyInfo& k : GlobalKeys()) {
    if (!out.Has(k.name) && !k.default_value.empty() && !k.refused()) out.Set(k.name, k.default_value, kDefaultSource);
  }
  for (const std::string& type : TaskTypeNames(conf)) {
    for (const KeyInfo& a : TaskTypeAttributes()) {
      std::string key = "loom." + type + "." + a.name;
      if (!out.Has(key) && !a.default_value.empty() && !a.refused()) out.Set(key, a.default_value, kDefaultSource);
    }
  }
  return out;
}

}  // namespace loom::config
