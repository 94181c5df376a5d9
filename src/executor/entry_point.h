#pragma once
// How a task's command runs: as TonY runs it, through `bash -c` (TonY's executor starts every
// task with ProcessBuilder("bash", "-c", command)). So `source venv/bin/activate && ...`, bash
// syntax and executable scripts without a `#!` line (which bash runs itself) behave as on TonY,
// on every backend: the executor runs them the same way locally and in a YARN container.
//
// A script without the execute bit: TonY makes the entry point executable before running it
// (`chmod +x`); Loom leaves the file alone, because on YARN it is a read-only localized copy that
// the container's user may not even own, and does what exec would have done with the bit set:
// runs the script through the interpreter its `#!` line names, or through bash when it has no
// such line (as bash does with an executable file it cannot exec).
//
// Pure functions of the file system; thread-safe.

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace loom::executor {

// Where bash is found on a node, after the task's own PATH.
inline const std::vector<std::string>& DefaultBashPaths() {
  static const std::vector<std::string> kPaths = {"/bin/bash", "/usr/bin/bash"};
  return kPaths;
}

// The bash that runs task commands: the first executable `bash` on `path_env` (the task's PATH,
// as the node's shell would find it), else the first executable of `fallbacks`. NotFound names
// where it looked and why bash is needed.
Result<std::string> FindBash(const std::string& path_env,
                             const std::vector<std::string>& fallbacks = DefaultBashPaths());

// The argv that runs the shell command line `command` as TonY does: {bash, "-c", command}, the
// command's first word given its interpreter if it is a script that needs one (WithInterpreter).
// bash execs a simple command in place, so the user process is still the executor's child.
std::vector<std::string> BashCommandArgv(const std::string& bash, const std::string& command);

// The interpreter argv to put in front of `program` when it is a path (it contains a '/';
// relative paths are relative to the current directory) to a regular file this process can
// read but not execute: {"/bin/bash"}, {"/usr/bin/env", "python3 -u"} (the kernel passes the
// rest of the #! line as one argument), or {bash} without a #! line. nullopt when exec can run
// `program` as it is, when it is a bare name (PATH's business) or when it is no readable file
// (exec then fails with its own error).
std::optional<std::vector<std::string>> InterpreterFor(const std::string& program, const std::string& bash);

// `argv` with the interpreter of argv[0] in front, if it needs one (see InterpreterFor).
std::vector<std::string> WithInterpreter(std::vector<std::string> argv, const std::string& bash);

// The same for a shell command line: when its first word is a plain path (no quotes, variables
// or other shell syntax) to a script that needs an interpreter, the interpreter, shell-quoted,
// goes in front of it. Anything else is returned unchanged.
std::string WithInterpreter(const std::string& command_line, const std::string& bash);

}  // namespace loom::executor
