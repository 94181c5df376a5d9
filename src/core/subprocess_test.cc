#include "core/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include "core/eventually.h"
#include "core/files.h"
#include "core/strings.h"
#include "core/testing.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

SpawnOptions Sh(const std::string& script) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.env = {{"PATH", "/usr/bin:/bin"}};
  return o;
}

TEST(Subprocess, ExitCodeAndSignal) {
  auto a = Subprocess::Spawn(Sh("exit 3"));
  ASSERT_OK(a);
  EXPECT_EQ(a->Wait()->exit_code, 3);
  auto b = Subprocess::Spawn(Sh("kill -9 $$"));
  ASSERT_OK(b);
  auto info = b->Wait();
  EXPECT_EQ(info->signal, SIGKILL);
  EXPECT_EQ(info->ShellCode(), 137);
  EXPECT_EQ(info->Describe(), "killed by signal 9 (SIGKILL)");
}

TEST(Subprocess, ExecFailureIsAStatus) {
  SpawnOptions o = Sh("");
  o.argv = {"/nonexistent/program"};
  EXPECT_STATUS(Subprocess::Spawn(o), kNotFound, HasSubstr("exec /nonexistent/program"));
}

TEST(Subprocess, DestructorKillsTheWholeGroup) {
  std::string marker = std::filesystem::temp_directory_path() / ("loom_sp_" + std::to_string(getpid()));
  pid_t pgid;
  {
    auto child = Subprocess::Spawn(Sh("sleep 100 & echo $! > " + marker + "; wait"));
    ASSERT_OK(child);
    pgid = child->pgid();
    // Non-empty: echo writes the pid and its newline at once, but after the shell made the file.
    ASSERT_TRUE(testing::Eventually([&] {
      Result<std::string> pid = ReadFile(marker);
      return pid.ok() && !Trim(*pid).empty();
    }));
  }
  auto grandchild = std::stoi(*ReadFile(marker));
  // Killed, and reaped by whoever inherited it (a zombie still counts as alive): not at once
  // under load, so no fixed wait.
  EXPECT_TRUE(testing::Eventually([&] { return !ProcessGroupAlive(pgid); }));
  EXPECT_TRUE(testing::Eventually([&] { return !ProcessAlive(grandchild); }));  // sleep was in the group
  std::filesystem::remove(marker);
}

TEST(Subprocess, EnvironmentAndRedirects) {
  std::string out = std::filesystem::temp_directory_path() / ("loom_sp_out_" + std::to_string(getpid()));
  SpawnOptions o = Sh("echo \"$GREETING\"; echo err >&2");
  o.env["GREETING"] = "hello";
  o.stdout_path = out;
  o.stderr_path = out;
  auto child = Subprocess::Spawn(o);
  ASSERT_OK(child);
  EXPECT_TRUE(child->Wait()->success());
  EXPECT_EQ(*ReadFile(out), "hello\nerr\n");
  std::filesystem::remove(out);
}

TEST(Subprocess, OnlyTheDescriptorsAskedForReachTheChild) {
  // As a library's thread leaves them: opened without O_CLOEXEC.
  int leaked = ::open("/dev/null", O_RDONLY);
  int passed = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(leaked, 3);
  std::string out = std::filesystem::temp_directory_path() / ("loom_sp_fds_" + std::to_string(getpid()));
  SpawnOptions o = Sh("for fd in " + std::to_string(leaked) + " " + std::to_string(passed) +
                      "; do if [ -e /proc/self/fd/$fd ]; then echo open $fd; else echo closed $fd; fi; done");
  o.inherit_fds = {passed};
  o.stdout_path = out;
  auto child = Subprocess::Spawn(o);
  ASSERT_OK(child);
  EXPECT_TRUE(child->Wait()->success());
  EXPECT_EQ(*ReadFile(out), "closed " + std::to_string(leaked) + "\nopen " + std::to_string(passed) + "\n");
  EXPECT_EQ(::fcntl(leaked, F_GETFD) & FD_CLOEXEC, 0);  // the parent's own is untouched
  ::close(leaked);
  ::close(passed);
  std::filesystem::remove(out);
}

TEST(TerminateProcessGroup, EscalatesToSigkill) {
  // The shell says when it ignores SIGTERM: a fixed 50 ms wait let SIGTERM in first under load.
  std::string armed = std::filesystem::temp_directory_path() / ("loom_sp_armed_" + std::to_string(getpid()));
  auto child = Subprocess::Spawn(Sh("trap '' TERM; : > " + armed + "; sleep 100"));
  ASSERT_OK(child);
  ASSERT_TRUE(testing::Eventually([&] { return PathExists(armed); }));
  std::filesystem::remove(armed);
  auto start = std::chrono::steady_clock::now();
  TerminateProcessGroup(child->pgid(), std::chrono::milliseconds(200));
  auto info = child->Wait();
  EXPECT_EQ(info->signal, SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

// A scratch directory of this test process's own.
std::string RecordsDir(const std::string& name) {
  std::string dir = std::filesystem::temp_directory_path() / ("loom_sp_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(RecordedProcesses, FindTheProcessUntilItIsGone) {
  const std::string dir = RecordsDir("records");
  auto child = Subprocess::Spawn(Sh("sleep 300"));
  ASSERT_OK(child);
  ASSERT_OK(RecordProcess(dir + "/sleeper", child->pid()));
  EXPECT_THAT(RecordedProcesses(dir), ::testing::ElementsAre(child->pid()));
  // Found with what carries no marker, and once only when it carries one too.
  EXPECT_THAT(FindProcesses({"LOOM_NO_SUCH_MARKER=1"}, dir), ::testing::ElementsAre(child->pid()));
  EXPECT_EQ(KillProcesses({"LOOM_NO_SUCH_MARKER=1"}, dir), 1);
  EXPECT_EQ(child->Wait()->signal, SIGKILL);
  EXPECT_TRUE(RecordedProcesses(dir).empty());
  EXPECT_TRUE(RecordedProcesses(dir + "/missing").empty());
  std::filesystem::remove_all(dir);
}

// A pid is reused once its process is gone: a record of it must not name the process that
// has it now, whose start time (or boot) differs. Neither counted nor killed.
TEST(RecordedProcesses, AReusedPidIsNotTheRecordedProcess) {
  const std::string dir = RecordsDir("reuse");
  auto child = Subprocess::Spawn(Sh("sleep 300"));
  ASSERT_OK(child);
  ASSERT_OK(RecordProcess(dir + "/sleeper", child->pid()));
  auto fields = Split(Trim(*ReadFile(dir + "/sleeper")), ' ');
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(fields[0], std::to_string(child->pid()));
  EXPECT_EQ(fields[1], std::to_string(*ProcessStartTicks(child->pid())));
  // The recorded process started a tick earlier than the one that has its pid now.
  const std::string pid = std::to_string(child->pid());
  const std::string earlier = std::to_string(*ProcessStartTicks(child->pid()) - 1);
  ASSERT_OK(WriteFileAtomic(dir + "/sleeper", pid + " " + earlier + " " + fields[2] + "\n"));
  // The same start time, in another boot.
  ASSERT_OK(WriteFileAtomic(dir + "/other_boot", pid + " " + fields[1] + " 00000000-0000-0000-0000-000000000000\n"));
  ASSERT_OK(WriteFileAtomic(dir + "/garbage", pid + "\n"));
  EXPECT_TRUE(RecordedProcesses(dir).empty());
  EXPECT_TRUE(FindProcesses({"LOOM_NO_SUCH_MARKER=1"}, dir).empty());
  EXPECT_EQ(KillProcesses({"LOOM_NO_SUCH_MARKER=1"}, dir), 0);
  EXPECT_TRUE(ProcessAlive(child->pid()));
  EXPECT_STATUS(RecordProcess(dir + "/none", 0), kFailedPrecondition, HasSubstr("gone"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace loom
