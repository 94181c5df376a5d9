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

// One worker in every test.
class EntryPointCommandTest : public testing::JobSpecFixture {
 protected:
  void SetUp() override {
    JobSpecFixture::SetUp();
    conf_.Set("loom.worker.instances", "1", "f");
  }
  // What the worker runs in the spec built from conf_; "" (and a failure) if the build fails.
  std::string WorkerCommand(bool check_files = true) {
    Result<JobSpec> spec = BuildJobSpec(conf_, dir_.string(), check_files);
    EXPECT_OK(spec);
    return spec.ok() ? spec->FindType("worker")->command : "";
  }
  // loom-test-tool, a program on the tasks' PATH (--shell_env PATH=<dir>/bin), not on this process's.
  void PutAToolOnTheTasksPath() {
    std::filesystem::create_directories(dir_ / "bin");
    std::ofstream(dir_ / "bin" / "loom-test-tool") << "#!/bin/sh\n";
    std::filesystem::permissions(dir_ / "bin" / "loom-test-tool", std::filesystem::perms::owner_all);
    conf_.Set("loom.execution.envs", "PATH=" + (dir_ / "bin").string(), "--shell_env");
  }
};

// What the worker runs, as the interpreter's keys, --src_dir and --executes make it.
TEST_F(EntryPointCommandTest, TheWorkerRunsTheEntryPoint) {
  std::ofstream(dir_ / "run.sh") << "echo hi\n";
  struct Setting {
    std::string key, value, source;
  };
  struct Case {
    std::vector<Setting> settings;
    std::string command;
  };
  const Case cases[] = {
      {{{"loom.application.python-binary-path", "/usr/bin/python3", "f"},
        {"loom.application.task-params", "--epochs 3", "f"}},
       "/usr/bin/python3 train.py --epochs 3"},
      // --executes may start with the src dir.
      {{{"loom.application.src-dir", "src", "--src_dir"}, {"loom.application.executes", "src/train.py", "--executes"}},
       "python3 train.py"},
      // Without a src dir, the script is resolved from the base dir.
      {{{"loom.application.src-dir", "", "--src_dir"},
        {"loom.application.executes", "src/train.py --lr 1", "--executes"}},
       "python3 " + (dir_ / "src/train.py").string() + " --lr 1"},
      {{{"loom.application.src-dir", "", "--src_dir"}, {"loom.application.executes", "run.sh", "--executes"}},
       (dir_ / "run.sh").string()},
  };
  const config::Config base = conf_;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.command);
    conf_ = base;
    for (const Setting& set : c.settings) conf_.Set(set.key, set.value, set.source);
    EXPECT_EQ(WorkerCommand(), c.command);
  }
}

TEST_F(EntryPointCommandTest, ThePythonEntryPointsInterpreterIsKept) {
  conf_.Set("loom.application.python-binary-path", "/opt/py/bin/python3", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->python_binary, "/opt/py/bin/python3");  // local: checked at submit (interpreter_check.h)
  conf_.Set("loom.worker.command", "sleep 1", "f");  // no type runs the entry point
  spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->python_binary, "");
}

TEST_F(EntryPointCommandTest, VenvFormatsAndTheirCommands) {
  conf_.Set("loom.application.python-binary-path", "bin/python", "f");
  for (const char* name : {"env.zip", "env.tar.gz", "env.tgz"}) {
    std::ofstream(dir_ / name) << "x";
    conf_.Set("loom.application.python-venv", (dir_ / name).string(), "--python_venv");
    EXPECT_EQ(WorkerCommand(), "venv/bin/python train.py") << name;
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

TEST_F(EntryPointCommandTest, MissingScriptIsAnError) {
  conf_.Set("loom.application.executes", "nope.py", "--executes");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("--executes: nope.py does not exist in --src_dir"));
}

// `loom submit` decides whether --executes names a program on PATH and records it in the job's
// config.xml; the AM (on another host, with another PATH) builds the command from that record.
// The key and its source are spelt out here as config.xml carries them.
constexpr char kRecordedKey[] = "loom.internal.executes-as";
constexpr char kRecordedSource[] = "--executes (decided by loom submit)";

TEST_F(EntryPointCommandTest, TheAmRunsWhatSubmitDecided) {
  // On no PATH here, as when the AM's PATH lacks what the client found.
  conf_.Set("loom.application.executes", "loom-no-such-tool --x", "--executes");
  conf_.Set(kRecordedKey, "program", kRecordedSource);
  EXPECT_EQ(WorkerCommand(/*check_files=*/false), "loom-no-such-tool --x");
  // On this PATH (/usr/bin/env), but the client found no program: the shipped file runs.
  conf_.Set("loom.application.executes", "env", "--executes");
  conf_.Set(kRecordedKey, "script", kRecordedSource);
  EXPECT_EQ(WorkerCommand(/*check_files=*/false), "./env");
}

TEST_F(EntryPointCommandTest, TheTasksPathDecidesWhatIsAProgram) {
  PutAToolOnTheTasksPath();
  conf_.Set("loom.application.executes", "loom-test-tool --x", "--executes");
  EXPECT_EQ(WorkerCommand(), "loom-test-tool --x");
  // `env` is on this process's PATH, but not on the one the tasks get.
  conf_.Set("loom.application.executes", "env", "--executes");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("--executes: env does not exist in --src_dir " + (dir_ / "src").string() +
                          " and is no program on PATH (--shell_env PATH=" + (dir_ / "bin").string() + ")"));
}

TEST_F(EntryPointCommandTest, TheDecisionTravelsToTheAmInItsConfig) {
  PutAToolOnTheTasksPath();
  conf_.Set("loom.application.executes", "loom-test-tool --x", "--executes");
  auto submitted = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(submitted);
  EXPECT_EQ(submitted->executes_as, ExecutesAs::kProgram);
  // As `loom submit` writes config.xml and the AM reads it, on a host without the program.
  std::string xml = StagedJobConfig(conf_, *submitted).ToXml();
  std::filesystem::remove_all(dir_ / "bin");
  config::Config am_conf;
  ASSERT_OK(am_conf.MergeXmlString(xml, "config.xml", /*recorded_sources=*/true));
  auto at_am = BuildJobSpec(am_conf, dir_.string(), /*check_files=*/false);
  ASSERT_OK(at_am);
  EXPECT_EQ(at_am->FindType("worker")->command, "loom-test-tool --x");
  // The same text merged as a user's file is no record of Loom's.
  config::Config user_conf;
  ASSERT_OK(user_conf.MergeXmlString(xml, "my.xml"));
  EXPECT_STATUS(BuildJobSpec(user_conf, dir_.string(), false), kInvalidArgument,
                HasSubstr("loom.internal.executes-as (from my.xml): Loom sets this key itself"));
}

TEST_F(EntryPointCommandTest, TheUserCannotSetTheRecordedDecision) {
  conf_.Set(kRecordedKey, "program", "--conf");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("loom.internal.executes-as (from --conf): Loom sets this key itself"));
  conf_.Unset(kRecordedKey);
  conf_.Set("tony.internal.executes-as", "script", "/home/u/tony.xml");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string(), /*check_files=*/false), kInvalidArgument,
                HasSubstr("tony.internal.executes-as (from /home/u/tony.xml): Loom sets this key itself"));
}

TEST_F(EntryPointCommandTest, ExecutesNamingNoScriptIsAnError) {
  std::filesystem::create_directories(dir_ / "src" / "sub");
  for (const std::string& value : {std::string("./"), (dir_ / "src").string() + "/", std::string("./ --lr 1"),
                                   std::string("sub/"), std::string("."), std::string("sub/..")}) {
    conf_.Set("loom.application.executes", value, "--executes");
    EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                  HasSubstr("--executes " + value + ": names no script"));
  }
  conf_.Set("loom.application.src-dir", "", "--src_dir");  // the same without a src dir
  conf_.Set("loom.application.executes", "./", "--executes");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("--executes ./: names no script"));
}

}  // namespace
}  // namespace loom
