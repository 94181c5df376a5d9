#pragma once
// What --executes (loom.application.executes) runs: the command line a task type runs when it has
// no loom.<type>.command of its own, built the way TonY runs its entry point.

#include <string>

#include "core/config/config.h"
#include "core/job_spec.h"
#include "core/status.h"

namespace loom {

// What --executes runs: the command, and for a Python script the interpreter it names.
struct EntryPoint {
  std::string command;
  std::string python;  // --python_binary_path as given; empty unless the script is Python
  ExecutesAs executes_as = ExecutesAs::kNone;  // the decision the command follows
};

// The command a type runs when it has no loom.<type>.command of its own; empty when --executes is
// unset. Reads spec.src_dir, python_venv_format and execution_env. `spec.executes_as` is the
// decision recorded at submit; kNone decides here, on the tasks' PATH (--shell_env PATH, else this
// process's). `base_dir` resolves a relative script when there is no src dir (the task's own
// working dir is elsewhere). `check_files` checks the script exists. Errors are InvalidArgument
// and name the flag at fault.
Result<EntryPoint> EntryPointCommand(const config::Config& conf, const std::string& base_dir, const JobSpec& spec,
                                     bool check_files);

}  // namespace loom
