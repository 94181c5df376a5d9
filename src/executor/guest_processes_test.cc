#include "executor/guest_processes.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/files.h"
#include "core/testing.h"
#include "core/eventually.h"

using ::loom::testing::Eventually;

namespace loom::executor {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

class GuestProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("guest_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    marker_ = "LOOM_TEST_GUEST_MARK=" + std::to_string(::getpid());
  }
  void TearDown() override {
    KillProcessesWithEnv(marker_);
    std::filesystem::remove_all(dir_);
  }
  GuestProcesses::Options Opts() {
    GuestProcesses::Options o;
    o.env = {{"PATH", "/usr/bin:/bin"}, {"GIVEN", "yes"}};
    o.cwd = dir_.string();
    o.log_path = (dir_ / "mpi-daemon.log").string();
    o.marker = marker_;
    return o;
  }
  // Waits for `pid` as the executor's reaper would, and hands it over.
  static std::optional<std::pair<int64_t, ExitInfo>> Reap(GuestProcesses& g, pid_t pid) {
    int wstatus = 0;
    EXPECT_EQ(::waitpid(pid, &wstatus, 0), pid);
    return g.Reaped(pid, wstatus);
  }
  std::filesystem::path dir_;
  std::string marker_;
};

TEST_F(GuestProcessesTest, RunsThroughTheShellInTheTasksDirWithItsEnvAndLogs) {
  GuestProcesses guests(Opts());
  Result<pid_t> pid = guests.Start(4, "echo \"$GIVEN $LOOM_TEST_GUEST_MARK $(pwd)\"; echo oops >&2; exit 3");
  ASSERT_OK(pid);
  EXPECT_EQ(::getpgid(*pid), *pid);  // a group of its own
  auto ended = Reap(guests, *pid);
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->first, 4);
  EXPECT_EQ(ended->second.exit_code, 3);
  EXPECT_EQ(guests.running(), 0u);
  std::string log = ReadFile((dir_ / "mpi-daemon.log").string()).value_or("");
  EXPECT_THAT(log, HasSubstr("yes " + std::to_string(::getpid()) + " " + dir_.string()));
  EXPECT_THAT(log, HasSubstr("oops"));
  EXPECT_FALSE(guests.Reaped(*pid, 0).has_value());  // no longer a guest
  EXPECT_FALSE(guests.Reaped(1, 0).has_value());
}

TEST_F(GuestProcessesTest, StopAllEndsWhatTheGuestsStartedInGroupsOfTheirOwn) {
  GuestProcesses guests(Opts());
  // Like an Open MPI daemon: its children (the ranks) lead groups of their own; this one even
  // ignores SIGTERM.
  ASSERT_OK(guests.Start(1, "setsid sh -c 'trap \"\" TERM; while true; do sleep 0.05; done' & sleep 60"));
  ASSERT_OK(guests.Start(2, "sleep 60"));
  EXPECT_STATUS(guests.Start(2, "true"), kAlreadyExists, HasSubstr("guest 2"));
  ASSERT_TRUE(Eventually([&] { return FindProcessesWithEnv(marker_).size() >= 4; }));
  auto start = std::chrono::steady_clock::now();
  guests.StopAll(300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_TRUE(FindProcessesWithEnv(marker_).empty());
  EXPECT_EQ(guests.running(), 0u);
  EXPECT_STATUS(guests.Start(3, "true"), kFailedPrecondition, HasSubstr("ending"));
}

TEST_F(GuestProcessesTest, RssCoversTheGuestsAndWhatTheyStarted) {
  GuestProcesses guests(Opts());
  EXPECT_EQ(guests.RssBytes(), 0);
  // A child in a group of its own holding ~64 MiB, as a rank would.
  ASSERT_OK(guests.Start(1, "setsid /usr/bin/python3 -c 'import time; b = bytearray(64 << 20); time.sleep(60)' & "
                            "sleep 60"));
  EXPECT_TRUE(Eventually([&] { return guests.RssBytes() > (64 << 20); }, 10s)) << guests.RssBytes();
  guests.StopAll(0ms);
  EXPECT_EQ(guests.RssBytes(), 0);
}

TEST_F(GuestProcessesTest, StopAsksOneGuestToEnd) {
  GuestProcesses guests(Opts());
  Result<pid_t> a = guests.Start(1, "exec sleep 60");
  Result<pid_t> b = guests.Start(2, "exec sleep 60");
  ASSERT_OK(a);
  ASSERT_OK(b);
  EXPECT_TRUE(guests.Stop(1));
  EXPECT_FALSE(guests.Stop(7));
  auto ended = Reap(guests, *a);
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->second.signal, SIGTERM);
  EXPECT_EQ(guests.running(), 1u);
}

}  // namespace
}  // namespace loom::executor
