#pragma once
// What FakeHdfs's files share: the parsed HTTP request, the NameNode's reply, the connection
// that reads and writes them, and the helpers more than one file calls. FakeHdfs (fake_hdfs.h)
// is spread over fake_hdfs.cc (the HTTP servers: listeners, connections, request parsing),
// fake_hdfs_namenode.cc (the NameNode's operations and answers), fake_hdfs_spnego.cc (SPNEGO,
// the hadoop.auth cookie, delegation tokens), fake_hdfs_datanode.cc (CREATE and OPEN step 2)
// and fake_hdfs_namespace.cc (the in-memory namespace). Not for other files.

#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/strings.h"

namespace loom::yarn_double::fake_hdfs_internal {

using ordered_json = nlohmann::ordered_json;

// fake_hdfs.cc
int64_t NowMs();
// Never throws, even for names that are not UTF-8.
std::string Dump(const ordered_json& j);
// The reason phrase of an HTTP status code.
const char* Reason(int code);
// Escapes each path segment for a redirect URL.
std::string EncodePath(const std::string& path);

// fake_hdfs_namespace.cc
// "/a//b/" -> "/a/b"; "" for what HDFS rejects (relative, "." or ".." segments).
std::string Normalize(const std::string& path);
std::string Parent(const std::string& path);
std::string BaseName(const std::string& path);

// One parsed HTTP request.
struct Request {
  std::string method, target;
  bool webhdfs = false;  // the target is under /webhdfs/v1
  std::string path;      // decoded and normalised HDFS path; "" when invalid
  std::string raw_path;  // decoded, as sent
  std::map<std::string, std::string> query;    // decoded
  std::map<std::string, std::string> headers;  // lower-case names
  // SPNEGO mode: who authenticated (short name, principal; via a delegation token?).
  std::string auth_user, auth_principal;
  bool via_delegation = false;

  std::string Param(const std::string& key, const std::string& fallback = "") const {
    auto it = query.find(key);
    return it == query.end() ? fallback : it->second;
  }
  std::string Header(const std::string& key) const {
    auto it = headers.find(key);
    return it == headers.end() ? "" : it->second;
  }
  std::string user() const { return auth_user.empty() ? Param("user.name") : auth_user; }
  std::string op() const {
    std::string op = Param("op");
    for (char& c : op) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return op;
  }
};

// What a NameNode handler answers: a JSON body, or a redirect.
struct Reply {
  int code = 200;
  std::string body;
  std::string location;
};

// A socket with a read buffer, for heads, bodies (Content-Length or chunked) and writes.
class Connection {
 public:
  explicit Connection(int fd) : fd_(fd) {}

  bool ReadHead(std::string* head) { return ReadUntil("\r\n\r\n", head); }

  // Hands the body to `sink` piece by piece; false when the connection broke first.
  bool ReadBody(const Request& req, const std::function<void(std::string_view)>& sink) {
    if (ToLower(req.Header("transfer-encoding")).find("chunked") != std::string::npos) {
      return ReadChunked(sink);
    }
    Result<int64_t> length = ParseInt(req.Header("content-length"));
    return ReadExactly(length.ok() && *length > 0 ? *length : 0, sink);
  }

  bool Write(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

 private:
  bool Fill() {
    char chunk[65536];
    ssize_t n;
    do {
      n = ::recv(fd_, chunk, sizeof chunk, 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    buf_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  bool ReadLine(std::string* line) { return ReadUntil("\r\n", line); }

  // What comes before the next `end` (read past it); false when the connection broke first or
  // 64 KiB came without one.
  bool ReadUntil(std::string_view end, std::string* out) {
    size_t at;
    while ((at = buf_.find(end)) == std::string::npos) {
      if (buf_.size() > 65536 || !Fill()) return false;
    }
    *out = buf_.substr(0, at);
    buf_.erase(0, at + end.size());
    return true;
  }

  bool ReadExactly(int64_t n, const std::function<void(std::string_view)>& sink) {
    while (n > 0) {
      if (buf_.empty() && !Fill()) return false;
      size_t take = std::min<size_t>(static_cast<size_t>(n), buf_.size());
      sink(std::string_view(buf_).substr(0, take));
      buf_.erase(0, take);
      n -= static_cast<int64_t>(take);
    }
    return true;
  }

  bool ReadChunked(const std::function<void(std::string_view)>& sink) {
    std::string line;
    while (ReadLine(&line)) {
      int64_t size = std::strtoll(line.c_str(), nullptr, 16);
      if (size < 0) return false;
      if (size == 0) {  // trailers up to the blank line
        while (ReadLine(&line) && !line.empty()) {
        }
        return true;
      }
      if (!ReadExactly(size, sink) || !ReadLine(&line)) return false;
    }
    return false;
  }

  int fd_;
  std::string buf_;
};


// fake_hdfs_namenode.cc: the NameNode's answers.
Reply RemoteException(int code, const std::string& exception, const std::string& java_class,
                      const std::string& message);
Reply FileNotFound(const std::string& message);
Reply IllegalArgument(const std::string& message);
Reply InvalidToken(const std::string& message);
// The NameNode's (Jetty's) answer: headers as in the captures, JSON bodies chunked. SPNEGO mode
// (`auth_headers` not null): those instead of the simple-auth cookie.
std::string NameNodeResponse(const Reply& reply, const std::string& user, bool close,
                             const std::string* auth_headers = nullptr);
// Checks every operation shares: simple auth and a valid path.
std::optional<Reply> CheckCommon(const Request& req);

}  // namespace loom::yarn_double::fake_hdfs_internal

// Every file of FakeHdfs calls these by their short names. (They stay in fake_hdfs_internal so
// that, e.g., this NowMs is not yarn_records.h's: loom_fake_hdfs is a library of its own.)
namespace loom::yarn_double {

using fake_hdfs_internal::BaseName;
using fake_hdfs_internal::CheckCommon;
using fake_hdfs_internal::Connection;
using fake_hdfs_internal::Dump;
using fake_hdfs_internal::EncodePath;
using fake_hdfs_internal::FileNotFound;
using fake_hdfs_internal::IllegalArgument;
using fake_hdfs_internal::InvalidToken;
using fake_hdfs_internal::NameNodeResponse;
using fake_hdfs_internal::Normalize;
using fake_hdfs_internal::NowMs;
using fake_hdfs_internal::ordered_json;
using fake_hdfs_internal::Parent;
using fake_hdfs_internal::Reason;
using fake_hdfs_internal::RemoteException;
using fake_hdfs_internal::Reply;
using fake_hdfs_internal::Request;

}  // namespace loom::yarn_double
