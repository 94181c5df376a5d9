#include "executor/entry_point.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/strings.h"

namespace loom::executor {

namespace {

// Linux reads at most this much of a #! line (BINPRM_BUF_SIZE).
constexpr size_t kShebangMax = 256;

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

}  // namespace

Result<std::string> FindBash(const std::string& path_env, const std::vector<std::string>& fallbacks) {
  for (const std::string& dir : Split(path_env, ':')) {
    std::string candidate = dir + "/bash";
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  for (const std::string& candidate : fallbacks) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  std::vector<std::string> looked = {"PATH=" + path_env};
  looked.insert(looked.end(), fallbacks.begin(), fallbacks.end());
  return Status::NotFound("bash not found on this node (looked in " + Join(looked, ", ") +
                          "): Loom runs every task command with `bash -c`, as TonY does, so bash must be "
                          "installed on each node that runs tasks");
}

std::vector<std::string> BashCommandArgv(const std::string& bash, const std::string& command) {
  return {bash, "-c", WithInterpreter(command, bash)};
}

std::optional<std::vector<std::string>> InterpreterFor(const std::string& program, const std::string& bash) {
  if (program.find('/') == std::string::npos) return std::nullopt;
  struct stat st;
  if (::stat(program.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  if (::access(program.c_str(), X_OK) == 0) return std::nullopt;
  int fd = ::open(program.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[kShebangMax];
  ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n < 0) return std::nullopt;
  std::string head(buf, static_cast<size_t>(n));
  // No #! line: bash runs such an executable file itself, in a bash of its own.
  if (!StartsWith(head, "#!")) return std::vector<std::string>{bash};
  std::string line = head.substr(2, head.find('\n') == std::string::npos ? std::string::npos : head.find('\n') - 2);
  size_t begin = 0;
  while (begin < line.size() && IsBlank(line[begin])) ++begin;
  size_t end = begin;
  while (end < line.size() && !IsBlank(line[end])) ++end;
  std::string interpreter = line.substr(begin, end - begin);
  if (interpreter.empty()) return std::vector<std::string>{bash};
  std::vector<std::string> argv = {interpreter};
  std::string arg = Trim(line.substr(end));
  if (!arg.empty()) argv.push_back(arg);
  return argv;
}

std::vector<std::string> WithInterpreter(std::vector<std::string> argv, const std::string& bash) {
  if (argv.empty()) return argv;
  std::optional<std::vector<std::string>> interpreter = InterpreterFor(argv[0], bash);
  if (!interpreter) return argv;
  interpreter->insert(interpreter->end(), argv.begin(), argv.end());
  return *interpreter;
}

std::string WithInterpreter(const std::string& command_line, const std::string& bash) {
  size_t begin = 0;
  while (begin < command_line.size() && IsBlank(command_line[begin])) ++begin;
  size_t end = begin;
  while (end < command_line.size() && !IsBlank(command_line[end]) && command_line[end] != '\n') ++end;
  std::string first = command_line.substr(begin, end - begin);
  // Only a word the shell takes literally: ShellQuote leaves exactly those alone.
  if (first.empty() || ShellQuote(first) != first) return command_line;
  std::optional<std::vector<std::string>> interpreter = InterpreterFor(first, bash);
  if (!interpreter) return command_line;
  std::string prefix;
  for (const std::string& word : *interpreter) prefix += ShellQuote(word) + " ";
  return command_line.substr(0, begin) + prefix + command_line.substr(begin);
}

}  // namespace loom::executor
