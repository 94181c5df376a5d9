// `loom mpi-rsh` and `loom mpi-idle`: the two programs of MPI without ssh that Loom runs inside
// a job's tasks (runtime/mpi.h), not meant for users.

#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "cli/commands.h"
#include "core/subprocess.h"
#include "executor/mpi_rsh.h"

namespace loom::cli {

int MpiRshCommand(std::vector<std::string> args) {
  if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) {
    std::puts("loom mpi-rsh HOST COMMAND...: Open MPI's rsh agent inside the launcher of a Loom MPI job\n"
              "(loom.application.framework=mpi): runs COMMAND in the task that HOST names, as ssh would");
    return kExitOk;
  }
  return executor::RunMpiRsh(args, CurrentEnvironment(), stderr);
}

int MpiIdleCommand(std::vector<std::string> args) {
  if (!args.empty()) {
    std::puts("loom mpi-idle: what a task that holds MPI ranks runs as its own process: nothing, until stopped");
    return args[0] == "-h" || args[0] == "--help" ? kExitOk : kExitUsage;
  }
  // Until a signal ends it: the executor stops it with SIGTERM when the task ends.
  while (true) ::pause();
}

}  // namespace loom::cli
