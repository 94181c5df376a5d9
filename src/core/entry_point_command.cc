#include "core/entry_point_command.h"

#include <cstdlib>

#include "core/config/key_registry.h"
#include "core/files.h"
#include "core/strings.h"
#include "core/subprocess.h"

namespace loom {

using config::Config;
using config::GetString;

namespace {

// The PATH the tasks run with, as far as the submitter can know it: --shell_env PATH when the job
// sets it (the user process gets that value as is), else this process's (the local backend's
// tasks inherit it; a YARN NodeManager passes its own on, which only --shell_env PATH pins).
std::string TasksPath(const JobSpec& spec, std::string* shown) {
  if (auto it = spec.execution_env.find("PATH"); it != spec.execution_env.end()) {
    *shown = "--shell_env PATH=" + it->second;
    return it->second;
  }
  const char* path = std::getenv("PATH");
  *shown = "PATH=" + std::string(path ? path : "");
  return path ? path : "";
}

// A script name that is no file's: empty (--executes ./, or the src dir itself), ending in '/',
// or ending in "." or "..".
bool NamesADirectory(const std::string& script) {
  if (script.empty() || script.back() == '/') return true;
  std::string last = script.substr(script.rfind('/') + 1);  // npos + 1 == 0: no slash
  return last == "." || last == "..";
}

}  // namespace

Result<EntryPoint> EntryPointCommand(const Config& conf, const std::string& base_dir, const JobSpec& spec,
                                     bool check_files) {
  const std::string& src_dir = spec.src_dir;
  const VenvFormat venv = spec.python_venv_format;
  const std::string given = Trim(GetString(conf, "loom.application.executes"));
  std::string executes = given;
  if (executes.empty()) return EntryPoint{};
  // TonY's README passes the script with its src dir in front; the task runs inside the src dir.
  bool names_a_file = StartsWith(executes, "./");  // never a program on PATH
  if (!src_dir.empty()) {
    std::string rel_src = GetString(conf, "loom.application.src-dir");
    for (const std::string& prefix : {AbsolutePath(src_dir) + "/", rel_src + "/"}) {
      if (prefix.size() > 1 && StartsWith(executes, prefix)) {
        executes = executes.substr(prefix.size());
        names_a_file = true;
      }
    }
    while (StartsWith(executes, "./")) executes = executes.substr(2);
  }
  // Up to the first space: "./ --lr 1" leaves " --lr 1", whose script is empty, not "--lr".
  std::string script = executes.substr(0, executes.find(' '));
  const std::string written = script;  // as the user named it, for messages
  if (NamesADirectory(script)) {
    std::string what = src_dir.empty() ? "a directory" : "--src_dir itself or a directory in it";
    return Status::InvalidArgument("--executes " + given + ": names no script (" + what +
                                   "); give the entry point's file, e.g. --executes train.py");
  }
  std::string rest = executes.substr(script.size());
  bool is_python = EndsWith(script, ".py");
  std::string params = Trim(GetString(conf, "loom.application.task-params"));
  // A program on PATH runs as TonY runs --executes, as written (`bash run.sh`, `python3 -u
  // train.py`), in the task's working dir. Decided once, at submit: the AM's PATH is not the
  // tasks' and may not be the client's.
  std::string shown_path;
  const std::string path = TasksPath(spec, &shown_path);
  bool on_path = spec.executes_as != ExecutesAs::kNone
                     ? spec.executes_as == ExecutesAs::kProgram
                     : !is_python && !names_a_file && script.find('/') == std::string::npos &&
                           FindProgram(script, path).ok();
  const ExecutesAs decided = on_path ? ExecutesAs::kProgram : ExecutesAs::kScript;
  std::string local_file = src_dir.empty() ? AbsolutePath(base_dir + "/" + script) : src_dir + "/" + script;
  if (on_path) {
    if (check_files && spec.executes_as == ExecutesAs::kNone && PathExists(local_file)) {
      return Status::InvalidArgument("--executes: " + script + " is both a file in " +
                                     (src_dir.empty() ? "the current directory" : "--src_dir " + src_dir) +
                                     " and a program on PATH (" + *FindProgram(script, path) +
                                     "); write ./" + script + " to run the file");
    }
    return EntryPoint{params.empty() ? executes : executes + " " + params, "", decided};
  }
  if (src_dir.empty() && script[0] != '/') script = AbsolutePath(base_dir + "/" + script);
  std::string script_path = src_dir.empty() ? script : src_dir + "/" + script;
  if (check_files && IsDirectory(script_path)) {
    return Status::InvalidArgument("--executes " + given + ": names no script (" + script_path +
                                   " is a directory); give the entry point's file");
  }
  if (check_files && !PathExists(script_path)) {
    bool bare = written.find('/') == std::string::npos;
    return Status::InvalidArgument("--executes: " + written + " does not exist" +
                                   (src_dir.empty() ? std::string() : " in --src_dir " + src_dir) +
                                   (bare && !is_python ? " and is no program on PATH (" + shown_path + ")"
                                                       : ""));
  }
  std::string cmd;
  std::string python;
  if (is_python) {
    python = GetString(conf, "loom.application.python-binary-path");
    bool inside_venv = !python.empty() && python[0] != '/' && python.find('/') != std::string::npos;
    if (venv == VenvFormat::kPex) {
      if (inside_venv) {
        return Status::InvalidArgument("--python_binary_path " + python +
                                       ": a relative path names a file inside an unpacked venv, but a .pex "
                                       "venv is a single file; give an interpreter on PATH or an absolute path");
      }
      // A pex given a script runs it with the pex's own environment, like an interpreter: under
      // the interpreter its #! line names (as `./app.pex script.py` does), unless
      // --python_binary_path names one.
      bool explicit_python = conf.IsExplicit("loom.application.python-binary-path");
      cmd = (explicit_python ? ShellQuote(python) + " venv " : std::string("./venv ")) + ShellQuote(script) + rest;
      if (!explicit_python) python.clear();  // no interpreter of ours runs
    } else {
      // A relative interpreter path lives inside the unpacked venv, as in TonY.
      std::string run = venv != VenvFormat::kNone && inside_venv ? "venv/" + python : python;
      cmd = ShellQuote(run) + " " + ShellQuote(script) + rest;
    }
  } else if (src_dir.empty()) {
    cmd = ShellQuote(script) + rest;
  } else {
    // Run as ./script; the executor runs it through its #! interpreter if it lacks the
    // execute bit (TonY makes the entry point executable).
    cmd = script.find('/') == std::string::npos ? "./" + executes : executes;
  }
  if (!params.empty()) cmd += " " + params;
  return EntryPoint{cmd, python, decided};
}

}  // namespace loom
