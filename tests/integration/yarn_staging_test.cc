// What the yarn backend ships through HDFS, seen from HDFS and from the NodeManager: the `loom`
// binary goes once per build into /user/<user>/.loom/cache (temp name + rename), the NM keeps
// it in its PUBLIC or PRIVATE cache across applications, and it carries no debug sections.
// Real `loom` processes against the YARN test double (tests/yarn_double).

#include <elf.h>
#include <sys/stat.h>

#include <filesystem>
#include <regex>
#include <thread>

#include <gmock/gmock.h>

#include "cluster/yarn/staging.h"
#include "hadoop/hdfs/webhdfs.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::MatchesRegex;
using ::testing::SizeIs;

const char kCache[] = "/user/root/.loom/cache";

// A src dir whose entry point prints a line the test looks for.
std::string HelloSrc(MiniLoom& loom) {
  std::string src = loom.home() + "/src";
  EXPECT_OK(MakeDirs(src));
  EXPECT_OK(WriteFileAtomic(src + "/hello.py", "import sys\nprint('hello from', sys.argv[1])\n"));
  return src;
}

std::vector<std::string> HelloJob(const std::string& src, const std::string& word) {
  return {"--src_dir", src, "--executes", "hello.py", "--task_params", word, "--python_binary_path",
          "/usr/bin/python3", "--conf", "loom.worker.instances=1", "--conf", "loom.am.memory=512m", "--conf",
          "loom.worker.memory=512m"};
}

// The section names of a 64-bit ELF file.
std::vector<std::string> SectionNames(const std::string& elf) {
  std::vector<std::string> names;
  if (elf.size() < sizeof(Elf64_Ehdr) || elf.compare(0, SELFMAG, ELFMAG) != 0) return names;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(elf.data());
  if (eh->e_shoff + eh->e_shnum * sizeof(Elf64_Shdr) > elf.size()) return names;
  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(elf.data() + eh->e_shoff);
  const Elf64_Shdr& strings = sh[eh->e_shstrndx];
  for (int i = 0; i < eh->e_shnum; ++i) names.emplace_back(elf.data() + strings.sh_offset + sh[i].sh_name);
  return names;
}

// Regular files named loom-<hash> anywhere in the NodeManager's dirs: its localized copies.
std::vector<std::string> LocalizedBinaries(const std::string& nm_local) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(nm_local, ec)) {
    static const std::regex kCachedName("loom-[0-9a-f]{16}");
    if (!e.is_symlink() && e.is_regular_file() && std::regex_match(e.path().filename().string(), kCachedName)) {
      out.push_back(e.path().string());
    }
  }
  return out;
}

// The NodeManager localized the binary once, into its `cache` ("filecache" the public one,
// "usercache/<user>/filecache" a user's), with `mode`; `*path` is that copy.
void ExpectOneLocalizedBinary(YarnDoubleCluster& cluster, const std::string& cache, unsigned mode, std::string* path) {
  std::vector<std::string> localized = LocalizedBinaries(cluster.nm_local());
  ASSERT_THAT(localized, SizeIs(1));
  EXPECT_THAT(localized[0], MatchesRegex(".*/nm-local/" + cache + "/[0-9]+/loom-[0-9a-f]{16}"));
  struct stat st;
  ASSERT_EQ(::stat(localized[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, mode);
  *path = localized[0];
}

// Where every container's `loom` symlink points.
std::set<std::string> BinaryLinkTargets(const std::string& nm_local, int* links) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(nm_local, ec)) {
    if (e.is_symlink() && e.path().filename() == "loom") {
      ++*links;
      out.insert(fs::read_symlink(e.path()).string());
    }
  }
  return out;
}

TEST(YarnStaging, SecondJobUploadsNoBinaryAndTheNodeManagerLocalizesItOnce) {
  LOOM_REQUIRE_YARN_DOUBLE("reads the FakeHdfs and the NodeManager's local dirs");
  YarnDoubleCluster cluster;
  std::string src = HelloSrc(cluster.loom());
  RunResult first = cluster.Submit(HelloJob(src, "first"));
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err << cluster.ContainerLogs("am.log");
  std::vector<std::string> cached = cluster.hdfs().ListRecursive(kCache);
  ASSERT_THAT(cached, SizeIs(1));
  EXPECT_THAT(cached[0], MatchesRegex("/user/root/\\.loom/cache/loom-[0-9a-f]{16}"));
  // The shipped bytes are the built binary, which has no debug sections (they are in loom.debug).
  std::string binary = ReadFile(MiniLoom::Binary()).value_or("");
  std::string shipped = ReadFile(cluster.hdfs().LocalPath(cached[0])).value_or("");
  EXPECT_TRUE(shipped == binary) << shipped.size() << " bytes shipped, the binary has " << binary.size();
  std::vector<std::string> sections = SectionNames(shipped);
  EXPECT_THAT(sections, ::testing::Contains(".text"));
  EXPECT_THAT(sections, ::testing::Contains(".gnu_debuglink"));
  for (const std::string& s : sections) EXPECT_FALSE(s.starts_with(".debug_")) << s;

  size_t created_before = cluster.hdfs().CreatedFiles().size();
  RunResult second = cluster.Submit(HelloJob(src, "second"));
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err << cluster.ContainerLogs("am.log");
  EXPECT_THAT(cluster.ContainerLogs("stdout"), HasSubstr("hello from second"));
  std::vector<std::string> created = cluster.hdfs().CreatedFiles();
  created.erase(created.begin(), created.begin() + static_cast<long>(created_before));
  // Only the second job's own files: its staging dir, nothing in the cache.
  EXPECT_THAT(created, ::testing::Each(MatchesRegex("/user/root/\\.loom/application_[0-9]+_0002/.*")));
  EXPECT_THAT(created, ::testing::Contains(HasSubstr("/src.tar.gz")));
  EXPECT_EQ(cluster.hdfs().ListRecursive(kCache), cached);  // CleanStaging left it for the next job

  // One download for both applications, into the NM's public cache (the staging root that the
  // first submit created is searchable by everyone, README §13 fact 6), and every container's
  // `loom` is a link to it.
  std::string localized;
  ASSERT_NO_FATAL_FAILURE(ExpectOneLocalizedBinary(cluster, "filecache", 0555, &localized));
  int links = 0;
  EXPECT_EQ(BinaryLinkTargets(cluster.nm_local(), &links), std::set<std::string>{localized});
  EXPECT_EQ(links, 4);  // two applications, each an AM and a worker
}

// A home that others cannot search (as many clusters make /user/<user>) rules out the public
// cache; the NM then keeps the binary in the user's own cache, still once for both jobs.
TEST(YarnStaging, PrivateCacheWhenTheHomeDirIsClosed) {
  LOOM_REQUIRE_YARN_DOUBLE("closes /user/root and reads the NodeManager's local dirs");
  YarnDoubleCluster cluster;
  hadoop::WebHdfs admin(cluster.namenode(), "root");
  ASSERT_OK(admin.Mkdirs("/user", "755"));
  ASSERT_OK(admin.Mkdirs("/user/root", "700"));
  std::string src = HelloSrc(cluster.loom());
  for (const char* word : {"one", "two"}) {
    RunResult r = cluster.Submit(HelloJob(src, word));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  }
  std::string localized;
  ASSERT_NO_FATAL_FAILURE(ExpectOneLocalizedBinary(cluster, "usercache/root/filecache", 0500, &localized));
}

// A cached file of the wrong length (a leftover of an interrupted upload by something else) is
// replaced rather than handed to the NodeManager.
TEST(YarnStaging, CachedBinaryOfTheWrongLengthIsReplaced) {
  LOOM_REQUIRE_YARN_DOUBLE("overwrites the cached binary in the FakeHdfs");
  YarnDoubleCluster cluster;
  std::string src = HelloSrc(cluster.loom());
  RunResult first = cluster.Submit(HelloJob(src, "first"));
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  std::vector<std::string> cached = cluster.hdfs().ListRecursive(kCache);
  ASSERT_THAT(cached, SizeIs(1));
  hadoop::WebHdfs client(cluster.namenode(), "root");
  ASSERT_OK(client.Create(cached[0], "half a binary", "755"));
  RunResult second = cluster.Submit(HelloJob(src, "again"));
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err << cluster.ContainerLogs("am.log");
  EXPECT_THAT(cluster.ContainerLogs("stdout"), HasSubstr("hello from again"));
  EXPECT_EQ(cluster.hdfs().ListRecursive(kCache), cached);
  EXPECT_TRUE(ReadFile(cluster.hdfs().LocalPath(cached[0])).value_or("") == ReadFile(MiniLoom::Binary()).value_or(""));
}

// Concurrent submits of the same build: each publishes by rename, HDFS lets only the first
// rename through, and no submit ever gets a partial file or leaves its temporary one behind.
TEST(YarnStaging, ConcurrentSubmitsPublishOneWholeBinary) {
  std::string dir = ::testing::TempDir() + "/yarn_staging_test." + std::to_string(::getpid());
  (void)RemoveTree(dir);
  yarn_double::FakeHdfs hdfs(dir);
  ASSERT_OK(hdfs.Start());
  std::string nn = "http://127.0.0.1:" + std::to_string(hdfs.namenode_http_port());
  constexpr int kSubmits = 4;
  std::vector<Result<cluster::yarn::StagedFile>> results(kSubmits, Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kSubmits; ++i) {
    threads.emplace_back([&, i] {
      hadoop::WebHdfs fs(nn, "alice");
      results[i] = cluster::yarn::StageCachedBinary(fs, MiniLoom::Binary(), "/user/alice/.loom/cache",
                                                    "application_1_000" + std::to_string(i));
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::string> files = hdfs.ListRecursive("/user/alice/.loom/cache");
  ASSERT_THAT(files, SizeIs(1));
  int64_t size = static_cast<int64_t>(fs::file_size(MiniLoom::Binary()));
  for (const auto& r : results) {
    ASSERT_OK(r);
    EXPECT_EQ(r->path, files[0]);
    EXPECT_EQ(r->size, size);
    EXPECT_EQ(r->mtime, hdfs.Stat(files[0])->mtime_ms);
    EXPECT_EQ(r->visibility, ::hadoop::yarn::PUBLIC);
  }
  EXPECT_EQ(static_cast<int64_t>(fs::file_size(hdfs.LocalPath(files[0]))), size);
  hdfs.Stop();
  (void)RemoveTree(dir);
}

TEST(YarnStaging, VisibilityFollowsHdfsPermissions) {
  std::string dir = ::testing::TempDir() + "/yarn_staging_vis." + std::to_string(::getpid());
  (void)RemoveTree(dir);
  yarn_double::FakeHdfs hdfs(dir);
  ASSERT_OK(hdfs.Start());
  hadoop::WebHdfs fs("http://127.0.0.1:" + std::to_string(hdfs.namenode_http_port()), "bob");
  ASSERT_OK(fs.Mkdirs("/user/bob", "750"));
  auto closed = cluster::yarn::StageCachedBinary(fs, MiniLoom::Binary(), "/user/bob/.loom/cache", "a");
  ASSERT_OK(closed);
  EXPECT_EQ(closed->visibility, ::hadoop::yarn::PRIVATE);
  auto open = cluster::yarn::StageCachedBinary(fs, MiniLoom::Binary(), "/shared/loom/cache", "b");
  ASSERT_OK(open);
  EXPECT_EQ(open->visibility, ::hadoop::yarn::PUBLIC);
  EXPECT_THAT(open->path, ::testing::StartsWith("/shared/loom/cache/loom-"));
  hdfs.Stop();
  (void)RemoveTree(dir);
}

}  // namespace
}  // namespace loom::testing
