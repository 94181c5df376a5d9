// The MPI framework's part of the job spec (loom.application.framework=mpi): the launcher Loom
// adds, the roles, the launcher's command line, and what is refused.

#include "core/mpi_command.h"

#include <filesystem>
#include <fstream>

#include "core/job_spec.h"
#include "core/testing.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

TEST(MpiCommand, AddsMpirunUnlessTheCommandRunsIt) {
  EXPECT_EQ(MpiLauncherCommand("'/usr/bin/python3' 'ar.py' --n 3", 6),
            "mpirun -np 6 /bin/sh -c 'cd \"${LOOM_MPI_WORKDIR:-.}\" && exec \"$0\" \"$@\"' '/usr/bin/python3' "
            "'ar.py' --n 3");
  for (const char* own : {"mpirun -np 4 python3 x.py", "  mpiexec python3 x.py", "/opt/ompi/bin/mpirun x",
                          "'/usr/bin/orterun' x"}) {
    EXPECT_TRUE(RunsMpirun(own)) << own;
    EXPECT_EQ(MpiLauncherCommand(own, 6), own);
  }
  for (const char* other : {"python3 mpirun.py", "mpirun2 x", "./run.sh", ""}) EXPECT_FALSE(RunsMpirun(other)) << other;
}

class MpiJobSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("loom_mpi_spec_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / "src");
    std::ofstream(dir_ / "src" / "ar.py") << "print('hi')\n";
    conf_.Set("loom.application.src-dir", (dir_ / "src").string(), "--src_dir");
    conf_.Set("loom.application.executes", "ar.py", "--executes");
    conf_.Set("loom.application.python-binary-path", "/usr/bin/python3", "--python_binary_path");
    conf_.Set("tony.application.framework", "mpi", "--conf");
    conf_.Set("tony.worker.instances", "3", "--conf");
    conf_.Set("tony.worker.processes", "2", "--conf");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  Result<JobSpec> Build() { return BuildJobSpec(conf_, dir_.string()); }
  // What the launcher runs in the spec built from conf_; "" (and a failure) if the build fails.
  std::string LauncherCommand() {
    Result<JobSpec> spec = Build();
    EXPECT_OK(spec);
    return spec.ok() ? spec->FindType("launcher")->command : "";
  }
  std::filesystem::path dir_;
  config::Config conf_;
};

TEST_F(MpiJobSpecTest, LoomAddsALauncherWhoseResultIsTheJobs) {
  auto spec = Build();
  ASSERT_OK(spec);
  EXPECT_EQ(spec->framework, Framework::kMpi);
  EXPECT_EQ(FrameworkName(spec->framework), "mpi");
  const TaskTypeSpec* launcher = spec->FindType("launcher");
  ASSERT_NE(launcher, nullptr);
  EXPECT_EQ(launcher->instances, 1);
  EXPECT_EQ(launcher->role, TaskRole::kTracked);
  EXPECT_EQ(launcher->resources.memory_mib, 512);  // small: it runs mpirun only
  EXPECT_EQ(launcher->resources.gpus, 0);
  EXPECT_EQ(launcher->command, MpiLauncherCommand("/usr/bin/python3 ar.py", 6));
  // The others hold the ranks: untracked, up until the launcher ends.
  EXPECT_EQ(spec->FindType("worker")->role, TaskRole::kUntracked);
  EXPECT_EQ(spec->TrackedTasks(), 1);
  EXPECT_EQ(spec->TotalTasks(), 4);
}

TEST_F(MpiJobSpecTest, TheLaunchersOwnKeysAndCommandWin) {
  conf_.Set("tony.launcher.memory", "1g", "--conf");
  conf_.Set("tony.launcher.command", "bash run_mpi.sh", "--conf");
  conf_.Set("tony.server.instances", "1", "--conf");
  conf_.Set("tony.application.custom-types", "server", "--conf");
  auto spec = Build();
  ASSERT_OK(spec);
  EXPECT_EQ(spec->FindType("launcher")->resources.memory_mib, 1024);
  EXPECT_EQ(spec->FindType("launcher")->command, "bash run_mpi.sh");  // it calls mpirun itself
  EXPECT_EQ(spec->FindType("server")->role, TaskRole::kUntracked);

  conf_.Set("tony.launcher.command", "", "--conf");
  conf_.Set("loom.application.executes", "ar.py", "--executes");
  conf_.Set("loom.application.task-params", "--x 1", "--task_params");
  conf_.Set("loom.containers.command", "mpirun --bind-to none python3 ar.py", "--conf");
  EXPECT_EQ(LauncherCommand(), "mpirun --bind-to none python3 ar.py");
}

TEST_F(MpiJobSpecTest, TasksThatHoldRanksNeedNoCommand) {
  conf_.Set("loom.application.executes", "", "--executes");
  conf_.Set("tony.launcher.command", "mpirun python3 ar.py", "--conf");
  EXPECT_EQ(LauncherCommand(), "mpirun python3 ar.py");
}

TEST_F(MpiJobSpecTest, RefusesWhatAnMpiJobCannotRun) {
  auto refused = [&](const std::string& key, const std::string& value, const std::string& why) {
    config::Config saved = conf_;
    conf_.Set(key, value, "--conf");
    SCOPED_TRACE(key + "=" + value);
    EXPECT_STATUS(Build(), kInvalidArgument, HasSubstr(why));
    conf_ = saved;
  };
  refused("tony.launcher.instances", "2", "tony.application.framework=mpi runs exactly 1 launcher (it runs mpirun), "
                                          "but tony.launcher.instances=2");
  refused("tony.launcher.instances", "0", "runs mpirun in a 'launcher' task, but tony.launcher.instances=0");
  refused("tony.worker.instances", "0", "needs tasks to hold the ranks: add a type, e.g. tony.worker.instances=2");
  refused("tony.worker.restart-policy", "on-failure",
          "tony.worker.restart-policy=on-failure: under tony.application.framework=mpi a task that holds ranks "
          "cannot be restarted alone");
  refused("tony.launcher.processes", "2", "tony.launcher.processes=2: the launcher runs one mpirun");
  refused("tony.application.sidecar.jobtypes", "launcher", "the launcher's result is the job's");
}

}  // namespace
}  // namespace loom
