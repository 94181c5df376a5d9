#include "core/subprocess.h"

#include <algorithm>

#include <dirent.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/files.h"
#include "core/strings.h"

extern char** environ;

namespace loom {

namespace {

// Sets FD_CLOEXEC on every descriptor from 3 up; async-signal-safe, for a child between fork
// and exec. close_range(2) does it in one call on Linux 5.11 and later; older kernels get a
// loop up to the descriptor limit (capped: a limit of a million is no reason to make a million
// calls, and descriptors that high are not opened by accident).
void MarkDescriptorsCloseOnExec() {
#ifdef SYS_close_range
  constexpr unsigned kCloseRangeCloexec = 1u << 2;  // CLOSE_RANGE_CLOEXEC
  if (::syscall(SYS_close_range, 3u, ~0u, kCloseRangeCloexec) == 0) return;
#endif
  rlimit limit{};
  rlim_t top = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 ? limit.rlim_cur : 1024;
  if (top > 65536) top = 65536;
  for (int fd = 3; fd < static_cast<int>(top); ++fd) {
    int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0 && !(flags & FD_CLOEXEC)) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
}

}  // namespace

ExitInfo ExitInfo::FromWaitStatus(int wstatus) {
  ExitInfo info;
  if (WIFEXITED(wstatus)) info.exit_code = WEXITSTATUS(wstatus);
  else if (WIFSIGNALED(wstatus)) info.signal = WTERMSIG(wstatus);
  return info;
}

std::string ExitInfo::Describe() const {
  if (signal) return "killed by signal " + std::to_string(signal) + " (" + SignalName(signal) + ")";
  return "exit code " + std::to_string(exit_code);
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

Result<std::string> FindProgram(const std::string& name, const std::string& path_env) {
  if (name.find('/') != std::string::npos) return name;
  for (const std::string& dir : Split(path_env.empty() ? "/usr/bin:/bin" : path_env, ':')) {
    std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return Status::NotFound("program '" + name + "' not found in PATH");
}

Result<Subprocess> Subprocess::Spawn(const SpawnOptions& o) {
  if (o.argv.empty()) return Status::InvalidArgument("spawn: empty argv");
  auto path_it = o.env.find("PATH");
  LOOM_ASSIGN_OR_RETURN(std::string program,
                        FindProgram(o.argv[0], path_it == o.env.end() ? "" : path_it->second));

  // Everything the child needs is prepared before fork(): after it, only async-signal-safe calls.
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : o.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);

  // Starting the child directly inside its cgroup (clone3 + CLONE_INTO_CGROUP) avoids moving it
  // there after fork(): a migration takes the cgroup threadgroup lock for writing, which costs
  // milliseconds to tens of milliseconds per task.
  bool joined_cgroup = false;
  pid_t pid = -1;
  if (!o.cgroup_procs_path.empty()) {
    std::string dir = o.cgroup_procs_path.substr(0, o.cgroup_procs_path.find_last_of('/'));
    int cg_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cg_fd >= 0) {
      struct clone_args args {};
      args.flags = CLONE_INTO_CGROUP;
      args.exit_signal = SIGCHLD;
      args.cgroup = static_cast<uint64_t>(cg_fd);
      pid = static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof(args)));
      ::close(cg_fd);
      joined_cgroup = pid >= 0;
    }
  }
  if (pid < 0) pid = ::fork();  // no clone3 (old kernel) or no cgroup: join after fork
  if (pid < 0) {
    int err = errno;
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    return Status::FromErrno("fork", err);
  }
  if (pid == 0) {
    auto fail = [&](int step) {
      int payload[2] = {step, errno};
      (void)!::write(err_pipe[1], payload, sizeof(payload));
      ::_exit(127);
    };
    if (o.new_session && ::setsid() < 0) fail(1);
    if (o.parent_death_signal) {
      ::prctl(PR_SET_PDEATHSIG, o.parent_death_signal);
      if (::getppid() == 1) ::_exit(1);  // the parent is already gone
    }
    if (!o.cgroup_procs_path.empty() && !joined_cgroup) {
      int fd = ::open(o.cgroup_procs_path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0 || ::write(fd, "0", 1) != 1) fail(2);
      ::close(fd);
    }
    if (o.stdin_devnull) {
      int fd = ::open("/dev/null", O_RDONLY);
      if (fd >= 0) { ::dup2(fd, 0); if (fd != 0) ::close(fd); }
    }
    if (!o.stdout_path.empty()) {
      int fd = ::open(o.stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd < 0) fail(3);
      ::dup2(fd, 1);
      if (fd != 1) ::close(fd);
    }
    if (!o.stderr_path.empty()) {
      int fd = ::open(o.stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd < 0) fail(4);
      ::dup2(fd, 2);
      if (fd != 2) ::close(fd);
    }
    // Descriptors another thread opened without O_CLOEXEC (a library's: cpp-httplib's accepted
    // connections) must not reach the program: every one is marked, then the ones asked for
    // are let through.
    MarkDescriptorsCloseOnExec();
    for (int fd : o.inherit_fds) {
      int flags = ::fcntl(fd, F_GETFD);
      if (flags >= 0) ::fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
    }
    if (!o.cwd.empty() && ::chdir(o.cwd.c_str()) != 0) fail(5);
    // Signal dispositions and masks survive exec: give the child a clean slate.
    sigset_t all;
    sigemptyset(&all);
    ::sigprocmask(SIG_SETMASK, &all, nullptr);
    for (int s = 1; s < NSIG; ++s) ::signal(s, SIG_DFL);
    ::execve(program.c_str(), argv.data(), envp.data());
    fail(6);
  }
  ::close(err_pipe[1]);
  int payload[2] = {0, 0};
  ssize_t n;
  do {
    n = ::read(err_pipe[0], payload, sizeof(payload));
  } while (n < 0 && errno == EINTR);
  ::close(err_pipe[0]);
  if (n == sizeof(payload)) {
    int wstatus;
    ::waitpid(pid, &wstatus, 0);
    std::string what;
    switch (payload[0]) {
      case 1: what = "setsid"; break;
      case 2: what = "join cgroup " + o.cgroup_procs_path; break;
      case 3: what = "open " + o.stdout_path; break;
      case 4: what = "open " + o.stderr_path; break;
      case 5: what = "chdir to " + o.cwd; break;
      default: what = "exec " + program; break;
    }
    return Status::FromErrno("starting " + o.argv[0] + ": " + what, payload[1]);
  }
  Subprocess child;
  child.pid_ = pid;
  child.pgid_ = o.new_session ? pid : ::getpgid(0);
  return child;
}

Subprocess::Subprocess(Subprocess&& other) noexcept { *this = std::move(other); }

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    KillAndReap();
    pid_ = other.pid_;
    pgid_ = other.pgid_;
    reaped_ = other.reaped_;
    other.pid_ = -1;
  }
  return *this;
}

Subprocess::~Subprocess() { KillAndReap(); }

void Subprocess::KillAndReap() {
  if (pid_ <= 0) return;
  if (!reaped_) {
    if (pgid_ == pid_) ::kill(-pgid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int wstatus;
    while (::waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
    }
  } else if (pgid_ == pid_) {
    ::kill(-pgid_, SIGKILL);  // descendants left in the group
  }
  pid_ = -1;
}

Result<ExitInfo> Subprocess::Wait() {
  if (pid_ <= 0) return Status::FailedPrecondition("no child to wait for");
  int wstatus = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &wstatus, 0);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return Status::FromErrno("waitpid", errno);
  reaped_ = true;
  return ExitInfo::FromWaitStatus(wstatus);
}

pid_t Subprocess::Release() {
  pid_t p = pid_;
  pid_ = -1;
  return p;
}

namespace {
// Parses /proc/<pid>/stat: state, process group and (when `start_ticks` is given) start time.
// False if the process is gone.
bool ReadProcStat(const std::string& pid_dir, char* state, pid_t* pgrp, uint64_t* start_ticks = nullptr) {
  int fd = ::open((pid_dir + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];  // field 22 lies well within it; the fields after it are not read
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  const char* rp = std::strrchr(buf, ')');  // the command name may contain spaces and parens
  if (!rp) return false;
  int ppid = 0, pg = 0;
  unsigned long long start = 0;
  // Fields 3 (state), 4 (ppid), 5 (pgrp), then 6..21 skipped, then 22 (starttime).
  int got = std::sscanf(rp + 1, " %c %d %d %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
                        state, &ppid, &pg, &start);
  if (got < 3 || (start_ticks && got != 4)) return false;
  *pgrp = pg;
  if (start_ticks) *start_ticks = start;
  return true;
}
}  // namespace

bool ProcessAlive(pid_t pid) {
  char state;
  pid_t pgrp;
  if (pid <= 0 || !ReadProcStat("/proc/" + std::to_string(pid), &state, &pgrp)) return false;
  return state != 'Z' && state != 'X';
}

bool ProcessGroupAlive(pid_t pgid) {
  if (pgid <= 0 || ::kill(-pgid, 0) != 0) return false;
  // kill(2) also succeeds for zombies nobody reaped yet; they are dead for our purpose.
  for (const auto& entry : ListPids()) {
    char state;
    pid_t pgrp;
    if (ReadProcStat("/proc/" + std::to_string(entry), &state, &pgrp) && pgrp == pgid && state != 'Z' &&
        state != 'X') {
      return true;
    }
  }
  return false;
}

std::vector<pid_t> FindProcessesWithEnv(const std::vector<std::string>& entries) {
  std::vector<pid_t> found;
  if (entries.empty()) return found;
  pid_t self = ::getpid();
  for (pid_t pid : ListPids()) {
    if (pid == self || !ProcessAlive(pid)) continue;
    int fd = ::open(("/proc/" + std::to_string(pid) + "/environ").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    std::string env;
    char buf[8192];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof(buf))) > 0) env.append(buf, static_cast<size_t>(n));
    ::close(fd);
    size_t pos = 0;
    while (pos < env.size()) {
      size_t end = env.find('\0', pos);
      if (end == std::string::npos) end = env.size();
      std::string_view var(env.data() + pos, end - pos);
      if (std::find(entries.begin(), entries.end(), var) != entries.end()) {
        found.push_back(pid);
        break;
      }
      pos = end + 1;
    }
  }
  return found;
}

std::vector<pid_t> FindProcessesWithEnv(const std::string& entry) {
  return FindProcessesWithEnv(std::vector<std::string>{entry});
}

int KillProcessesWithEnv(const std::vector<std::string>& entries) {
  int n = 0;
  for (pid_t pid : FindProcessesWithEnv(entries)) n += ::kill(pid, SIGKILL) == 0;
  return n;
}

int KillProcessesWithEnv(const std::string& entry) { return KillProcessesWithEnv(std::vector<std::string>{entry}); }

std::optional<uint64_t> ProcessStartTicks(pid_t pid) {
  char state;
  pid_t pgrp;
  uint64_t start = 0;
  if (pid <= 0 || !ReadProcStat("/proc/" + std::to_string(pid), &state, &pgrp, &start)) return std::nullopt;
  return start;
}

namespace {

// This boot's id: start times count from the boot, so a record of an earlier one (a job dir
// kept across a reboot) must match no process of this one. One word even where unreadable.
const std::string& BootId() {
  static const std::string id = [] {
    std::string text = Trim(ReadFile("/proc/sys/kernel/random/boot_id").value_or(""));
    return text.empty() || text.find(' ') != std::string::npos ? std::string("unknown") : text;
  }();
  return id;
}

struct ProcessRecord {
  pid_t pid = 0;
  uint64_t start_ticks = 0;
  std::string boot_id;
};

// The records in `dir`'s files: "PID START_TICKS BOOT_ID". What does not parse is skipped, as
// are WriteFileAtomic's temporary files.
std::vector<ProcessRecord> ReadRecords(const std::string& dir) {
  std::vector<ProcessRecord> records;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return records;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.empty() || name[0] == '.' || name.find(".tmp.") != std::string::npos) continue;
    std::vector<std::string> fields = Split(Trim(ReadFile(dir + "/" + name).value_or("")), ' ');
    if (fields.size() != 3) continue;
    auto pid = ParseInt(fields[0]);
    auto start = ParseInt(fields[1]);
    if (!pid.ok() || *pid <= 1 || !start.ok() || *start < 0) continue;
    records.push_back({static_cast<pid_t>(*pid), static_cast<uint64_t>(*start), fields[2]});
  }
  ::closedir(d);
  return records;
}

// Whether the recorded process is the one that has its pid now, and alive.
bool StillRuns(const ProcessRecord& r) {
  char state;
  pid_t pgrp;
  uint64_t start = 0;
  return r.boot_id == BootId() && ReadProcStat("/proc/" + std::to_string(r.pid), &state, &pgrp, &start) &&
         start == r.start_ticks && state != 'Z' && state != 'X';
}

}  // namespace

Status RecordProcess(const std::string& path, pid_t pid) {
  std::optional<uint64_t> start = ProcessStartTicks(pid);
  if (!start) return Status::FailedPrecondition("cannot record process " + std::to_string(pid) + ": it is gone");
  return WriteFileAtomic(path, std::to_string(pid) + " " + std::to_string(*start) + " " + BootId() + "\n");
}

std::vector<pid_t> RecordedProcesses(const std::string& dir) {
  std::vector<pid_t> pids;
  for (const ProcessRecord& r : ReadRecords(dir)) {
    if (StillRuns(r)) pids.push_back(r.pid);
  }
  return pids;
}

std::vector<pid_t> FindProcesses(const std::vector<std::string>& entries, const std::string& records_dir) {
  std::vector<pid_t> pids = FindProcessesWithEnv(entries);
  for (pid_t p : RecordedProcesses(records_dir)) pids.push_back(p);
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  pids.erase(std::remove(pids.begin(), pids.end(), ::getpid()), pids.end());
  return pids;
}

int KillProcesses(const std::vector<std::string>& entries, const std::string& records_dir) {
  std::vector<pid_t> by_env = FindProcessesWithEnv(entries);
  int n = 0;
  for (pid_t p : by_env) n += ::kill(p, SIGKILL) == 0;
  for (const ProcessRecord& r : ReadRecords(records_dir)) {
    if (r.pid == ::getpid() || std::find(by_env.begin(), by_env.end(), r.pid) != by_env.end()) continue;
    // The pidfd pins the process that has the pid now: checked, then signalled, it is the same.
    int fd = OpenPidFd(r.pid);
    if (fd < 0) {
      if (errno == ESRCH) continue;
      // A kernel without pidfds (before 5.3): checked, then signalled by pid.
      if (StillRuns(r)) n += ::kill(r.pid, SIGKILL) == 0;
      continue;
    }
    if (StillRuns(r)) n += ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0) == 0;
    ::close(fd);
  }
  return n;
}

std::vector<pid_t> ListPids() {
  std::vector<pid_t> pids;
  DIR* d = ::opendir("/proc");
  if (!d) return pids;
  while (dirent* e = ::readdir(d)) {
    char* end;
    long v = std::strtol(e->d_name, &end, 10);
    if (*end == 0 && v > 0) pids.push_back(static_cast<pid_t>(v));
  }
  ::closedir(d);
  return pids;
}

void TerminateProcessGroup(pid_t pgid, std::chrono::milliseconds grace) {
  if (pgid <= 1) return;
  if (::kill(-pgid, SIGTERM) != 0) return;
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!ProcessGroupAlive(pgid)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(-pgid, SIGKILL);
}

Status RunTool(const std::vector<std::string>& argv, const std::string& cwd) {
  SpawnOptions o;
  o.argv = argv;
  o.env = {{"PATH", "/usr/bin:/bin"}};
  o.cwd = cwd;
  o.stdout_path = "/dev/null";
  LOOM_ASSIGN_OR_RETURN(Subprocess tool, Subprocess::Spawn(o));
  LOOM_ASSIGN_OR_RETURN(ExitInfo info, tool.Wait());
  if (!info.success()) return Status::Internal(Join(argv, " ") + ": " + info.Describe());
  return Status::Ok();
}

std::map<std::string, std::string> CurrentEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string_view::npos) env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  return env;
}

int OpenPidFd(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

}  // namespace loom
