#include "core/entry_point_command.h"

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "core/job_spec.h"
#include "core/job_spec_test_fixture.h"
#include "core/testing.h"

// Through BuildJobSpec: what each type ends up running is what matters, and the spec is where
// the entry point's interpreter and the venv format come together.

namespace loom {
namespace {

using ::testing::HasSubstr;

class EntryPointCommandTest : public testing::JobSpecFixture {};

TEST_F(EntryPointCommandTest, CommandUsesPythonBinaryAndParams) {
  conf_.Set("loom.worker.instances", "1", "f");
  conf_.Set("loom.application.python-binary-path", "/usr/bin/python3", "f");
  conf_.Set("loom.application.task-params", "--epochs 3", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->FindType("worker")->command, "/usr/bin/python3 train.py --epochs 3");
}

TEST_F(EntryPointCommandTest, ThePythonEntryPointsInterpreterIsKept) {
  conf_.Set("loom.worker.instances", "1", "f");
  conf_.Set("loom.application.python-binary-path", "/opt/py/bin/python3", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->python_binary, "/opt/py/bin/python3");  // local: checked at submit (interpreter_check.h)
  conf_.Set("loom.worker.command", "sleep 1", "f");  // no type runs the entry point
  spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->python_binary, "");
}

TEST_F(EntryPointCommandTest, ExecutesMayStartWithTheSrcDir) {
  conf_.Set("loom.worker.instances", "1", "f");
  conf_.Set("loom.application.src-dir", "src", "--src_dir");
  conf_.Set("loom.application.executes", "src/train.py", "--executes");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->FindType("worker")->command, "python3 train.py");
}

TEST_F(EntryPointCommandTest, VenvFormatsAndTheirCommands) {
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

TEST_F(EntryPointCommandTest, ScriptWithoutSrcDirIsResolvedFromTheBaseDir) {
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

TEST_F(EntryPointCommandTest, MissingScriptIsAnError) {
  conf_.Set("loom.worker.instances", "1", "f");
  conf_.Set("loom.application.executes", "nope.py", "--executes");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("--executes: nope.py does not exist in --src_dir"));
}

}  // namespace
}  // namespace loom
