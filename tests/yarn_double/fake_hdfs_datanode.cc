// FakeHdfs's DataNode: CREATE and OPEN step 2, where the bytes travel, answered as the real
// (Netty) DataNode answers, one request per connection.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "core/strings.h"
#include "fake_hdfs.h"
#include "fake_hdfs_internal.h"

namespace loom::yarn_double {

namespace {

bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// The DataNode's (Netty's) answers, each on its own connection.
std::string DataNodeError(const Reply& reply) {
  return "HTTP/1.1 " + std::to_string(reply.code) + " " + Reason(reply.code) +
         "\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: " +
         std::to_string(reply.body.size()) +
         "\r\nAccess-Control-Allow-Origin: *\r\nConnection: close\r\n\r\n" + reply.body;
}

}  // namespace

// ---- DataNode ------------------------------------------------------------------------------

void FakeHdfs::ServeDataNode(Connection& conn, const Request& in) {
  ++requests_served_;
  Request req = in;
  if (spnego_) {
    // A secure DataNode knows no Kerberos over HTTP: the NameNode's token is the credential.
    Result<std::string> user = req.Param("delegation").empty()
                                   ? Result<std::string>(Status::PermissionDenied(
                                         "Failed to obtain user group information: no delegation token"))
                                   : DelegationUser(req);
    if (!user.ok()) {
      if (conn.ReadBody(req, [](std::string_view) {})) conn.Write(DataNodeError(InvalidToken(user.status().message())));
      return;
    }
    req.auth_user = *user;
  }
  const std::string op = req.op();
  if (req.method == "PUT" && op == "CREATE") {
    DataNodeCreate(conn, req);
  } else if (req.method == "GET" && op == "OPEN") {
    DataNodeOpen(conn, req);
  } else if (conn.ReadBody(req, [](std::string_view) {})) {
    conn.Write(DataNodeError(IllegalArgument("Invalid operation " + op)));
  }
}

// Like the real DataNode: "100 Continue" whether or not the client asked, the body into a
// temporary file, then the file appears in the namespace with length and mtime set.
void FakeHdfs::DataNodeCreate(Connection& conn, const Request& req) {
  int now_in_progress = ++creates_in_progress_;
  for (int max = max_concurrent_creates_; now_in_progress > max;) {
    if (max_concurrent_creates_.compare_exchange_weak(max, now_in_progress)) break;
  }
  struct Done {
    std::atomic<int>& n;
    ~Done() { --n; }
  } done{creates_in_progress_};
  if (!conn.Write("HTTP/1.1 100 Continue\r\n\r\n")) return;
  std::string tmp = storage_dir_ + "/uploads/" + std::to_string(++upload_counter_);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool written = fd >= 0;
  int64_t length = 0;
  bool complete = conn.ReadBody(req, [&](std::string_view piece) {
    written = written && WriteAll(fd, piece);
    length += static_cast<int64_t>(piece.size());
  });
  if (fd >= 0) ::close(fd);
  if (!complete) {  // the client went away mid-body: nothing is created
    ::unlink(tmp.c_str());
    return;
  }
  if (int64_t close_ms = datanode_close_ms_; close_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(close_ms));
  std::optional<Reply> error = CheckCommon(req);
  if (!error && req.Param("namenoderpcaddress").empty()) {
    error = IllegalArgument("namenoderpcaddress is not specified.");
  }
  if (!error && !written) {
    error = RemoteException(500, "IOException", "java.io.IOException", "cannot store " + req.path);
  }
  if (!error) {
    std::lock_guard<std::mutex> lock(mu_);
    const Node* existing = Find(req.path);
    Reply parent_error;
    if (existing != nullptr && existing->entry.dir) {
      error = RemoteException(403, "FileAlreadyExistsException", "org.apache.hadoop.fs.FileAlreadyExistsException",
                              req.path + " already exists as a directory");
    } else if (existing != nullptr && req.Param("overwrite", "false") != "true") {
      error = RemoteException(403, "FileAlreadyExistsException", "org.apache.hadoop.fs.FileAlreadyExistsException",
                              "failed to create file " + req.path + " because the file exists");
    } else if (req.Param("createparent", "true") != "true" && Find(Parent(req.path)) == nullptr) {
      error = FileNotFound("Parent directory doesn't exist: " + Parent(req.path));
    } else if (!MakeDirLocked(Parent(req.path), req.user(), "755", &parent_error)) {
      error = parent_error;
    } else if (::rename(tmp.c_str(), LocalPath(req.path).c_str()) != 0) {
      error = RemoteException(500, "IOException", "java.io.IOException",
                              "rename into " + LocalPath(req.path) + ": " + std::strerror(errno));
    } else {
      int64_t now = NowMs();
      nodes_[req.path] = Node{Entry{false, length, now, req.Param("permission", "644"), req.user()},
                              NextFileIdLocked(), now};
      created_files_.push_back(req.path);
      bytes_created_ += length;
    }
  }
  if (error) {
    ::unlink(tmp.c_str());
    conn.Write(DataNodeError(*error));
    return;
  }
  conn.Write("HTTP/1.1 201 Created\r\nLocation: hdfs://127.0.0.1:" + std::to_string(rpc_port_) +
             EncodePath(req.path) +
             "\r\nContent-Length: 0\r\nAccess-Control-Allow-Origin: *\r\nConnection: close\r\n\r\n");
}

void FakeHdfs::DataNodeOpen(Connection& conn, const Request& req) {
  if (!conn.ReadBody(req, [](std::string_view) {})) return;
  if (auto error = CheckCommon(req)) {
    conn.Write(DataNodeError(*error));
    return;
  }
  int64_t size = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Node* node = Find(req.path);
    if (node == nullptr || node->entry.dir) {
      conn.Write(DataNodeError(FileNotFound("File does not exist: " + req.path)));
      return;
    }
    size = node->entry.length;
  }
  int64_t offset = ParseInt(req.Param("offset", "0")).value_or(0);
  offset = std::clamp<int64_t>(offset, 0, size);
  int64_t length = ParseInt(req.Param("length", std::to_string(size))).value_or(size);
  length = std::clamp<int64_t>(length, 0, size - offset);
  int fd = ::open(LocalPath(req.path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    conn.Write(DataNodeError(RemoteException(500, "IOException", "java.io.IOException",
                                             "cannot read " + req.path)));
    return;
  }
  bool ok = conn.Write("HTTP/1.1 200 OK\r\nAccess-Control-Allow-Methods: GET\r\nAccess-Control-Allow-Origin: *\r\n"
                       "Content-Type: application/octet-stream\r\nConnection: close\r\nContent-Length: " +
                       std::to_string(length) + "\r\n\r\n");
  char buf[65536];
  while (ok && length > 0) {
    ssize_t n = ::pread(fd, buf, std::min<int64_t>(length, sizeof buf), offset);
    if (n <= 0) break;
    ok = conn.Write(std::string_view(buf, static_cast<size_t>(n)));
    offset += n;
    length -= n;
  }
  ::close(fd);
}

}  // namespace loom::yarn_double
