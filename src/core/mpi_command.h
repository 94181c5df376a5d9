#pragma once
// The launcher's command line in a job with loom.application.framework=mpi (runtime/mpi.h has
// the rest of the MPI contract): pure functions, in core because the job spec applies them.

#include <string>

namespace loom {

// Where each rank of a Loom-built mpirun line changes directory to: the working dir of the task
// that hosts it, which the executor sets in the environment of the Open MPI daemons it hosts,
// and their ranks inherit.
inline constexpr char kMpiWorkdirEnv[] = "LOOM_MPI_WORKDIR";

// Whether `command` already runs mpirun (its first word is mpirun, mpiexec or orterun, by any
// path): then it is run as the user wrote it, and picks the hostfile and the agent up from the
// environment.
bool RunsMpirun(const std::string& command);

// The launcher's command line for the job's command: `command` itself if it RunsMpirun, else
//   mpirun -np <slots> /bin/sh -c 'cd "${LOOM_MPI_WORKDIR:-.}" && exec "$0" "$@"' <command>
// so that each rank starts in the working dir of the task that hosts it, where the job's files
// are (Open MPI would start it in the launcher's directory, which exists on its host only).
std::string MpiLauncherCommand(const std::string& command, int slots);

}  // namespace loom
