#include "cluster/local/job_processes.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/eventually.h"
#include "core/files.h"
#include "core/testing.h"

namespace loom::cluster::local {
namespace {

// The stand-in executor: this test binary run again with kSleeperEnv set makes itself
// non-dumpable, as `loom executor` does, and waits to be killed. Runs before main().
constexpr char kSleeperEnv[] = "LOOM_TEST_NONDUMPABLE_SLEEPER";
[[maybe_unused]] const bool kRanAsSleeper = [] {
  if (!std::getenv(kSleeperEnv)) return false;
  ::prctl(PR_SET_DUMPABLE, 0);
  for (;;) ::pause();
}();

// nobody:nogroup on Debian; no passwd entry is needed to run as it.
constexpr uid_t kUnprivilegedUid = 65534;
constexpr gid_t kUnprivilegedGid = 65534;
constexpr int kCannotDrop = 77;

// The body of the test, in a child that is not root, in `scratch` (a directory of its own).
// Returns what failed, "" when nothing did.
std::string FindTheExecutorAsAUserWhoIsNotRoot(const std::string& scratch) {
  std::string failures;
  auto fail = [&](const std::string& what) { failures += what + "\n"; };
  const history::JobDir dir(scratch + "/job_jptest" + std::to_string(::getpid()));
  const std::string marker = "LOOM_JOB_ID=" + dir.job_id();
  if (Status s = MakeDirs(dir.executors_dir()); !s.ok()) return s.ToString();

  SpawnOptions o;
  o.argv = {"/proc/self/exe"};
  o.env = {{kSleeperEnv, "1"}, {"LOOM_JOB_ID", dir.job_id()}};
  auto executor = Subprocess::Spawn(o);
  if (!executor.ok()) return executor.status().ToString();
  const pid_t pid = executor->pid();
  // Non-dumpable: from then on its environ is root's alone to read.
  bool hidden = loom::testing::Eventually([&] {
    int fd = ::open(("/proc/" + std::to_string(pid) + "/environ").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
    return fd < 0 && errno == EACCES;
  });
  if (!hidden) fail("the stand-in executor never became non-dumpable");
  if (Status s = RecordProcess(dir.executor("container_1"), pid); !s.ok()) fail(s.ToString());

  auto by_env = FindProcessesWithEnv(marker);
  if (std::find(by_env.begin(), by_env.end(), pid) != by_env.end()) {
    fail("premise: uid " + std::to_string(::geteuid()) + " reads a non-dumpable process's environ");
  }
  if (JobProcesses(dir) != std::vector<pid_t>{pid}) fail("JobProcesses does not find the recorded executor alone");
  if (KillJobProcesses(dir) != 1) fail("KillJobProcesses did not signal the recorded executor");
  auto info = executor->Wait();
  if (!info.ok() || info->signal != SIGKILL) fail("the executor was not SIGKILLed");
  if (!JobProcesses(dir).empty()) fail("JobProcesses finds an executor that is gone");
  return failures;
}

// A local executor makes itself non-dumpable, so a user who is not root cannot read its
// environ and no marker scan of theirs finds it: its record does. CI runs as root, which reads
// every environ, so the test runs in a child that drops to an unprivileged uid.
TEST(JobProcesses, FindANonDumpableExecutorAsAUserWhoIsNotRoot) {
  // Made here and handed over: /tmp may be writable by root alone.
  std::string scratch = std::filesystem::temp_directory_path() / "loom_jp_XXXXXX";
  ASSERT_NE(::mkdtemp(scratch.data()), nullptr) << std::strerror(errno);
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(scratch.c_str(), kUnprivilegedUid, kUnprivilegedGid), 0) << std::strerror(errno);
  }
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    std::string out;
    int code = 0;
    const gid_t g = kUnprivilegedGid;
    const uid_t u = kUnprivilegedUid;
    if (::geteuid() == 0 &&
        (::setgroups(0, nullptr) != 0 || ::setresgid(g, g, g) != 0 || ::setresuid(u, u, u) != 0)) {
      out = "running as root and cannot drop to uid " + std::to_string(kUnprivilegedUid) + ": " + std::strerror(errno);
      code = kCannotDrop;
    } else {
      out = FindTheExecutorAsAUserWhoIsNotRoot(scratch);
      code = out.empty() ? 0 : 1;
    }
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(code);  // not exit(): gtest's handlers belong to the parent
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  std::filesystem::remove_all(scratch);
  ASSERT_TRUE(WIFEXITED(wstatus));
  if (WEXITSTATUS(wstatus) == kCannotDrop) GTEST_SKIP() << out;
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << out;
}

}  // namespace
}  // namespace loom::cluster::local
