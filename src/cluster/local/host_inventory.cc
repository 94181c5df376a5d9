#include "cluster/local/host_inventory.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "core/config/key_registry.h"
#include "core/files.h"
#include "core/strings.h"
#include "core/subprocess.h"

namespace loom::cluster::local {

std::vector<int> DetectNvidiaGpus(const std::string& nvidia_smi) {
  std::vector<int> gpus;
  auto env = CurrentEnvironment();
  auto program = FindProgram(nvidia_smi, env["PATH"]);
  if (!program.ok()) return gpus;
  std::string out = "/tmp/loom-nvsmi-" + std::to_string(::getpid());
  SpawnOptions o;
  o.argv = {*program, "--query-gpu=index", "--format=csv,noheader"};
  o.env = env;
  o.stdout_path = out;
  o.stderr_path = "/dev/null";
  auto child = Subprocess::Spawn(o);
  if (child.ok() && child->Wait().ok()) {
    if (auto text = ReadFile(out); text.ok()) {
      for (const auto& line : Split(*text, '\n')) {
        if (auto v = ParseInt(line); v.ok()) gpus.push_back(static_cast<int>(*v));
      }
    }
  }
  ::unlink(out.c_str());
  return gpus;
}

Result<HostInventory> HostInventory::Detect(const config::Config& conf) {
  HostInventory inv;
  inv.vcores = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemTotal:") {
      inv.memory_mib = kib / 1024;
      break;
    }
    meminfo.ignore(256, '\n');
  }
  if (auto v = conf.Get("loom.local.vcores")) inv.vcores = static_cast<int>(*ParseInt(*v));
  if (auto v = conf.Get("loom.local.memory")) inv.memory_mib = *ParseMemoryMib(*v);
  if (auto v = conf.Get("loom.local.gpus")) {
    // A count ("2") or a list of device indices ("0,2").
    std::vector<std::string> parts = Split(*v, ',');
    if (parts.size() == 1 && parts[0].find_first_not_of("0123456789") == std::string::npos && !StartsWith(*v, "0,")) {
      auto n = ParseInt(parts[0]);
      for (int i = 0; i < *n; ++i) inv.gpus.push_back(i);
    } else {
      for (const auto& p : parts) {
        auto idx = ParseInt(p);
        if (!idx.ok() || *idx < 0) {
          return Status::InvalidArgument(config::Spelled(conf, "loom.local.gpus") + "='" + *v +
                                         "': expected a count or a list of GPU indices");
        }
        inv.gpus.push_back(static_cast<int>(*idx));
      }
    }
  } else {
    inv.gpus = DetectNvidiaGpus(config::GetString(conf, "loom.gpu-exec-path"));
  }
  return inv;
}

Status HostInventory::CheckFits(const JobSpec& spec) const {
  std::vector<std::string> problems;
  for (const auto& t : spec.types) {
    if (t.resources.vcores > vcores) {
      problems.push_back(spec.KeyName("loom." + t.name + ".vcores") + "=" + std::to_string(t.resources.vcores) + " but this host has " +
                         std::to_string(vcores) + " vcores");
    }
  }
  Resources total = spec.TotalResources();
  if (total.gpus > static_cast<int>(gpus.size())) {
    problems.push_back("the job needs " + std::to_string(total.gpus) + " GPUs in total but this host has " +
                       std::to_string(gpus.size()) + " (set " + spec.KeyName("loom.local.gpus") + " to override detection)");
  }
  if (total.memory_mib > memory_mib) {
    problems.push_back("the job needs " + FormatMib(total.memory_mib) + " of memory in total but this host has " +
                       FormatMib(memory_mib));
  }
  if (problems.empty()) return Status::Ok();
  return Status::InvalidArgument("the job can never run on the local backend:\n  " + Join(problems, "\n  "));
}

std::string HostInventory::ToString() const {
  return std::to_string(vcores) + " vcores, " + FormatMib(memory_mib) + " memory, " + std::to_string(gpus.size()) +
         " GPUs";
}

}  // namespace loom::cluster::local
