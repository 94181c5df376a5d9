// loom: runs distributed training jobs on the backends listed in cli/backends.cc (this
// machine, Hadoop YARN). One binary, three roles: the client (submit, status, logs, kill,
// list), the ApplicationMaster (`loom am`) and the TaskExecutor (`loom executor`).

#include <cstdio>
#include <string>
#include <vector>

#include "cli/backends.h"
#include "cli/commands.h"
#include "core/version.h"

namespace {

constexpr char kUsage[] = R"(usage: loom <command> [options]

Jobs:
  submit   run a training job (TonY's flags: --executes, --src_dir, --task_params,
           --python_venv, --python_binary_path, --shell_env, --container_env,
           --conf_file, --conf; plus --cluster BACKEND)
  status   show a job and its tasks            loom status JOB [--json]
  logs     print a task's output               loom logs JOB [--task TYPE:INDEX|am] [--stderr]
                                               [--file executor.log] [-f]
  kill     stop a job and everything it runs   loom kill JOB
  list     list jobs under $LOOM_HOME (~/.loom)
  portal   serve every job's record in a browser and as JSON
                                               loom portal [--port 8765] [--bind 127.0.0.1]
  gc       remove ended jobs' directories      loom gc [--older-than 7d] [--work-only] [--dry-run]
           (default age: $LOOM_GC_OLDER_THAN, else 7d; running jobs are never touched)
  rm       remove ended jobs' directories      loom rm JOB...

JOB is a job id, a job directory, or (yarn) an application id.

Roles started by Loom itself:
  am       the ApplicationMaster of one job
  executor the agent in each task's container
  mpi-rsh  Open MPI's rsh agent in an MPI job's launcher (loom.application.framework=mpi)
  mpi-idle what a task that holds MPI ranks runs as its own process

Exit codes: 0 job succeeded, 1 job failed or killed, 2 bad usage or configuration.
)";

// The usage with the backends this loom has, from their one list: never one it lacks.
std::string Usage() {
  std::string text = kUsage;
  text += "\nBackends (--cluster BACKEND):\n";
  for (const loom::cli::BackendEntry& b : loom::cli::Backends()) {
    char line[256];
    std::snprintf(line, sizeof(line), "  %-8s %s\n", b.name.c_str(), b.summary.c_str());
    text += line;
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::fputs(Usage().c_str(), args.empty() ? stderr : stdout);
    return args.empty() ? loom::cli::kExitUsage : 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::printf("loom %s\n", loom::kVersion);
    return 0;
  }
  loom::cli::RunAsKerberosClientIfNeeded(argv);
  std::string command = args[0];
  args.erase(args.begin());
  if (command == "submit") return loom::cli::SubmitCommand(args);
  if (command == "status") return loom::cli::StatusCommand(args);
  if (command == "logs") return loom::cli::LogsCommand(args);
  if (command == "kill") return loom::cli::KillCommand(args);
  if (command == "list") return loom::cli::ListCommand(args);
  if (command == "portal") return loom::cli::PortalCommand(args);
  if (command == "gc") return loom::cli::GcCommand(args);
  if (command == "rm") return loom::cli::RmCommand(args);
  if (command == "am") return loom::cli::AmCommand(args);
  if (command == "executor") return loom::cli::ExecutorCommand(args);
  if (command == "mpi-rsh") return loom::cli::MpiRshCommand(args);
  if (command == "mpi-idle") return loom::cli::MpiIdleCommand(args);
  std::fprintf(stderr, "loom: unknown command '%s'\n\n%s", command.c_str(), Usage().c_str());
  return loom::cli::kExitUsage;
}
