#include "runtime/mpi.h"

#include "core/strings.h"

namespace loom::runtime {

bool HoldsMpiRanks(const JobSpec& spec, const std::string& type) {
  if (spec.framework != Framework::kMpi || type == kMpiLauncherType) return false;
  const TaskTypeSpec* t = spec.FindType(type);
  return t && t->role != TaskRole::kSidecar;
}

bool IsMpiLauncher(const JobSpec& spec, const TaskId& task) {
  return spec.framework == Framework::kMpi && task.type == kMpiLauncherType;
}

std::string MpiHostAlias(const TaskId& task) { return task.DirName() + kMpiHostDomain; }

Result<TaskId> ParseMpiHostAlias(const std::string& alias) {
  std::string name = alias;
  if (EndsWith(name, kMpiHostDomain)) name.resize(name.size() - std::string(kMpiHostDomain).size());
  size_t dash = name.rfind('-');
  auto bad = [&] {
    return Status::InvalidArgument("'" + alias + "' is not a host of this MPI job (expected TYPE-INDEX" +
                                   std::string(kMpiHostDomain) + ", e.g. worker-0" + kMpiHostDomain + ")");
  };
  if (dash == std::string::npos || dash == 0 || dash + 1 == name.size()) return bad();
  std::string digits = name.substr(dash + 1);
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) return bad();
  auto index = ParseInt(digits);
  if (!index.ok()) return bad();
  return TaskId{name.substr(0, dash), static_cast<int>(*index)};
}

std::string MpiHostfile(const JobSpec& spec) {
  std::string out;
  for (const auto& t : spec.types) {
    if (!HoldsMpiRanks(spec, t.name)) continue;
    for (int i = 0; i < t.instances; ++i) {
      out += MpiHostAlias({t.name, i}) + " slots=" + std::to_string(std::max(1, t.processes)) + "\n";
    }
  }
  return out;
}

int MpiSlots(const JobSpec& spec) {
  int slots = 0;
  for (const auto& t : spec.types) {
    if (HoldsMpiRanks(spec, t.name)) slots += t.instances * std::max(1, t.processes);
  }
  return slots;
}

Result<std::vector<MpiHost>> ParseMpiHostfile(const std::string& text) {
  std::vector<MpiHost> hosts;
  int n = 0;
  for (const std::string& raw : Split(text, '\n', /*skip_empty=*/false)) {
    ++n;
    std::string line = Trim(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    std::vector<std::string> words = Split(line, ' ');
    auto bad = [&] {
      return Status::InvalidArgument("hostfile line " + std::to_string(n) + ": '" + line +
                                     "': expected '<host> slots=<n>'");
    };
    if (words.size() != 2 || !StartsWith(words[1], "slots=")) return bad();
    auto slots = ParseInt(words[1].substr(6));
    if (!slots.ok() || *slots < 1) return bad();
    hosts.push_back({words[0], static_cast<int>(*slots)});
  }
  return hosts;
}

void AddMpiEnv(const JobSpec& spec, const TaskId& task, std::map<std::string, std::string>& env) {
  if (!IsMpiLauncher(spec, task)) return;
  env["OMPI_MCA_plm_rsh_no_tree_spawn"] = "1";
  env["OMPI_MCA_orte_keep_fqdn_hostnames"] = "1";
}

}  // namespace loom::runtime
