#pragma once
// `loom mpi-rsh HOST COMMAND...`: Open MPI's rsh agent in the launcher of a Loom MPI job
// (runtime/mpi.h), in place of ssh. It asks the launcher's executor, over the private socket
// named by $LOOM_EXEC_SOCKET, to run COMMAND in the task that HOST names; the executor relays
// it through the AM to that task's executor. Like ssh, it returns once the command has ended,
// with its exit status (128 + signal when a signal ended it), or 255 with a message on stderr
// when the command could not be run (unknown host, task not running, AM gone). It holds no
// secret: only the executor talks to the AM.

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace loom::executor {

inline constexpr int kRshFailed = 255;  // ssh's code for "could not run it"

struct RshCommand {
  std::string host;
  std::string command;  // for /bin/sh -c on the host
};

// Reads the agent's arguments as Open MPI (or a script written for ssh) passes them:
// [ssh options] HOST WORD... The words are joined by spaces for the remote shell, as ssh does,
// without Open MPI's `--daemonize`: the daemon must stay a child of its task's executor, which
// stops it with the task, and the agent must last as long as the daemon, as ssh does.
// InvalidArgument without a host or a command.
Result<RshCommand> ParseRshArgs(const std::vector<std::string>& args);

// Runs the agent; returns its exit code. Messages go to `err`.
int RunMpiRsh(const std::vector<std::string>& args, const std::map<std::string, std::string>& env, std::FILE* err);

}  // namespace loom::executor
