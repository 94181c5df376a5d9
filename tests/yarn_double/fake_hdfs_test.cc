// The WebHDFS client (src/hadoop/hdfs/webhdfs) end to end against FakeHdfs, and the
// fake's own wire behaviour where it copies the real NameNode and DataNode.

#include "fake_hdfs.h"

#include <unistd.h>

#include <chrono>
#include <random>

#include "core/eventually.h"
#include "core/files.h"
#include "core/test_dir.h"
#include "core/testing.h"
#include "hadoop/hdfs/webhdfs.h"
#include "hadoop/testing/test_socket.h"

namespace loom::yarn_double {
namespace {

using hadoop::HdfsFileStatus;
using hadoop::WebHdfs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Sends raw bytes and reads until the server closes.
std::string RawExchange(int port, const std::string& request) {
  Result<int> fd = hadoop::testing::ConnectLoopback(port);
  if (!fd.ok()) return "";
  EXPECT_OK(hadoop::testing::WriteAll(*fd, request));
  std::string out = hadoop::testing::ReadUntilEof(*fd, std::chrono::seconds(30));
  ::close(*fd);
  return out;
}

std::string RandomBytes(size_t n) {
  std::mt19937_64 rng(42);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

class FakeHdfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = loom::testing::MakeTestDir("fake_hdfs_test");
    hdfs_ = std::make_unique<FakeHdfs>(dir_ + "/hdfs");
    ASSERT_OK(hdfs_->Start());
    client_ = std::make_unique<WebHdfs>(NameNode(), "alice");
  }
  void TearDown() override {
    hdfs_->Stop();
    (void)RemoveTree(dir_);
  }
  std::string NameNode() const { return "http://127.0.0.1:" + std::to_string(hdfs_->namenode_http_port()); }
  // The client's status must be HDFS's (the fake's) exactly: the NodeManager checks it.
  void ExpectSameAsFake(const HdfsFileStatus& status, const std::string& path, int64_t length) {
    Result<FakeHdfs::Entry> entry = hdfs_->Stat(path);
    ASSERT_OK(entry);
    EXPECT_FALSE(entry->dir);
    EXPECT_EQ(status.length, length);
    EXPECT_EQ(entry->length, length);
    EXPECT_EQ(status.modification_time, entry->mtime_ms);
    EXPECT_GT(status.modification_time, 1'600'000'000'000);
    EXPECT_EQ(status.type, "FILE");
    EXPECT_EQ(status.owner, "alice");
  }

  std::string dir_;
  std::unique_ptr<FakeHdfs> hdfs_;
  std::unique_ptr<WebHdfs> client_;
};

// Staging's shared cache publishes a file by renaming it from a temporary name; HDFS's rename
// refuses to replace an existing file, which is what makes a concurrent submit safe.
TEST_F(FakeHdfsTest, RenameMovesAFileButNeverReplacesOne) {
  ASSERT_OK(client_->Mkdirs("/user/alice/cache"));
  ASSERT_OK(client_->Create("/user/alice/cache/.tmp-1", "first", "755"));
  Result<FakeHdfs::Entry> before = hdfs_->Stat("/user/alice/cache/.tmp-1");
  ASSERT_OK(before);
  EXPECT_TRUE(client_->Rename("/user/alice/cache/.tmp-1", "/user/alice/cache/bin").value_or(false));
  EXPECT_STATUS(hdfs_->Stat("/user/alice/cache/.tmp-1"), kNotFound, HasSubstr(".tmp-1"));
  Result<FakeHdfs::Entry> after = hdfs_->Stat("/user/alice/cache/bin");
  ASSERT_OK(after);
  EXPECT_EQ(after->mtime_ms, before->mtime_ms);  // a rename keeps the file's modification time
  EXPECT_EQ(after->permission, "755");
  EXPECT_EQ(ReadFile(hdfs_->LocalPath("/user/alice/cache/bin")).value_or(""), "first");

  ASSERT_OK(client_->Create("/user/alice/cache/.tmp-2", "second", "755"));
  EXPECT_FALSE(client_->Rename("/user/alice/cache/.tmp-2", "/user/alice/cache/bin").value_or(true));
  EXPECT_EQ(ReadFile(hdfs_->LocalPath("/user/alice/cache/bin")).value_or(""), "first");
  EXPECT_OK(hdfs_->Stat("/user/alice/cache/.tmp-2"));
  EXPECT_FALSE(client_->Rename("/user/alice/cache/missing", "/user/alice/cache/x").value_or(true));
  EXPECT_FALSE(client_->Rename("/user/alice/cache/.tmp-2", "/no/such/dir/x").value_or(true));
  // A directory as the destination receives the source, as in HDFS.
  ASSERT_OK(client_->Mkdirs("/user/alice/into"));
  EXPECT_TRUE(client_->Rename("/user/alice/cache", "/user/alice/into").value_or(false));
  EXPECT_OK(hdfs_->Stat("/user/alice/into/cache/bin"));
  EXPECT_EQ(ReadFile(hdfs_->LocalPath("/user/alice/into/cache/bin")).value_or(""), "first");
  EXPECT_THAT(hdfs_->CreatedFiles(), ElementsAre("/user/alice/cache/.tmp-1", "/user/alice/cache/.tmp-2"));
}

TEST_F(FakeHdfsTest, StagingRoundTrip) {
  const std::string job = "/user/alice/.loom/job_1";
  ASSERT_OK(client_->Mkdirs(job));
  Result<FakeHdfs::Entry> dir = hdfs_->Stat(job);
  ASSERT_OK(dir);
  EXPECT_TRUE(dir->dir);
  EXPECT_EQ(dir->permission, "755");
  EXPECT_EQ(dir->owner, "alice");

  std::string big = RandomBytes(5 * 1024 * 1024);
  std::string local = dir_ + "/src.zip";
  ASSERT_OK(WriteFileAtomic(local, big));
  Result<HdfsFileStatus> uploaded = client_->Upload(local, job + "/src.zip");
  ASSERT_OK(uploaded);
  ExpectSameAsFake(*uploaded, job + "/src.zip", static_cast<int64_t>(big.size()));
  EXPECT_EQ(uploaded->permission, "644");
  EXPECT_EQ(ReadFile(hdfs_->LocalPath(job + "/src.zip")).value_or(""), big);

  Result<HdfsFileStatus> created = client_->Create(job + "/config.xml", "<configuration/>\n", "600");
  ASSERT_OK(created);
  ExpectSameAsFake(*created, job + "/config.xml", 17);
  EXPECT_EQ(created->permission, "600");
  EXPECT_EQ(hdfs_->Stat(job + "/config.xml")->permission, "600");

  Result<HdfsFileStatus> stat = client_->GetFileStatus(job + "/src.zip");
  ASSERT_OK(stat);
  EXPECT_EQ(stat->modification_time, uploaded->modification_time);
  EXPECT_EQ(stat->path_suffix, "");

  Result<std::vector<HdfsFileStatus>> list = client_->ListStatus(job);
  ASSERT_OK(list);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].path_suffix, "config.xml");
  EXPECT_EQ((*list)[0].length, 17);
  EXPECT_EQ((*list)[1].path_suffix, "src.zip");
  EXPECT_EQ((*list)[1].modification_time, uploaded->modification_time);
  Result<std::vector<HdfsFileStatus>> parent = client_->ListStatus("/user/alice/.loom");
  ASSERT_OK(parent);
  ASSERT_EQ(parent->size(), 1u);
  EXPECT_EQ((*parent)[0].type, "DIRECTORY");

  EXPECT_EQ(client_->Open(job + "/src.zip").value_or(""), big);
  EXPECT_EQ(client_->Open(job + "/config.xml").value_or(""), "<configuration/>\n");
  EXPECT_THAT(hdfs_->ListRecursive("/user/alice"),
              ElementsAre(job + "/config.xml", job + "/src.zip"));

  Result<bool> deleted = client_->Delete("/user/alice/.loom", true);
  ASSERT_OK(deleted);
  EXPECT_TRUE(*deleted);
  EXPECT_STATUS(hdfs_->Stat(job + "/src.zip"), kNotFound, HasSubstr("src.zip"));
  EXPECT_FALSE(PathExists(hdfs_->LocalPath(job + "/src.zip")));
  EXPECT_TRUE(hdfs_->ListRecursive("/user").empty());
  EXPECT_EQ(client_->Delete("/user/alice/.loom", true).value_or(true), false);
  // mkdirs 1, upload 3, create 3, stat 1, list 2, open 2x2, delete 2
  EXPECT_EQ(hdfs_->requests_served(), 16);
}

TEST_F(FakeHdfsTest, OverwriteReplacesBytesAndTimestamp) {
  ASSERT_OK(client_->Create("/f", "first version"));
  Result<FakeHdfs::Entry> before = hdfs_->Stat("/f");
  ASSERT_OK(before);
  // Timestamps are wall-clock milliseconds: the overwrite must come in a later one for its
  // new timestamp to show.
  auto now_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  ASSERT_TRUE(loom::testing::Eventually([&] { return now_ms() > before->mtime_ms; }, std::chrono::seconds(1),
                                        std::chrono::milliseconds(1)));
  Result<HdfsFileStatus> second = client_->Create("/f", "v2");
  ASSERT_OK(second);
  ExpectSameAsFake(*second, "/f", 2);
  EXPECT_GT(second->modification_time, before->mtime_ms);
  EXPECT_EQ(client_->Open("/f").value_or(""), "v2");
}

TEST_F(FakeHdfsTest, PathsWithSpacesAndNonAscii) {
  const std::string dir = "/user/alice/my dir";
  const std::string file = dir + "/r\xC3\xA9sum\xC3\xA9 100%.txt";
  ASSERT_OK(client_->Mkdirs(dir));
  Result<HdfsFileStatus> created = client_->Create(file, "spaced out");
  ASSERT_OK(created);
  ExpectSameAsFake(*created, file, 10);
  EXPECT_EQ(ReadFile(hdfs_->LocalPath(file)).value_or(""), "spaced out");
  EXPECT_EQ(client_->Open(file).value_or(""), "spaced out");
  Result<std::vector<HdfsFileStatus>> list = client_->ListStatus(dir);
  ASSERT_OK(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].path_suffix, "r\xC3\xA9sum\xC3\xA9 100%.txt");
  EXPECT_THAT(hdfs_->ListRecursive(dir), ElementsAre(file));
  EXPECT_TRUE(client_->Delete(dir, true).value_or(false));
}

TEST_F(FakeHdfsTest, MissingPathsAreNotFound) {
  EXPECT_STATUS(client_->GetFileStatus("/nope"), kNotFound,
                AllOf(HasSubstr("GETFILESTATUS /nope"), HasSubstr("404"),
                      HasSubstr("FileNotFoundException: File does not exist: /nope")));
  EXPECT_STATUS(client_->ListStatus("/nope"), kNotFound, HasSubstr("LISTSTATUS /nope"));
  EXPECT_STATUS(client_->Open("/nope"), kNotFound, HasSubstr("OPEN /nope"));
  EXPECT_EQ(client_->Delete("/nope", true).value_or(true), false);
  EXPECT_STATUS(hdfs_->Stat("/nope"), kNotFound, HasSubstr("/nope"));
}

TEST_F(FakeHdfsTest, HdfsRefusalsComeBackAsErrors) {
  ASSERT_OK(client_->Create("/d/file", "x"));
  EXPECT_STATUS(client_->Mkdirs("/d/file/sub"), kFailedPrecondition,
                AllOf(HasSubstr("MKDIRS /d/file/sub"), HasSubstr("HTTP 403"),
                      HasSubstr("ParentNotDirectoryException")));
  EXPECT_STATUS(client_->Create("/d", "x"), kAlreadyExists, HasSubstr("already exists as a directory"));
  EXPECT_STATUS(client_->Delete("/d", false), kFailedPrecondition,
                HasSubstr("PathIsNotEmptyDirectoryException"));
  EXPECT_STATUS(client_->Open("/d"), kNotFound, HasSubstr("Path is not a file: /d"));
  // Nothing of the refused create reached the namespace.
  EXPECT_THAT(hdfs_->ListRecursive("/"), ElementsAre("/d/file"));

  WebHdfs anonymous(NameNode(), "");
  EXPECT_STATUS(anonymous.GetFileStatus("/d"), kUnauthenticated,
                AllOf(HasSubstr("HTTP 401"), HasSubstr("SecurityException")));
}

TEST_F(FakeHdfsTest, NameNodeAnswersLikeJetty) {
  std::string request = "GET /webhdfs/v1/?op=GETFILESTATUS&user.name=bob HTTP/1.1\r\n"
                        "Host: x\r\nConnection: close\r\n\r\n";
  std::string answer = RawExchange(hdfs_->namenode_http_port(), request);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(answer, AllOf(HasSubstr("Content-Type: application/json\r\n"),
                            HasSubstr("Transfer-Encoding: chunked\r\n"),
                            HasSubstr("Set-Cookie: hadoop.auth=\"u=bob&p=bob&t=simple&e="),
                            HasSubstr("\"type\":\"DIRECTORY\"}}\r\n0\r\n\r\n")));

  // CREATE step 1 in both forms.
  request = "PUT /webhdfs/v1/a%20b?op=CREATE&user.name=bob&overwrite=true HTTP/1.1\r\n"
            "Host: x\r\nConnection: close\r\n\r\n";
  answer = RawExchange(hdfs_->namenode_http_port(), request);
  std::string dn = "http://127.0.0.1:" + std::to_string(hdfs_->datanode_http_port());
  std::string rpc = hdfs_->default_fs().substr(std::string("hdfs://").size());
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 307 Temporary Redirect\r\n"));
  EXPECT_THAT(answer, HasSubstr("Location: " + dn + "/webhdfs/v1/a%20b?op=CREATE&user.name=bob&namenoderpcaddress=" +
                                rpc + "&createflag=&createparent=true&overwrite=true\r\n"));
  request = "PUT /webhdfs/v1/a?op=CREATE&user.name=bob&noredirect=true HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  answer = RawExchange(hdfs_->namenode_http_port(), request);
  EXPECT_THAT(answer, HasSubstr("{\"Location\":\"" + dn + "/webhdfs/v1/a?op=CREATE&user.name=bob&namenoderpcaddress=" +
                                rpc + "&createflag=&createparent=true&overwrite=false\"}"));

  request = "GET /webhdfs/v1/?op=GETFILESTATUS HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  EXPECT_THAT(RawExchange(hdfs_->namenode_http_port(), request), StartsWith("HTTP/1.1 401 "));
  request = "GET /webhdfs/v1/?op=MKDIRS&user.name=bob HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  EXPECT_THAT(RawExchange(hdfs_->namenode_http_port(), request),
              AllOf(StartsWith("HTTP/1.1 400 "), HasSubstr("GetOpParam.Op.MKDIRS")));
  EXPECT_NE(hdfs_->default_fs(), "hdfs://127.0.0.1:" + std::to_string(hdfs_->namenode_http_port()));
}

// The DataNode sends "100 Continue" unasked, reads a chunked body too, and closes.
TEST_F(FakeHdfsTest, DataNodeTakesChunkedBodiesAndContinuesUnasked) {
  std::string request = "PUT /webhdfs/v1/tmp/c.txt?op=CREATE&user.name=bob&namenoderpcaddress=x"
                        "&createflag=&createparent=true&overwrite=true HTTP/1.1\r\nHost: x\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7\r\n chunks\r\n0\r\n\r\n";
  std::string answer = RawExchange(hdfs_->datanode_http_port(), request);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nLocation: " +
                                 hdfs_->default_fs() + "/tmp/c.txt\r\n"));
  EXPECT_THAT(answer, HasSubstr("Connection: close\r\n"));
  EXPECT_EQ(ReadFile(hdfs_->LocalPath("/tmp/c.txt")).value_or(""), "hello chunks");
  EXPECT_EQ(hdfs_->Stat("/tmp/c.txt")->owner, "bob");

  request = "GET /webhdfs/v1/tmp/c.txt?op=OPEN&user.name=bob&namenoderpcaddress=x&offset=6 HTTP/1.1\r\n"
            "Host: x\r\n\r\n";
  answer = RawExchange(hdfs_->datanode_http_port(), request);
  EXPECT_THAT(answer, AllOf(StartsWith("HTTP/1.1 200 OK\r\n"), HasSubstr("Content-Length: 6\r\n")));
  EXPECT_THAT(answer, ::testing::EndsWith("\r\n\r\nchunks"));
}

TEST_F(FakeHdfsTest, StoppedMeansUnavailable) {
  hdfs_->Stop();
  EXPECT_STATUS(client_->GetFileStatus("/"), kUnavailable, HasSubstr("127.0.0.1"));
  hdfs_->Stop();  // idempotent
}

}  // namespace
}  // namespace loom::yarn_double
