// WebHdfs against the bytes a real Hadoop 3.3.6 NameNode (Jetty) and DataNode (Netty) sent
// (tests/data/yarn-captures/webhdfs/). The scripted HTTP server replays each recorded
// answer on a NameNode or DataNode port and keeps the request it got, which is compared with
// the request curl sent to the real cluster.

#include "hadoop/hdfs/webhdfs.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/strings.h"
#include "core/testing.h"
#include "hadoop/testing/captures.h"
#include "hadoop/testing/scripted_http_server.h"

namespace loom::hadoop {
namespace {

using ::testing::HasSubstr;
using testing::HttpAnswer;
using testing::HttpRequest;
using testing::ParseHttpHead;
using testing::ScriptedHttpServer;

// A file of the recordings under webhdfs/.
std::string Capture(const std::string& name) { return testing::ReadCapture("webhdfs/" + name); }

// A recorded c2s file: head, then the body.
HttpRequest ParseRecorded(const std::string& c2s) {
  size_t end = c2s.find("\r\n\r\n");
  HttpRequest r = ParseHttpHead(c2s.substr(0, end));
  r.body = c2s.substr(end + 4);
  return r;
}

// The recorded request's method, path, query parameters (ours may have more, e.g.
// permission=) and body.
void ExpectLikeRecorded(const HttpRequest& ours, const std::string& c2s_file) {
  SCOPED_TRACE(c2s_file);
  HttpRequest recorded = ParseRecorded(Capture(c2s_file));
  EXPECT_EQ(ours.method, recorded.method);
  EXPECT_EQ(ours.path, recorded.path);
  for (const auto& [key, value] : recorded.query) {
    auto it = ours.query.find(key);
    ASSERT_NE(it, ours.query.end()) << "no " << key << " in " << ours.target;
    EXPECT_EQ(it->second, value) << key;
  }
  EXPECT_EQ(ours.body, recorded.body);
  if (recorded.headers.count("content-type")) {
    EXPECT_EQ(ours.headers.count("content-type") ? ours.headers.at("content-type") : "",
              recorded.headers.at("content-type"));
  }
}

// A NameNode port ("nn") and a DataNode port ("dn").
class WebHdfsReplayTest : public ::testing::Test {
 protected:
  // The next connection must come to `role` and gets `s2c`, with the recorded DataNode
  // address in a redirect pointed at the "dn" port.
  void Answer(const std::string& role, std::string s2c) {
    const std::string recorded_dn = "http://127.0.0.1:9864/";
    for (size_t at; (at = s2c.find(recorded_dn)) != std::string::npos;) {
      s2c.replace(at, recorded_dn.size(), "http://" + server_.address("dn") + "/");
    }
    server_.Answer(std::move(s2c), role);
  }

  ScriptedHttpServer server_{{"nn", "dn"}};
  WebHdfs client_{"http://" + server_.address("nn"), "root"};
};

TEST_F(WebHdfsReplayTest, Mkdirs) {
  Answer("nn", Capture("01-nn-9870-MKDIRS.s2c.bin"));
  ASSERT_OK(client_.Mkdirs("/tmp/webhdfs-golden"));
  std::vector<HttpRequest> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 1u);
  ExpectLikeRecorded(got[0], "01-nn-9870-MKDIRS.c2s.bin");
  EXPECT_EQ(got[0].query["permission"], "755");
}

// Upload (a streamed local file): NameNode 307, then the bytes to the DataNode, which sends
// "100 Continue" and 201; then GETFILESTATUS supplies the length and modificationTime.
TEST_F(WebHdfsReplayTest, UploadFollowsTheRedirectWithTheBody) {
  std::string local = ::testing::TempDir() + "/webhdfs_replay_hello." + std::to_string(getpid());
  ASSERT_OK(WriteFileAtomic(local, "hello webhdfs\n"));
  Answer("nn", Capture("02-nn-9870-CREATE-step1-redirect.s2c.bin"));
  Answer("dn", Capture("03-dn-9864-CREATE-step2-data-expect100.s2c.bin"));
  Answer("nn", Capture("04-nn-9870-GETFILESTATUS.s2c.bin"));
  Result<HdfsFileStatus> status = client_.Upload(local, "/tmp/webhdfs-golden/hello.txt");
  (void)RemoveTree(local);
  ASSERT_OK(status);
  EXPECT_EQ(status->length, 14);
  EXPECT_EQ(status->modification_time, 1795263328215);
  EXPECT_EQ(status->type, "FILE");
  EXPECT_EQ(status->permission, "644");
  EXPECT_EQ(status->owner, "root");
  EXPECT_EQ(status->path_suffix, "");

  std::vector<HttpRequest> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 3u);
  ExpectLikeRecorded(got[0], "02-nn-9870-CREATE-step1-redirect.c2s.bin");
  EXPECT_EQ(got[0].query["permission"], "644");
  EXPECT_EQ(got[0].body, "");
  EXPECT_EQ(got[1].listener, "dn");
  ExpectLikeRecorded(got[1], "03-dn-9864-CREATE-step2-data-expect100.c2s.bin");
  // The DataNode request is exactly the redirect's target.
  EXPECT_EQ(got[1].target, ParseRecorded(Capture("03-dn-9864-CREATE-step2-data-expect100.c2s.bin")).target);
  ExpectLikeRecorded(got[2], "04-nn-9870-GETFILESTATUS.c2s.bin");
}

// Create (bytes in memory) against the capture where the client sent no Expect header and
// the DataNode still answered "100 Continue". The redirect is the one the NameNode gave for
// hello2.txt (capture 09, which asked for it as JSON).
TEST_F(WebHdfsReplayTest, CreateToleratesUnsolicitedContinue) {
  std::string json_body = Capture("09-nn-9870-CREATE-step1-noredirect.s2c.bin");
  json_body = json_body.substr(json_body.find("{\"Location\""));
  json_body = json_body.substr(0, json_body.find("}") + 1);
  nlohmann::json location = nlohmann::json::parse(json_body, nullptr, false);
  ASSERT_TRUE(location.is_object());
  std::string redirect = Capture("02-nn-9870-CREATE-step1-redirect.s2c.bin");
  size_t begin = redirect.find("Location: ") + 10;
  redirect.replace(begin, redirect.find("\r\n", begin) - begin, location["Location"].get<std::string>());

  Answer("nn", redirect);
  Answer("dn", Capture("10-dn-9864-CREATE-step2-data-no-expect.s2c.bin"));
  Answer("nn", Capture("04-nn-9870-GETFILESTATUS.s2c.bin"));
  Result<HdfsFileStatus> status = client_.Create("/tmp/webhdfs-golden2/hello2.txt", "hello webhdfs\n");
  ASSERT_OK(status);
  EXPECT_EQ(status->length, 14);

  std::vector<HttpRequest> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].path, "/webhdfs/v1/tmp/webhdfs-golden2/hello2.txt");
  EXPECT_EQ(got[0].query["op"], "CREATE");
  HttpRequest recorded = ParseRecorded(Capture("10-dn-9864-CREATE-step2-data-no-expect.c2s.bin"));
  ExpectLikeRecorded(got[1], "10-dn-9864-CREATE-step2-data-no-expect.c2s.bin");
  EXPECT_EQ(got[1].target, recorded.target);
  EXPECT_EQ(got[1].headers.count("expect"), 0u);
  EXPECT_EQ(got[1].headers["content-length"], "14");
  EXPECT_EQ(got[2].path, "/webhdfs/v1/tmp/webhdfs-golden2/hello2.txt");
}

TEST_F(WebHdfsReplayTest, GetFileStatus) {
  Answer("nn", Capture("04-nn-9870-GETFILESTATUS.s2c.bin"));
  Result<HdfsFileStatus> status = client_.GetFileStatus("/tmp/webhdfs-golden/hello.txt");
  ASSERT_OK(status);
  EXPECT_EQ(status->length, 14);
  EXPECT_EQ(status->modification_time, 1795263328215);
  std::vector<HttpRequest> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 1u);
  ExpectLikeRecorded(got[0], "04-nn-9870-GETFILESTATUS.c2s.bin");
}

TEST_F(WebHdfsReplayTest, ListStatus) {
  Answer("nn", Capture("05-nn-9870-LISTSTATUS.s2c.bin"));
  Result<std::vector<HdfsFileStatus>> list = client_.ListStatus("/tmp/webhdfs-golden");
  ASSERT_OK(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].path_suffix, "hello.txt");
  EXPECT_EQ((*list)[0].length, 14);
  EXPECT_EQ((*list)[0].modification_time, 1795263328215);
  EXPECT_EQ((*list)[0].type, "FILE");
  std::vector<HttpRequest> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 1u);
  ExpectLikeRecorded(got[0], "05-nn-9870-LISTSTATUS.c2s.bin");
}

TEST_F(WebHdfsReplayTest, OpenFollowsTheRedirect) {
  Answer("nn", Capture("06-nn-9870-OPEN-step1-redirect.s2c.bin"));
  Answer("dn", Capture("07-dn-9864-OPEN-step2-data.s2c.bin"));
  Result<std::string> bytes = client_.Open("/tmp/webhdfs-golden/hello.txt");
  ASSERT_OK(bytes);
  EXPECT_EQ(*bytes, "hello webhdfs\n");
  std::vector<HttpRequest> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 2u);
  ExpectLikeRecorded(got[0], "06-nn-9870-OPEN-step1-redirect.c2s.bin");
  ExpectLikeRecorded(got[1], "07-dn-9864-OPEN-step2-data.c2s.bin");
  EXPECT_EQ(got[1].listener, "dn");
}

TEST_F(WebHdfsReplayTest, DeleteRecursive) {
  Answer("nn", Capture("08-nn-9870-DELETE.s2c.bin"));
  Result<bool> deleted = client_.Delete("/tmp/webhdfs-golden", true);
  ASSERT_OK(deleted);
  EXPECT_TRUE(*deleted);
  std::vector<HttpRequest> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 1u);
  ExpectLikeRecorded(got[0], "08-nn-9870-DELETE.c2s.bin");

  Answer("nn", Capture("11-nn-9870-DELETE.s2c.bin"));
  ASSERT_OK(client_.Delete("/tmp/webhdfs-golden2", true));
  got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 1u);
  ExpectLikeRecorded(got[0], "11-nn-9870-DELETE.c2s.bin");
}

TEST_F(WebHdfsReplayTest, PathSegmentsAreEscaped) {
  Answer("nn", Capture("01-nn-9870-MKDIRS.s2c.bin"));
  ASSERT_OK(client_.Mkdirs("/tmp/a b/x%y/\xC3\xBC"));
  std::vector<HttpRequest> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].path, "/webhdfs/v1/tmp/a%20b/x%25y/%C3%BC");
}

TEST_F(WebHdfsReplayTest, FileNotFoundIsNotFound) {
  Answer("nn", HttpAnswer("404 Not Found", "application/json",
                          R"({"RemoteException":{"exception":"FileNotFoundException",)"
                          R"("javaClassName":"java.io.FileNotFoundException",)"
                          R"("message":"File does not exist: /nope"}})"));
  EXPECT_STATUS(client_.GetFileStatus("/nope"), kNotFound,
                ::testing::AllOf(HasSubstr("GETFILESTATUS"), HasSubstr("/nope"), HasSubstr("404"),
                                 HasSubstr("File does not exist: /nope")));
  (void)server_.TakeRequests();
}

// A DataNode's answer for a file deleted between the NameNode's redirect and the read carries
// the NameNode's IPC error text: the Java stack trace stays out of the message.
TEST_F(WebHdfsReplayTest, ADataNodesStackTraceIsCutFromTheMessage) {
  Answer("nn", HttpAnswer("404 Not Found", "application/json",
                          R"({"RemoteException":{"exception":"FileNotFoundException",)"
                          R"("javaClassName":"java.io.FileNotFoundException",)"
                          R"("message":"File does not exist: /h/events.jsonl\n\tat org.apache.hadoop.hdfs.)"
                          R"(server.namenode.INodeFile.valueOf(INodeFile.java:86)\n\tat org.apache.X"}})"));
  Status st = client_.GetFileStatus("/h/events.jsonl").status();
  EXPECT_STATUS(st, kNotFound, HasSubstr("File does not exist: /h/events.jsonl"));
  EXPECT_THAT(st.message(), ::testing::Not(HasSubstr("INodeFile")));
  (void)server_.TakeRequests();
}

TEST_F(WebHdfsReplayTest, OtherErrorsNameOpPathCodeAndMessage) {
  Answer("nn", HttpAnswer("403 Forbidden", "application/json",
                          R"({"RemoteException":{"exception":"AccessControlException",)"
                          R"("javaClassName":"org.apache.hadoop.security.AccessControlException",)"
                          R"("message":"Permission denied: user=root, access=WRITE"}})"));
  EXPECT_STATUS(client_.Mkdirs("/secure"), kPermissionDenied,
                ::testing::AllOf(HasSubstr("MKDIRS /secure"), HasSubstr("HTTP 403"),
                                 HasSubstr("AccessControlException: Permission denied")));
  Answer("nn", HttpAnswer("500 Server Error", "application/json", "not json"));
  EXPECT_STATUS(client_.ListStatus("/x"), kUnavailable, HasSubstr("LISTSTATUS /x: HTTP 500: not json"));
  (void)server_.TakeRequests();
}

TEST_F(WebHdfsReplayTest, MalformedJsonIsAnErrorNotACrash) {
  Answer("nn", HttpAnswer("200 OK", "application/json", R"({"FileStatus":{"length":"fourteen"}})"));
  EXPECT_STATUS(client_.GetFileStatus("/x"), kInternal, HasSubstr("GETFILESTATUS /x"));
  Answer("nn", HttpAnswer("200 OK", "application/json", "{"));
  EXPECT_STATUS(client_.ListStatus("/x"), kInternal, HasSubstr("LISTSTATUS /x"));
  (void)server_.TakeRequests();
}

TEST(WebHdfsClient, NothingListeningIsUnavailable) {
  WebHdfs client("http://127.0.0.1:1", "root");
  EXPECT_STATUS(client.GetFileStatus("/x"), kUnavailable, HasSubstr("127.0.0.1:1"));
  EXPECT_STATUS(client.GetFileStatus("relative"), kInvalidArgument, HasSubstr("absolute"));
}

}  // namespace
}  // namespace loom::hadoop
