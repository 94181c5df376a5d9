// WebHdfs against the bytes a real Hadoop 3.3.6 NameNode (Jetty) and DataNode (Netty) sent
// (tests/data/yarn-captures/webhdfs/). A tiny scripted HTTP server replays each recorded
// answer on a NameNode or DataNode port and keeps the request it got, which is compared with
// the request curl sent to the real cluster.

#include "hadoop/hdfs/webhdfs.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/strings.h"
#include "core/testing.h"
#include "hadoop/testing/captures.h"
#include "hadoop/testing/test_socket.h"

namespace loom::hadoop {
namespace {

using ::testing::HasSubstr;

// A file of the recordings under webhdfs/.
std::string Capture(const std::string& name) { return testing::ReadCapture("webhdfs/" + name); }

// One HTTP request as it arrived on the wire.
struct Request {
  std::string role;  // "nn" or "dn": the port it came to
  std::string method, target, path;
  std::map<std::string, std::string> query;    // raw (still escaped) values
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// Parses the request line and headers of `head` (which ends at the blank line).
Request ParseHead(const std::string& head) {
  Request r;
  std::vector<std::string> lines = Split(head, '\n');
  if (lines.empty()) return r;
  std::vector<std::string> first = Split(lines[0], ' ');
  if (first.size() >= 2) r.method = first[0], r.target = first[1];
  size_t q = r.target.find('?');
  r.path = r.target.substr(0, q);
  if (q != std::string::npos) {
    for (const std::string& kv : Split(r.target.substr(q + 1), '&')) {
      size_t eq = kv.find('=');
      r.query[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    r.headers[ToLower(Trim(lines[i].substr(0, colon)))] = Trim(lines[i].substr(colon + 1));
  }
  return r;
}

// A recorded c2s file: head, then the body.
Request ParseRecorded(const std::string& c2s) {
  size_t end = c2s.find("\r\n\r\n");
  Request r = ParseHead(c2s.substr(0, end));
  r.body = c2s.substr(end + 4);
  return r;
}

// The recorded request's method, path, query parameters (ours may have more, e.g.
// permission=) and body.
void ExpectLikeRecorded(const Request& ours, const std::string& c2s_file) {
  SCOPED_TRACE(c2s_file);
  Request recorded = ParseRecorded(Capture(c2s_file));
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

class ReplayServer {
 public:
  ReplayServer() {
    nn_fd_ = Listen(&nn_port_);
    dn_fd_ = Listen(&dn_port_);
    thread_ = std::thread([this] { Loop(); });
  }
  ~ReplayServer() {
    stop_ = true;
    thread_.join();
    ::close(nn_fd_);
    ::close(dn_fd_);
  }
  std::string nn_base() const { return "http://127.0.0.1:" + std::to_string(nn_port_); }

  // The next connection must come to `role` and gets `s2c`, with the recorded DataNode
  // address in a redirect pointed at this server.
  void Answer(const std::string& role, std::string s2c) {
    const std::string recorded_dn = "http://127.0.0.1:9864/";
    for (size_t at; (at = s2c.find(recorded_dn)) != std::string::npos;) {
      s2c.replace(at, recorded_dn.size(), "http://127.0.0.1:" + std::to_string(dn_port_) + "/");
    }
    std::lock_guard<std::mutex> lock(mu_);
    script_.push_back({role, std::move(s2c)});
  }
  std::vector<Request> TakeRequests() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Request> out(requests_.begin(), requests_.end());
    requests_.clear();
    EXPECT_TRUE(script_.empty()) << script_.size() << " scripted answers were never asked for";
    script_.clear();
    return out;
  }

 private:
  static int Listen(int* port) {
    Result<int> fd = testing::ListenLoopback(port);
    EXPECT_OK(fd);
    return fd.value_or(-1);
  }

  void Loop() {
    while (!stop_) {
      pollfd fds[2] = {{nn_fd_, POLLIN, 0}, {dn_fd_, POLLIN, 0}};
      if (::poll(fds, 2, 50) <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if (!(fds[i].revents & POLLIN)) continue;
        int conn = ::accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (conn < 0) continue;
        Serve(i == 0 ? "nn" : "dn", conn);
        ::close(conn);
      }
    }
  }

  static void Send(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  }

  void Serve(const std::string& role, int fd) {
    std::string in;
    char buf[65536];
    size_t head_end;
    while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
    Request request = ParseHead(in.substr(0, head_end));
    request.role = role;
    std::string s2c;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (script_.empty()) {
        ADD_FAILURE() << "unscripted request " << request.method << " " << request.target;
        return;
      }
      EXPECT_EQ(script_.front().first, role) << request.target;
      s2c = std::move(script_.front().second);
      script_.pop_front();
    }
    // Like the real DataNode: "100 Continue" before reading the body, asked for or not.
    if (StartsWith(s2c, "HTTP/1.1 100")) {
      size_t end = s2c.find("\r\n\r\n") + 4;
      Send(fd, std::string_view(s2c).substr(0, end));
      s2c.erase(0, end);
    }
    size_t length = 0;
    if (request.headers.count("content-length")) length = std::stoul(request.headers["content-length"]);
    request.body = in.substr(head_end + 4);
    while (request.body.size() < length) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      request.body.append(buf, static_cast<size_t>(n));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
    }
    Send(fd, s2c);
    ::shutdown(fd, SHUT_WR);
  }

  int nn_fd_ = -1, dn_fd_ = -1, nn_port_ = 0, dn_port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::deque<std::pair<std::string, std::string>> script_;
  std::deque<Request> requests_;
  std::thread thread_;
};

// A Jetty-style answer that the captures do not hold (errors), with a Content-Length body.
std::string JsonAnswer(const std::string& status_line, const std::string& body) {
  return "HTTP/1.1 " + status_line + "\r\nCache-Control: no-cache\r\nContent-Type: application/json\r\n"
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

class WebHdfsReplayTest : public ::testing::Test {
 protected:
  ReplayServer server_;
  WebHdfs client_{server_.nn_base(), "root"};
};

TEST_F(WebHdfsReplayTest, Mkdirs) {
  server_.Answer("nn", Capture("01-nn-9870-MKDIRS.s2c.bin"));
  ASSERT_OK(client_.Mkdirs("/tmp/webhdfs-golden"));
  std::vector<Request> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 1u);
  ExpectLikeRecorded(got[0], "01-nn-9870-MKDIRS.c2s.bin");
  EXPECT_EQ(got[0].query["permission"], "755");
}

// Upload (a streamed local file): NameNode 307, then the bytes to the DataNode, which sends
// "100 Continue" and 201; then GETFILESTATUS supplies the length and modificationTime.
TEST_F(WebHdfsReplayTest, UploadFollowsTheRedirectWithTheBody) {
  std::string local = ::testing::TempDir() + "/webhdfs_replay_hello." + std::to_string(getpid());
  ASSERT_OK(WriteFileAtomic(local, "hello webhdfs\n"));
  server_.Answer("nn", Capture("02-nn-9870-CREATE-step1-redirect.s2c.bin"));
  server_.Answer("dn", Capture("03-dn-9864-CREATE-step2-data-expect100.s2c.bin"));
  server_.Answer("nn", Capture("04-nn-9870-GETFILESTATUS.s2c.bin"));
  Result<HdfsFileStatus> status = client_.Upload(local, "/tmp/webhdfs-golden/hello.txt");
  (void)RemoveTree(local);
  ASSERT_OK(status);
  EXPECT_EQ(status->length, 14);
  EXPECT_EQ(status->modification_time, 1795263328215);
  EXPECT_EQ(status->type, "FILE");
  EXPECT_EQ(status->permission, "644");
  EXPECT_EQ(status->owner, "root");
  EXPECT_EQ(status->path_suffix, "");

  std::vector<Request> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 3u);
  ExpectLikeRecorded(got[0], "02-nn-9870-CREATE-step1-redirect.c2s.bin");
  EXPECT_EQ(got[0].query["permission"], "644");
  EXPECT_EQ(got[0].body, "");
  EXPECT_EQ(got[1].role, "dn");
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

  server_.Answer("nn", redirect);
  server_.Answer("dn", Capture("10-dn-9864-CREATE-step2-data-no-expect.s2c.bin"));
  server_.Answer("nn", Capture("04-nn-9870-GETFILESTATUS.s2c.bin"));
  Result<HdfsFileStatus> status = client_.Create("/tmp/webhdfs-golden2/hello2.txt", "hello webhdfs\n");
  ASSERT_OK(status);
  EXPECT_EQ(status->length, 14);

  std::vector<Request> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].path, "/webhdfs/v1/tmp/webhdfs-golden2/hello2.txt");
  EXPECT_EQ(got[0].query["op"], "CREATE");
  Request recorded = ParseRecorded(Capture("10-dn-9864-CREATE-step2-data-no-expect.c2s.bin"));
  ExpectLikeRecorded(got[1], "10-dn-9864-CREATE-step2-data-no-expect.c2s.bin");
  EXPECT_EQ(got[1].target, recorded.target);
  EXPECT_EQ(got[1].headers.count("expect"), 0u);
  EXPECT_EQ(got[1].headers["content-length"], "14");
  EXPECT_EQ(got[2].path, "/webhdfs/v1/tmp/webhdfs-golden2/hello2.txt");
}

TEST_F(WebHdfsReplayTest, GetFileStatus) {
  server_.Answer("nn", Capture("04-nn-9870-GETFILESTATUS.s2c.bin"));
  Result<HdfsFileStatus> status = client_.GetFileStatus("/tmp/webhdfs-golden/hello.txt");
  ASSERT_OK(status);
  EXPECT_EQ(status->length, 14);
  EXPECT_EQ(status->modification_time, 1795263328215);
  std::vector<Request> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 1u);
  ExpectLikeRecorded(got[0], "04-nn-9870-GETFILESTATUS.c2s.bin");
}

TEST_F(WebHdfsReplayTest, ListStatus) {
  server_.Answer("nn", Capture("05-nn-9870-LISTSTATUS.s2c.bin"));
  Result<std::vector<HdfsFileStatus>> list = client_.ListStatus("/tmp/webhdfs-golden");
  ASSERT_OK(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].path_suffix, "hello.txt");
  EXPECT_EQ((*list)[0].length, 14);
  EXPECT_EQ((*list)[0].modification_time, 1795263328215);
  EXPECT_EQ((*list)[0].type, "FILE");
  std::vector<Request> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 1u);
  ExpectLikeRecorded(got[0], "05-nn-9870-LISTSTATUS.c2s.bin");
}

TEST_F(WebHdfsReplayTest, OpenFollowsTheRedirect) {
  server_.Answer("nn", Capture("06-nn-9870-OPEN-step1-redirect.s2c.bin"));
  server_.Answer("dn", Capture("07-dn-9864-OPEN-step2-data.s2c.bin"));
  Result<std::string> bytes = client_.Open("/tmp/webhdfs-golden/hello.txt");
  ASSERT_OK(bytes);
  EXPECT_EQ(*bytes, "hello webhdfs\n");
  std::vector<Request> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 2u);
  ExpectLikeRecorded(got[0], "06-nn-9870-OPEN-step1-redirect.c2s.bin");
  ExpectLikeRecorded(got[1], "07-dn-9864-OPEN-step2-data.c2s.bin");
  EXPECT_EQ(got[1].role, "dn");
}

TEST_F(WebHdfsReplayTest, DeleteRecursive) {
  server_.Answer("nn", Capture("08-nn-9870-DELETE.s2c.bin"));
  Result<bool> deleted = client_.Delete("/tmp/webhdfs-golden", true);
  ASSERT_OK(deleted);
  EXPECT_TRUE(*deleted);
  std::vector<Request> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 1u);
  ExpectLikeRecorded(got[0], "08-nn-9870-DELETE.c2s.bin");

  server_.Answer("nn", Capture("11-nn-9870-DELETE.s2c.bin"));
  ASSERT_OK(client_.Delete("/tmp/webhdfs-golden2", true));
  got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 1u);
  ExpectLikeRecorded(got[0], "11-nn-9870-DELETE.c2s.bin");
}

TEST_F(WebHdfsReplayTest, PathSegmentsAreEscaped) {
  server_.Answer("nn", Capture("01-nn-9870-MKDIRS.s2c.bin"));
  ASSERT_OK(client_.Mkdirs("/tmp/a b/x%y/\xC3\xBC"));
  std::vector<Request> got = server_.TakeRequests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].path, "/webhdfs/v1/tmp/a%20b/x%25y/%C3%BC");
}

TEST_F(WebHdfsReplayTest, FileNotFoundIsNotFound) {
  server_.Answer("nn", JsonAnswer("404 Not Found",
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
  server_.Answer("nn", JsonAnswer("404 Not Found",
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
  server_.Answer("nn", JsonAnswer("403 Forbidden",
                                  R"({"RemoteException":{"exception":"AccessControlException",)"
                                  R"("javaClassName":"org.apache.hadoop.security.AccessControlException",)"
                                  R"("message":"Permission denied: user=root, access=WRITE"}})"));
  EXPECT_STATUS(client_.Mkdirs("/secure"), kPermissionDenied,
                ::testing::AllOf(HasSubstr("MKDIRS /secure"), HasSubstr("HTTP 403"),
                                 HasSubstr("AccessControlException: Permission denied")));
  server_.Answer("nn", JsonAnswer("500 Server Error", "not json"));
  EXPECT_STATUS(client_.ListStatus("/x"), kUnavailable, HasSubstr("LISTSTATUS /x: HTTP 500: not json"));
  (void)server_.TakeRequests();
}

TEST_F(WebHdfsReplayTest, MalformedJsonIsAnErrorNotACrash) {
  server_.Answer("nn", JsonAnswer("200 OK", R"({"FileStatus":{"length":"fourteen"}})"));
  EXPECT_STATUS(client_.GetFileStatus("/x"), kInternal, HasSubstr("GETFILESTATUS /x"));
  server_.Answer("nn", JsonAnswer("200 OK", "{"));
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
