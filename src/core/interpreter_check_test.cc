#include "core/interpreter_check.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/testing.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

class InterpreterCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("loom_interpreter_check_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / "bin");
    std::filesystem::create_directories(dir_ / "src" / "env" / "bin");
    Executable(dir_ / "bin" / "mypython");
    Executable(dir_ / "src" / "env" / "bin" / "python");
    std::ofstream(dir_ / "bin" / "notexec") << "x";
    spec_.src_dir = (dir_ / "src").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static void Executable(const std::filesystem::path& p) {
    std::ofstream(p) << "#!/bin/sh\n";
    ::chmod(p.c_str(), 0755);
  }
  Status Check(const std::string& python) {
    spec_.python_binary = python;
    return CheckInterpreterOnThisHost(spec_, "/nonexistent:" + (dir_ / "bin").string());
  }
  std::filesystem::path dir_;
  JobSpec spec_;
};

TEST_F(InterpreterCheckTest, AbsolutePathMustBeAnExecutableFile) {
  EXPECT_OK(Check((dir_ / "bin" / "mypython").string()));
  EXPECT_STATUS(Check("/no/such/python3"), kInvalidArgument,
                HasSubstr("--python_binary_path /no/such/python3 does not exist on this host"));
  EXPECT_STATUS(Check((dir_ / "bin" / "notexec").string()), kInvalidArgument, HasSubstr("is not an executable file"));
  EXPECT_STATUS(Check((dir_ / "bin").string()), kInvalidArgument, HasSubstr("is not an executable file"));
}

TEST_F(InterpreterCheckTest, BareNameIsLookedUpOnTheTasksPath) {
  EXPECT_OK(Check("mypython"));
  EXPECT_STATUS(Check("python9.9"), kInvalidArgument,
                HasSubstr("--python_binary_path python9.9: no such executable on the tasks' PATH (PATH=/nonexistent:"));
  EXPECT_STATUS(Check("notexec"), kInvalidArgument, HasSubstr("no such executable"));
  // --shell_env PATH is the tasks' PATH, not the client's.
  spec_.execution_env["PATH"] = "/nonexistent";
  EXPECT_STATUS(Check("mypython"), kInvalidArgument, HasSubstr("(--shell_env PATH=/nonexistent)"));
}

TEST_F(InterpreterCheckTest, RelativePathIsInTheSrcDirOrTheVenv) {
  EXPECT_OK(Check("env/bin/python"));
  EXPECT_STATUS(Check("venv/bin/python"), kInvalidArgument, HasSubstr("a relative path names a file in the task's"));
  spec_.python_venv_format = VenvFormat::kTarGz;  // unpacked in each task: not here to look at
  EXPECT_OK(Check("bin/python"));
}

TEST_F(InterpreterCheckTest, NothingToCheckWithoutAPythonEntryPoint) {
  EXPECT_OK(Check(""));
  spec_.python_venv_format = VenvFormat::kPex;  // the pex decides how it runs (job_spec.h)
  EXPECT_OK(Check("/no/such/python3"));
}

}  // namespace
}  // namespace loom
