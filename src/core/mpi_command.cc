#include "core/mpi_command.h"

#include "core/strings.h"

namespace loom {
namespace {

// The first word of a shell command line, without the quotes ShellQuote puts around it.
std::string FirstWord(const std::string& command) {
  std::string s = Trim(command);
  if (s.empty()) return s;
  if (s[0] == '\'' || s[0] == '"') {
    size_t end = s.find(s[0], 1);
    return s.substr(1, end == std::string::npos ? std::string::npos : end - 1);
  }
  return s.substr(0, s.find_first_of(" \t"));
}

}  // namespace

bool RunsMpirun(const std::string& command) {
  std::string word = FirstWord(command);
  size_t slash = word.rfind('/');
  std::string base = slash == std::string::npos ? word : word.substr(slash + 1);
  return base == "mpirun" || base == "mpiexec" || base == "orterun";
}

std::string MpiLauncherCommand(const std::string& command, int slots) {
  if (RunsMpirun(command)) return command;
  return "mpirun -np " + std::to_string(slots) + " /bin/sh -c 'cd \"${" + kMpiWorkdirEnv +
         ":-.}\" && exec \"$0\" \"$@\"' " + Trim(command);
}

}  // namespace loom
