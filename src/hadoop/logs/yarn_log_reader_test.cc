// YarnLogReader's choice between the NodeManager and the aggregated logs, against a scripted
// HTTP server that answers as the recorded NodeManager (nm-web/, log-aggregation/tfile-http-0*)
// and NameNode (log-aggregation/*-LISTSTATUS-*) did, and serves the recorded aggregated files
// for WebHDFS OPEN (whole or a range, as HttpFS does, without the DataNode redirect).
// The same reader against the YARN test double is in tests/yarn_double/yarn_double_logs_test.cc.

#include "hadoop/logs/yarn_log_reader.h"

#include <unistd.h>

#include <optional>

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

std::string FileNotFound(const std::string& path) {
  return testing::HttpAnswer("404 Not Found", "application/json",
                    "{\"RemoteException\":{\"exception\":\"FileNotFoundException\",\"javaClassName\":"
                    "\"java.io.FileNotFoundException\",\"message\":\"File " + path + " does not exist.\"}}");
}

// The NM's answer with a file's bytes, as in nm-web/04.
std::string NmAnswer(const std::string& cid, const std::string& file, const std::string& bytes, int64_t length,
                     bool running) {
  return testing::HttpAnswer("200 OK", "text/plain;charset=utf-8", NmWrapped(cid, file, bytes, length, running));
}

constexpr char kTApp[] = "application_1795374029814_0002";
constexpr char kTCid[] = "container_1795374029814_0002_01_000002";
constexpr char kTDir[] = "/tmp/logs/root/bucket-logs-tfile/0002/application_1795374029814_0002";
constexpr char kIApp[] = "application_1795374306301_0001";
constexpr char kIDir[] = "/tmp/logs/root/bucket-logs-ifile/0001/application_1795374306301_0001";

// A NameNode holding the two recorded aggregated files at their recorded paths.
std::string NameNode(const testing::HttpRequest& r) {
  const std::string prefix = "/webhdfs/v1";
  std::string path = r.path.substr(prefix.size());
  std::string op = r.query.count("op") ? r.query.at("op") : "";
  if (op == "LISTSTATUS" && path == kTDir) return ReadCapture("log-aggregation/tfile-http-08-nn-9870-LISTSTATUS-app-dir.s2c.bin");
  if (op == "LISTSTATUS" && path == kIDir) return ReadCapture("log-aggregation/ifile-http-03-nn-9870-LISTSTATUS-app-dir.s2c.bin");
  if (op == "OPEN" && (path == std::string(kTDir) + "/localhost_45454" || path == std::string(kIDir) + "/localhost_45454")) {
    std::string bytes = ReadCapture(path == std::string(kTDir) + "/localhost_45454" ? "log-aggregation/tfile-localhost_45454.bin"
                                                                                 : "log-aggregation/ifile-localhost_45454.bin");
    int64_t offset = r.query.count("offset") ? ParseInt(r.query.at("offset")).value_or(0) : 0;
    int64_t length = r.query.count("length") ? ParseInt(r.query.at("length")).value_or(-1) : -1;
    std::string part = bytes.substr(static_cast<size_t>(offset), length < 0 ? std::string::npos : static_cast<size_t>(length));
    return testing::HttpAnswer("200 OK", "application/octet-stream", part);
  }
  return FileNotFound(path);
}

class YarnLogReaderTest : public ::testing::Test {
 protected:
  // WebHDFS is the NameNode of the recordings; the NodeManager's answers are scripted (Nm).
  YarnLogReaderTest()
      : server_({""}, [](const testing::HttpRequest& r) -> std::optional<std::string> {
          if (StartsWith(r.path, "/webhdfs/v1/")) return NameNode(r);
          return std::nullopt;
        }) {
    conf_.conf_dir = "/etc/hadoop";
    conf_.log_aggregation_enable = true;
    conf_.nm_webapp = HostPort{"0.0.0.0", 8042};
  }
  void Nm(std::string answer) { server_.Answer(std::move(answer)); }
  YarnLogReader Reader() { return YarnLogReader(conf_, "root", WebHdfs("http://" + server_.address(), "root")); }
  ContainerLogLocation Where(const std::string& cid) { return {cid, "localhost:45454", server_.address()}; }
  std::vector<std::string> NmTargets() {
    std::vector<std::string> out;
    for (const testing::HttpRequest& r : server_.Requests()) {
      if (StartsWith(r.target, "/ws/")) out.push_back(r.target);
    }
    return out;
  }

  testing::ScriptedHttpServer server_;
  HadoopConf conf_ = RecordedLogsConf();
};

TEST_F(YarnLogReaderTest, RunningContainerFromTheNodeManager) {
  YarnLogReader reader = Reader();
  const std::string cid = "container_1795372454004_0017_01_000002";
  Nm(ReadCapture("nm-web/04-nm-8042-running-containerlogs-stdout.s2c.bin"));
  Result<std::string> all = reader.Read("application_1795372454004_0017", Where(cid), "stdout");
  ASSERT_OK(all);
  EXPECT_EQ(*all, "out-line\n");
  // Following from byte 4: one request for the tail, no whole-file read.
  Nm(NmAnswer(cid, "stdout", "out-line\nmore\n", 14, true));
  Result<LogChunk> next = reader.ReadFrom("application_1795372454004_0017", Where(cid), "stdout", 9);
  ASSERT_OK(next);
  EXPECT_EQ(next->bytes, "more\n");
  EXPECT_EQ(next->offset, 9);
  EXPECT_EQ(next->file_length, 14);
  EXPECT_EQ(next->source, LogSource::kNodeManager);
  EXPECT_FALSE(next->complete);
  EXPECT_THAT(NmTargets(), ElementsAre("/ws/v1/node/containerlogs/" + cid + "/stdout?user.name=root",
                                       "/ws/v1/node/containerlogs/" + cid + "/stdout?size=-65536&user.name=root"));
}

TEST_F(YarnLogReaderTest, FollowingPastTheTailWindowReadsTheWholeFile) {
  YarnLogReader reader = Reader();
  reader.set_tail_window_for_test(3);
  const std::string cid = "container_1795372454004_0017_01_000002";
  Nm(NmAnswer(cid, "stdout", "ne\n", 9, false));  // the last 3 bytes: not back to byte 2
  Nm(NmAnswer(cid, "stdout", "out-line\n", 9, false));
  Result<LogChunk> next = reader.ReadFrom("application_1795372454004_0017", Where(cid), "stdout", 2);
  ASSERT_OK(next);
  EXPECT_EQ(next->bytes, "t-line\n");
  EXPECT_EQ(next->offset, 2);
  EXPECT_TRUE(next->complete);  // the container no longer runs
  EXPECT_EQ(NmTargets().size(), 2u);
  // A file now shorter than the offset (replaced): everything, from 0.
  server_.ClearRequests();
  Nm(NmAnswer(cid, "stdout", "ew\n", 4, true));  // the tail misses the first byte: a whole read follows
  Nm(NmAnswer(cid, "stdout", "new\n", 4, true));
  next = reader.ReadFrom("application_1795372454004_0017", Where(cid), "stdout", 100);
  ASSERT_OK(next);
  EXPECT_EQ(next->offset, 0);
  EXPECT_EQ(next->bytes, "new\n");
  EXPECT_FALSE(next->complete);
  EXPECT_EQ(NmTargets().size(), 2u);
}

TEST_F(YarnLogReaderTest, AggregatedTFileOnceTheNodeManagerForgetsTheContainer) {
  YarnLogReader reader = Reader();
  Nm(ReadCapture("log-aggregation/tfile-http-04-nm-8042-containerlogs-stdout-after-aggregation.s2c.bin"));
  Result<LogChunk> c = reader.ReadFrom(kTApp, Where(kTCid), "stdout", 0);
  ASSERT_OK(c);
  EXPECT_EQ(c->bytes, std::string("stdout line 1 from ") + kTCid + "\nstdout line 2\n");
  EXPECT_EQ(c->source, LogSource::kAggregated);
  EXPECT_TRUE(c->complete);
  // The list: the NM answers 500 Unknown container, the aggregated file has the names.
  Nm(ReadCapture("log-aggregation/tfile-http-03-nm-8042-container-logs-after-aggregation.s2c.bin"));
  Result<std::vector<std::string>> names = reader.List(kTApp, Where(kTCid));
  ASSERT_OK(names);
  EXPECT_THAT(*names, ElementsAre("directory.info", "launch_container.sh", "prelaunch.err", "prelaunch.out", "stderr", "stdout"));
  // No NodeManager to ask: straight to HDFS.
  Result<std::string> am = reader.Read(kTApp, {"container_1795374029814_0002_01_000001", "", ""}, "AppMaster.stdout");
  ASSERT_OK(am);
  EXPECT_EQ(*am, "");
  // No web address: the NodeManager is asked at <NodeId host>:<port of yarn.nodemanager.webapp.address>.
  conf_.nm_webapp.port = std::stoi(server_.address().substr(server_.address().find(':') + 1));
  YarnLogReader derived = Reader();
  server_.ClearRequests();
  Nm(ReadCapture("log-aggregation/tfile-http-04-nm-8042-containerlogs-stdout-after-aggregation.s2c.bin"));
  am = derived.Read(kTApp, {"container_1795374029814_0002_01_000001", "localhost:45454", ""}, "AppMaster.stderr");
  ASSERT_OK(am);
  EXPECT_EQ(am->size(), 5729u);
  EXPECT_EQ(NmTargets().size(), 1u);
}

TEST_F(YarnLogReaderTest, AggregatedIFile) {
  conf_.log_aggregation_file_formats = {"IFile"};
  YarnLogReader reader = Reader();
  Nm(ReadCapture("nm-web/24-nm-8042-never-existed-containerlogs-stdout.s2c.bin"));
  Result<std::string> err = reader.Read(kIApp, Where("container_1795374306301_0001_01_000003"), "stderr");
  ASSERT_OK(err);
  EXPECT_EQ(*err, "stderr line from container_1795374306301_0001_01_000003\n");
}

TEST_F(YarnLogReaderTest, LargeIFileIsReadInPieces) {
  AggregatedLogs logs(conf_, "root", WebHdfs("http://" + server_.address(), "root"));
  logs.set_whole_file_limit_for_test(1000);
  Result<AggregatedLog> a = logs.Read(kIApp, "localhost:45454", "container_1795374306301_0001_01_000002", "stdout");
  ASSERT_OK(a);
  EXPECT_EQ(a->bytes, "stdout line 1 from container_1795374306301_0001_01_000002\nstdout line 2\n");
  EXPECT_EQ(a->mtime_ms, 1795374325226);
  std::vector<std::string> opens;
  for (const testing::HttpRequest& r : server_.Requests()) {
    const std::string& t = r.target;
    if (t.find("op=OPEN") == std::string::npos) continue;
    size_t range = t.find("&offset");
    opens.push_back(t.substr(range != std::string::npos ? range : t.find("&length")));
  }
  // head id, trailer, index, the one log.
  EXPECT_THAT(opens, ElementsAre("&length=32", "&offset=25647&length=36", "&offset=23509&length=2138",
                                 "&offset=16600&length=72"));
  // A second read uses the cached index: a listing and the log, nothing else.
  int64_t before = logs.requests_for_test();
  ASSERT_OK(logs.Read(kIApp, "localhost:45454", "container_1795374306301_0001_01_000002", "stderr"));
  EXPECT_EQ(logs.requests_for_test() - before, 2);
}

TEST_F(YarnLogReaderTest, NotFoundSaysWhy) {
  YarnLogReader reader = Reader();
  // No such file on a container the NM serves: the files it has are named.
  Nm(ReadCapture("nm-web/09-nm-8042-running-containerlogs-nosuchfile.s2c.bin"));
  Nm(ReadCapture("nm-web/02-nm-8042-running-container-logs-json.s2c.bin"));
  EXPECT_STATUS(reader.Read("application_1795372454004_0017", Where("container_1795372454004_0017_01_000002"), "nosuchfile"),
                kNotFound, HasSubstr("(it has: launch_container.sh, prelaunch.err, stderr, directory.info"));
  // Unknown to the NM, and HDFS has nothing: aggregation on -> "not uploaded yet".
  Nm(ReadCapture("nm-web/24-nm-8042-never-existed-containerlogs-stdout.s2c.bin"));
  EXPECT_STATUS(reader.Read("application_1795372454004_9999", Where("container_1795372454004_9999_01_000001"), "stdout"),
                kNotFound,
                ::testing::AllOf(HasSubstr("no longer serves"), HasSubstr("once it has uploaded them"),
                                 HasSubstr("no aggregated logs of application_1795372454004_9999 in HDFS"),
                                 HasSubstr("/tmp/logs/root/bucket-logs-tfile/9999/application_1795372454004_9999")));
  // ... aggregation off -> "the NM deleted them".
  conf_.log_aggregation_enable = false;
  YarnLogReader off = Reader();
  Nm(ReadCapture("nm-web/24-nm-8042-never-existed-containerlogs-stdout.s2c.bin"));
  EXPECT_STATUS(off.Read("application_1795372454004_9999", Where("container_1795372454004_9999_01_000001"), "stdout"),
                kNotFound, HasSubstr("log aggregation is off (yarn.log-aggregation-enable is not true in /etc/hadoop/yarn-site.xml)"));
  // In HDFS, but not that file.
  Nm(ReadCapture("log-aggregation/tfile-http-04-nm-8042-containerlogs-stdout-after-aggregation.s2c.bin"));
  EXPECT_STATUS(reader.Read(kTApp, Where(kTCid), "am.log"), kNotFound,
                HasSubstr("has no log file 'am.log' in the aggregated logs (it has: directory.info"));
  // A node that has no aggregated file.
  Nm(ReadCapture("log-aggregation/tfile-http-04-nm-8042-containerlogs-stdout-after-aggregation.s2c.bin"));
  EXPECT_STATUS(reader.Read(kTApp, {kTCid, "otherhost:45454", server_.address()}, "stdout"), kNotFound,
                HasSubstr("no file for node otherhost:45454 (there are: localhost_45454)"));
  EXPECT_STATUS(reader.Read(kTApp, Where(""), "stdout"), kInvalidArgument, HasSubstr("no container id"));
  EXPECT_STATUS(reader.Read(kTApp, Where(kTCid), "../x"), kInvalidArgument, HasSubstr("not a log file name"));
}

TEST_F(YarnLogReaderTest, UnreachableNodeManager) {
  YarnLogReader reader = Reader();
  std::string dead = "127.0.0.1:" + std::to_string(testing::ClosedLoopbackPort());
  // Its logs are in HDFS: read from there.
  Result<std::string> out = reader.Read(kTApp, {kTCid, "localhost:45454", dead}, "stderr");
  ASSERT_OK(out);
  EXPECT_EQ(*out, std::string("stderr line from ") + kTCid + "\n");
  // Not in HDFS either: retryable, and both reasons are given.
  EXPECT_STATUS(reader.Read("application_1795372454004_0017", {"container_1795372454004_0017_01_000002", "", dead}, "stdout"),
                kUnavailable, ::testing::AllOf(HasSubstr("NodeManager " + dead), HasSubstr("and from HDFS: no aggregated logs")));
}

}  // namespace
}  // namespace loom::hadoop
