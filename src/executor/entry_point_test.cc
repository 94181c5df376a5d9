#include "executor/entry_point.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/files.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "core/testing.h"

namespace loom::executor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Optional;

// Any path stands for the bash found on the node where only the argv is looked at.
constexpr char kBash[] = "/opt/some/bash";

class EntryPointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("entry_point_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    ASSERT_OK(MakeDirs(dir_.string()));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Script(const std::string& name, const std::string& text, int mode) {
    std::string path = (dir_ / name).string();
    EXPECT_OK(WriteFileAtomic(path, text, mode));
    EXPECT_EQ(::chmod(path.c_str(), mode), 0);
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(EntryPointTest, ExecutableScriptRunsAsItIs) {
  std::string s = Script("run.sh", "#!/bin/bash\necho hi\n", 0755);
  EXPECT_EQ(InterpreterFor(s, kBash), std::nullopt);
  EXPECT_THAT(WithInterpreter(std::vector<std::string>{s, "a"}, kBash), ElementsAre(s, "a"));
  EXPECT_EQ(WithInterpreter(s + " a", kBash), s + " a");
}

TEST_F(EntryPointTest, ScriptWithoutExecuteBitRunsThroughItsShebang) {
  std::string s = Script("run.sh", "#!/bin/bash\necho hi\n", 0644);
  EXPECT_THAT(InterpreterFor(s, kBash), Optional(ElementsAre("/bin/bash")));
  EXPECT_THAT(WithInterpreter(std::vector<std::string>{s, "a b"}, kBash), ElementsAre("/bin/bash", s, "a b"));
  EXPECT_EQ(WithInterpreter("  " + s + " 'a b' \"$X\"", kBash), "  /bin/bash " + s + " 'a b' \"$X\"");
}

TEST_F(EntryPointTest, ReadOnlyScriptAsYarnLocalizesItRunsToo) {
  std::string s = Script("ro.sh", "#!/bin/sh\necho hi\n", 0400);
  EXPECT_THAT(InterpreterFor(s, kBash), Optional(ElementsAre("/bin/sh")));
}

TEST_F(EntryPointTest, ShebangArgumentIsOneWordAsTheKernelPassesIt) {
  std::string s = Script("t.py", "#!  /usr/bin/env   python3 -u  \nprint(1)\n", 0600);
  EXPECT_THAT(InterpreterFor(s, kBash), Optional(ElementsAre("/usr/bin/env", "python3 -u")));
  EXPECT_EQ(WithInterpreter(s, kBash), "/usr/bin/env 'python3 -u' " + s);
}

TEST_F(EntryPointTest, NoShebangMeansBashAsBashDoesWithSuchAnExecutable) {
  std::string s = Script("plain", "echo hi\n", 0644);
  EXPECT_THAT(InterpreterFor(s, kBash), Optional(ElementsAre(kBash)));
  std::string empty_shebang = Script("empty", "#!\necho hi\n", 0644);
  EXPECT_THAT(InterpreterFor(empty_shebang, kBash), Optional(ElementsAre(kBash)));
}

TEST_F(EntryPointTest, BareNamesMissingFilesAndDirectoriesAreLeftToExec) {
  EXPECT_EQ(InterpreterFor("python3", kBash), std::nullopt);
  EXPECT_EQ(InterpreterFor((dir_ / "missing.sh").string(), kBash), std::nullopt);
  EXPECT_EQ(InterpreterFor(dir_.string(), kBash), std::nullopt);
  // Shell syntax in the first word: not ours to rewrite.
  std::string s = Script("run.sh", "#!/bin/bash\n", 0644);
  EXPECT_EQ(WithInterpreter("\"" + s + "\" x", kBash), "\"" + s + "\" x");
  EXPECT_EQ(WithInterpreter(std::string(), kBash), "");
  EXPECT_TRUE(WithInterpreter(std::vector<std::string>{}, kBash).empty());
}

TEST_F(EntryPointTest, RelativePathIsResolvedFromTheCurrentDirectory) {
  Script("rel.sh", "#!/bin/bash\n", 0644);
  std::string old = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  auto interpreter = InterpreterFor("./rel.sh", kBash);
  std::filesystem::current_path(old);
  EXPECT_THAT(interpreter, Optional(ElementsAre("/bin/bash")));
}

TEST_F(EntryPointTest, TheRewrittenCommandRuns) {
  std::string out = (dir_ / "out.txt").string();
  std::string s = Script("write.sh", "#!/bin/bash\necho \"ran with $1\" > " + out + "\n", 0644);
  SpawnOptions o;
  o.argv = WithInterpreter(std::vector<std::string>{s, "arg"}, kBash);
  o.env = {{"PATH", "/usr/bin:/bin"}};
  auto child = Subprocess::Spawn(o);
  ASSERT_OK(child);
  auto exit = child->Wait();
  ASSERT_OK(exit);
  EXPECT_TRUE(exit->success()) << exit->Describe();
  EXPECT_EQ(ReadFile(out).value_or(""), "ran with arg\n");
}


// Runs `argv` in the test's dir with a plain PATH; true when it exited 0.
bool RunsOk(const std::vector<std::string>& argv, const std::string& cwd) {
  SpawnOptions o;
  o.argv = argv;
  o.env = {{"PATH", "/usr/bin:/bin"}};
  o.cwd = cwd;
  auto child = Subprocess::Spawn(o);
  if (!child.ok()) return false;
  auto exit = child->Wait();
  return exit.ok() && exit->success();
}

TEST_F(EntryPointTest, BashIsLookedForOnThePathFirst) {
  std::string bin = (dir_ / "bin").string(), noexec = (dir_ / "noexec").string();
  ASSERT_OK(MakeDirs(bin));
  ASSERT_OK(MakeDirs(noexec));
  std::string bash = Script("bin/bash", "#!/bin/sh\n", 0755);
  Script("noexec/bash", "#!/bin/sh\n", 0644);
  ASSERT_OK(MakeDirs((dir_ / "dir" / "bash").string()));
  EXPECT_EQ(FindBash(bin + ":/usr/bin:/bin").value_or(""), bash);
  // Neither a file without the execute bit nor a directory is a bash.
  EXPECT_EQ(FindBash(noexec + ":" + (dir_ / "dir").string() + ":" + bin, {}).value_or(""), bash);
}

TEST_F(EntryPointTest, BashFallsBackToWhereNodesHaveIt) {
  std::string fallback = Script("fallback-bash", "#!/bin/sh\n", 0755);
  EXPECT_EQ(FindBash("/nonexistent", {(dir_ / "missing").string(), fallback}).value_or(""), fallback);
  EXPECT_THAT(FindBash("").value_or(""), ::testing::AnyOf("/bin/bash", "/usr/bin/bash"));
}

TEST_F(EntryPointTest, MissingBashSaysWhereItLookedAndWhyItIsNeeded) {
  std::string missing = (dir_ / "missing").string();
  EXPECT_STATUS(FindBash("/nonexistent:/also-not", {missing}), kNotFound,
                HasSubstr("bash not found on this node (looked in PATH=/nonexistent:/also-not, " + missing + "): "));
  EXPECT_STATUS(FindBash("/nonexistent", {missing}), kNotFound, HasSubstr("`bash -c`, as TonY does"));
}

// TonY's ProcessBuilder("bash", "-c", command): `source` and bash syntax work (dash has neither).
TEST_F(EntryPointTest, CommandsRunUnderBashAsTonYRunsThem) {
  Result<std::string> bash = FindBash("/usr/bin:/bin");
  ASSERT_OK(bash);
  Script("activate", "export LOOM_ACTIVATED=yes\n", 0644);
  std::string out = (dir_ / "out.txt").string();
  std::vector<std::string> argv =
      BashCommandArgv(*bash, "source activate && [[ $LOOM_ACTIVATED == yes ]] && echo activated > " + out);
  EXPECT_THAT(argv, ElementsAre(*bash, "-c", ::testing::StartsWith("source activate && ")));
  EXPECT_TRUE(RunsOk(argv, dir_.string()));
  EXPECT_EQ(ReadFile(out).value_or(""), "activated\n");
}

// An executable script without a #! line cannot be exec'd (ENOEXEC): bash runs it itself, and
// the same script without the execute bit runs through bash too.
TEST_F(EntryPointTest, ScriptWithoutShebangRunsUnderBashWithOrWithoutTheExecuteBit) {
  Result<std::string> bash = FindBash("/usr/bin:/bin");
  ASSERT_OK(bash);
  for (int mode : {0755, 0644}) {
    SCOPED_TRACE(mode);
    std::string out = (dir_ / "out.txt").string();
    std::filesystem::remove(out);
    std::string s = Script("plain.sh", "[[ -n $BASH_VERSION ]] && echo \"bash ran me with $1\" > " + out + "\n", mode);
    std::vector<std::string> argv = BashCommandArgv(*bash, s + " x");
    EXPECT_THAT(argv, ElementsAre(*bash, "-c", mode == 0755 ? s + " x" : ShellQuote(*bash) + " " + s + " x"));
    EXPECT_TRUE(RunsOk(argv, dir_.string()));
    EXPECT_EQ(ReadFile(out).value_or(""), "bash ran me with x\n");
  }
}

}  // namespace
}  // namespace loom::executor
