#pragma once
// The contract of loom.application.framework=mpi (MPI without ssh), as pure functions shared by
// the client, the AM and the executors.
//
// An MPI job has one `launcher` task, which runs mpirun, and rank-holding tasks (every other type
// that is not a sidecar), which run no command of their own: Open MPI starts its daemon (orted)
// in each of them through its rsh agent, `loom mpi-rsh`, and the daemons start the ranks,
// loom.<type>.processes of them per task. mpirun reaches a rank-holding task by a host alias
// that names it ("worker-1.loom.invalid"): the reserved `.invalid` domain never resolves, so
// Open MPI never mistakes an alias for this machine (a node named `worker-1` is common) and
// always goes through the agent. Open MPI keeps the whole name only with
// orte_keep_fqdn_hostnames=1, which the launcher's environment sets. The launcher's command line
// is core/mpi_command.h's.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/job_spec.h"
#include "core/status.h"

namespace loom::runtime {

// The type that runs mpirun; Loom adds it (1 instance) when the user did not define it.
inline constexpr char kMpiLauncherType[] = "launcher";
// The domain of every host alias.
inline constexpr char kMpiHostDomain[] = ".loom.invalid";
// The launcher's private socket to its executor, for `loom mpi-rsh`.
inline constexpr char kExecSocketEnv[] = "LOOM_EXEC_SOCKET";

// Whether tasks of `type` hold ranks: in an mpi job, every type but the launcher and sidecars.
bool HoldsMpiRanks(const JobSpec& spec, const std::string& type);
bool IsMpiLauncher(const JobSpec& spec, const TaskId& task);

// "worker-1.loom.invalid".
std::string MpiHostAlias(const TaskId& task);
// The task an alias names; also accepts the alias without its domain ("worker-1"), as Open MPI
// passes it when orte_keep_fqdn_hostnames is off. InvalidArgument for anything else.
Result<TaskId> ParseMpiHostAlias(const std::string& alias);

// One line per rank-holding task, in the job's type order: "worker-0.loom.invalid slots=2".
std::string MpiHostfile(const JobSpec& spec);
// The job's ranks: the slots of every rank-holding task.
int MpiSlots(const JobSpec& spec);
struct MpiHost {
  std::string alias;
  int slots = 0;
};
// Reads a hostfile as MpiHostfile writes it (blank lines and # comments skipped).
// InvalidArgument naming the line for anything else.
Result<std::vector<MpiHost>> ParseMpiHostfile(const std::string& text);

// The framework variables of an mpi task (on top of Loom's own). The launcher gets what makes
// mpirun use the aliases and the agent: OMPI_MCA_plm_rsh_no_tree_spawn=1 (a daemon never
// starts others through the agent: only the launcher's has a socket to ask) and
// OMPI_MCA_orte_keep_fqdn_hostnames=1. Its executor adds what depends on its container: the
// agent (OMPI_MCA_plm_rsh_agent), the hostfile (OMPI_MCA_orte_default_hostfile) and its socket.
void AddMpiEnv(const JobSpec& spec, const TaskId& task, std::map<std::string, std::string>& env);

}  // namespace loom::runtime
