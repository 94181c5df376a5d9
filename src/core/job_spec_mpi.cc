#include "core/job_spec_internal.h"

#include <algorithm>

#include "core/config/key_registry.h"
#include "core/mpi_command.h"
#include "core/strings.h"

namespace loom {

// loom.application.framework=mpi (runtime/mpi.h): one tracked `launcher` task runs mpirun, and
// every other type but the sidecars holds ranks: untracked, it runs no command of its own and
// stays up until the launcher ends, so the job's result is the launcher's.
void ApplyMpi(const Config& conf, JobSpec& spec, std::vector<std::string>& problems) {
  auto key = [&](const std::string& k) { return config::Spelled(conf, k); };
  const std::string mpi = key("loom.application.framework") + "=mpi";
  TaskTypeSpec* launcher = nullptr;
  int holders = 0, slots = 0;
  for (TaskTypeSpec& t : spec.types) {
    if (t.name == "launcher") {
      launcher = &t;
      continue;
    }
    if (t.role == TaskRole::kSidecar) continue;
    t.role = TaskRole::kUntracked;
    holders += t.instances;
    slots += t.instances * std::max(1, t.processes);
    if (t.restart_policy != RestartPolicy::kNever) {
      problems.push_back(key("loom." + t.name + ".restart-policy") + "=" +
                         ToLower(GetString(conf, "loom." + t.name + ".restart-policy")) + ": under " + mpi +
                         " a task that holds ranks cannot be restarted alone (mpirun has lost its ranks by then); " +
                         key("loom.am.retry-count") + " restarts the whole job");
    }
  }
  if (!launcher) {
    problems.push_back(mpi + " runs mpirun in a 'launcher' task, but " + key("loom.launcher.instances") +
                       "=0: remove the key (Loom adds one launcher)");
  } else {
    if (launcher->instances != 1) {
      problems.push_back(mpi + " runs exactly 1 launcher (it runs mpirun), but " + key("loom.launcher.instances") +
                         "=" + std::to_string(launcher->instances));
    }
    if (launcher->role != TaskRole::kTracked) {
      problems.push_back(mpi + ": the launcher's result is the job's, so it cannot be untracked or a sidecar: "
                               "remove 'launcher' from " + key("loom.application.untracked.jobtypes") + " and " +
                         key("loom.application.sidecar.jobtypes"));
    }
    // The job's command runs under mpirun, unless it already does, or the launcher has a
    // command of its own (a script that calls mpirun itself, say).
    if (Trim(GetString(conf, "loom.launcher.command")).empty()) {
      launcher->command = MpiLauncherCommand(launcher->command, slots);
    }
    if (launcher->processes != 1) {
      problems.push_back(key("loom.launcher.processes") + "=" + std::to_string(launcher->processes) +
                         ": the launcher runs one mpirun; the ranks per task are the processes of the types "
                         "that hold them (e.g. " + key("loom.worker.processes") + ")");
    }
  }
  if (holders == 0) {
    problems.push_back(mpi + " needs tasks to hold the ranks: add a type, e.g. " + key("loom.worker.instances") +
                       "=2 (each with " + key("loom.worker.processes") + " ranks)");
  }
}

}  // namespace loom
