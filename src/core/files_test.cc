#include "core/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <gmock/gmock.h>

#include "core/testing.h"

namespace loom {
namespace {

int ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return static_cast<int>(st.st_mode & 07777);
}

// A directory that exists keeps its mode (the resource ledger once turned /tmp's 1777 into
// 0755 by making its dir there); the ones made get the mode asked for, whatever the umask.
TEST(MakeDirs, GivesTheModeOnlyToTheDirectoriesItMakes) {
  const std::string shared =
      (std::filesystem::temp_directory_path() / ("loom_makedirs_" + std::to_string(::getpid()))).string();
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  const mode_t old_umask = ::umask(077);
  ASSERT_OK(MakeDirs(shared + "/a/b", 0755));
  ASSERT_OK(MakeDirs(shared, 0700));  // exists: left alone
  ::umask(old_umask);
  EXPECT_EQ(ModeOf(shared), 01777);
  EXPECT_EQ(ModeOf(shared + "/a"), 0755);
  EXPECT_EQ(ModeOf(shared + "/a/b"), 0755);
  std::filesystem::remove_all(shared);
}

// What the job files' pages and the double's NodeManager read of a log: a range of an open file,
// cut at its end, its position untouched.
TEST(ReadAt, ReadsTheRangeCutAtTheFilesEnd) {
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  const int fd = ::fileno(f);
  ASSERT_EQ(::write(fd, "0123456789", 10), 10);
  ASSERT_EQ(::lseek(fd, 3, SEEK_SET), 3);
  EXPECT_EQ(ReadAt(fd, 2, 4), "2345");
  EXPECT_EQ(ReadAt(fd, 8, 100), "89");
  EXPECT_EQ(ReadAt(fd, 10, 5), "");
  EXPECT_EQ(ReadAt(fd, 0, -1), "");
  EXPECT_EQ(::lseek(fd, 0, SEEK_CUR), 3);  // pread(2): the position stays
  std::fclose(f);
  EXPECT_EQ(ReadAt(-1, 0, 4), "");  // a read that fails: nothing
}

}  // namespace
}  // namespace loom
