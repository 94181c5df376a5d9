#include "core/interpreter_check.h"

#include <unistd.h>

#include "core/files.h"
#include "core/strings.h"

namespace loom {

namespace {

bool IsExecutableFile(const std::string& path) {
  return PathExists(path) && !IsDirectory(path) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

Status CheckInterpreterOnThisHost(const JobSpec& spec, const std::string& client_path) {
  const std::string& python = spec.python_binary;
  if (python.empty() || spec.python_venv_format == VenvFormat::kPex) return Status::Ok();
  const std::string flag = "--python_binary_path " + python;
  const bool has_slash = python.find('/') != std::string::npos;
  if (python[0] == '/') {
    if (IsExecutableFile(python)) return Status::Ok();
    return Status::InvalidArgument(flag + (PathExists(python) ? " is not an executable file" : " does not exist") +
                                   " on this host, where the local backend runs the tasks; give the path of a "
                                   "Python interpreter here (e.g. /usr/bin/python3)");
  }
  if (has_slash) {
    if (spec.python_venv_format != VenvFormat::kNone) return Status::Ok();  // inside the unpacked venv
    if (!spec.src_dir.empty() && IsExecutableFile(spec.src_dir + "/" + python)) return Status::Ok();
    return Status::InvalidArgument(
        flag + ": a relative path names a file in the task's working dir (a copy of --src_dir" +
        (spec.src_dir.empty() ? std::string(", and the job has none") : " " + spec.src_dir) +
        "), and there is no such executable there; without --python_venv give an absolute path or a name on PATH");
  }
  auto set = spec.execution_env.find("PATH");
  const bool job_path = set != spec.execution_env.end();
  const std::string path = job_path ? set->second : client_path;
  for (const std::string& dir : Split(path, ':')) {
    if (!dir.empty() && IsExecutableFile(dir + "/" + python)) return Status::Ok();
  }
  return Status::InvalidArgument(flag + ": no such executable on the tasks' PATH (" +
                                 (job_path ? "--shell_env PATH=" : "PATH=") + path +
                                 "); the local backend runs them on this host: install it, or give its absolute path");
}

}  // namespace loom
