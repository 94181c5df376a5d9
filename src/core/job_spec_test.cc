#include "core/job_spec.h"

#include <filesystem>
#include <fstream>

#include "core/testing.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

class JobSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("loom_job_spec_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / "src");
    std::ofstream(dir_ / "src" / "train.py") << "print('hi')\n";
    conf_.Set("loom.application.src-dir", (dir_ / "src").string(), "--src_dir");
    conf_.Set("loom.application.executes", "train.py", "--executes");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  config::Config conf_;
};

TEST_F(JobSpecTest, TypesInRankOrderWithRoles) {
  conf_.Set("tony.ps.instances", "1", "f");
  conf_.Set("tony.worker.instances", "2", "f");
  conf_.Set("tony.evaluator.instances", "1", "f");
  conf_.Set("tony.chief.instances", "1", "f");
  conf_.Set("tony.tensorboard.instances", "1", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  std::vector<std::string> names;
  for (const auto& t : spec->types) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"chief", "worker", "evaluator", "ps", "tensorboard"}));
  EXPECT_EQ(spec->FindType("ps")->role, TaskRole::kUntracked);
  EXPECT_TRUE(spec->FindType("ps")->stop_on_failure);
  EXPECT_EQ(spec->FindType("tensorboard")->role, TaskRole::kSidecar);
  EXPECT_EQ(spec->TrackedTasks(), 4);
  EXPECT_EQ(spec->TotalTasks(), 6);
  EXPECT_EQ(spec->Chief()->ToString(), "chief:0");
}

TEST_F(JobSpecTest, CommandUsesPythonBinaryAndParams) {
  conf_.Set("loom.worker.instances", "1", "f");
  conf_.Set("loom.application.python-binary-path", "/usr/bin/python3", "f");
  conf_.Set("loom.application.task-params", "--epochs 3", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->FindType("worker")->command, "/usr/bin/python3 train.py --epochs 3");
}

TEST_F(JobSpecTest, ExecutesMayStartWithTheSrcDir) {
  conf_.Set("loom.worker.instances", "1", "f");
  conf_.Set("loom.application.src-dir", "src", "--src_dir");
  conf_.Set("loom.application.executes", "src/train.py", "--executes");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->FindType("worker")->command, "python3 train.py");
}

TEST_F(JobSpecTest, PerTypeCommandWins) {
  conf_.Set("loom.worker.instances", "1", "f");
  conf_.Set("loom.ps.instances", "1", "f");
  conf_.Set("loom.ps.command", "sleep 100", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->FindType("ps")->command, "sleep 100");
}

TEST(VenvFormat, ByExtension) {
  EXPECT_EQ(VenvFormatOf("/x/venv.zip").value_or(VenvFormat::kNone), VenvFormat::kZip);
  EXPECT_EQ(VenvFormatOf("env.TAR.GZ").value_or(VenvFormat::kNone), VenvFormat::kTarGz);
  EXPECT_EQ(VenvFormatOf("env.tgz").value_or(VenvFormat::kNone), VenvFormat::kTarGz);
  EXPECT_EQ(VenvFormatOf("env.pex").value_or(VenvFormat::kNone), VenvFormat::kPex);
  for (const char* bad : {"env.rar", "env.tar", "env", "env.zip.bak"}) {
    EXPECT_STATUS(VenvFormatOf(bad), kInvalidArgument, HasSubstr("--python_venv " + std::string(bad) + ": unsupported format"));
  }
}

TEST_F(JobSpecTest, VenvFormatsAndTheirCommands) {
  conf_.Set("loom.worker.instances", "1", "f");
  conf_.Set("loom.application.python-binary-path", "bin/python", "f");
  for (const char* name : {"env.zip", "env.tar.gz", "env.tgz"}) {
    std::ofstream(dir_ / name) << "x";
    conf_.Set("loom.application.python-venv", (dir_ / name).string(), "--python_venv");
    auto spec = BuildJobSpec(conf_, dir_.string());
    ASSERT_OK(spec);
    EXPECT_EQ(spec->FindType("worker")->command, "venv/bin/python train.py") << name;
  }
  // A pex is the interpreter's first argument; a path inside it cannot be the interpreter.
  std::ofstream(dir_ / "env.pex") << "x";
  conf_.Set("loom.application.python-venv", (dir_ / "env.pex").string(), "--python_venv");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("--python_binary_path bin/python: a relative path names a file inside an unpacked venv"));
  conf_.Set("loom.application.python-binary-path", "/usr/bin/python3", "f");
  auto pex = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(pex);
  EXPECT_EQ(pex->python_venv_format, VenvFormat::kPex);
  EXPECT_EQ(pex->FindType("worker")->command, "/usr/bin/python3 venv train.py");
}

TEST_F(JobSpecTest, VenvOfAnotherFormatOrADirectoryIsRefused) {
  conf_.Set("loom.worker.instances", "1", "f");
  std::ofstream(dir_ / "env.rar") << "x";
  conf_.Set("loom.application.python-venv", (dir_ / "env.rar").string(), "--python_venv");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("unsupported format; accepted: .zip, .tar.gz, .tgz (conda-pack) or .pex"));
  // The AM, which cannot see the file, refuses it the same way.
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string(), /*check_files=*/false), kInvalidArgument,
                HasSubstr("unsupported format"));
  std::filesystem::create_directories(dir_ / "dir.zip");
  conf_.Set("loom.application.python-venv", (dir_ / "dir.zip").string(), "--python_venv");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("is a directory"));
}

TEST_F(JobSpecTest, ScriptWithoutSrcDirIsResolvedFromTheBaseDir) {
  conf_.Set("loom.worker.instances", "1", "f");
  conf_.Set("loom.application.src-dir", "", "--src_dir");
  conf_.Set("loom.application.executes", "src/train.py --lr 1", "--executes");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->FindType("worker")->command, "python3 " + (dir_ / "src/train.py").string() + " --lr 1");
  std::ofstream(dir_ / "run.sh") << "echo hi\n";
  conf_.Set("loom.application.executes", "run.sh", "--executes");
  spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->FindType("worker")->command, (dir_ / "run.sh").string());
}

TEST_F(JobSpecTest, MissingScriptIsAnError) {
  conf_.Set("loom.worker.instances", "1", "f");
  conf_.Set("loom.application.executes", "nope.py", "--executes");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("--executes: nope.py does not exist in --src_dir"));
}

TEST_F(JobSpecTest, NoTypesIsAnError) {
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("no task types"));
}

TEST_F(JobSpecTest, CapsAreEnforced) {
  conf_.Set("loom.worker.instances", "3", "f");
  conf_.Set("loom.worker.max-instances", "2", "f");
  conf_.Set("loom.task.max-total-gpus", "1", "f");
  conf_.Set("loom.worker.gpus", "1", "f");
  Status s = BuildJobSpec(conf_, dir_.string()).status();
  EXPECT_THAT(s.message(), HasSubstr("exceeds loom.worker.max-instances=2"));
  EXPECT_THAT(s.message(), HasSubstr("loom.task.max-total-gpus=1 but the job asks for 3 GPUs"));
}

TEST_F(JobSpecTest, FrameworkConstraints) {
  conf_.Set("loom.worker.instances", "2", "f");
  conf_.Set("loom.application.framework", "standalone", "f");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("exactly 1 task"));
  conf_.Set("loom.application.framework", "mxnet", "f");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("loom.scheduler.instances=1"));
}

TEST_F(JobSpecTest, OnlyUntrackedTypesCanNeverFinish) {
  conf_.Set("loom.ps.instances", "1", "f");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("no tracked task type"));
}

TEST_F(JobSpecTest, EnvListsAreParsed) {
  conf_.Set("loom.worker.instances", "1", "f");
  conf_.Set("loom.execution.envs", "A=1,B=two", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->execution_env.at("B"), "two");
}

TEST_F(JobSpecTest, DependencyTimeoutsNeedTheirGroupAndType) {
  conf_.Set("loom.worker.instances", "2", "f");
  conf_.Set("loom.evaluator.instances", "1", "f");
  conf_.Set("tony.application.dependency.evaluator.timeout.after.training", "30", "f");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("group 'training' is not defined"));
  conf_.Set("tony.application.group.training", "worker,chief", "f");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("task type 'chief' is not part of the job"));
  conf_.Set("tony.application.group.training", "worker", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  ASSERT_EQ(spec->dependency_timeouts.size(), 1u);
  EXPECT_EQ(spec->dependency_timeouts[0].type, "evaluator");
  EXPECT_EQ(spec->dependency_timeouts[0].seconds, 30);
  EXPECT_FALSE(spec->dependency_timeouts[0].ignored);
}

TEST(TaskId, Parse) {
  EXPECT_EQ(ParseTaskId("worker:3")->ToString(), "worker:3");
  EXPECT_FALSE(ParseTaskId("worker").ok());
  EXPECT_FALSE(ParseTaskId("worker:-1").ok());
}

}  // namespace
}  // namespace loom
