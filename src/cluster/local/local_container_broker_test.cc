#include "cluster/local/local_container_broker.h"
#include "cluster/local/local_am_side.h"
#include "cluster/local/job_processes.h"
#include "cluster/recording_container_events.h"

#include <filesystem>

#include "core/eventually.h"
#include "core/files.h"
#include "core/testing.h"

namespace loom::cluster::local {
namespace {

using namespace std::chrono_literals;

class LocalBrokerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The job id names the marker every process of a container carries, which Stop() looks for
    // machine-wide: ctest runs these tests in parallel processes, so each has its own.
    const std::string pid = std::to_string(::getpid());
    root_ = std::filesystem::temp_directory_path() / ("loom_lb_" + pid) / ("job_lbtest" + pid);
    std::filesystem::create_directories(root_);
    inv_.vcores = 2;
    inv_.memory_mib = 3000;
    inv_.gpus = {0, 1};
  }
  void TearDown() override { std::filesystem::remove_all(root_.parent_path()); }

  LaunchSpec Sh(const std::string& script) {
    LaunchSpec s;
    s.argv = {"/bin/sh", "-c", script};
    s.env = {{"PATH", "/usr/bin:/bin"}};
    return s;
  }

  std::filesystem::path root_;
  HostInventory inv_;
};

TEST_F(LocalBrokerTest, GrantsWhatFitsAndPinsGpus) {
  RecordingContainerEvents ev;
  LocalContainerBroker broker(inv_, history::JobDir(root_.string()));
  ASSERT_OK(broker.Start(&ev));
  ASSERT_OK(broker.Request({{"worker", 0}, {2000, 1, 1}, ""}));
  ASSERT_OK(broker.Request({{"worker", 1}, {2000, 1, 1}, ""}));  // memory: must wait for worker:0
  ASSERT_TRUE(ev.WaitFor([&] { return ev.allocated.size() == 1; }));
  EXPECT_EQ(ev.allocated[0].env.at("CUDA_VISIBLE_DEVICES"), "0");
  ASSERT_OK(broker.Launch(ev.allocated[0], Sh("echo $CUDA_VISIBLE_DEVICES > gpus; exit 3")));
  ASSERT_TRUE(ev.WaitFor([&] { return ev.completed.size() == 1 && ev.allocated.size() == 2; }));
  EXPECT_EQ(ev.completed[0].exit_code, 3);
  EXPECT_EQ(*ReadFile(root_.string() + "/tasks/worker-0/work/gpus"), "0\n");
  // The freed GPU 0 went to worker:1.
  EXPECT_EQ(ev.allocated[1].task.ToString(), "worker:1");
  EXPECT_EQ(ev.allocated[1].env.at("CUDA_VISIBLE_DEVICES"), "0");
  broker.Shutdown(1s);
}

TEST_F(LocalBrokerTest, RequestThatCanNeverFitIsRefused) {
  RecordingContainerEvents ev;
  LocalContainerBroker broker(inv_, history::JobDir(root_.string()));
  ASSERT_OK(broker.Start(&ev));
  EXPECT_STATUS(broker.Request({{"worker", 0}, {100, 1, 3}, ""}), kResourceExhausted, ::testing::HasSubstr("3 GPUs"));
}

TEST_F(LocalBrokerTest, StopEscalatesAndLeavesNoProcess) {
  RecordingContainerEvents ev;
  LocalContainerBroker broker(inv_, history::JobDir(root_.string()));
  ASSERT_OK(broker.Start(&ev));
  ASSERT_OK(broker.Request({{"ps", 0}, {100, 1, 0}, ""}));
  ASSERT_TRUE(ev.WaitFor([&] { return ev.allocated.size() == 1; }));
  // Ignores SIGTERM and leaves a grandchild that escapes into its own session.
  ASSERT_OK(broker.Launch(ev.allocated[0], Sh("trap '' TERM; setsid sleep 300 & sleep 300")));
  std::string marker = LocalContainerBroker::MarkerFor(ev.allocated[0].id);
  // sh and two sleeps, once sh has forked both (a fixed 200 ms wait was too short under load).
  EXPECT_TRUE(loom::testing::Eventually([&] { return FindProcessesWithEnv(marker).size() == 3u; }))
      << FindProcessesWithEnv(marker).size();
  auto start = std::chrono::steady_clock::now();
  ASSERT_OK(broker.Stop(ev.allocated[0].id, 200ms));
  ASSERT_TRUE(ev.WaitFor([&] { return ev.completed.size() == 1; }));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_EQ(ev.completed[0].exit_code, 137);
  // The escaped grandchild is killed too, but reaped by whoever inherited it: not at once.
  EXPECT_TRUE(loom::testing::Eventually([&] { return FindProcessesWithEnv(marker).empty(); }))
      << FindProcessesWithEnv(marker).size();
}

// The executor's secret comes through a pipe that only it holds, never as a file's path: a
// task's user code shares the machine and the Unix user with the job dir's secret file.
TEST_F(LocalBrokerTest, TheExecutorGetsItsSecretThroughAPipeNotAFile) {
  RecordingContainerEvents ev;
  const std::string secret(64, 'e');
  LocalContainerBroker broker(inv_, history::JobDir(root_.string()), false, -1, secret);
  ASSERT_OK(broker.Start(&ev));
  ASSERT_OK(broker.Request({{"worker", 0}, {100, 1, 0}, ""}));
  ASSERT_TRUE(ev.WaitFor([&] { return ev.allocated.size() == 1; }));
  LaunchSpec spec = Sh("cat <&$LOOM_SECRET_FD > secret; echo ${LOOM_SECRET_FILE-unset} > seen");
  spec.env["LOOM_SECRET_FILE"] = root_.string() + "/secret";  // as the AM's wiring names it
  ASSERT_OK(broker.Launch(ev.allocated[0], spec));
  ASSERT_TRUE(ev.WaitFor([&] { return ev.completed.size() == 1; }));
  EXPECT_EQ(ev.completed[0].exit_code, 0);
  const std::string work = root_.string() + "/tasks/worker-0/work";
  EXPECT_EQ(*ReadFile(work + "/secret"), secret + "\n");
  EXPECT_EQ(*ReadFile(work + "/seen"), "unset\n");
  broker.Shutdown(1s);
}

// Each executor is recorded in the job dir while it runs, which is how a user who is not root
// finds it (job_processes.h), and no longer once it is reaped.
TEST_F(LocalBrokerTest, RecordsEachExecutorUntilItIsReaped) {
  RecordingContainerEvents ev;
  const history::JobDir dir(root_.string());
  LocalContainerBroker broker(inv_, dir);
  ASSERT_OK(broker.Start(&ev));
  ASSERT_OK(broker.Request({{"worker", 0}, {100, 1, 0}, ""}));
  ASSERT_TRUE(ev.WaitFor([&] { return ev.allocated.size() == 1; }));
  const std::string id = ev.allocated[0].id;
  ASSERT_OK(broker.Launch(ev.allocated[0], Sh("sleep 300")));
  ASSERT_TRUE(PathExists(dir.executor(id)));
  std::vector<pid_t> recorded = RecordedProcesses(dir.executors_dir());
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_THAT(FindProcessesWithEnv(LocalContainerBroker::MarkerFor(id)), ::testing::Contains(recorded[0]));
  EXPECT_THAT(JobProcesses(dir), ::testing::Contains(recorded[0]));
  ASSERT_OK(broker.Stop(id, 200ms));
  ASSERT_TRUE(ev.WaitFor([&] { return ev.completed.size() == 1; }));
  EXPECT_FALSE(PathExists(dir.executor(id)));
  EXPECT_TRUE(JobProcesses(dir).empty());
  broker.Shutdown(1s);
  EXPECT_FALSE(PathExists(dir.executors_dir()));
}

// The local backend's environment contract: what a YARN container gets from its NodeManager,
// never the rest of the submitter's environment.
TEST(LocalContainerEnv, IsTheDocumentedBaseSetAndTheForwardedCredentials) {
  std::map<std::string, std::string> submitter = {
      {"PATH", "/usr/bin:/bin"}, {"LANG", "C.UTF-8"}, {"LC_ALL", "C"}, {"TZ", "UTC"},
      {"USER", "kim"}, {"LOGNAME", "kim"}, {"HOME", "/home/kim"},
      {"LOOM_TEST_CRASH_EXECUTOR_MS", "worker:1=300"}, {"MLFLOW_TRACKING_TOKEN", "tok"},
      {"MLFLOW_TRACKING_URI", "http://t"},  // forwarded by `loom submit` in loom.execution.envs
      {"LOOM_HOME", "/home/kim/.loom"}, {"LOOM_SECRET_FILE", "/home/kim/.loom/jobs/j/secret"},
      {"LOOM_JOB_ID", "j"}, {"SSH_AUTH_SOCK", "/tmp/ssh"}, {"PYTHONPATH", "/src"}, {"LD_PRELOAD", "x.so"}};
  std::map<std::string, std::string> expected = {
      {"PATH", "/usr/bin:/bin"}, {"LANG", "C.UTF-8"}, {"LC_ALL", "C"}, {"TZ", "UTC"},
      {"USER", "kim"}, {"LOGNAME", "kim"}, {"HOME", "/home/kim"},
      {"LOOM_TEST_CRASH_EXECUTOR_MS", "worker:1=300"}, {"MLFLOW_TRACKING_TOKEN", "tok"}};
  EXPECT_EQ(LocalContainerEnv(submitter), expected);
  // Who the user is comes from the password database when the submitter's lacks it.
  auto bare = LocalContainerEnv({{"PATH", "/bin"}});
  EXPECT_EQ(bare.count("USER") + bare.count("LOGNAME") + bare.count("HOME"), 3u);
}

}  // namespace
}  // namespace loom::cluster::local
