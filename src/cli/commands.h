#pragma once
// The `loom` subcommands. Each returns the process exit code: 0 success, 1 the job failed or
// was killed, 2 bad usage or configuration (nothing was started).

#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace loom::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitJobFailed = 1;
inline constexpr int kExitUsage = 2;

int SubmitCommand(std::vector<std::string> args);
int StatusCommand(std::vector<std::string> args);
int LogsCommand(std::vector<std::string> args);
int KillCommand(std::vector<std::string> args);
int ListCommand(std::vector<std::string> args);
// The history server (cli/portal_command.cc): every job's record in a browser and as JSON.
int PortalCommand(std::vector<std::string> args);
// Retention (cli/retention.h): remove ended jobs' directories, by age or by id.
int GcCommand(std::vector<std::string> args);
int RmCommand(std::vector<std::string> args);
int AmCommand(std::vector<std::string> args);
int ExecutorCommand(std::vector<std::string> args);
// MPI without ssh (cli/mpi_commands.cc): Open MPI's rsh agent, and a rank-holding task's idle process.
int MpiRshCommand(std::vector<std::string> args);
int MpiIdleCommand(std::vector<std::string> args);

// Parses a subcommand's `args` into `app`: -1 to go on, else the exit code (help: 0, a bad
// argument: kExitUsage, said on stderr).
int ParseCommandLine(CLI::App& app, std::vector<std::string> args);

// Prints "loom: <message>" to stderr and returns kExitUsage.
int UsageError(const std::string& message);

}  // namespace loom::cli
