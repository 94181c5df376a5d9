// --python_venv in every accepted format, and --executes scripts without their execute bit, on
// both backends: the local one and yarn against the YARN test double, whose NodeManager
// localizes as the recorded Hadoop 3.3.6 one did (zip symlinks become text files, README §13).
// Real `loom` processes; the venv is a real one made by `python3 -m venv`.

#include <sys/stat.h>

#include <filesystem>

#include <gmock/gmock.h>

#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::IsEmpty;

Status Run(std::vector<std::string> argv, const std::string& cwd = "") { return RunTool(argv, cwd); }

// A real venv whose bin/python is a symlink to /usr/bin/python3 (the `python3 -m venv`
// layout), holding a module the system's python does not have.
std::string MakeVenvTree(const std::string& home) {
  std::string tree = home + "/venv-tree";
  EXPECT_OK(Run({"/usr/bin/python3", "-m", "venv", "--without-pip", tree}));
  std::string bin_python = tree + "/bin/python";
  ::unlink(bin_python.c_str());
  EXPECT_EQ(::symlink("/usr/bin/python3", bin_python.c_str()), 0);
  std::string lib;
  for (const auto& e : fs::directory_iterator(tree + "/lib")) lib = e.path().string();  // lib/python3.X
  EXPECT_OK(WriteFileAtomic(lib + "/site-packages/loom_venv_marker.py", "VALUE = 'from-the-venv'\n"));
  return tree;
}

// The venv packed as `format`: zip (symlinks stored, as `zip -y`), tar.gz, tgz, or pex (a
// zipapp whose __main__ runs the script given with the pex's own lib/ importable, which is
// what a real pex does when given a script).
std::string PackVenv(const std::string& home, const std::string& tree, const std::string& format) {
  std::string out = home + "/venv." + format;
  if (format == "zip") {
    EXPECT_OK(Run({"zip", "-q", "-r", "-y", out, "."}, tree));
  } else if (format == "tar.gz" || format == "tgz") {
    EXPECT_OK(Run({"tar", "-czf", out, "-C", tree, "."}));
  } else if (format == "pex") {
    std::string app = home + "/pex-tree";
    EXPECT_OK(MakeDirs(app + "/lib"));
    EXPECT_OK(WriteFileAtomic(app + "/lib/loom_venv_marker.py", "VALUE = 'from-the-pex'\n"));
    EXPECT_OK(WriteFileAtomic(app + "/__main__.py",
                              "import os, runpy, sys\n"
                              "sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'lib'))\n"
                              "sys.argv = sys.argv[1:]\n"
                              "runpy.run_path(sys.argv[0], run_name='__main__')\n"));
    EXPECT_OK(Run({"/usr/bin/python3", "-m", "zipapp", app, "-o", out, "-p", "/usr/bin/env python3"}));
  }
  return out;
}

// The entry point: proves which environment imported the marker.
std::string CheckSrc(const std::string& home) {
  std::string src = home + "/src";
  EXPECT_OK(MakeDirs(src));
  EXPECT_OK(WriteFileAtomic(src + "/venv_check.py",
                            "import loom_venv_marker, sys\nprint('venv marker:', loom_venv_marker.VALUE)\n"));
  return src;
}

struct Case {
  std::string backend;  // local or yarn
  std::string format;   // zip, tar.gz, tgz, pex
};
std::string Name(const ::testing::TestParamInfo<Case>& info) {
  std::string f = info.param.format;
  std::replace(f.begin(), f.end(), '.', '_');
  return info.param.backend + "_" + f;
}

class VenvFormats : public ::testing::TestWithParam<Case> {};

// Identical on both backends: for yarn the zip's bin/python symlink must survive the
// NodeManager's unzip, which turns it into a 16-byte text file (the job then "succeeds" without
// ever running the script, README §13 fact 1).
TEST_P(VenvFormats, EntryPointRunsInsideTheVenv) {
  const Case& c = GetParam();
  std::unique_ptr<YarnDoubleCluster> yarn;
  std::unique_ptr<MiniLoom> local;
  if (c.backend == "yarn") yarn = std::make_unique<YarnDoubleCluster>();
  else local = std::make_unique<MiniLoom>();
  MiniLoom& loom = yarn ? yarn->loom() : *local;
  std::string venv = PackVenv(loom.home(), MakeVenvTree(loom.home()), c.format);
  std::string src = CheckSrc(loom.home());
  std::vector<std::string> args = {"--src_dir", src, "--executes", "venv_check.py", "--python_venv", venv,
                                   "--python_binary_path", c.format == "pex" ? "/usr/bin/python3" : "bin/python",
                                   "--conf", "loom.worker.instances=1", "--conf", "loom.am.memory=512m", "--conf",
                                   "loom.worker.memory=512m"};
  std::string want = c.format == "pex" ? "venv marker: from-the-pex\n" : "venv marker: from-the-venv\n";
  if (yarn) {
    RunResult r = yarn->Submit(args);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << yarn->ContainerLogs("stderr") << yarn->ContainerLogs("am.log");
    EXPECT_THAT(yarn->ContainerLogs("stdout"), HasSubstr(want)) << yarn->ContainerLogs("stderr");
  } else {
    args.insert(args.begin(), "submit");
    RunResult r = local->Run(args);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    std::string id = local->OnlyJobId();
    EXPECT_EQ(local->TaskOutput(id, {"worker", 0}), want) << local->TaskOutput(id, {"worker", 0}, true);
  }
}

INSTANTIATE_TEST_SUITE_P(BothBackends, VenvFormats,
                         ::testing::Values(Case{"local", "zip"}, Case{"local", "tar.gz"}, Case{"local", "tgz"},
                                           Case{"local", "pex"}, Case{"yarn", "zip"}, Case{"yarn", "tar.gz"},
                                           Case{"yarn", "tgz"}, Case{"yarn", "pex"}),
                         Name);

// Refused at submit, before anything starts: exit 2, the flag and the accepted formats named,
// no job, no application, nothing in HDFS.
TEST(Venv, UnsupportedFormatIsAUsageErrorOnBothBackends) {
  YarnDoubleCluster yarn;
  std::string venv = yarn.loom().home() + "/venv.rar";
  ASSERT_OK(WriteFileAtomic(venv, "not a venv"));
  std::string src = CheckSrc(yarn.loom().home());
  std::vector<std::string> args = {"--src_dir", src, "--executes", "venv_check.py", "--python_venv", venv,
                                   "--conf", "loom.worker.instances=1"};
  RunResult r = yarn.Submit(args);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--python_venv " + venv + ": unsupported format"));
  EXPECT_THAT(r.err, HasSubstr(".zip, .tar.gz, .tgz (conda-pack) or .pex"));
  EXPECT_THAT(yarn.loom().JobIds(), IsEmpty());
  EXPECT_THAT(yarn.JobStagingFiles(), IsEmpty());
  if (!yarn.real()) {  // not even the shared binary cache, which a real cluster's other jobs fill
    EXPECT_THAT(yarn.hdfs().CreatedFiles(), IsEmpty());
    EXPECT_THAT(yarn.hdfs().ListRecursive("/"), IsEmpty());
  }

  MiniLoom local;
  args.insert(args.begin(), "submit");
  RunResult l = local.Run(args);
  EXPECT_EQ(l.exit_code, 2) << l.out << l.err;
  EXPECT_THAT(l.err, HasSubstr("--python_venv " + venv + ": unsupported format"));
  EXPECT_THAT(local.JobIds(), IsEmpty());
}

// TonY makes a non-Python entry point executable; an .sh shipped without the bit must run on
// both backends (through its #! line: on YARN the localized copy is read-only).
TEST(EntryPoint, ShellScriptWithoutExecuteBitRunsOnBothBackends) {
  for (const std::string backend : {"local", "yarn"}) {
    SCOPED_TRACE(backend);
    std::unique_ptr<YarnDoubleCluster> yarn;
    std::unique_ptr<MiniLoom> local;
    if (backend == "yarn") yarn = std::make_unique<YarnDoubleCluster>();
    else local = std::make_unique<MiniLoom>();
    MiniLoom& loom = yarn ? yarn->loom() : *local;
    std::string src = loom.home() + "/src";
    ASSERT_OK(MakeDirs(src));
    ASSERT_OK(WriteFileAtomic(src + "/run.sh", "#!/bin/bash\necho \"entry point ran with $1 in bash $BASH_VERSION\"\n", 0644));
    ASSERT_EQ(::chmod((src + "/run.sh").c_str(), 0644), 0);
    std::vector<std::string> args = {"--src_dir", src, "--executes", "run.sh", "--task_params", "hello",
                                     "--conf", "loom.worker.instances=1", "--conf", "loom.am.memory=512m",
                                     "--conf", "loom.worker.memory=512m"};
    if (yarn) {
      RunResult r = yarn->Submit(args);
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err << yarn->ContainerLogs("stderr");
      EXPECT_THAT(yarn->ContainerLogs("stdout"), HasSubstr("entry point ran with hello in bash "));
    } else {
      args.insert(args.begin(), "submit");
      RunResult r = local->Run(args);
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
      std::string id = local->OnlyJobId();
      EXPECT_THAT(local->TaskOutput(id, {"worker", 0}), HasSubstr("entry point ran with hello in bash "))
          << local->TaskOutput(id, {"worker", 0}, true);
      // The user's file is left as it was.
      struct stat st;
      ASSERT_EQ(::stat((src + "/run.sh").c_str(), &st), 0);
      EXPECT_EQ(st.st_mode & 0777, 0644u);
    }
  }
}

}  // namespace
}  // namespace loom::testing
