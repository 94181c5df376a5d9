#include "executor/entry_point.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/files.h"
#include "core/subprocess.h"
#include "core/testing.h"

namespace loom::executor {
namespace {

using ::testing::ElementsAre;
using ::testing::Optional;

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
  EXPECT_EQ(InterpreterFor(s), std::nullopt);
  EXPECT_THAT(WithInterpreter(std::vector<std::string>{s, "a"}), ElementsAre(s, "a"));
  EXPECT_EQ(WithInterpreter(s + " a"), s + " a");
}

TEST_F(EntryPointTest, ScriptWithoutExecuteBitRunsThroughItsShebang) {
  std::string s = Script("run.sh", "#!/bin/bash\necho hi\n", 0644);
  EXPECT_THAT(InterpreterFor(s), Optional(ElementsAre("/bin/bash")));
  EXPECT_THAT(WithInterpreter(std::vector<std::string>{s, "a b"}), ElementsAre("/bin/bash", s, "a b"));
  EXPECT_EQ(WithInterpreter("  " + s + " 'a b' \"$X\""), "  /bin/bash " + s + " 'a b' \"$X\"");
}

TEST_F(EntryPointTest, ReadOnlyScriptAsYarnLocalizesItRunsToo) {
  std::string s = Script("ro.sh", "#!/bin/sh\necho hi\n", 0400);
  EXPECT_THAT(InterpreterFor(s), Optional(ElementsAre("/bin/sh")));
}

TEST_F(EntryPointTest, ShebangArgumentIsOneWordAsTheKernelPassesIt) {
  std::string s = Script("t.py", "#!  /usr/bin/env   python3 -u  \nprint(1)\n", 0600);
  EXPECT_THAT(InterpreterFor(s), Optional(ElementsAre("/usr/bin/env", "python3 -u")));
  EXPECT_EQ(WithInterpreter(s), "/usr/bin/env 'python3 -u' " + s);
}

TEST_F(EntryPointTest, NoShebangMeansShAsExecvpDoes) {
  std::string s = Script("plain", "echo hi\n", 0644);
  EXPECT_THAT(InterpreterFor(s), Optional(ElementsAre("/bin/sh")));
  std::string empty_shebang = Script("empty", "#!\necho hi\n", 0644);
  EXPECT_THAT(InterpreterFor(empty_shebang), Optional(ElementsAre("/bin/sh")));
}

TEST_F(EntryPointTest, BareNamesMissingFilesAndDirectoriesAreLeftToExec) {
  EXPECT_EQ(InterpreterFor("python3"), std::nullopt);
  EXPECT_EQ(InterpreterFor((dir_ / "missing.sh").string()), std::nullopt);
  EXPECT_EQ(InterpreterFor(dir_.string()), std::nullopt);
  // Shell syntax in the first word: not ours to rewrite.
  std::string s = Script("run.sh", "#!/bin/bash\n", 0644);
  EXPECT_EQ(WithInterpreter("\"" + s + "\" x"), "\"" + s + "\" x");
  EXPECT_EQ(WithInterpreter(std::string()), "");
  EXPECT_TRUE(WithInterpreter(std::vector<std::string>{}).empty());
}

TEST_F(EntryPointTest, RelativePathIsResolvedFromTheCurrentDirectory) {
  Script("rel.sh", "#!/bin/bash\n", 0644);
  std::string old = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  auto interpreter = InterpreterFor("./rel.sh");
  std::filesystem::current_path(old);
  EXPECT_THAT(interpreter, Optional(ElementsAre("/bin/bash")));
}

TEST_F(EntryPointTest, TheRewrittenCommandRuns) {
  std::string out = (dir_ / "out.txt").string();
  std::string s = Script("write.sh", "#!/bin/bash\necho \"ran with $1\" > " + out + "\n", 0644);
  SpawnOptions o;
  o.argv = WithInterpreter(std::vector<std::string>{s, "arg"});
  o.env = {{"PATH", "/usr/bin:/bin"}};
  auto child = Subprocess::Spawn(o);
  ASSERT_OK(child);
  auto exit = child->Wait();
  ASSERT_OK(exit);
  EXPECT_TRUE(exit->success()) << exit->Describe();
  EXPECT_EQ(ReadFile(out).value_or(""), "ran with arg\n");
}

}  // namespace
}  // namespace loom::executor
