// Container logs in the YARN test double, against the recordings and Loom's readers:
//   * the double's TFile and IFile writers reproduce the recorded aggregated files byte for
//     byte from their decoded contents (log-aggregation/*-localhost_45454.bin), and
//     round-trip through src/cluster/yarn/logs for contents the recordings lack (large,
//     binary, many containers);
//   * its NodeManager web server answers like the recorded one (nm-web/, tfile-http-0*) while
//     a container runs, after it ends, with log aggregation off and on;
//   * YarnLogReader, configured from the double's HADOOP_CONF_DIR, reads a container's logs
//     from the NM while it runs and from the FakeHdfs once they are aggregated.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/eventually.h"
#include "core/files.h"
#include "core/strings.h"
#include "core/testing.h"
#include "hadoop/testing/captures.h"
#include "fake_hdfs.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/ipc/yarn_clients.h"
#include "hadoop/logs/aggregated_log_file.h"
#include "hadoop/logs/nm_web_logs.h"
#include "hadoop/logs/yarn_log_reader.h"
#include "log_aggregation.h"
#include "nm_web_server.h"
#include "yarn_test_double.h"

using ::loom::testing::Eventually;
// Containers that write logs are real processes, started on NodeManager heartbeats.
constexpr std::chrono::seconds kLogWait{20};

namespace loom::yarn_double {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using hadoop::testing::ReadCapture;

// ---- the writers against the recorded files -----------------------------------------------------

// The decoded contents of a recorded file, as the double's writer takes them.
NodeLogsToAggregate FromRecorded(const hadoop::AggregatedLogFile& file, const std::string& app_id) {
  NodeLogsToAggregate logs;
  logs.app_id = app_id;
  logs.owner = file.owner;
  logs.node_id = "localhost:45454";
  for (const std::string& cid : file.ContainerIds()) {
    ContainerLogsToAggregate c;
    c.container_id = cid;
    for (const hadoop::AggregatedLogEntry& e : file.entries) {
      if (e.container_id == cid) c.files.push_back({e.file_name, e.bytes, e.mtime_ms});
    }
    logs.containers.push_back(std::move(c));
  }
  if (file.format == hadoop::AggregatedLogFormat::kIFile) {
    // The NM wrote the bytes container by container (_01, _02, _03); the index lists them
    // in HashMap order (_02, _03, _01), which the writer must find by itself.
    std::vector<std::pair<int64_t, ContainerLogsToAggregate>> by_offset;
    for (auto& c : logs.containers) {
      int64_t first = INT64_MAX;
      for (const hadoop::AggregatedLogEntry& e : file.entries) {
        if (e.container_id == c.container_id) first = std::min(first, e.offset);
      }
      by_offset.emplace_back(first, std::move(c));
    }
    std::stable_sort(by_offset.begin(), by_offset.end(), [](auto& a, auto& b) { return a.first < b.first; });
    logs.containers.clear();
    for (auto& [offset, c] : by_offset) logs.containers.push_back(std::move(c));
  }
  return logs;
}

TEST(LogAggregationWriters, TFileIsTheRecordedFile) {
  std::string recorded = ReadCapture("log-aggregation/tfile-localhost_45454.bin");
  Result<hadoop::AggregatedLogFile> file = hadoop::ParseTFileLogs(recorded);
  ASSERT_OK(file);
  std::string written = WriteTFileLogs(FromRecorded(*file, "application_1795374029814_0002"));
  ASSERT_EQ(written.size(), recorded.size());
  EXPECT_TRUE(written == recorded) << "first difference at byte "
                                   << std::mismatch(written.begin(), written.end(), recorded.begin()).first - written.begin();
}

TEST(LogAggregationWriters, IFileIsTheRecordedFile) {
  std::string recorded = ReadCapture("log-aggregation/ifile-localhost_45454.bin");
  Result<hadoop::AggregatedLogFile> file = hadoop::ParseIFileLogs(recorded);
  ASSERT_OK(file);
  NodeLogsToAggregate logs = FromRecorded(*file, "application_1795374306301_0001");
  logs.upload_time_ms = 1795374328992;  // uploadTimeStamp, ifile-localhost_45454.layout.txt
  std::string written = WriteIFileLogs(logs);
  ASSERT_EQ(written.size(), recorded.size());
  EXPECT_TRUE(written == recorded) << "first difference at byte "
                                   << std::mismatch(written.begin(), written.end(), recorded.begin()).first - written.begin();
}

// What the recordings do not have: values over TFile's 1 MiB chunk, data blocks past 256 KiB,
// more than 12 containers (the HashMap grows), binary bytes, empty files, non-ASCII names.
TEST(LogAggregationWriters, RoundTripThroughTheReaders) {
  std::mt19937 rng(42);
  NodeLogsToAggregate logs;
  logs.app_id = "application_1795374306301_0042";
  logs.owner = "al\xC3\xAF" "ce";
  logs.node_id = "node-7.example:8041";
  logs.upload_time_ms = 1795374400000;
  for (int i = 1; i <= 20; ++i) {
    ContainerLogsToAggregate c;
    char cid[64];
    std::snprintf(cid, sizeof cid, "container_e17_1795374306301_0042_01_%06d", i);
    c.container_id = cid;
    std::string big(i == 3 ? (3 << 20) + 17 : 1000 * i, '\0');
    for (char& b : big) b = static_cast<char>(rng());
    c.files.push_back({"stdout", big, 1795374300000 + i});
    c.files.push_back({"empty", "", 1795374300000});
    c.files.push_back({"r\xC3\xA9sum\xC3\xA9.log", "x\n", 1795374300001});
    logs.containers.push_back(std::move(c));
  }
  for (const bool ifile : {false, true}) {
    SCOPED_TRACE(ifile ? "IFile" : "TFile");
    std::string bytes = ifile ? WriteIFileLogs(logs) : WriteTFileLogs(logs);
    Result<hadoop::AggregatedLogFile> parsed = hadoop::ParseAggregatedLogFile(bytes);
    ASSERT_OK(parsed);
    EXPECT_EQ(parsed->format, ifile ? hadoop::AggregatedLogFormat::kIFile : hadoop::AggregatedLogFormat::kTFile);
    EXPECT_EQ(parsed->owner, logs.owner);
    ASSERT_EQ(parsed->ContainerIds().size(), 20u);
    for (const ContainerLogsToAggregate& c : logs.containers) {
      for (const LogFileToAggregate& f : c.files) {
        Result<std::string> got = parsed->Contents(c.container_id, f.name);
        ASSERT_OK(got);
        EXPECT_TRUE(*got == f.bytes) << c.container_id << "/" << f.name;
      }
    }
    if (ifile) {
      EXPECT_EQ(parsed->node_id, logs.node_id);
      for (const hadoop::AggregatedLogEntry& e : parsed->entries) {
        if (e.container_id == "container_e17_1795374306301_0042_01_000003" && e.file_name == "stdout") {
          EXPECT_EQ(e.mtime_ms, 1795374300003);
        }
      }
    } else {
      // A TFile over 256 KiB per block has several data blocks; the reader went through all.
      EXPECT_GT(bytes.size(), 3u << 20);
    }
  }
}

// ---- the double end to end ----------------------------------------------------------------------

struct HttpAnswer {
  int status = 0;
  std::string head, body;
};

// Splits a raw HTTP/1.1 response and undoes chunked transfer encoding.
HttpAnswer ParseHttp(const std::string& raw) {
  HttpAnswer a;
  size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) return a;
  a.head = raw.substr(0, head_end);
  a.status = std::atoi(raw.substr(9, 3).c_str());
  std::string body = raw.substr(head_end + 4);
  if (ToLower(a.head).find("transfer-encoding: chunked") == std::string::npos) {
    a.body = body;
    return a;
  }
  size_t at = 0;
  while (at < body.size()) {
    size_t eol = body.find("\r\n", at);
    size_t n = std::stoul(body.substr(at, eol - at), nullptr, 16);
    if (n == 0) break;
    a.body += body.substr(eol + 2, n);
    at = eol + 2 + n + 2;
  }
  return a;
}

HttpAnswer Get(int port, const std::string& target, const std::string& ip = "127.0.0.1") {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  a.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  std::string req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                    "\r\nAccept: */*\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  std::string raw;
  char buf[65536];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) raw.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return ParseHttp(raw);
}

// A recorded answer's body with the recorded container id, node and time replaced by ours.
std::string RecordedBody(const std::string& s2c, const std::vector<std::pair<std::string, std::string>>& replace) {
  std::string body = ParseHttp(ReadCapture(s2c)).body;
  for (const auto& [from, to] : replace) {
    for (size_t at; (at = body.find(from)) != std::string::npos;) body.replace(at, from.size(), to);
  }
  return body;
}

class DoubleLogsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { Start(GetParam(), 1); }
  void Start(const std::string& aggregation, int nodes) {
    work_ = std::filesystem::temp_directory_path() /
            ("yarn-double-logs-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::remove_all(work_);
    std::filesystem::create_directories(work_);
    hdfs_ = std::make_unique<FakeHdfs>(work_.string() + "/hdfs");
    ASSERT_OK(hdfs_->Start());
    YarnTestDouble::Options o;
    o.work_dir = work_.string() + "/yarn";
    o.hdfs = hdfs_.get();
    o.log_aggregation = aggregation;
    o.node_count = nodes;
    double_ = std::make_unique<YarnTestDouble>(o);
    ASSERT_OK(double_->Start());
    ASSERT_OK(double_->WriteHadoopConfDir(work_.string() + "/conf"));
    Result<hadoop::HadoopConf> conf = hadoop::HadoopConf::Load(work_.string() + "/conf");
    ASSERT_OK(conf);
    conf_ = *conf;
  }
  void TearDown() override {
    if (double_) double_->Stop();
    double_.reset();
    if (hdfs_) hdfs_->Stop();
    std::filesystem::remove_all(work_);
  }

  // An application whose AM writes "out-line\n" / "err-line\n" and exits once `go` exists
  // (without unregistering: the application FAILS, which ends it all the same).
  std::string Submit(const std::string& go) {
    hadoop::ApplicationClient rm("127.0.0.1", double_->rm_port(), "root");
    Result<::hadoop::yarn::GetNewApplicationResponseProto> na = rm.GetNewApplication();
    EXPECT_OK(na);
    ::hadoop::yarn::ApplicationSubmissionContextProto asc;
    *asc.mutable_application_id() = na->application_id();
    asc.set_application_name("logs");
    asc.set_queue("default");
    asc.mutable_resource()->set_memory(256);
    asc.mutable_resource()->set_virtual_cores(1);
    asc.mutable_am_container_spec()->add_command("{ echo out-line; echo err-line >&2; while [ ! -e " + go +
                                                 " ]; do sleep 0.05; done; } 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr");
    EXPECT_OK(rm.SubmitApplication(asc));
    return hadoop::ApplicationIdString(na->application_id());
  }

  static inline int counter_ = 0;
  std::filesystem::path work_;
  std::unique_ptr<FakeHdfs> hdfs_;
  std::unique_ptr<YarnTestDouble> double_;
  hadoop::HadoopConf conf_;
};

// A request to the NodeManager's web port, and the status and the recorded body (the recording's
// values replaced by ours) it must be answered with.
struct RecordedAnswer {
  std::string target;
  int status;
  std::string s2c;
};
void ExpectAnswersAsRecorded(int http, const std::vector<std::pair<std::string, std::string>>& replace,
                             const std::vector<RecordedAnswer>& rows) {
  for (const RecordedAnswer& row : rows) {
    SCOPED_TRACE(row.target);
    HttpAnswer a = Get(http, row.target);
    EXPECT_EQ(a.status, row.status);
    EXPECT_EQ(a.body, RecordedBody(row.s2c, replace));
  }
}

// Loom's reader of the stdout of a container that wrote "out-line\n": whole from offset 0, from
// `source`, `complete` or not; then from offset 4 (what following asks for next).
void ExpectStdoutRead(hadoop::YarnLogReader& reader, const std::string& app, const hadoop::ContainerLogLocation& where,
                      hadoop::LogSource source, bool complete) {
  Result<hadoop::LogChunk> chunk = reader.ReadFrom(app, where, "stdout", 0);
  ASSERT_OK(chunk);
  EXPECT_EQ(chunk->bytes, "out-line\n");
  EXPECT_EQ(chunk->source, source);
  EXPECT_EQ(chunk->complete, complete);
  chunk = reader.ReadFrom(app, where, "stdout", 4);
  ASSERT_OK(chunk);
  EXPECT_EQ(chunk->bytes, "line\n");
}

TEST_P(DoubleLogsTest, NodeManagerAnswersLikeTheRecordingThenAggregates) {
  const bool aggregating = !GetParam().empty();
  const std::string go = work_.string() + "/go";
  const std::string app = Submit(go);
  const std::string cid = "container_" + app.substr(12) + "_01_000001";
  const std::string node = "localhost:" + std::to_string(double_->nm_port());
  const int http = double_->nm_http_port();
  const std::string log_dir = work_.string() + "/yarn/logs/" + app + "/" + cid;
  ASSERT_TRUE(Eventually([&] { return ReadFile(log_dir + "/stderr").value_or("") == "err-line\n"; }, kLogWait));
  ASSERT_TRUE(Eventually([&] { return ReadFile(log_dir + "/stdout").value_or("") == "out-line\n"; }, kLogWait));
  EXPECT_EQ(double_->nm_http_address(), "localhost:" + std::to_string(http));
  EXPECT_EQ(conf_.nm_webapp.port, http);

  struct stat st;
  ASSERT_EQ(::stat((log_dir + "/stdout").c_str(), &st), 0);
  const std::string when = HadoopTime(int64_t{st.st_mtim.tv_sec} * 1000);
  const std::vector<std::pair<std::string, std::string>> ours = {
      {"container_1795372454004_0017_01_000002", cid},
      {"container_1795372454004_9999_01_000001", "container_" + app.substr(12, 14) + "9999_01_000001"},
      {"localhost:45454", node},
      {"Sun Nov 22 18:46:25 +0000 2026", when}};
  const std::string base = "/ws/v1/node/containerlogs/" + cid;

  // Running: the wrapper with the running note, partial reads (nm-web/04, 06, 07, 09).
  HttpAnswer a = Get(http, base + "/stdout");
  EXPECT_EQ(a.status, 200);
  EXPECT_THAT(a.head, HasSubstr("Content-Type: text/plain;charset=utf-8"));
  EXPECT_THAT(ToLower(a.head), HasSubstr("transfer-encoding: chunked"));
  EXPECT_EQ(a.body, RecordedBody("nm-web/04-nm-8042-running-containerlogs-stdout.s2c.bin", ours));
  EXPECT_EQ(Get(http, base + "/stdout?size=-4").body,
            RecordedBody("nm-web/06-nm-8042-running-containerlogs-stdout-size-minus4.s2c.bin", ours));
  EXPECT_EQ(Get(http, base + "/stdout?size=4").body,
            RecordedBody("nm-web/07-nm-8042-running-containerlogs-stdout-size-4.s2c.bin", ours));
  a = Get(http, base + "/nosuchfile");
  EXPECT_EQ(a.status, 404);
  EXPECT_EQ(a.body, RecordedBody("nm-web/09-nm-8042-running-containerlogs-nosuchfile.s2c.bin", ours));
  // The list: the recorded keys in the recorded order, fileSize a string.
  a = Get(http, "/ws/v1/node/containers/" + cid + "/logs");
  EXPECT_EQ(a.status, 200);
  nlohmann::ordered_json list = nlohmann::ordered_json::parse(a.body, nullptr, false);
  ASSERT_TRUE(list.is_object()) << a.body;
  std::vector<std::string> keys;
  for (auto& [k, v] : list["containerLogsInfo"].items()) keys.push_back(k);
  EXPECT_THAT(keys, ElementsAre("containerLogInfo", "logAggregationType", "containerId", "nodeId"));
  EXPECT_EQ(list["containerLogsInfo"]["nodeId"], node);
  bool saw_stdout = false;
  for (auto& f : list["containerLogsInfo"]["containerLogInfo"]) {
    keys.clear();
    for (auto& [k, v] : f.items()) keys.push_back(k);
    EXPECT_THAT(keys, ElementsAre("fileName", "fileSize", "lastModifiedTime"));
    if (f["fileName"] == "stdout") {
      saw_stdout = true;
      EXPECT_EQ(f["fileSize"], "9");
    }
  }
  EXPECT_TRUE(saw_stdout);
  EXPECT_EQ(Get(http, "/ws/v1/node/containers/" + cid).status, 200);
  // Never existed (22-24) and malformed (27).
  std::string never = "container_" + app.substr(12, 14) + "9999_01_000001";
  ExpectAnswersAsRecorded(http, ours,
                          {{"/ws/v1/node/containers/" + never, 404, "nm-web/22-nm-8042-never-existed-container.s2c.bin"},
                           {"/ws/v1/node/containers/" + never + "/logs", 500,
                            "nm-web/23-nm-8042-never-existed-container-logs.s2c.bin"},
                           {"/ws/v1/node/containerlogs/" + never + "/stdout", 404,
                            "nm-web/24-nm-8042-never-existed-containerlogs-stdout.s2c.bin"},
                           {"/ws/v1/node/containers/container_bogus", 400,
                            "nm-web/27-nm-8042-malformed-container-id.s2c.bin"}});

  // Loom's reader while it runs: from the NodeManager, not complete; following costs one request.
  hadoop::YarnLogReader reader(conf_, "root");
  hadoop::ContainerLogLocation where{cid, node, double_->nm_http_address()};
  ASSERT_NO_FATAL_FAILURE(ExpectStdoutRead(reader, app, where, hadoop::LogSource::kNodeManager, /*complete=*/false));

  // The end.
  ASSERT_OK(WriteFileAtomic(go, ""));
  ASSERT_OK(double_->WaitForAppEnd(app, std::chrono::seconds(20)));
  if (!aggregating) {
    // Off: the NM forgets the container (13) but serves its logs, without the running note (16).
    EXPECT_EQ(Get(http, "/ws/v1/node/containers/" + cid).status, 404);
    ASSERT_TRUE(Eventually([&] { return Get(http, base + "/stdout").body.find("running container") == std::string::npos; }, kLogWait));
    EXPECT_EQ(Get(http, base + "/stdout").body,
              RecordedBody("nm-web/16-nm-8042-finished-containerlogs-stdout.s2c.bin", ours));
    EXPECT_EQ(Get(http, base + "/stdout?size=-4").body,
              RecordedBody("nm-web/18-nm-8042-finished-containerlogs-stdout-size-minus4.s2c.bin", ours));
    Result<hadoop::LogChunk> chunk = reader.ReadFrom(app, where, "stderr", 0);
    ASSERT_OK(chunk);
    EXPECT_EQ(chunk->bytes, "err-line\n");
    EXPECT_TRUE(chunk->complete);
    EXPECT_EQ(chunk->source, hadoop::LogSource::kNodeManager);
    EXPECT_STATUS(double_->WaitForLogAggregation(app, std::chrono::milliseconds(1)), kFailedPrecondition, HasSubstr("off"));
    EXPECT_TRUE(hdfs_->ListRecursive("/tmp/logs").empty());
    return;
  }

  // On: the upload, at the recorded place with the recorded modes (README §14 fact 1) ...
  ASSERT_OK(double_->WaitForLogAggregation(app, std::chrono::seconds(20)));
  const std::string format = ToLower(GetParam());
  const std::string app_dir = "/tmp/logs/root/bucket-logs-" + format + "/0001/" + app;
  const std::string file = app_dir + "/localhost_" + std::to_string(double_->nm_port());
  EXPECT_THAT(hdfs_->ListRecursive("/tmp/logs"), ElementsAre(file));
  EXPECT_EQ(hdfs_->Stat("/tmp/logs")->permission, "1777");
  EXPECT_EQ(hdfs_->Stat("/tmp/logs/root")->permission, "770");
  EXPECT_EQ(hdfs_->Stat(app_dir)->permission, "770");
  EXPECT_EQ(hdfs_->Stat(file)->permission, "640");
  EXPECT_EQ(hdfs_->Stat(file)->owner, "root");
  // ... then the NM answers as recorded once aggregation is on (tfile-http-02..04).
  const std::vector<std::pair<std::string, std::string>> after = {{"container_1795374029814_0002_01_000002", cid}};
  ExpectAnswersAsRecorded(
      http, after,
      {{"/ws/v1/node/containers/" + cid, 404,
        "log-aggregation/tfile-http-02-nm-8042-container-after-aggregation.s2c.bin"},
       {"/ws/v1/node/containers/" + cid + "/logs", 500,
        "log-aggregation/tfile-http-03-nm-8042-container-logs-after-aggregation.s2c.bin"},
       {base + "/stdout", 404, "log-aggregation/tfile-http-04-nm-8042-containerlogs-stdout-after-aggregation.s2c.bin"}});

  // Loom's reader: the NM says "Unknown container", the FakeHdfs has the logs.
  ASSERT_NO_FATAL_FAILURE(ExpectStdoutRead(reader, app, where, hadoop::LogSource::kAggregated, /*complete=*/true));
  EXPECT_EQ(*reader.Read(app, where, "stderr"), "err-line\n");
  Result<std::vector<std::string>> names = reader.List(app, where);
  ASSERT_OK(names);
  EXPECT_THAT(*names, ::testing::IsSupersetOf({"stdout", "stderr", "launch_container.sh", "directory.info",
                                                "prelaunch.out", "prelaunch.err"}));
  EXPECT_STATUS(reader.Read(app, where, "am.log"), kNotFound, HasSubstr("has no log file 'am.log' in the aggregated logs"));
  // Without any NodeManager address (the node is gone): straight to HDFS.
  EXPECT_EQ(*reader.Read(app, {cid, "", ""}, "stdout"), "out-line\n");
  // `yarn logs`' text layout over the uploaded file.
  Result<hadoop::AggregatedLogFile> uploaded = hadoop::ParseAggregatedLogFile(*ReadFile(hdfs_->LocalPath(file)));
  ASSERT_OK(uploaded);
  EXPECT_EQ(uploaded->format, format == "ifile" ? hadoop::AggregatedLogFormat::kIFile : hadoop::AggregatedLogFormat::kTFile);
  std::string text = hadoop::RenderYarnLogs(*uploaded, hadoop::NodeFileName(node), hdfs_->Stat(file)->mtime_ms);
  std::string header = "Container: " + cid + " on " + hadoop::NodeFileName(node);
  EXPECT_THAT(text, HasSubstr(header + "\nLogAggregationType: AGGREGATED\n" + std::string(header.size(), '=') +
                              "\nLogType:stdout\n"));
  EXPECT_THAT(text, HasSubstr("\nLogLength:9\nLogContents:\nout-line\n\nEnd of LogType:stdout\n" + std::string(71, '*')));
}

// Several NodeManagers: each web server serves its own containers only, and the aggregated
// file is named after the node that ran the container.
class MultiNodeLogsTest : public DoubleLogsTest {
 protected:
  void SetUp() override { Start("TFile", 2); }
};

TEST_F(MultiNodeLogsTest, EachNodeManagerServesItsOwnContainers) {
  const std::string app = Submit(work_.string() + "/go");
  const std::string cid = "container_" + app.substr(12) + "_01_000001";
  std::optional<YarnTestDouble::ContainerInfo> am;
  ASSERT_TRUE(Eventually([&] {
    for (const auto& c : double_->Containers()) {
      if (c.id == cid && c.pid > 0) am = c;
    }
    return am.has_value() && ReadFile(am->log_dir + "/stdout").value_or("") == "out-line\n";
  }, kLogWait));
  // Every node's web address, from the RM's node reports (NodeReportProto.httpaddress).
  hadoop::ApplicationClient rm("127.0.0.1", double_->rm_port(), "root");
  Result<std::vector<::hadoop::yarn::NodeReportProto>> nodes = rm.GetClusterNodes();
  ASSERT_OK(nodes);
  ASSERT_EQ(nodes->size(), 2u);
  std::string am_http;
  for (const auto& n : *nodes) {
    std::string http = n.httpaddress();
    std::string ip = n.nodeid().host() == "localhost" ? "127.0.0.1" : n.nodeid().host();
    int port = std::stoi(http.substr(http.rfind(':') + 1));
    HttpAnswer a = Get(port, "/ws/v1/node/containerlogs/" + cid + "/stdout", ip);
    if (hadoop::NodeIdString(n.nodeid()) == am->node_id) {
      am_http = http;
      EXPECT_EQ(a.status, 200);
      EXPECT_THAT(a.body, HasSubstr("Container: " + cid + " on " + am->node_id + "\n"));
    } else {
      EXPECT_EQ(a.status, 404);  // "doesn't belong to this node at all"
      EXPECT_THAT(a.body, HasSubstr("Unknown container"));
    }
  }
  ASSERT_FALSE(am_http.empty());
  hadoop::YarnLogReader reader(conf_, "root");
  EXPECT_EQ(*reader.Read(app, {cid, am->node_id, am_http}, "stdout"), "out-line\n");
  ASSERT_OK(WriteFileAtomic(work_.string() + "/go", ""));
  ASSERT_OK(double_->WaitForAppEnd(app, std::chrono::seconds(20)));
  ASSERT_OK(double_->WaitForLogAggregation(app, std::chrono::seconds(20)));
  EXPECT_THAT(hdfs_->ListRecursive("/tmp/logs"),
              ElementsAre("/tmp/logs/root/bucket-logs-tfile/0001/" + app + "/" + hadoop::NodeFileName(am->node_id)));
  Result<hadoop::LogChunk> c = reader.ReadFrom(app, {cid, am->node_id, am_http}, "stderr", 0);
  ASSERT_OK(c);
  EXPECT_EQ(c->bytes, "err-line\n");
  EXPECT_EQ(c->source, hadoop::LogSource::kAggregated);
}

INSTANTIATE_TEST_SUITE_P(Aggregation, DoubleLogsTest, ::testing::Values("", "TFile", "IFile"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param.empty() ? "Off" : p.param; });

}  // namespace
}  // namespace loom::yarn_double
