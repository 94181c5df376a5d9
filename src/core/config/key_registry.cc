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
      "python-exec-path", "version-info", "client"};
  return kReserved;
}

bool IsTaskTypeName(const std::string& s) {
  static const std::regex kName("[a-z][a-z0-9_-]*");
  return std::regex_match(s, kName) && !ReservedSegments().count(s);
}

}  // namespace

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
      {"placement-spec", VT::kString, "", "YARN placement constraint for this type."},
      {"allocation-tags", VT::kString, "", "YARN allocation tags for this type."},
      {"depends-on", VT::kList, "", "Accepted for TonY compatibility; TonY never reads it either."},
      {"restart-policy", VT::kEnum, "never",
       "Restart a failed task of this type alone: never, on-failure, or exit-code (1-127 permanent, 128-255 retried).",
       {"never", "on-failure", "exit-code"}},
      {"max-restarts", VT::kNonNegative, "3", "Restarts per task of this type under its restart-policy."},
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
      {"loom.application.enable-preprocess", VT::kBool, "false", "TonY preprocess mode (not supported; must stay false)."},
      {"loom.application.timeout", VT::kTimeoutMs, "0", "Maximum job run time in ms (0: none)."},
      {"loom.application.framework", VT::kEnum, "tensorflow", "Framework contract given to tasks.",
       {"tensorflow", "pytorch", "mxnet", "horovod", "standalone"}},
      {"loom.application.num-client-rm-connect-retries", VT::kNonNegative, "3", "Client RM connect retries."},
      {"loom.application.distributed-mode", VT::kEnum, "GANG", "GANG: cluster spec once all tasks registered; FCFS: at once.",
       {"GANG", "FCFS"}},
      {"loom.application.untracked.jobtypes", VT::kList, "ps", "Types the job does not wait for; stopped when tracked tasks finish."},
      {"loom.application.sidecar.jobtypes", VT::kList, "tensorboard", "Types whose failures are ignored and not waited for."},
      {"loom.application.stop-on-failure-jobtypes", VT::kList, "ps", "Types whose failure fails the job at once."},
      {"loom.application.fail-on-worker-failure-enabled", VT::kBool, "false", "TonY key; Loom's default success policy already fails on any worker failure."},
      {"loom.application.success-policy", VT::kEnum, "all",
       "all: every tracked task must succeed. any: TonY's rule (job fails only if the chief or a stop-on-failure type fails, or every tracked task fails).",
       {"all", "any"}},
      {"loom.application.security.enabled", VT::kBool, "true", "Kerberos security on YARN."},
      {"loom.application.hdfs-conf-path", VT::kString, "", "Explicit hdfs-site.xml."},
      {"loom.application.yarn-conf-path", VT::kString, "", "Explicit yarn-site.xml."},
      {"loom.application.mapred-conf-path", VT::kString, "", "Explicit mapred-site.xml."},
      {"loom.application.prepare-stage", VT::kList, "", "Types that must finish before training-stage types are started."},
      {"loom.application.training-stage", VT::kList, "", "Types started after the prepare stage."},
      {"loom.application.placement-spec", VT::kString, "", "AM-level YARN placement constraint."},
      {"loom.application.tensorboard-log-dir", VT::kString, "", "Turns on the sidecar TensorBoard task."},
      {"loom.application.hadoop.location", VT::kString, "", "Hadoop framework location (TonY)."},
      {"loom.application.hadoop.classpath", VT::kString, "", "Hadoop classpath (TonY)."},
      {"loom.application.executes", VT::kString, "", "Entry point relative to the src dir (--executes)."},
      {"loom.application.task-params", VT::kString, "", "Arguments for the entry point (--task_params)."},
      {"loom.application.src-dir", VT::kString, "", "Source directory shipped to every task (--src_dir)."},
      {"loom.application.python-venv", VT::kString, "", "Python environment for every task: a .zip, .tar.gz/.tgz (unpacked as venv/) or .pex (--python_venv)."},
      {"loom.application.python-binary-path", VT::kString, "python3", "Python interpreter; relative paths are inside the venv (--python_binary_path)."},
      {"loom.other.namenodes", VT::kList, "", "Extra NameNodes for delegation tokens."},
      {"loom.yarn.queue", VT::kString, "default", "YARN queue."},
      // AM.
      {"loom.am.startup-timeout", VT::kTimeoutMs, "0", "Kill the job if its AM has not started within this many ms."},
      {"loom.am.retry-count", VT::kNonNegative, "0", "Whole-gang restarts inside the AM."},
      // 128m, YARN's minimum allocation: the AM's RSS is about 18 MiB, and a stock queue's AM
      // share (10%) then holds several jobs at once instead of one 2 GiB AM at a time.
      {"loom.am.memory", VT::kMemory, "128m", "AM memory."},
      {"loom.am.vcores", VT::kPositive, "1", "AM vcores."},
      {"loom.am.gpus", VT::kNonNegative, "0", "AM GPUs."},
      {"loom.am.node-label", VT::kString, "", "AM node label."},
      {"loom.am.wait-client-signal-stop-timeout-sec", VT::kNonNegative, "15", "TonY key; Loom's AM never waits for the client."},
      // Tasks.
      {"loom.task.max-total-instances", VT::kInt, "-1", "Cap on the total number of tasks (-1: none)."},
      {"loom.task.max-total-gpus", VT::kInt, "-1", "Cap on the total number of GPUs (-1: none)."},
      {"loom.task.max-total-vcores", VT::kInt, "-1", "Cap on the total number of vcores (-1: none)."},
      {"loom.task.max-total-memory", VT::kInt, "-1", "Cap on total memory in MiB (-1: none)."},
      {"loom.task.am.jvm.opts", VT::kString, "", "TonY JVM options (no JVM in Loom; ignored)."},
      {"loom.task.executor.jvm.opts", VT::kString, "-Xmx1536m", "TonY JVM options (no JVM in Loom; ignored)."},
      {"loom.task.default.jvm.opts", VT::kString, "", "TonY JVM options (no JVM in Loom; ignored)."},
      {"loom.task.heartbeat-interval-ms", VT::kPositive, "1000", "Executor heartbeat period."},
      {"loom.task.max-missed-heartbeats", VT::kPositive, "25", "Missed heartbeats before a task is lost."},
      {"loom.task.metrics-interval-ms", VT::kPositive, "5000", "Metrics sampling period."},
      {"loom.task.gpu-metrics.enabled", VT::kBool, "true", "Collect GPU metrics."},
      {"loom.task.executor.execution-timeout-ms", VT::kTimeoutMs, "0", "Maximum run time of a user process (0: none)."},
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
      {"loom.containers.placement-spec", VT::kString, "", "Placement constraint for every type."},
      {"loom.containers.allocation-tags", VT::kString, "", "Allocation tags for every type."},
      {"loom.execution.envs", VT::kEnvList, "", "Environment of every user process (--shell_env)."},
      // Docker.
      {"loom.docker.enabled", VT::kBool, "false", "Use the YARN Docker runtime."},
      {"loom.docker.containers.image", VT::kString, "", "Docker image for every task."},
      {"loom.docker.containers.mount", VT::kString, "", "Docker mounts."},
      // History and portal.
      {"loom.history.location", VT::kString, "", "History root (HDFS on YARN)."},
      {"loom.history.intermediate", VT::kString, "", "Intermediate history dir."},
      {"loom.history.finished", VT::kString, "", "Finished history dir."},
      {"loom.history.mover-interval-ms", VT::kPositive, "300000", "Portal history mover period."},
      {"loom.history.retention-sec", VT::kPositive, "2592000", "History retention."},
      {"loom.history.purger-interval-ms", VT::kPositive, "21600000", "Portal purger period."},
      {"loom.history.finished-dir-timezone", VT::kString, "UTC", "Time zone of finished dirs."},
      {"loom.portal.url", VT::kString, "", "Portal URL printed at the end."},
      {"loom.portal.cache.max-entries", VT::kPositive, "10000", "Portal cache size."},
      {"loom.keytab.user", VT::kString, "", "Portal Kerberos user."},
      {"loom.keytab.location", VT::kString, "", "Portal keytab."},
      {"loom.https.port", VT::kString, "19886", "Portal HTTPS port."},
      {"loom.https.keystore.path", VT::kString, "", "Portal keystore."},
      {"loom.https.keystore.type", VT::kString, "JKS", "Portal keystore type."},
      {"loom.https.keystore.password", VT::kString, "", "Portal keystore password."},
      {"loom.https.keystore.algorithm", VT::kString, "SunX509", "Portal keystore algorithm."},
      {"loom.http.port", VT::kString, "disabled", "Portal plain HTTP port."},
      {"loom.secret.key", VT::kString, "", "Portal secret."},
      // Horovod (TonY test hooks).
      {"loom.horovod.mode.test", VT::kBool, "false", "TonY Horovod test hook."},
      {"loom.horovod.mode.test.fast.fail", VT::kBool, "false", "TonY Horovod test hook."},
      {"loom.horovod.driver.mode.debug", VT::kBool, "false", "TonY Horovod debug mode."},
      // Misc.
      {"loom.gpu-exec-path", VT::kString, "nvidia-smi", "nvidia-smi to use for GPU discovery and metrics."},
      {"loom.python-exec-path", VT::kString, "", "TonY key for the Python used by helper scripts."},
      // Local backend.
      {"loom.local.gpus", VT::kString, "", "GPUs the local backend may hand out: a count or a list of indices (default: what nvidia-smi finds)."},
      {"loom.local.vcores", VT::kPositive, "", "vcores of this host for the local backend (default: online CPUs)."},
      {"loom.local.memory", VT::kMemory, "", "Memory of this host for the local backend (default: MemTotal)."},
  };
  return kKeys;
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
  // Pattern keys.
  static const KeyInfo kDockerImage{"loom.docker.<type>.image", VT::kString, "", "Docker image of a type."};
  static const KeyInfo kGroup{"loom.application.group.<G>", VT::kList, "", "A named group of types."};
  static const KeyInfo kDependency{"loom.application.dependency.<X>.timeout.after.<G>", VT::kNonNegative, "",
                                   "Seconds type X may run after group G finished."};
  static const KeyInfo kDependencyIgnored{"loom.application.dependency.<X>.timeout.after.<G>.ignored", VT::kBool,
                                          "false", "Mark X untracked instead of failing."};
  static const KeyInfo kMaxTotal{"loom.task.max-total-<resource>", VT::kInt, "-1", "Cap on a total resource."};
  static const KeyInfo kVersion{"loom.version-info.<x>", VT::kString, "", "TonY build information."};
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
    if (!s.ok()) problems.push_back(s.message() + " (from " + e.source + ")");
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
    if (!out.Has(k.name) && !k.default_value.empty()) out.Set(k.name, k.default_value, "default");
  }
  for (const std::string& type : TaskTypeNames(conf)) {
    for (const KeyInfo& a : TaskTypeAttributes()) {
      std::string key = "loom." + type + "." + a.name;
      if (!out.Has(key) && !a.default_value.empty()) out.Set(key, a.default_value, "default");
    }
  }
  return out;
}

}  // namespace loom::config
