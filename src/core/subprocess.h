#pragma once
// Subprocess: the one way Loom starts a child. Each child gets its own session (and so its own
// process group); the destructor kills the group and reaps the child unless it was already
// waited for or explicitly released. This is how "every process Loom starts is ended by Loom"
// becomes structural. Not thread-safe: one owner per object.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace loom {

struct SpawnOptions {
  std::vector<std::string> argv;            // argv[0] is looked up in env's PATH if it has no '/'
  std::map<std::string, std::string> env;  // the complete environment of the child
  std::string cwd;                          // empty: inherit
  std::string stdout_path;                  // appended to; empty: inherit
  std::string stderr_path;                  // appended to; empty: inherit
  bool stdin_devnull = true;
  bool new_session = true;                  // setsid(): own session and process group
  int parent_death_signal = 0;              // PR_SET_PDEATHSIG, 0 = none
  std::string cgroup_procs_path;            // cgroup.procs to join before exec; empty = none
  std::vector<int> inherit_fds;             // fds that stay open in the child (CLOEXEC cleared)
};

// How a process ended.
struct ExitInfo {
  int exit_code = 0;  // valid when signal == 0
  int signal = 0;     // terminating signal, 0 when it exited normally
  static ExitInfo FromWaitStatus(int wstatus);
  // Shell convention: the exit code, or 128 + signal.
  int ShellCode() const { return signal ? 128 + signal : exit_code; }
  bool success() const { return signal == 0 && exit_code == 0; }
  std::string Describe() const;  // "exit code 3", "killed by signal 9 (SIGKILL)"
};

class Subprocess {
 public:
  static Result<Subprocess> Spawn(const SpawnOptions& options);

  Subprocess() = default;
  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }
  // The child's process group (its pid when started with new_session).
  pid_t pgid() const { return pgid_; }
  // Blocks until the child exits; reaps it.
  Result<ExitInfo> Wait();
  // Records that someone else reaped the child (e.g. a ProcessWatcher).
  void MarkReaped() { reaped_ = true; }
  // Gives up ownership: the destructor will neither kill nor reap. For daemons (the local AM).
  pid_t Release();

 private:
  void KillAndReap();
  pid_t pid_ = -1;
  pid_t pgid_ = -1;
  bool reaped_ = false;
};

// Runs a system tool (zip, unzip, tar) with PATH=/usr/bin:/bin and its stdout discarded, and
// waits for it. An exit other than 0 is Internal, naming the command and how it ended.
Status RunTool(const std::vector<std::string>& argv, const std::string& cwd = "");

// Looks up a program in a PATH string; returns the input when it contains a '/'.
Result<std::string> FindProgram(const std::string& name, const std::string& path_env);

// SIGTERM to a process group, then SIGKILL after `grace` if anything of it is left.
// Returns once the group is empty or SIGKILL was sent.
void TerminateProcessGroup(pid_t pgid, std::chrono::milliseconds grace);

// Whether any process of the group is alive. Zombies count as dead.
bool ProcessGroupAlive(pid_t pgid);
// Whether the process exists and is not a zombie.
bool ProcessAlive(pid_t pid);
// Every pid in /proc.
std::vector<pid_t> ListPids();
// Pids of live processes whose environment holds exactly `entry` ("LOOM_CONTAINER_ID=c1"),
// excluding the caller. Every process Loom starts carries such a marker, and children inherit
// it, which finds a task's processes even after they left its process group.
std::vector<pid_t> FindProcessesWithEnv(const std::string& entry);
// The same for any of `entries`, in one pass over /proc (a pass costs milliseconds).
std::vector<pid_t> FindProcessesWithEnv(const std::vector<std::string>& entries);
// SIGKILLs those processes; returns how many were signalled.
int KillProcessesWithEnv(const std::string& entry);
int KillProcessesWithEnv(const std::vector<std::string>& entries);

// Start time of `pid` in clock ticks after boot (/proc/PID/stat field 22, which /proc shows to
// every user, also for a non-dumpable process); nullopt when there is no such process.
std::optional<uint64_t> ProcessStartTicks(pid_t pid);
// Records `pid` in the file `path` (written atomically) so that a later reader can tell it
// from a process that reuses the pid: its pid, its start time and this boot's id.
// FailedPrecondition when the process is gone; the write's error otherwise.
Status RecordProcess(const std::string& path, pid_t pid);
// The pids recorded (RecordProcess) in the files of `dir` whose processes still run: same pid,
// same start time, same boot, not a zombie. A record of a process that is gone, whose pid
// another process now has, or of an earlier boot counts for nothing; so does a file that is
// no record, and so does a `dir` that does not exist.
std::vector<pid_t> RecordedProcesses(const std::string& dir);
// FindProcessesWithEnv(entries) and RecordedProcesses(records_dir), each pid once, sorted. A
// process that made itself non-dumpable has an environ only root may read: another reader
// finds it through a record alone.
std::vector<pid_t> FindProcesses(const std::vector<std::string>& entries, const std::string& records_dir);
// SIGKILLs those. A recorded process is signalled through a pidfd opened before its start time
// is checked, so a process that took the pid meanwhile is never hit. Returns how many were
// signalled.
int KillProcesses(const std::vector<std::string>& entries, const std::string& records_dir);

std::string SignalName(int sig);

// The current environment as a map.
std::map<std::string, std::string> CurrentEnvironment();

// pidfd_open(2): a descriptor that becomes readable when `pid` exits. -1 on failure.
int OpenPidFd(pid_t pid);

}  // namespace loom
