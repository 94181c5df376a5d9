#include "executor/mpi_task.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <grpcpp/grpcpp.h>

#include "core/files.h"
#include "core/testing.h"
#include "executor/unix_socket.h"

namespace loom::executor {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

class MpiTaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mpi_task_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "work");
    fs::create_directories(dir_ / "logs");
    // No AM answers here: a rank-holding task's Guests stream keeps failing and trying again.
    auto am = control::ControlClient::Connect("127.0.0.1:1", "secret");
    ASSERT_OK(am);
    am_ = std::move(*am);
  }
  void TearDown() override { fs::remove_all(dir_); }
  MpiTask::Options Opts(const TaskId& task) {
    return {am_.get(), task, {{"PATH", "/usr/bin:/bin"}, {"LOOM_SECRET_FILE", "/s"}},
            (dir_ / "work").string() + "/", (dir_ / "logs").string()};
  }
  fs::path dir_;
  std::unique_ptr<control::ControlClient> am_;
};

TEST_F(MpiTaskTest, OtherTasksAreLeftAlone) {
  MpiTask task(Opts({"worker", 0}));
  control::ClusterSpecResponse spec;
  spec.set_command("python3 train.py");
  ASSERT_OK(task.Prepare(&spec));
  EXPECT_EQ(spec.command(), "python3 train.py");
  EXPECT_TRUE(spec.env().empty());
  EXPECT_FALSE(task.OnReaped(12345, 0));
  EXPECT_EQ(task.GuestRssBytes(), 0);
}

TEST_F(MpiTaskTest, TheLauncherGetsAPrivateHostfileAndSocketAndMpirunsSettings) {
  MpiTask task(Opts({"launcher", 0}));
  control::ClusterSpecResponse spec;
  spec.mutable_mpi()->set_hostfile("worker-0.loom.invalid slots=2\nworker-1.loom.invalid slots=2\n");
  ASSERT_OK(task.Prepare(&spec));
  const auto& env = spec.env();
  std::string priv = (dir_ / "work" / ".loom-mpi").string();
  EXPECT_EQ(env.at("OMPI_MCA_orte_default_hostfile"), priv + "/hostfile");
  EXPECT_EQ(env.at("LOOM_EXEC_SOCKET"), priv + "/exec.sock");
  EXPECT_EQ(env.at("OMPI_MCA_plm_rsh_agent"), MpiTask::SelfExe() + " mpi-rsh");
  EXPECT_EQ(env.count("OMPI_ALLOW_RUN_AS_ROOT"), ::getuid() == 0 ? 1u : 0u);
  EXPECT_EQ(ReadFile(priv + "/hostfile").value_or(""), spec.mpi().hostfile());
  struct stat st {};
  ASSERT_EQ(::stat(priv.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);  // the socket runs commands in other tasks: owner only
  Result<int> fd = ConnectUnix(priv + "/exec.sock");
  ASSERT_OK(fd);
  ::close(*fd);
  task.Stop(0ms);
  EXPECT_FALSE(PathExists(priv));
}

TEST_F(MpiTaskTest, ARankHostIdlesInAScratchDirOfItsOwnAndSweepsThoseOfKilledExecutors) {
  // A scratch dir left by an executor that is gone (a reaped child's pid), and one of a live one.
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);
  std::string stale = "/tmp/loom-mpi-" + std::to_string(gone) + "-worker-9-test";
  std::string live = "/tmp/loom-mpi-" + std::to_string(::getpid()) + "-worker-8-test";
  fs::create_directories(stale + "/inner");
  fs::create_directories(live);

  MpiTask task(Opts({"worker", 1}));
  control::ClusterSpecResponse spec;
  spec.mutable_mpi()->set_hosts_ranks(true);
  ASSERT_OK(task.Prepare(&spec));
  EXPECT_EQ(spec.command(), MpiTask::SelfExe() + " mpi-idle");
  EXPECT_FALSE(PathExists(stale));
  EXPECT_TRUE(PathExists(live));
  fs::remove_all(live);
  // Its own: "loom-mpi-<pid>-worker-1-XXXXXX", removed when the task stops.
  auto own = [] {
    int n = 0;
    std::error_code ec;
    for (const std::string parent : {"/dev/shm", "/tmp"}) {
      for (const auto& e : fs::directory_iterator(parent, ec)) {
        n += e.path().filename().string().starts_with("loom-mpi-" + std::to_string(::getpid()) + "-worker-1-");
      }
    }
    return n;
  };
  EXPECT_EQ(own(), 1);
  task.Stop(0ms);
  EXPECT_EQ(own(), 0);
}

}  // namespace
}  // namespace loom::executor
