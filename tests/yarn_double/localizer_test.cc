// The test double's localization against what Hadoop 3.3.6's NodeManager made of the same
// archives: tests/data/yarn-captures/localization/ (README §13; container-stdout.txt is the
// recorded result of venv.zip and venv.tar.gz).

#include "localizer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>

#include "core/files.h"
#include "core/subprocess.h"
#include "core/test_dir.h"
#include "core/testing.h"
#include "hadoop/testing/captures.h"

namespace loom::yarn_double {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Fixture(const std::string& name) {
  return hadoop::testing::CaptureDir() + "localization/" + name;
}

struct Found {
  std::string type;  // "file", "dir", "link"
  int mode = 0;
  int64_t size = 0;
  std::string link;
  bool operator==(const Found&) const = default;
};
std::ostream& operator<<(std::ostream& o, const Found& f) {
  return o << f.type << " " << std::oct << f.mode << std::dec << " " << f.size << " " << f.link;
}

// Everything under `root` by relative path, symlinks not followed (as the probe's find -P).
std::map<std::string, Found> Tree(const std::string& root) {
  std::map<std::string, Found> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    struct stat st;
    EXPECT_EQ(::lstat(e.path().c_str(), &st), 0);
    Found f;
    f.mode = st.st_mode & 07777;
    if (S_ISLNK(st.st_mode)) {
      f.type = "link";
      f.mode = 0;
      f.link = fs::read_symlink(e.path()).string();
    } else if (S_ISDIR(st.st_mode)) {
      f.type = "dir";
    } else {
      f.type = "file";
      f.size = st.st_size;
    }
    out[e.path().lexically_relative(root).string()] = f;
  }
  return out;
}

// The recorded venv's entries that the NodeManager localized alike from venv.zip and venv.tar.gz:
// all but its two symlinks and its empty directory.
std::map<std::string, Found> LocalizedInBothFormats() {
  return {
      {"bin", {"dir", 0700}},
      {"data.txt", {"file", 0500, 11}},
      {"run.sh", {"file", 0500, 39}},
      {"secret.txt", {"file", 0500, 7}},
      {"sub", {"dir", 0700}},
      {"sub/dir", {"dir", 0700}},
      {"sub/dir/deep.txt", {"file", 0500, 5}},
  };
}

int ModeOf(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
}

class LocalizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = loom::testing::MakeTestDir("localizer_test");
    ASSERT_OK(MakeDirs(dir_ + "/filecache/11"));
  }
  void TearDown() override { (void)RemoveTree(dir_); }
  std::string dir_;
};

// README §13 facts 1, 3, 4, 5: the zip's symlinks became regular files holding their target,
// the empty directory is gone, every file is 0500 and every directory 0700, file mtimes kept.
TEST_F(LocalizerTest, RecordedVenvZipLocalizesAsTheNodeManagerDid) {
  std::string dest = dir_ + "/filecache/11/venv.zip";
  ASSERT_OK(LocalizeLikeFsDownload(Fixture("venv.zip"), dest, "venv.zip", /*archive=*/true, /*public=*/false));
  std::map<std::string, Found> want = LocalizedInBothFormats();
  want.insert({{"bin/python", {"file", 0500, 16}}, {"bin/rel-link", {"file", 0500, 9}}});
  EXPECT_EQ(Tree(dest), want);
  EXPECT_EQ(ModeOf(dest), 0700);
  EXPECT_EQ(ReadFile(dest + "/bin/python").value_or(""), "/usr/bin/python3");  // od -c: no newline
  EXPECT_EQ(ReadFile(dest + "/bin/rel-link").value_or(""), "../run.sh");
  // zipinfo: 26-Nov-22 18:51, a local time.
  struct stat st;
  ASSERT_EQ(::stat((dest + "/data.txt").c_str(), &st), 0);
  std::tm tm{};
  std::time_t mtime = st.st_mtime;
  localtime_r(&mtime, &tm);
  EXPECT_EQ(tm.tm_year + 1900, 2026);
  EXPECT_EQ(tm.tm_mon + 1, 11);
  EXPECT_EQ(tm.tm_mday, 22);
  EXPECT_EQ(tm.tm_hour, 18);
  EXPECT_EQ(tm.tm_min, 51);
}

// Fact 2: tar.gz keeps its symlinks (absolute and relative) and the empty directory.
TEST_F(LocalizerTest, RecordedVenvTarGzKeepsSymlinks) {
  std::string dest = dir_ + "/filecache/11/venv.tar.gz";
  ASSERT_OK(LocalizeLikeFsDownload(Fixture("venv.tar.gz"), dest, "venv.tar.gz", true, false));
  std::map<std::string, Found> want = LocalizedInBothFormats();
  want.insert({{"bin/python", {"link", 0, 0, "/usr/bin/python3"}},
               {"bin/rel-link", {"link", 0, 0, "../run.sh"}},
               {"emptydir", {"dir", 0700}}});
  EXPECT_EQ(Tree(dest), want);
  EXPECT_EQ(ModeOf(dest), 0700);
}

// Fact 6: the unpacker follows the HDFS file name; the key does not matter, and a .tgz is a
// tar.gz. An ARCHIVE whose name says no archive kind is copied as it is.
TEST_F(LocalizerTest, UnpackerIsChosenByTheHdfsFileName) {
  std::string tgz = dir_ + "/filecache/11/venv.tgz";
  ASSERT_OK(LocalizeLikeFsDownload(Fixture("venv.tar.gz"), tgz, "venv.TGZ", true, false));
  EXPECT_EQ(Tree(tgz)["bin/python"].type, "link");
  std::string pex = dir_ + "/filecache/11/venv.pex";
  ASSERT_OK(LocalizeLikeFsDownload(Fixture("venv.zip"), pex, "venv.pex", true, false));
  EXPECT_EQ(ReadFile(pex).value_or(""), ReadFile(Fixture("venv.zip")).value_or("?"));
  EXPECT_EQ(ModeOf(pex), 0500);
}

// Fact 3: FILE resources are 0500 whatever HDFS said, PUBLIC ones 0555 (directories 0755).
TEST_F(LocalizerTest, ModesFollowVisibility) {
  std::string src = dir_ + "/data644.txt";
  ASSERT_OK(WriteFileAtomic(src, "data 644\n", 0644));
  ASSERT_OK(LocalizeLikeFsDownload(src, dir_ + "/filecache/11/data644.txt", "data644.txt", false, false));
  EXPECT_EQ(ModeOf(dir_ + "/filecache/11/data644.txt"), 0500);
  ASSERT_OK(MakeDirs(dir_ + "/public/10"));
  ASSERT_OK(LocalizeLikeFsDownload(src, dir_ + "/public/10/data644-pub.txt", "data644-pub.txt", false, true));
  EXPECT_EQ(ModeOf(dir_ + "/public/10/data644-pub.txt"), 0555);
  std::string archive = dir_ + "/public/10/venv.zip";
  ASSERT_OK(LocalizeLikeFsDownload(Fixture("venv.zip"), archive, "venv.zip", true, true));
  EXPECT_EQ(ModeOf(archive), 0755);
  EXPECT_EQ(ModeOf(archive + "/sub/dir"), 0755);
  EXPECT_EQ(ModeOf(archive + "/sub/dir/deep.txt"), 0555);
}

TEST_F(LocalizerTest, DeflatedEntriesInflate) {
  ASSERT_OK(MakeDirs(dir_ + "/tree/a"));
  std::string big(100000, 'x');
  for (size_t i = 0; i < big.size(); i += 7) big[i] = static_cast<char>('a' + i % 26);
  ASSERT_OK(WriteFileAtomic(dir_ + "/tree/a/big.txt", big));
  ASSERT_OK(RunTool({"zip", "-q", "-r", dir_ + "/deflated.zip", "."}, dir_ + "/tree"));
  ASSERT_LT(fs::file_size(dir_ + "/deflated.zip"), big.size() / 2);  // really compressed
  ASSERT_OK(UnzipIgnoringSymlinks(dir_ + "/deflated.zip", dir_ + "/out"));
  EXPECT_EQ(ReadFile(dir_ + "/out/a/big.txt").value_or(""), big);
}

TEST_F(LocalizerTest, EntriesOutsideTheDestinationAndGarbageAreRefused) {
  std::string evil = dir_ + "/evil.zip";
  ASSERT_OK(RunTool({"python3", "-c", "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'w') as z: z.writestr('../evil', 'x')",
                     evil}));
  EXPECT_STATUS(UnzipIgnoringSymlinks(evil, dir_ + "/out"), kInvalidArgument, HasSubstr("outside of"));
  EXPECT_FALSE(PathExists(dir_ + "/evil"));
  ASSERT_OK(WriteFileAtomic(dir_ + "/not.zip", "no zip at all"));
  EXPECT_STATUS(UnzipIgnoringSymlinks(dir_ + "/not.zip", dir_ + "/out2"), kInvalidArgument,
                HasSubstr("no end of central directory"));
}

}  // namespace
}  // namespace loom::yarn_double
