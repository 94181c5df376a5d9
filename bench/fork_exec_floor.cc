// fork_exec_floor: the physical floor of the launch benchmark. Starts N copies of a program
// with posix_spawn, as fast as this machine can, and waits for them.
// Usage: fork_exec_floor N PROGRAM [ARGS...]   (each child gets argv ARGS... plus its index)

#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  int n = std::atoi(argv[1]);
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> args(argv + 2, argv + argc);
    args.push_back("task-" + std::to_string(i));
    std::vector<char*> cargs;
    for (auto& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    pid_t pid;
    if (posix_spawn(&pid, cargs[0], nullptr, nullptr, cargs.data(), environ) != 0) return 1;
    pids.push_back(pid);
  }
  int rc = 0;
  for (pid_t p : pids) {
    int status;
    waitpid(p, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  return rc;
}
