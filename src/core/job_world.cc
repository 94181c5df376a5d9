#include "core/job_world.h"

#include <algorithm>

#include "core/config/key_registry.h"
#include "core/strings.h"

namespace loom {

namespace {

constexpr char kWorldKey[] = "loom.application.world.jobtypes";

bool HasFlatWorld(const JobSpec& spec) {
  return spec.framework == Framework::kPyTorch || spec.framework == Framework::kHorovod;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

void ApplyWorldTypes(const config::Config& conf, JobSpec& spec, std::vector<std::string>& problems) {
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
  const std::vector<std::string> world = config::GetList(conf, "loom.application.world.jobtypes");
  const bool explicit_list = conf.IsExplicit("loom.application.world.jobtypes");
  for (TaskTypeSpec& t : spec.types) {
    t.holds_rank = t.role != TaskRole::kSidecar && (!HasFlatWorld(spec) || Contains(world, t.name));
  }
  if (!HasFlatWorld(spec)) {
    if (explicit_list) {
      problems.push_back(key(kWorldKey) + "=" + Join(world, ",") + " names the types that hold ranks under " +
                         key("loom.application.framework") + "=pytorch or horovod, but this job's framework is " +
                         FrameworkName(spec.framework) + ": remove the key");
    }
    return;
  }
  if (explicit_list) {
    std::vector<std::string> have;
    for (const auto& t : spec.types) have.push_back(t.name);
    for (const std::string& name : world) {
      const TaskTypeSpec* t = spec.FindType(name);
      if (!t) {
        problems.push_back(key(kWorldKey) + ": '" + name + "' is not a task type of the job (its types: " +
                           Join(have, ", ") + ")");
      } else if (t->role == TaskRole::kSidecar) {
        problems.push_back(key(kWorldKey) + ": '" + name + "' is a sidecar type (" +
                           key("loom.application.sidecar.jobtypes") + "), which holds no rank; remove it from one "
                           "of the two");
      }
    }
  }
  if (spec.types.empty()) return;
  bool any = std::any_of(spec.types.begin(), spec.types.end(), [](const TaskTypeSpec& t) { return t.holds_rank; });
  if (!any) {
    std::vector<std::string> candidates;
    for (const auto& t : spec.types) {
      if (t.role != TaskRole::kSidecar) candidates.push_back(t.name);
    }
    problems.push_back(key("loom.application.framework") + "=" + FrameworkName(spec.framework) +
                       ": no task type holds a rank, so WORLD_SIZE would be 0: ranks go to the types of " +
                       key(kWorldKey) + " (" + Join(world, ",") + "); name the types that train, e.g. " +
                       key(kWorldKey) + "=" + Join(candidates, ","));
  }
}

std::string TypesWithoutRanks(const JobSpec& spec) {
  if (!HasFlatWorld(spec)) return "";
  std::vector<std::string> out;
  for (const auto& t : spec.types) {
    if (!t.holds_rank && t.role != TaskRole::kSidecar) out.push_back(t.name + ":" + std::to_string(t.instances));
  }
  return Join(out, ", ");
}

std::string WorldNote(const JobSpec& spec) {
  std::string without = TypesWithoutRanks(spec);
  if (without.empty()) return "";
  std::vector<std::string> ranked, outside;
  for (const auto& t : spec.types) {
    if (t.holds_rank) ranked.push_back(t.name);
    if (!t.holds_rank && t.role != TaskRole::kSidecar) outside.push_back(t.name);
  }
  std::string key = spec.KeyName(kWorldKey);
  return FrameworkName(spec.framework) + ": " + without + " hold" + (outside.size() == 1 ? "s" : "") +
         " no rank (no RANK; WORLD_SIZE counts " + Join(ranked, ", ") + " only); if " +
         (outside.size() == 1 ? "it calls" : "they call") + " init_process_group, add " +
         (outside.size() == 1 ? "it" : "them") + ": --conf " + key + "=" + Join(ranked, ",") + "," +
         Join(outside, ",");
}

}  // namespace loom
