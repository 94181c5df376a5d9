// TonY users switch unchanged (issue 20): task commands run under bash as TonY runs them
// (`bash -c`), `--executes "bash run.sh"` is a command as in TonY, TonY's own tony-default.xml is
// a valid --conf_file, and a .pex venv runs under the interpreter its #! line names. The real
// `loom` binary, on the local backend and on the YARN test double (where the commands run in a
// YARN container's executor).

#include <sys/stat.h>

#include <filesystem>
#include <memory>

#include <gmock/gmock.h>

#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;

// One job's run on either backend, and what its tasks printed.
class Backend {
 public:
  explicit Backend(const std::string& kind) {
    if (kind == "yarn") {
      yarn_ = std::make_unique<YarnDoubleCluster>();
    } else {
      local_ = std::make_unique<MiniLoom>();
    }
  }
  MiniLoom& loom() { return yarn_ ? yarn_->loom() : *local_; }
  std::string home() { return loom().home(); }

  RunResult Submit(std::vector<std::string> args) {
    for (const char* small : {"loom.am.memory=512m"}) args.insert(args.end(), {"--conf", small});
    if (yarn_) return yarn_->Submit(args);
    args.insert(args.begin(), "submit");
    return local_->Run(args);
  }
  // Every task's stdout (YARN: every container's), and its stderr for failure messages.
  std::string Stdout() {
    if (yarn_) return yarn_->ContainerLogs("stdout");
    std::string out;
    std::string id = local_->OnlyJobId();
    for (const auto& t : local_->View(id).tasks) out += local_->TaskOutput(id, ParseTaskId(t.id).value_or(TaskId{}));
    return out;
  }
  std::string Stderr() {
    if (yarn_) return yarn_->ContainerLogs("stderr") + yarn_->ContainerLogs("executor.log");
    std::string err;
    std::string id = local_->OnlyJobId();
    for (const auto& t : local_->View(id).tasks) {
      err += t.id + ": " + t.diagnostics + "\n" + local_->TaskOutput(id, ParseTaskId(t.id).value_or(TaskId{}), true);
    }
    return err;
  }

 private:
  std::unique_ptr<YarnDoubleCluster> yarn_;
  std::unique_ptr<MiniLoom> local_;
};

std::string WriteScript(const std::string& path, const std::string& text, mode_t mode) {
  EXPECT_OK(WriteFileAtomic(path, text, mode));
  EXPECT_EQ(::chmod(path.c_str(), mode), 0);
  return path;
}

// ray-on-tony's commands `source` a venv's activate script: under /bin/sh (dash) that is
// "source: not found". An executable script without a #! line is run by bash itself (exec alone
// fails with "Exec format error"). Both must fail the job if bash semantics are missing.
TEST(TonyCompat, TaskCommandsRunUnderBashOnBothBackends) {
  for (const std::string kind : {"local", "yarn"}) {
    SCOPED_TRACE(kind);
    Backend b(kind);
    std::string src = b.home() + "/src";
    ASSERT_OK(MakeDirs(src + "/env/bin"));
    WriteScript(src + "/env/bin/activate", "export LOOM_TEST_VENV_ACTIVE=ray-venv\n", 0644);
    WriteScript(src + "/noshebang.sh",
                "if [[ -n $BASH_VERSION ]]; then echo \"shebang-less script ran under bash with $1\"; else exit 3; fi\n",
                0755);
    RunResult r = b.Submit({"--src_dir", src, "--executes", "noshebang.sh", "--task_params", "hello",
                            "--conf", "loom.worker.instances=1", "--conf", "loom.worker.memory=512m",
                            "--conf", "loom.head.instances=1", "--conf", "loom.head.memory=512m",
                            "--conf", "loom.head.command=source env/bin/activate && [[ $LOOM_TEST_VENV_ACTIVE == ray-venv ]] "
                                      "&& echo \"activated $LOOM_TEST_VENV_ACTIVE\""});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << b.Stderr();
    std::string out = b.Stdout();
    EXPECT_THAT(out, HasSubstr("shebang-less script ran under bash with hello\n")) << b.Stderr();
    EXPECT_THAT(out, HasSubstr("activated ray-venv\n")) << b.Stderr();
  }
}

// TonY runs --executes as written: `bash run.sh` is bash running the src dir's run.sh.
TEST(TonyCompat, ExecutesMayBeACommandOnPathAsInTonY) {
  for (const std::string kind : {"local", "yarn"}) {
    SCOPED_TRACE(kind);
    Backend b(kind);
    std::string src = b.home() + "/src";
    ASSERT_OK(MakeDirs(src));
    WriteScript(src + "/run.sh", "echo \"run.sh ran under bash ${BASH_VERSION%%.*} with $1\"\n", 0644);
    RunResult r = b.Submit({"--src_dir", src, "--executes", "bash run.sh", "--task_params", "hello",
                            "--conf", "loom.worker.instances=1", "--conf", "loom.worker.memory=512m"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << b.Stderr();
    EXPECT_THAT(b.Stdout(), HasSubstr("run.sh ran under bash 5 with hello\n")) << b.Stderr();
  }
}

// A bare word that is neither a file of the src dir nor a program is still a usage error naming
// both places, and a src file that shadows a program is ambiguous.
TEST(TonyCompat, ExecutesThatIsNeitherAFileNorAProgramIsRefused) {
  MiniLoom loom;
  std::string src = loom.home() + "/src";
  ASSERT_OK(MakeDirs(src));
  RunResult r = loom.Run({"submit", "--src_dir", src, "--executes", "no-such-entry-point arg", "--conf",
                          "loom.worker.instances=1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--executes: no-such-entry-point does not exist in --src_dir " + src +
                               " and is no program on PATH"));
  WriteScript(src + "/bash", "echo mine\n", 0755);
  r = loom.Run({"submit", "--src_dir", src, "--executes", "bash run.sh", "--conf", "loom.worker.instances=1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--executes: bash is both a file in --src_dir " + src + " and a program on PATH"));
  EXPECT_THAT(r.err, HasSubstr("write ./bash to run the file"));
  EXPECT_TRUE(loom.JobIds().empty());
}

// TonY's defaults file, as users copy it next to their tony.xml, is a valid --conf_file: its
// value-less properties are unset (Hadoop's rule), every key is known, and its
// tony.worker.timeout (the older file's) times the task as TonY did.
TEST(TonyCompat, TonysOwnDefaultsFileIsAcceptedAsConfFile) {
  MiniLoom loom;
  std::string src = loom.home() + "/src";
  ASSERT_OK(MakeDirs(src));
  WriteScript(src + "/hello.sh", "#!/bin/bash\necho \"hello from $JOB_NAME\"\n", 0755);
  WriteScript(src + "/slow.sh", "#!/bin/bash\nsleep 30\n", 0755);
  RunResult r = loom.Run({"submit", "--conf_file", MiniLoom::Source("tests/data/tony/tony-default.xml"), "--src_dir",
                          src, "--executes", "hello.sh", "--conf", "tony.worker.instances=1", "--conf",
                          "tony.worker.memory=512m", "--conf", "tony.am.memory=512m"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string id = loom.JobIds().back();
  EXPECT_EQ(loom.TaskOutput(id, {"worker", 0}), "hello from worker\n");

  r = loom.Run({"submit", "--conf_file", MiniLoom::Source("tests/data/tony/tony-default-single-node.xml"), "--src_dir",
                src, "--executes", "slow.sh", "--conf", "tony.worker.instances=1", "--conf", "tony.worker.memory=512m",
                "--conf", "tony.am.memory=512m", "--conf", "tony.worker.timeout=1500"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // accepted (not 2): the job ran, and timed out
  EXPECT_THAT(r.out, HasSubstr("execution timeout")) << r.out << r.err;
}

// A pex names its interpreter on its #! line (pex --python-shebang): it runs under that one, as
// `./app.pex train.py` does, not under whatever python3 is first on PATH.
TEST(TonyCompat, PexVenvRunsUnderItsShebangInterpreterOnBothBackends) {
  for (const std::string kind : {"local", "yarn"}) {
    SCOPED_TRACE(kind);
    Backend b(kind);
    std::string home = b.home();
    // The pex's interpreter: a python3 that says it ran.
    std::string interpreter =
        WriteScript(home + "/pex-python", "#!/bin/bash\nexport LOOM_TEST_PEX_PYTHON=shebang\nexec /usr/bin/python3 \"$@\"\n", 0755);
    std::string app = home + "/pex-tree";
    ASSERT_OK(MakeDirs(app));
    ASSERT_OK(WriteFileAtomic(app + "/__main__.py",
                              "import runpy, sys\nsys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n"));
    std::string pex = home + "/app.pex";
    ASSERT_OK(RunTool({"/usr/bin/python3", "-m", "zipapp", app, "-o", pex, "-p", interpreter}));
    std::string src = home + "/src";
    ASSERT_OK(MakeDirs(src));
    ASSERT_OK(WriteFileAtomic(src + "/train.py",
                              "import os\nprint('pex interpreter:', os.environ.get('LOOM_TEST_PEX_PYTHON', 'python3 on PATH'))\n"));
    RunResult r = b.Submit({"--src_dir", src, "--executes", "train.py", "--python_venv", pex, "--conf",
                            "loom.worker.instances=1", "--conf", "loom.worker.memory=512m"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << b.Stderr();
    EXPECT_THAT(b.Stdout(), HasSubstr("pex interpreter: shebang\n")) << b.Stderr();
  }
}

}  // namespace
}  // namespace loom::testing
