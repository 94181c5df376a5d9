// NmWebLogs against the bytes a real Hadoop 3.3.6 NodeManager sent (tests/data/yarn-captures/
// nm-web/ and log-aggregation/tfile-http-0*): the scripted HTTP server replays each recorded
// answer (headers, chunked body and all) and keeps the request line, which is compared with
// the one curl sent to the real NodeManager.

#include "hadoop/logs/nm_web_logs.h"

#include <unistd.h>

#include "core/files.h"
#include "core/strings.h"
#include "core/testing.h"
#include "hadoop/logs/logs_test_util.h"
#include "hadoop/testing/captures.h"
#include "hadoop/testing/scripted_http_server.h"
#include "hadoop/testing/test_socket.h"

namespace loom::hadoop {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ReadCapture;

const std::string kCid = "container_1795372454004_0017_01_000002";

// The request line of a recorded c2s file, e.g. "GET /ws/v1/node/... HTTP/1.1".
std::string RecordedRequestLine(const std::string& c2s) {
  std::string bytes = ReadCapture(c2s);
  return bytes.substr(0, bytes.find("\r\n"));
}

// The request line of each request the server got since the last call.
std::vector<std::string> RequestLines(testing::ScriptedHttpServer& server) {
  std::vector<std::string> out;
  for (const testing::HttpRequest& r : server.TakeRequests()) out.push_back(r.line);
  return out;
}

class NmWebLogsReplay : public ::testing::Test {
 protected:
  // `stem` under nm-web/: replays its s2c for one ReadLog and checks our request line
  // against its c2s.
  NmLogContent Read(const std::string& stem, const std::string& cid, const std::string& file,
                    std::optional<int64_t> size) {
    server_.Answer(ReadCapture(stem + ".s2c.bin"));
    Result<NmLogContent> got = client_.ReadLog(cid, file, size);
    EXPECT_OK(got);
    EXPECT_THAT(RequestLines(server_), ElementsAre(RecordedRequestLine(stem + ".c2s.bin")));
    return got.ok() ? *got : NmLogContent{};
  }

  testing::ScriptedHttpServer server_;
  NmWebLogs client_{server_.address(), ""};
};

TEST_F(NmWebLogsReplay, RunningContainerWholeFiles) {
  NmLogContent out = Read("nm-web/04-nm-8042-running-containerlogs-stdout", kCid, "stdout", std::nullopt);
  EXPECT_EQ(out.answer, NmLogAnswer::kServed);
  EXPECT_EQ(out.bytes, "out-line\n");
  EXPECT_EQ(out.file_length, 9);
  EXPECT_TRUE(out.container_running);
  EXPECT_EQ(out.last_modified, "Sun Nov 22 18:46:25 +0000 2026");
  out = Read("nm-web/05-nm-8042-running-containerlogs-stderr", kCid, "stderr", std::nullopt);
  EXPECT_EQ(out.bytes, "err-line\n");
  EXPECT_TRUE(out.container_running);
}

TEST_F(NmWebLogsReplay, PartialReads) {
  NmLogContent out = Read("nm-web/06-nm-8042-running-containerlogs-stdout-size-minus4", kCid, "stdout", -4);
  EXPECT_EQ(out.bytes, "ine\n");
  EXPECT_EQ(out.file_length, 9);  // LogLength is the whole file's
  // The first 4 bytes run straight into "End of LogType": nothing separates them.
  out = Read("nm-web/07-nm-8042-running-containerlogs-stdout-size-4", kCid, "stdout", 4);
  EXPECT_EQ(out.bytes, "out-");
  out = Read("nm-web/08-nm-8042-running-containerlogs-stderr-size-minus100", kCid, "stderr", -100);
  EXPECT_EQ(out.bytes, "err-line\n");
  out = Read("nm-web/18-nm-8042-finished-containerlogs-stdout-size-minus4", kCid, "stdout", -4);
  EXPECT_EQ(out.bytes, "ine\n");
  EXPECT_FALSE(out.container_running);
  out = Read("nm-web/19-nm-8042-finished-containerlogs-stdout-size-4", kCid, "stdout", 4);
  EXPECT_EQ(out.bytes, "out-");
  EXPECT_FALSE(out.container_running);
}

TEST_F(NmWebLogsReplay, FinishedAndLateContainers) {
  NmLogContent out = Read("nm-web/16-nm-8042-finished-containerlogs-stdout", kCid, "stdout", std::nullopt);
  EXPECT_EQ(out.bytes, "out-line\n");
  EXPECT_FALSE(out.container_running);
  out = Read("nm-web/17-nm-8042-finished-containerlogs-stderr", kCid, "stderr", std::nullopt);
  EXPECT_EQ(out.bytes, "err-line\n");
  out = Read("nm-web/30-nm-8042-late-containerlogs-stdout", kCid, "stdout", std::nullopt);
  EXPECT_EQ(out.bytes, "out-line\n");
  EXPECT_FALSE(out.container_running);
}

TEST_F(NmWebLogsReplay, NoSuchFileIsNotAnUnknownContainer) {
  NmLogContent out = Read("nm-web/09-nm-8042-running-containerlogs-nosuchfile", kCid, "nosuchfile", std::nullopt);
  EXPECT_EQ(out.answer, NmLogAnswer::kNoSuchFile);
  EXPECT_THAT(out.message, HasSubstr("Cannot find this log on the local disk"));
}

TEST_F(NmWebLogsReplay, UnknownContainer) {
  NmLogContent out = Read("nm-web/24-nm-8042-never-existed-containerlogs-stdout",
                          "container_1795372454004_9999_01_000001", "stdout", std::nullopt);
  EXPECT_EQ(out.answer, NmLogAnswer::kUnknownContainer);
  EXPECT_THAT(out.message, HasSubstr("Unknown container"));
  // Once the logs are aggregated, the NM says the same of a container it ran (404 text).
  out = Read("log-aggregation/tfile-http-04-nm-8042-containerlogs-stdout-after-aggregation",
             "container_1795374029814_0002_01_000002", "stdout", std::nullopt);
  EXPECT_EQ(out.answer, NmLogAnswer::kUnknownContainer);
}

TEST_F(NmWebLogsReplay, Lists) {
  for (const char* stem : {"nm-web/02-nm-8042-running-container-logs-json", "nm-web/14-nm-8042-finished-container-logs-json",
                           "nm-web/29-nm-8042-late-container-logs-json"}) {
    SCOPED_TRACE(stem);
    server_.Answer(ReadCapture(std::string(stem) + ".s2c.bin"));
    Result<NmLogListing> list = client_.ListLogs(kCid);
    ASSERT_OK(list);
    std::vector<testing::HttpRequest> got = server_.TakeRequests();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].line, RecordedRequestLine(std::string(stem) + ".c2s.bin"));
    EXPECT_EQ(got[0].headers["accept"], "application/json");
    EXPECT_EQ(list->answer, NmLogAnswer::kServed);
    std::vector<std::string> names;
    for (const NmLogFileInfo& f : list->files) names.push_back(f.name);
    // Directory order, as sent; fileSize is a JSON string.
    EXPECT_THAT(names, ElementsAre("launch_container.sh", "prelaunch.err", "stderr", "directory.info",
                                   "prelaunch.out", "stdout"));
    EXPECT_EQ(list->files[0].length, 3787);
    EXPECT_EQ(list->files[5].length, 9);
    EXPECT_EQ(list->files[5].last_modified, "Sun Nov 22 18:46:25 +0000 2026");
    EXPECT_FALSE(list->files[5].aggregated);
  }
}

TEST_F(NmWebLogsReplay, ListOfAnUnknownContainer) {
  // 23: a container that never existed (500); tfile-http-03: one whose logs were aggregated.
  for (const char* s2c : {"nm-web/23-nm-8042-never-existed-container-logs.s2c.bin",
                          "log-aggregation/tfile-http-03-nm-8042-container-logs-after-aggregation.s2c.bin",
                          // 22 is containers/{cid} (404 NotFoundException); a list answered so
                          // also means the NM does not have it.
                          "nm-web/22-nm-8042-never-existed-container.s2c.bin"}) {
    SCOPED_TRACE(s2c);
    server_.Answer(ReadCapture(s2c));
    Result<NmLogListing> list = client_.ListLogs("container_1795372454004_9999_01_000001");
    ASSERT_OK(list);
    server_.TakeRequests();
    EXPECT_EQ(list->answer, NmLogAnswer::kUnknownContainer);
    EXPECT_THAT(list->message, ::testing::AnyOf(HasSubstr("Unknown container"), HasSubstr("not found")));
  }
}

TEST_F(NmWebLogsReplay, BadContainerIdIsInvalidArgument) {
  // 27: the NM's 400 BadRequestException for "container_bogus".
  server_.Answer(ReadCapture("nm-web/27-nm-8042-malformed-container-id.s2c.bin"));
  EXPECT_STATUS(client_.ReadLog("container_bogus", "stdout"), kInvalidArgument,
                HasSubstr("invalid container id, container_bogus"));
  server_.Answer(ReadCapture("nm-web/27-nm-8042-malformed-container-id.s2c.bin"));
  EXPECT_STATUS(client_.ListLogs("container_bogus"), kInvalidArgument, HasSubstr("invalid container id"));
  EXPECT_EQ(server_.TakeRequests().size(), 2u);
}

TEST_F(NmWebLogsReplay, UserNameAndEscaping) {
  NmWebLogs with_user(server_.address(), "alice b");
  std::string body = NmWrapped(kCid, "std out", "", 9, true);
  server_.Answer(testing::HttpAnswer("200 OK", "text/plain;charset=utf-8", body));
  Result<NmLogContent> out = with_user.ReadLog(kCid, "std out", 0);
  ASSERT_OK(out);
  EXPECT_EQ(out->file_length, 9);
  EXPECT_EQ(out->bytes, "");
  EXPECT_THAT(RequestLines(server_),
              ElementsAre("GET /ws/v1/node/containerlogs/" + kCid + "/std%20out?size=0&user.name=alice%20b HTTP/1.1"));
}

TEST(NmWebLogs, UnreachableNodeManager) {
  NmWebLogs client("127.0.0.1:" + std::to_string(testing::ClosedLoopbackPort()), "");
  EXPECT_STATUS(client.ReadLog(kCid, "stdout"), kUnavailable, HasSubstr("NodeManager 127.0.0.1:"));
  EXPECT_STATUS(client.ListLogs(kCid), kUnavailable, HasSubstr("NodeManager 127.0.0.1:"));
  EXPECT_STATUS(NmWebLogs("no-port", "").ReadLog(kCid, "stdout"), kInvalidArgument, HasSubstr("not host:port"));
}

// ---- the wrapper, without HTTP ---------------------------------------------------------------

TEST(NmWebLogsParse, LongNamesAndBytesThatLookLikeTheWrapper) {
  // A file whose content contains the trailer's words: the length, not a search, finds the end.
  std::string tricky = "x\nEnd of LogType:launch_container.sh.\n" + std::string(84, '*') + "\n\nmore";
  Result<NmLogContent> r = ParseContainerLogsAnswer(
      200, NmWrapped(kCid, "launch_container.sh", tricky, static_cast<int64_t>(tricky.size()), false), "", kCid,
      "launch_container.sh", std::nullopt);
  ASSERT_OK(r);
  EXPECT_EQ(r->bytes, tricky);
  // A rolling upload's aggregated part after the trailer is left out.
  std::string with_more = NmWrapped(kCid, "stdout", "ab", 2, true) + "Container: " + kCid + " on localhost_45454\n...";
  r = ParseContainerLogsAnswer(200, with_more, "", kCid, "stdout", std::nullopt);
  ASSERT_OK(r);
  EXPECT_EQ(r->bytes, "ab");
  EXPECT_TRUE(r->container_running);
  // size=0: nothing but the length.
  r = ParseContainerLogsAnswer(200, NmWrapped(kCid, "stdout", "", 12345, true), "", kCid, "stdout", 0);
  ASSERT_OK(r);
  EXPECT_EQ(r->bytes, "");
  EXPECT_EQ(r->file_length, 12345);
}

TEST(NmWebLogsParse, BrokenAnswers) {
  // The file shrank between the NM's stat and its read: fewer bytes than LogLength.
  EXPECT_STATUS(ParseContainerLogsAnswer(200, NmWrapped(kCid, "stdout", "abc", 5, false), "", kCid, "stdout", std::nullopt),
                kUnavailable, HasSubstr("did not end where LogLength said"));
  std::string cut = NmWrapped(kCid, "stdout", "abcdef", 6, false);
  EXPECT_STATUS(ParseContainerLogsAnswer(200, cut.substr(0, cut.size() - 60), "", kCid, "stdout", std::nullopt),
                kInternal, HasSubstr("trailer"));
  EXPECT_STATUS(ParseContainerLogsAnswer(200, NmWrapped(kCid, "stderr", "a", 1, false), "", kCid, "stdout", std::nullopt),
                kInternal, HasSubstr("LogType"));
  EXPECT_STATUS(ParseContainerLogsAnswer(503, "busy", "", kCid, "stdout", std::nullopt), kUnavailable, HasSubstr("503"));
  EXPECT_STATUS(ParseContainerLogsAnswer(403, "no", "", kCid, "stdout", std::nullopt), kPermissionDenied, HasSubstr("403"));
  // A NodeManager configured with yarn.log.server.url redirects (307) once it lost the container.
  Result<NmLogContent> r = ParseContainerLogsAnswer(307, "", "http://jhs:19888/ws/v1/...", kCid, "stdout", std::nullopt);
  ASSERT_OK(r);
  EXPECT_EQ(r->answer, NmLogAnswer::kUnknownContainer);
  EXPECT_THAT(r->message, HasSubstr("jhs:19888"));
  // Pre-2.9 NodeManagers sent the bytes alone.
  r = ParseContainerLogsAnswer(200, "raw bytes\n", "", kCid, "stdout", std::nullopt);
  ASSERT_OK(r);
  EXPECT_EQ(r->bytes, "raw bytes\n");
  EXPECT_STATUS(ParseLogListAnswer(200, "{\"nope\":1}", ""), kInternal, HasSubstr("not the expected JSON"));
  // One file and several infos (local + aggregated) come as an object / an array.
  Result<NmLogListing> list = ParseLogListAnswer(
      200,
      "{\"containerLogsInfo\":[{\"containerLogInfo\":{\"fileName\":\"stdout\",\"fileSize\":3,\"lastModifiedTime\":\"t\"},"
      "\"logAggregationType\":\"LOCAL\"},{\"containerLogInfo\":[{\"fileName\":\"stdout\",\"fileSize\":\"7\"}],"
      "\"logAggregationType\":\"AGGREGATED\"}]}",
      "");
  ASSERT_OK(list);
  ASSERT_EQ(list->files.size(), 2u);
  EXPECT_EQ(list->files[0].length, 3);
  EXPECT_FALSE(list->files[0].aggregated);
  EXPECT_EQ(list->files[1].length, 7);
  EXPECT_TRUE(list->files[1].aggregated);
}

}  // namespace
}  // namespace loom::hadoop
