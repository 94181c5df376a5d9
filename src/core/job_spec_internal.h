#pragma once
// The steps of BuildJobSpec (job_spec.cc) that live in files of their own, and the helpers they
// share. Each step reads `conf`, fills in its part of `spec` and adds what is wrong to
// `problems`, naming keys as the user spells them. BuildJobSpec calls them in a fixed order,
// which is the order of the messages the user sees.

#include <algorithm>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/config/key_registry.h"
#include "core/files.h"
#include "core/job_spec.h"

namespace loom {

// The config and its readers, as the steps name them.
using config::Config;
using config::GetBool;
using config::GetInt;
using config::GetList;
using config::GetMemoryMib;
using config::GetString;

inline bool IsListed(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

// A path the submitter gave, absolute: a relative one is relative to `base_dir`. Empty stays empty.
inline std::string SubmitterPath(const std::string& base_dir, const std::string& path) {
  if (path.empty()) return path;
  return AbsolutePath(path[0] == '/' ? path : base_dir + "/" + path);
}

// job_spec_task_types.cc: spec.types, in rank order, with everything set per type, and the
// job-wide keys that decide them (the TensorBoard log dir, Docker, the entry point). Needs the
// framework, src dir and venv format of `spec` already set.
void BuildTaskTypes(const config::Config& conf, const std::string& base_dir, bool check_files, JobSpec& spec,
                    std::vector<std::string>& problems);

// job_spec_type_spelling.cc: refuses task type names (and per-type keys) that look like typos
// of a well-known or intended type. `names` are the job's type names as configured.
void CheckTypeSpelling(const config::Config& conf, const std::vector<std::string>& names,
                       std::vector<std::string>& problems);

// job_spec_mpi.cc: framework=mpi's roles (one tracked launcher running mpirun; the other types
// hold ranks, untracked) and its launcher command. Call on a spec with types.
void ApplyMpi(const config::Config& conf, JobSpec& spec, std::vector<std::string>& problems);

// job_spec_stages.cc: TonY's prepare and training stages (spec.prepare_stage, training_stage).
void ApplyStages(const config::Config& conf, JobSpec& spec, std::vector<std::string>& problems);
// job_spec_stages.cc: loom.application.dependency.<X>.timeout.after.<G> (spec.dependency_timeouts).
void ApplyDependencyTimeouts(const config::Config& conf, JobSpec& spec, std::vector<std::string>& problems);

// job_spec_caps.cc: the job's totals against the loom.task.max-total-* caps.
void CheckCaps(const config::Config& conf, const JobSpec& spec, std::vector<std::string>& problems);

}  // namespace loom
