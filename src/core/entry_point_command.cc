#include "core/entry_point_command.h"

#include <cstdlib>

#include "core/config/key_registry.h"
#include "core/files.h"
#include "core/strings.h"
#include "core/subprocess.h"

namespace loom {

using config::Config;
using config::GetString;

Result<EntryPoint> EntryPointCommand(const Config& conf, const std::string& base_dir, const std::string& src_dir,
                                     VenvFormat venv, bool check_files) {
  std::string executes = Trim(GetString(conf, "loom.application.executes"));
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
  std::string script = Split(executes, ' ').front();
  std::string rest = executes.substr(script.size());
  bool is_python = EndsWith(script, ".py");
  std::string params = Trim(GetString(conf, "loom.application.task-params"));
  // A program on PATH runs as TonY runs --executes, as written (`bash run.sh`, `python3 -u
  // train.py`), in the task's working dir.
  const char* path_env = std::getenv("PATH");
  bool on_path = !is_python && !names_a_file && script.find('/') == std::string::npos &&
                 FindProgram(script, path_env ? path_env : "").ok();
  std::string local_file = src_dir.empty() ? AbsolutePath(base_dir + "/" + script) : src_dir + "/" + script;
  if (on_path) {
    if (check_files && PathExists(local_file)) {
      return Status::InvalidArgument("--executes: " + script + " is both a file in " +
                                     (src_dir.empty() ? "the current directory" : "--src_dir " + src_dir) +
                                     " and a program on PATH (" + *FindProgram(script, path_env ? path_env : "") +
                                     "); write ./" + script + " to run the file");
    }
    return EntryPoint{params.empty() ? executes : executes + " " + params, ""};
  }
  if (src_dir.empty() && script[0] != '/') script = AbsolutePath(base_dir + "/" + script);
  std::string script_path = src_dir.empty() ? script : src_dir + "/" + script;
  if (check_files && !PathExists(script_path)) {
    bool bare = Split(executes, ' ').front().find('/') == std::string::npos;
    return Status::InvalidArgument("--executes: " + Split(executes, ' ').front() + " does not exist" +
                                   (src_dir.empty() ? std::string() : " in --src_dir " + src_dir) +
                                   (bare && !is_python ? " and is no program on PATH" : ""));
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
  return EntryPoint{cmd, python};
}

}  // namespace loom
