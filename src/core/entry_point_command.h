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
};

// The command a type runs when it has no loom.<type>.command of its own; empty when --executes is
// unset. `base_dir` resolves a relative script when there is no src dir (the task's own working
// dir is elsewhere). `check_files` checks the script exists. Errors are InvalidArgument and name
// the flag at fault.
Result<EntryPoint> EntryPointCommand(const config::Config& conf, const std::string& base_dir,
                                     const std::string& src_dir, VenvFormat venv, bool check_files);

}  // namespace loom
