#include "core/job_spec_internal.h"

#include "core/config/key_registry.h"
#include "core/strings.h"

namespace loom {

// TonY's two stages. Given one list, the other is every remaining type.
void ApplyStages(const Config& conf, JobSpec& spec, std::vector<std::string>& problems) {
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
  std::vector<std::string> prepare = GetList(conf, "loom.application.prepare-stage");
  std::vector<std::string> training = GetList(conf, "loom.application.training-stage");
  if (prepare.empty() && training.empty()) return;
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
      } else if (!IsListed(unique, t)) {
        unique.push_back(t);
      }
    }
    list = unique;
  };
  check_stage("loom.application.prepare-stage", prepare);
  check_stage("loom.application.training-stage", training);
  for (const std::string& t : prepare) {
    if (IsListed(training, t)) {
      problems.push_back("task type '" + t + "' is in both " + key("loom.application.prepare-stage") + " and " +
                         key("loom.application.training-stage") + "; a type belongs to one stage");
      stages_ok = false;
    }
  }
  bool fill_prepare = prepare.empty(), fill_training = training.empty();
  for (const auto& t : spec.types) {
    if (fill_prepare && !IsListed(training, t.name)) prepare.push_back(t.name);
    if (fill_training && !IsListed(prepare, t.name)) training.push_back(t.name);
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
void ApplyDependencyTimeouts(const Config& conf, JobSpec& spec, std::vector<std::string>& problems) {
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
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
}

}  // namespace loom
