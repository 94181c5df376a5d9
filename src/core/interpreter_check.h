#pragma once
// Whether the interpreter a job's Python entry point names (--python_binary_path) exists on this
// host. A backend that runs the tasks here (local) checks it at submit: otherwise the job starts
// and every task fails with exit 127. A cluster's nodes are other hosts, so YARN cannot.

#include <string>

#include "core/job_spec.h"
#include "core/status.h"

namespace loom {

// Ok when `spec` runs no Python entry point, when the interpreter is inside the venv (a relative
// path with a '/': unpacked in each task) or runs a .pex, or when it is an executable file: an
// absolute path as is, a relative one in --src_dir (the task's working dir holds a copy), a bare
// name on the task's PATH (--shell_env PATH if the job sets it, else `client_path`, which local
// tasks inherit). Otherwise InvalidArgument naming --python_binary_path and where it looked.
Status CheckInterpreterOnThisHost(const JobSpec& spec, const std::string& client_path);

}  // namespace loom
