#include "core/job_spec_internal.h"

#include <algorithm>

#include "core/config/key_registry.h"
#include "core/strings.h"

namespace loom {

namespace {

// The candidate `name` is one or two edits away from (a typo of), if any. Names of three letters
// or fewer get one edit only: every two-letter name is two edits from `ps`.
std::optional<std::string> NearMiss(const std::string& name, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_d = 3;
  for (const std::string& c : candidates) {
    if (c == name) continue;
    size_t d = EditDistance(name, c);
    size_t limit = std::min(name.size(), c.size()) <= 3 ? 1 : 2;
    if (d <= limit && d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace

// A type that is neither well-known nor declared and has no command of its own, but is one or
// two edits from a well-known or an intended type, is a typo: `tony.workr.instances=1` would
// otherwise start `workr:0` running the worker's script. Also catches per-type keys
// (tony.workr.memory, tony.docker.workr.image) of a type the job does not have.
void CheckTypeSpelling(const Config& conf, const std::vector<std::string>& names,
                       std::vector<std::string>& problems) {
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
  const std::vector<std::string>& well_known = config::WellKnownTaskTypes();
  std::vector<std::string> declared = GetList(conf, "loom.application.custom-types");
  auto has_command = [&](const std::string& type) {
    return !Trim(GetString(conf, "loom." + type + ".command")).empty();
  };
  auto intended = [&](const std::string& type) {
    return IsListed(well_known, type) || IsListed(declared, type) || has_command(type);
  };
  std::vector<std::string> candidates = well_known;
  for (const std::string& n : names) {
    if (intended(n) && !IsListed(candidates, n)) candidates.push_back(n);
  }
  for (const std::string& n : names) {
    if (intended(n)) continue;
    if (auto near = NearMiss(n, candidates)) {
      problems.push_back("unknown task type '" + n + "' (" + key("loom." + n + ".instances") + "); did you mean " +
                         *near + "? It is none of Loom's well-known types (" + Join(well_known, ", ") +
                         "). Fix the spelling, or, if '" + n + "' is meant, declare it with " +
                         key("loom.application.custom-types") + "=" + n + " or give it its own " +
                         key("loom." + n + ".command"));
    }
  }
  // Per-type keys of a type that is not part of the job: harmless (TonY's own files set
  // tony.ps.memory for jobs without ps) unless the type is a near miss of one that is.
  std::vector<std::string> job_types = well_known;
  for (const std::string& n : names) {
    if (!IsListed(job_types, n)) job_types.push_back(n);
  }
  for (const auto& [canonical, entry] : conf.entries()) {
    std::string type, shown;
    if (auto split = config::SplitTypeKey(canonical)) {
      type = split->first;
      shown = "loom." + split->first + "." + split->second;
    } else {
      std::vector<std::string> parts = Split(canonical, '.', false);
      if (parts.size() != 4 || parts[1] != "docker" || parts[3] != "image" || parts[2] == "containers") continue;
      type = parts[2];
      shown = "loom.docker." + type + ".image";
    }
    if (IsListed(job_types, type) || IsListed(declared, type)) continue;
    if (auto near = NearMiss(type, job_types)) {
      std::string fixed = shown;
      fixed.replace(fixed.find("." + type + ".") + 1, type.size(), *near);
      problems.push_back(entry.original_key + ": the job has no task type '" + type + "'; did you mean " +
                         key(fixed) + "?");
    }
  }
}

}  // namespace loom
