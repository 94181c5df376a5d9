#pragma once
// A task's program when it is a script without the execute bit. TonY makes the entry point
// executable before running it (`chmod +x`); Loom leaves the file alone, because on YARN it is
// a read-only localized copy that the container's user may not even own, and does what exec
// would have done with the bit set: runs the script through the interpreter its `#!` line
// names, or through /bin/sh when it has no such line (as execvp and every shell do).
//
// Pure functions of the file system; thread-safe.

#include <optional>
#include <string>
#include <vector>

namespace loom::executor {

// The interpreter argv to put in front of `program` when it is a path (it contains a '/';
// relative paths are relative to the current directory) to a regular file this process can
// read but not execute: {"/bin/bash"}, {"/usr/bin/env", "python3 -u"} (the kernel passes the
// rest of the #! line as one argument), or {"/bin/sh"} without a #! line. nullopt when exec can
// run `program` as it is, when it is a bare name (PATH's business) or when it is no readable
// file (exec then fails with its own error).
std::optional<std::vector<std::string>> InterpreterFor(const std::string& program);

// `argv` with the interpreter of argv[0] in front, if it needs one (see InterpreterFor).
std::vector<std::string> WithInterpreter(std::vector<std::string> argv);

// The same for a shell command line: when its first word is a plain path (no quotes, variables
// or other shell syntax) to a script that needs an interpreter, the interpreter, shell-quoted,
// goes in front of it. Anything else is returned unchanged.
std::string WithInterpreter(const std::string& command_line);

}  // namespace loom::executor
