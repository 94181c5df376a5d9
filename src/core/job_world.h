#pragma once
// Which task types hold ranks in the one flat world of framework=pytorch and horovod (RANK,
// WORLD_SIZE, HOROVOD_SIZE). torchrun and Kubeflow's PyTorchJob count only the training
// replicas (master and workers); counting every type silently (a `reader` made WORLD_SIZE 3 and
// DDP waited for a rank that never joined) is what this prevents: only the types of
// loom.application.world.jobtypes join, chief, master and worker by default.

#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/job_spec.h"

namespace loom {

// Sets TaskTypeSpec::holds_rank on `spec`'s types (built from `conf`) and adds to `problems`
// what is wrong with loom.application.world.jobtypes: a type the job lacks, a sidecar, the key
// under another framework, or a pytorch/horovod job where no type would hold a rank.
void ApplyWorldTypes(const config::Config& conf, JobSpec& spec, std::vector<std::string>& problems);

// framework=pytorch|horovod: the types that hold no rank though they are no sidecar, as
// "reader:1, evaluator:1" (type:instances); empty when there are none, or for another framework.
std::string TypesWithoutRanks(const JobSpec& spec);

// What `loom submit` says about those types: that they hold no rank, what WORLD_SIZE counts, and
// the key that would add them (as the user spells keys). Empty when there is nothing to say.
std::string WorldNote(const JobSpec& spec);

}  // namespace loom
