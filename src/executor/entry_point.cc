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

std::optional<std::vector<std::string>> InterpreterFor(const std::string& program) {
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
  if (!StartsWith(head, "#!")) return std::vector<std::string>{"/bin/sh"};
  std::string line = head.substr(2, head.find('\n') == std::string::npos ? std::string::npos : head.find('\n') - 2);
  size_t begin = 0;
  while (begin < line.size() && IsBlank(line[begin])) ++begin;
  size_t end = begin;
  while (end < line.size() && !IsBlank(line[end])) ++end;
  std::string interpreter = line.substr(begin, end - begin);
  if (interpreter.empty()) return std::vector<std::string>{"/bin/sh"};
  std::vector<std::string> argv = {interpreter};
  std::string arg = Trim(line.substr(end));
  if (!arg.empty()) argv.push_back(arg);
  return argv;
}

std::vector<std::string> WithInterpreter(std::vector<std::string> argv) {
  if (argv.empty()) return argv;
  std::optional<std::vector<std::string>> interpreter = InterpreterFor(argv[0]);
  if (!interpreter) return argv;
  interpreter->insert(interpreter->end(), argv.begin(), argv.end());
  return *interpreter;
}

std::string WithInterpreter(const std::string& command_line) {
  size_t begin = 0;
  while (begin < command_line.size() && IsBlank(command_line[begin])) ++begin;
  size_t end = begin;
  while (end < command_line.size() && !IsBlank(command_line[end]) && command_line[end] != '\n') ++end;
  std::string first = command_line.substr(begin, end - begin);
  // Only a word the shell takes literally: ShellQuote leaves exactly those alone.
  if (first.empty() || ShellQuote(first) != first) return command_line;
  std::optional<std::vector<std::string>> interpreter = InterpreterFor(first);
  if (!interpreter) return command_line;
  std::string prefix;
  for (const std::string& word : *interpreter) prefix += ShellQuote(word) + " ";
  return command_line.substr(0, begin) + prefix + command_line.substr(begin);
}

}  // namespace loom::executor
