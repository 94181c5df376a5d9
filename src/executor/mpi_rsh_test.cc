#include "executor/mpi_rsh.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "control/control.pb.h"
#include "core/files.h"
#include "core/testing.h"
#include "executor/unix_socket.h"

namespace loom::executor {
namespace {

using ::testing::HasSubstr;

TEST(MpiRsh, ParsesOpenMpisCallWithoutDaemonize) {
  // As Open MPI 4.1 calls its agent: the host, then the daemon's words for a remote shell.
  auto cmd = ParseRshArgs({"worker-1.loom.invalid", " orted", "--daemonize", "-mca", "ess", "\"env\"", "-mca",
                           "orte_hnp_uri", "\"7.0;tcp://10.0.0.1:4000\""});
  ASSERT_OK(cmd);
  EXPECT_EQ(cmd->host, "worker-1.loom.invalid");
  EXPECT_EQ(cmd->command, "orted -mca ess \"env\" -mca orte_hnp_uri \"7.0;tcp://10.0.0.1:4000\"");
}

TEST(MpiRsh, SkipsSshOptions) {
  auto cmd = ParseRshArgs({"-x", "-o", "StrictHostKeyChecking=no", "-p", "22", "-T", "h", "echo", "hi"});
  ASSERT_OK(cmd);
  EXPECT_EQ(cmd->host, "h");
  EXPECT_EQ(cmd->command, "echo hi");
  auto dashdash = ParseRshArgs({"--", "-odd-host", "true"});
  ASSERT_OK(dashdash);
  EXPECT_EQ(dashdash->host, "-odd-host");
}

TEST(MpiRsh, NeedsAHostAndACommand) {
  EXPECT_STATUS(ParseRshArgs({}), kInvalidArgument, HasSubstr("usage: loom mpi-rsh HOST COMMAND"));
  EXPECT_STATUS(ParseRshArgs({"-o", "X=y"}), kInvalidArgument, HasSubstr("usage"));
  EXPECT_STATUS(ParseRshArgs({"worker-0.loom.invalid"}), kInvalidArgument, HasSubstr("not logins"));
  EXPECT_STATUS(ParseRshArgs({"worker-0.loom.invalid", "--daemonize"}), kInvalidArgument, HasSubstr("not logins"));
}

// Runs the agent against a stand-in for the launcher's executor that answers each request with
// `reply`; returns the agent's exit code, its stderr, and the request the stand-in saw.
struct AgentRun {
  int code = -1;
  std::string err;
  control::AgentRequest seen;
};
AgentRun RunAgainst(const std::string& socket_path, const control::AgentReply& reply,
                    const std::vector<std::string>& args) {
  AgentRun run;
  Result<int> listener = ListenUnix(socket_path);
  EXPECT_OK(listener);
  if (!listener.ok()) return run;
  std::thread executor([&] {
    int fd = ::accept(*listener, nullptr, nullptr);
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(PeerIsSameUser(fd));
    Result<std::string> frame = ReadFrame(fd);
    ASSERT_OK(frame);
    EXPECT_TRUE(run.seen.ParseFromString(*frame));
    EXPECT_OK(WriteFrame(fd, reply.SerializeAsString()));
    ::close(fd);
  });
  std::FILE* err = std::tmpfile();
  run.code = RunMpiRsh(args, {{"LOOM_EXEC_SOCKET", socket_path}}, err);
  executor.join();
  ::close(*listener);
  std::rewind(err);
  char buf[4096];
  size_t n = std::fread(buf, 1, sizeof(buf), err);
  run.err.assign(buf, n);
  std::fclose(err);
  return run;
}

class MpiRshAgent : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("mpi_rsh_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(MpiRshAgent, ExitsAsTheRemoteCommandDid) {
  control::AgentReply reply;
  reply.set_exit_code(7);
  AgentRun run = RunAgainst((dir_ / "a.sock").string(), reply, {"worker-2.loom.invalid", "orted", "--daemonize", "x"});
  EXPECT_EQ(run.code, 7);
  EXPECT_EQ(run.err, "");
  EXPECT_EQ(run.seen.host(), "worker-2.loom.invalid");
  EXPECT_EQ(run.seen.command(), "orted x");

  control::AgentReply killed;
  killed.set_signal(9);
  EXPECT_EQ(RunAgainst((dir_ / "b.sock").string(), killed, {"h", "orted"}).code, 128 + 9);
}

TEST_F(MpiRshAgent, ACommandThatDidNotRunIs255WithTheReason) {
  control::AgentReply reply;
  reply.set_error("unknown host 'nope': the hosts of this MPI job are worker-0.loom.invalid");
  AgentRun run = RunAgainst((dir_ / "c.sock").string(), reply, {"nope", "orted"});
  EXPECT_EQ(run.code, kRshFailed);
  EXPECT_THAT(run.err, HasSubstr("loom mpi-rsh: unknown host 'nope'"));
}

TEST_F(MpiRshAgent, ReachesASocketWhosePathIsLongerThanSockaddrHolds) {
  std::filesystem::path deep = dir_;
  while (deep.string().size() < 150) deep /= "container_e01_1700000000000_0001_01_000002";
  std::filesystem::create_directories(deep);
  control::AgentReply reply;
  AgentRun run = RunAgainst((deep / "exec.sock").string(), reply, {"h", "true"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.seen.command(), "true");
  // Only its owner may connect.
  struct stat st {};
  ASSERT_EQ(::stat((deep / "exec.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(MpiRshAgent, OutsideALauncherItSaysWhatItIs) {
  std::FILE* err = std::tmpfile();
  EXPECT_EQ(RunMpiRsh({"worker-0.loom.invalid", "true"}, {}, err), kRshFailed);
  std::rewind(err);
  char buf[1024];
  std::string text(buf, std::fread(buf, 1, sizeof(buf), err));
  std::fclose(err);
  EXPECT_THAT(text, HasSubstr("LOOM_EXEC_SOCKET is not set"));
  EXPECT_THAT(text, HasSubstr("loom.application.framework=mpi"));

  err = std::tmpfile();
  EXPECT_EQ(RunMpiRsh({"h", "true"}, {{"LOOM_EXEC_SOCKET", (dir_ / "none.sock").string()}}, err), kRshFailed);
  std::rewind(err);
  text.assign(buf, std::fread(buf, 1, sizeof(buf), err));
  std::fclose(err);
  EXPECT_THAT(text, HasSubstr("cannot reach the launcher's executor"));
}

}  // namespace
}  // namespace loom::executor
