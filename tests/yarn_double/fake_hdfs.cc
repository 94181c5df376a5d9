// FakeHdfs's HTTP servers: the NameNode's, the standby's and the DataNode's listeners, a thread
// per connection, and the parsing of requests, which fake_hdfs_namenode.cc and
// fake_hdfs_datanode.cc answer. The helpers every part shares are here too.

#include "fake_hdfs.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <string_view>
#include <thread>

#include "core/files.h"
#include "core/strings.h"
#include "fake_hdfs_internal.h"
#include "hadoop/testing/test_socket.h"

namespace loom::yarn_double {

namespace fake_hdfs_internal {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Never throws, even for names that are not UTF-8.
std::string Dump(const ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

const char* Reason(int code) {
  switch (code) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 307: return "Temporary Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    default: return "Internal Server Error";
  }
}

// Escapes each path segment for a redirect URL (written here independently of the client
// under test, so that one bug cannot hide on both sides).
std::string EncodePath(const std::string& path) {
  constexpr std::string_view kKept = "/-._~";  // RFC 3986's unreserved, and the separators
  std::string out;
  for (char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || kKept.find(c) != std::string_view::npos) {
      out.push_back(c);
      continue;
    }
    char escaped[4];
    std::snprintf(escaped, sizeof(escaped), "%%%02X", byte);
    out.append(escaped, 3);
  }
  return out;
}

}  // namespace fake_hdfs_internal

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX decoding (and '+' as space in a query, as Jetty does).
std::string Decode(std::string_view s, bool query) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexDigit(s[i + 1]) >= 0 && HexDigit(s[i + 2]) >= 0) {
      out += static_cast<char>(HexDigit(s[i + 1]) * 16 + HexDigit(s[i + 2]));
      i += 2;
    } else {
      out += (query && s[i] == '+') ? ' ' : s[i];
    }
  }
  return out;
}

Request ParseRequest(const std::string& head) {
  Request req;
  std::vector<std::string> lines = Split(head, '\n');
  if (lines.empty()) return req;
  std::vector<std::string> first = Split(lines[0], ' ');
  if (first.size() != 3) return req;
  req.method = first[0];
  req.target = first[1];
  size_t q = req.target.find('?');
  std::string path = req.target.substr(0, q);
  if (q != std::string::npos) {
    for (const std::string& kv : Split(req.target.substr(q + 1), '&')) {
      size_t eq = kv.find('=');
      std::string value = eq == std::string::npos ? "" : kv.substr(eq + 1);
      req.query[Decode(kv.substr(0, eq), true)] = Decode(value, true);
    }
  }
  const std::string prefix = "/webhdfs/v1";
  if (StartsWith(path, prefix) && (path.size() == prefix.size() || path[prefix.size()] == '/')) {
    req.webhdfs = true;
    req.raw_path = Decode(path.substr(prefix.size()), false);
    if (req.raw_path.empty()) req.raw_path = "/";
    req.path = Normalize(req.raw_path);
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t colon = lines[i].find(':');
    if (colon != std::string::npos) {
      req.headers[ToLower(Trim(lines[i].substr(0, colon)))] = Trim(lines[i].substr(colon + 1));
    }
  }
  return req;
}

}  // namespace

FakeHdfs::FakeHdfs(std::string storage_dir) : storage_dir_(std::move(storage_dir)) {}

FakeHdfs::~FakeHdfs() { Stop(); }

std::string FakeHdfs::default_fs() const { return "hdfs://127.0.0.1:" + std::to_string(rpc_port_); }

Status FakeHdfs::Start() {
  if (nn_fd_ >= 0) return Status::FailedPrecondition("fake HDFS already started");
  // A fresh namespace: metadata lives in memory only, so old bytes would be orphans.
  LOOM_RETURN_IF_ERROR(RemoveTree(storage_dir_ + "/root"));
  LOOM_RETURN_IF_ERROR(RemoveTree(storage_dir_ + "/uploads"));
  LOOM_RETURN_IF_ERROR(MakeDirs(storage_dir_ + "/root"));
  LOOM_RETURN_IF_ERROR(MakeDirs(storage_dir_ + "/uploads"));
  {
    std::lock_guard<std::mutex> lock(mu_);
    nodes_.clear();
    created_files_.clear();
    bytes_created_ = 0;
    nodes_["/"] = Node{Entry{true, 0, NowMs(), "755", "hdfs"}, 16385, 0};
  }
  LOOM_ASSIGN_OR_RETURN(rpc_fd_, hadoop::testing::ListenLoopback(&rpc_port_, /*listen=*/false));
  LOOM_ASSIGN_OR_RETURN(nn_fd_, hadoop::testing::ListenLoopback(&nn_port_, /*listen=*/true));
  LOOM_ASSIGN_OR_RETURN(dn_fd_, hadoop::testing::ListenLoopback(&dn_port_, /*listen=*/true));
  stopping_ = false;
  nn_thread_ = std::thread([this] { AcceptLoop(nn_fd_, /*datanode=*/false); });
  dn_thread_ = std::thread([this] { AcceptLoop(dn_fd_, /*datanode=*/true); });
  return Status::Ok();
}

Status FakeHdfs::StartStandbyNameNode() {
  if (nn_fd_ < 0) return Status::FailedPrecondition("fake HDFS not started");
  if (sb_fd_ >= 0) return Status::Ok();
  LOOM_ASSIGN_OR_RETURN(sb_fd_, hadoop::testing::ListenLoopback(&sb_port_, /*listen=*/true));
  sb_thread_ = std::thread([this] { AcceptLoop(sb_fd_, /*datanode=*/false, /*standby=*/true); });
  return Status::Ok();
}

void FakeHdfs::Stop() {
  {
    std::lock_guard<std::mutex> lock(conn_mu_);
    stopping_ = true;
  }
  // shutdown() wakes a thread blocked in accept() or recv() on that socket.
  for (int fd : {nn_fd_, dn_fd_, sb_fd_}) {
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
  }
  if (sb_thread_.joinable()) sb_thread_.join();
  if (nn_thread_.joinable()) nn_thread_.join();
  if (dn_thread_.joinable()) dn_thread_.join();
  std::list<std::unique_ptr<Conn>> conns;
  {
    std::lock_guard<std::mutex> lock(conn_mu_);
    for (auto& c : conns_) ::shutdown(c->fd, SHUT_RDWR);
    conns.swap(conns_);
  }
  for (auto& c : conns) {
    c->thread.join();
    ::close(c->fd);
  }
  for (int* fd : {&nn_fd_, &dn_fd_, &rpc_fd_, &sb_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void FakeHdfs::AcceptLoop(int listen_fd, bool datanode, bool standby) {
  while (true) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_) return;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      return;
    }
    int one = 1;  // the DataNode writes "100 Continue" and the answer separately
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(conn_mu_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    ReapFinished();
    auto conn = std::make_unique<Conn>();
    Conn* raw = conn.get();
    raw->fd = fd;
    raw->thread = std::thread([this, raw, datanode, standby] {
      Serve(raw->fd, datanode, standby);
      raw->done = true;
    });
    conns_.push_back(std::move(conn));
  }
}

void FakeHdfs::ReapFinished() {
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (!(*it)->done) {
      ++it;
      continue;
    }
    (*it)->thread.join();
    ::close((*it)->fd);  // closed only here, so Stop never shuts down a reused number
    it = conns_.erase(it);
  }
}

void FakeHdfs::Serve(int fd, bool datanode, bool standby) {
  Connection conn(fd);
  std::string head;
  while (!stopping_ && conn.ReadHead(&head)) {
    Request req = ParseRequest(head);
    if (datanode) {
      ServeDataNode(conn, req);
      break;  // Netty closes after every answer
    }
    if (!ServeNameNode(conn, req, standby)) break;
  }
  ::shutdown(fd, SHUT_RDWR);
}

}  // namespace loom::yarn_double
