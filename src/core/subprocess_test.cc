#include "core/subprocess.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "core/eventually.h"
#include "core/files.h"
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
    for (int i = 0; i < 200 && !PathExists(marker); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
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

}  // namespace
}  // namespace loom
