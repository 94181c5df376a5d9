#include "fake_hdfs.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <functional>
#include <optional>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "cluster/yarn/wire/credentials.h"
#include "core/files.h"
#include "gss_acceptor.h"
#include "core/strings.h"

namespace loom::yarn_double {
namespace {

using ordered_json = nlohmann::ordered_json;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Never throws, even for names that are not UTF-8.
std::string Dump(const ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string HttpDate() {
  std::time_t now = std::time(nullptr);
  std::tm tm;
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
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

// Escapes each path segment for a redirect URL (written here independently of the client
// under test, so that one bug cannot hide on both sides).
std::string EncodePath(const std::string& path) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::strchr("/-._~", c) != nullptr) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string EncodeQueryValue(const std::string& v) {
  std::string out = EncodePath(v);
  for (size_t at; (at = out.find('/')) != std::string::npos;) out.replace(at, 1, "%2F");
  return out;
}

// "/a//b/" -> "/a/b"; "" for what HDFS rejects (relative, "." or ".." segments).
std::string Normalize(const std::string& path) {
  if (path.empty() || path[0] != '/') return "";
  std::string out;
  for (const std::string& part : Split(path, '/', /*skip_empty=*/false)) {
    if (part.empty()) continue;
    if (part == "." || part == "..") return "";
    out += "/" + part;
  }
  return out.empty() ? "/" : out;
}

std::string Parent(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

Result<int> ListenLoopback(int* port, bool listen) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("socket", errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || (listen && ::listen(fd, 64) != 0) ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    ::close(fd);
    return Status::FromErrno("fake HDFS: bind 127.0.0.1", err);
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace

// One parsed HTTP request.
namespace fake_hdfs_internal {

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

  bool ReadHead(std::string* head) {
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (buf_.size() > 65536 || !Fill()) return false;
    }
    *head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    return true;
  }

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

  bool ReadLine(std::string* line) {
    size_t end;
    while ((end = buf_.find("\r\n")) == std::string::npos) {
      if (buf_.size() > 65536 || !Fill()) return false;
    }
    *line = buf_.substr(0, end);
    buf_.erase(0, end + 2);
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

}  // namespace fake_hdfs_internal

using fake_hdfs_internal::Connection;
using fake_hdfs_internal::Reply;
using fake_hdfs_internal::Request;

namespace {

Reply RemoteException(int code, const std::string& exception, const std::string& java_class,
                                const std::string& message) {
  ordered_json e;
  e["exception"] = exception;
  e["javaClassName"] = java_class;
  e["message"] = message;
  ordered_json j;
  j["RemoteException"] = e;
  return {code, Dump(j), ""};
}

Reply FileNotFound(const std::string& message) {
  return RemoteException(404, "FileNotFoundException", "java.io.FileNotFoundException", message);
}

Reply IllegalArgument(const std::string& message) {
  return RemoteException(400, "IllegalArgumentException", "java.lang.IllegalArgumentException", message);
}

Reply Boolean(bool value) {
  ordered_json j;
  j["boolean"] = value;
  return {200, Dump(j), ""};
}

// The NameNode's (Jetty's) answer: headers as in the captures, JSON bodies chunked. SPNEGO mode
// (`auth_headers` not null): those instead of the simple-auth cookie.
std::string NameNodeResponse(const Reply& reply, const std::string& user, bool close,
                             const std::string* auth_headers = nullptr) {
  std::string date = HttpDate();
  std::string out = "HTTP/1.1 " + std::to_string(reply.code) + " " + Reason(reply.code) + "\r\n";
  out += "Date: " + date + "\r\nCache-Control: no-cache\r\nExpires: " + date + "\r\nDate: " + date +
         "\r\nPragma: no-cache\r\nX-Content-Type-Options: nosniff\r\nX-FRAME-OPTIONS: SAMEORIGIN\r\n"
         "X-XSS-Protection: 1; mode=block\r\n";
  if (auth_headers != nullptr) {
    out += *auth_headers;
  } else if (reply.code != 401) {
    int64_t expires = NowMs() + 10 * 3600 * 1000;
    out += "Set-Cookie: hadoop.auth=\"u=" + user + "&p=" + user + "&t=simple&e=" + std::to_string(expires) +
           "&s=" + std::to_string(std::hash<std::string>()(user + std::to_string(expires))) +
           "\"; Path=/; HttpOnly\r\n";
  }
  if (close) out += "Connection: close\r\n";
  if (reply.code == 307) {
    out += "Location: " + reply.location + "\r\nContent-Type: application/octet-stream\r\n"
           "Content-Length: 0\r\n\r\n";
    return out;
  }
  if (reply.body.empty()) return out + "Content-Length: 0\r\n\r\n";
  char size[32];
  std::snprintf(size, sizeof size, "%zX", reply.body.size());
  out += "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  out += std::string(size) + "\r\n" + reply.body + "\r\n0\r\n\r\n";
  return out;
}

// hadoop-auth's AuthenticationFilter refusing a request (sendError: Jetty's HTML page, the
// message as the reason phrase), byte for byte as webhdfs/01 for the 401; the cookie emptied.
std::string FilterRefusal(int code, const std::string& message, const std::string& uri_path, bool negotiate,
                          bool close) {
  std::string page = "<html>\n<head>\n<meta http-equiv=\"Content-Type\" content=\"text/html;charset=ISO-8859-1\"/>\n"
                     "<title>Error " + std::to_string(code) + " " + message + "</title>\n</head>\n<body><h2>HTTP ERROR " +
                     std::to_string(code) + " " + message + "</h2>\n<table>\n<tr><th>URI:</th><td>" + uri_path +
                     "</td></tr>\n<tr><th>STATUS:</th><td>" + std::to_string(code) +
                     "</td></tr>\n<tr><th>MESSAGE:</th><td>" + message +
                     "</td></tr>\n<tr><th>SERVLET:</th><td>com.sun.jersey.spi.container.servlet.ServletContainer-f9d87b"
                     "</td></tr>\n</table>\n\n</body>\n</html>\n";
  std::string out = "HTTP/1.1 " + std::to_string(code) + " " + message +
                    "\r\nPragma: no-cache\r\nX-Content-Type-Options: nosniff\r\nX-FRAME-OPTIONS: SAMEORIGIN\r\n"
                    "X-XSS-Protection: 1; mode=block\r\n";
  if (negotiate) out += "WWW-Authenticate: Negotiate\r\n";
  out += "Set-Cookie: hadoop.auth=; Path=/; Secure; HttpOnly\r\n"
         "Cache-Control: must-revalidate,no-cache,no-store\r\nContent-Type: text/html;charset=iso-8859-1\r\n";
  if (close) out += "Connection: close\r\n";
  return out + "Content-Length: " + std::to_string(page.size()) + "\r\n\r\n" + page;
}

// One line of text for a reason phrase and the HTML page (no CR/LF, no markup).
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\r' || c == '\n' || c == '<' || c == '>') c = ' ';
  }
  return text;
}

Reply InvalidToken(const std::string& message) {
  return RemoteException(403, "InvalidToken", "org.apache.hadoop.security.token.SecretManager$InvalidToken", message);
}

// The DataNode's (Netty's) answers, each on its own connection.
std::string DataNodeError(const Reply& reply) {
  return "HTTP/1.1 " + std::to_string(reply.code) + " " + Reason(reply.code) +
         "\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: " +
         std::to_string(reply.body.size()) +
         "\r\nAccess-Control-Allow-Origin: *\r\nConnection: close\r\n\r\n" + reply.body;
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

// Checks every operation shares: simple auth and a valid path.
std::optional<Reply> CheckCommon(const Request& req) {
  if (req.user().empty()) {
    return RemoteException(401, "SecurityException", "java.lang.SecurityException",
                           "Failed to obtain user group information: no user.name= (simple auth)");
  }
  if (req.path.empty()) return IllegalArgument("Invalid path name " + req.raw_path);
  return std::nullopt;
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
  LOOM_ASSIGN_OR_RETURN(rpc_fd_, ListenLoopback(&rpc_port_, /*listen=*/false));
  LOOM_ASSIGN_OR_RETURN(nn_fd_, ListenLoopback(&nn_port_, /*listen=*/true));
  LOOM_ASSIGN_OR_RETURN(dn_fd_, ListenLoopback(&dn_port_, /*listen=*/true));
  stopping_ = false;
  nn_thread_ = std::thread([this] { AcceptLoop(nn_fd_, /*datanode=*/false); });
  dn_thread_ = std::thread([this] { AcceptLoop(dn_fd_, /*datanode=*/true); });
  return Status::Ok();
}

Status FakeHdfs::StartStandbyNameNode() {
  if (nn_fd_ < 0) return Status::FailedPrecondition("fake HDFS not started");
  if (sb_fd_ >= 0) return Status::Ok();
  LOOM_ASSIGN_OR_RETURN(sb_fd_, ListenLoopback(&sb_port_, /*listen=*/true));
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

// ---- NameNode ------------------------------------------------------------------------------

bool FakeHdfs::ServeNameNode(Connection& conn, const Request& in, bool standby) {
  if (!conn.ReadBody(in, [](std::string_view) {})) return false;
  Request req = in;
  std::string auth_headers;
  bool close = ToLower(req.Header("connection")) == "close" || req.method.empty();
  if (spnego_ && !req.method.empty() && req.webhdfs) {
    if (std::optional<std::string> refusal = Authenticate(&req, &auth_headers)) {
      ++requests_served_;
      return conn.Write(*refusal) && !close;
    }
  }
  Reply reply;
  const std::string op = req.op();
  const char* op_class = req.method == "GET" ? "GetOpParam" : req.method == "PUT" ? "PutOpParam"
                       : req.method == "POST" ? "PostOpParam" : "DeleteOpParam";
  if (req.method.empty()) {
    reply = IllegalArgument("malformed HTTP request");
  } else if (standby && req.webhdfs) {
    // NamenodeWebHdfsMethods' ExceptionHandler maps the IOException to 403 FORBIDDEN.
    reply = RemoteException(403, "StandbyException", "org.apache.hadoop.ipc.StandbyException",
                            "Operation category READ is not supported in state standby. "
                            "Visit https://s.apache.org/sbnn-error");
  } else if (!req.webhdfs) {
    reply = {404, "", ""};
  } else if (auto error = CheckCommon(req)) {
    reply = *error;
  } else if (req.method == "PUT" && op == "MKDIRS") {
    reply = Mkdirs(req);
  } else if (req.method == "PUT" && op == "CREATE") {
    reply = Redirect(req, op);
  } else if (req.method == "GET" && op == "GETFILESTATUS") {
    reply = GetFileStatus(req);
  } else if (req.method == "GET" && op == "LISTSTATUS") {
    reply = ListStatus(req);
  } else if (req.method == "GET" && op == "OPEN") {
    reply = Redirect(req, op);
  } else if (req.method == "DELETE" && op == "DELETE") {
    reply = Delete(req);
  } else if (req.method == "PUT" && op == "RENAME") {
    reply = Rename(req);
  } else if (req.method == "GET" && op == "GETDELEGATIONTOKEN") {
    reply = GetDelegationToken(req);
  } else if (req.method == "PUT" && op == "RENEWDELEGATIONTOKEN") {
    reply = RenewDelegationToken(req);
  } else if (req.method == "PUT" && op == "CANCELDELEGATIONTOKEN") {
    reply = CancelDelegationToken(req);
  } else {
    reply = IllegalArgument("Invalid value for webhdfs parameter \"op\": No enum constant "
                            "org.apache.hadoop.hdfs.web.resources." + std::string(op_class) +
                            ".Op." + op);
  }
  ++requests_served_;  // before the answer, so a client that has it sees it counted
  return conn.Write(NameNodeResponse(reply, req.user(), close, spnego_ ? &auth_headers : nullptr)) && !close;
}

// ---- Kerberos (SPNEGO) and delegation tokens ----------------------------------------------

Status FakeHdfs::RequireSpnego(const std::string& keytab, const std::string& http_principal) {
  // Fail now, not on the first request, when the keytab cannot accept for the principal.
  LOOM_RETURN_IF_ERROR(GssAcceptor::Create(keytab, http_principal).status());
  unsigned char secret[32];
  if (RAND_bytes(secret, sizeof secret) != 1) return Status::Internal("RAND_bytes failed");
  spnego_keytab_ = keytab;
  spnego_principal_ = http_principal;
  cookie_secret_.assign(reinterpret_cast<const char*>(secret), sizeof secret);
  spnego_ = true;
  return Status::Ok();
}

// hadoop-auth's Signer: Base64(HMAC-SHA256(secret, "u=..&p=..&t=..&e=..")).
std::string FakeHdfs::SignCookie(const std::string& data) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), cookie_secret_.data(), static_cast<int>(cookie_secret_.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &len);
  return cluster::yarn::Base64Encode(std::string_view(reinterpret_cast<const char*>(mac), len));
}

Result<std::string> FakeHdfs::DelegationUser(const Request& req) {
  Result<cluster::yarn::Token> token = cluster::yarn::DecodeTokenUrlString(req.Param("delegation"));
  if (!token.ok()) return Status::InvalidArgument(token.status().message());
  LOOM_ASSIGN_OR_RETURN(cluster::yarn::DelegationTokenIdentifier id, tokens_.Verify(*token));
  return ShortName(id.owner);
}

std::optional<std::string> FakeHdfs::Authenticate(Request* req, std::string* auth_headers) {
  bool close = ToLower(req->Header("connection")) == "close";
  std::string uri_path = req->target.substr(0, req->target.find('?'));
  // 1. A delegation token: WebHDFS's AuthFilter passes the request on, the servlet checks it.
  if (!req->Param("delegation").empty()) {
    Result<std::string> user = DelegationUser(*req);
    if (!user.ok()) {
      Reply reply = user.status().code() == StatusCode::kInvalidArgument
                        ? IllegalArgument("Invalid value for webhdfs parameter \"delegation\": " + user.status().message())
                        : InvalidToken(user.status().message());
      return NameNodeResponse(reply, "", close, auth_headers);
    }
    req->auth_user = *user;
    req->auth_principal = *user;
    req->via_delegation = true;
  } else {
    // 2. A hadoop.auth cookie this server signed, not expired (else ignored, as the filter does).
    std::string cookies = req->Header("cookie");
    size_t at = cookies.find("hadoop.auth=");
    if (at != std::string::npos) {
      std::string value = cookies.substr(at + 12, cookies.find(';', at) == std::string::npos
                                                      ? std::string::npos
                                                      : cookies.find(';', at) - at - 12);
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
      size_t sig = value.rfind("&s=");
      if (sig != std::string::npos && SignCookie(value.substr(0, sig)) == value.substr(sig + 3)) {
        std::map<std::string, std::string> fields;
        for (const std::string& kv : Split(value.substr(0, sig), '&')) {
          size_t eq = kv.find('=');
          if (eq != std::string::npos) fields[kv.substr(0, eq)] = kv.substr(eq + 1);
        }
        if (ParseInt(fields["e"]).value_or(0) > NowMs() && fields["t"] == "kerberos") {
          req->auth_user = fields["u"];
          req->auth_principal = fields["p"];
        }
      }
    }
    // 3. Negotiate.
    std::string authorization = req->Header("authorization");
    if (req->auth_user.empty() && ToLower(authorization.substr(0, 10)) == "negotiate ") {
      Result<std::string> token = cluster::yarn::Base64Decode(Trim(authorization.substr(10)));
      Result<std::unique_ptr<GssAcceptor>> acceptor = GssAcceptor::Create(spnego_keytab_, spnego_principal_);
      Result<GssAcceptor::Step> step = !token.ok() ? Result<GssAcceptor::Step>(token.status())
                                       : !acceptor.ok() ? Result<GssAcceptor::Step>(acceptor.status())
                                                        : (*acceptor)->Accept(*token);
      if (!step.ok()) {
        // KerberosAuthenticationHandler's GSSException -> AuthenticationException: fatal, 403.
        return FilterRefusal(403, OneLine("GSSException: " + step.status().message()), uri_path, false, close);
      }
      std::string mutual = step->output.empty() ? "" : " " + cluster::yarn::Base64Encode(step->output);
      if (!step->complete) {  // another leg: never with Kerberos under SPNEGO
        return FilterRefusal(403, "GSSException: the SPNEGO context needs another leg", uri_path, false, close);
      }
      ++spnego_accepts_;
      std::string principal = (*acceptor)->client_principal();
      req->auth_user = ShortName(principal);
      req->auth_principal = principal;
      std::string data = "u=" + req->auth_user + "&p=" + principal + "&t=kerberos&e=" +
                         std::to_string(NowMs() + cookie_validity_ms_.load());
      *auth_headers = "WWW-Authenticate: Negotiate" + mutual + "\r\nSet-Cookie: hadoop.auth=\"" + data + "&s=" +
                      SignCookie(data) + "\"; Path=/; Secure; HttpOnly\r\n";
    }
    // 4. Nothing valid: the challenge.
    if (req->auth_user.empty()) return FilterRefusal(401, "Authentication required", uri_path, true, close);
  }
  // user.name is not trusted: JspHelper.checkUsername.
  std::string named = req->Param("user.name");
  if (!named.empty() && named != req->auth_user) {
    return NameNodeResponse(RemoteException(403, "SecurityException", "java.lang.SecurityException",
                                            "Failed to obtain user group information: java.io.IOException: "
                                            "Usernames not matched: name=" + named + " != expected=" + req->auth_user),
                            "", close, auth_headers);
  }
  return std::nullopt;
}

Reply FakeHdfs::GetDelegationToken(const Request& req) {
  if (!spnego_) return {200, "{\"Token\":null}", ""};  // security off: no token
  if (req.via_delegation) {
    return RemoteException(403, "IOException", "java.io.IOException",
                           "Delegation Token can be issued only with kerberos or web authentication");
  }
  std::string renewer = req.Param("renewer", req.auth_user);
  cluster::yarn::Token token = tokens_.Mint(req.auth_user, renewer);
  token.kind = "WEBHDFS delegation";
  token.service = "127.0.0.1:" + std::to_string(rpc_port_);
  ordered_json urlstring;
  urlstring["urlString"] = cluster::yarn::EncodeTokenUrlString(token);
  ordered_json j;
  j["Token"] = urlstring;
  return {200, Dump(j), ""};
}

Reply FakeHdfs::RenewDelegationToken(const Request& req) {
  Result<cluster::yarn::Token> token = cluster::yarn::DecodeTokenUrlString(req.Param("token"));
  if (!token.ok()) return IllegalArgument("Invalid value for webhdfs parameter \"token\": " + token.status().message());
  Result<int64_t> expiry = tokens_.Renew(*token, req.auth_principal.empty() ? req.user() : req.auth_principal);
  if (!expiry.ok()) {
    return RemoteException(403, "AccessControlException", "org.apache.hadoop.security.AccessControlException",
                           expiry.status().message());
  }
  ordered_json j;
  j["long"] = *expiry;
  return {200, Dump(j), ""};
}

Reply FakeHdfs::CancelDelegationToken(const Request& req) {
  Result<cluster::yarn::Token> token = cluster::yarn::DecodeTokenUrlString(req.Param("token"));
  if (!token.ok()) return IllegalArgument("Invalid value for webhdfs parameter \"token\": " + token.status().message());
  Status cancelled = tokens_.Cancel(*token, req.auth_principal.empty() ? req.user() : req.auth_principal);
  if (!cancelled.ok()) {
    return RemoteException(403, "AccessControlException", "org.apache.hadoop.security.AccessControlException",
                           cancelled.message());
  }
  return {200, "", ""};
}

Reply FakeHdfs::Mkdirs(const Request& req) {
  std::lock_guard<std::mutex> lock(mu_);
  Reply error;
  if (!MakeDirLocked(req.path, req.user(), req.Param("permission", "755"), &error)) return error;
  return Boolean(true);
}

// CREATE and OPEN step 1: send the client to the DataNode, with the parameters the real
// NameNode adds (namenoderpcaddress, createflag, createparent, offset).
Reply FakeHdfs::Redirect(const Request& req, const std::string& op) {
  // A secure NameNode sends the caller's delegation token on, or mints one for the DataNode
  // step (owner and renewer the user: NamenodeWebHdfsMethods.redirectURI, webhdfs/05).
  std::string who;
  if (!spnego_) {
    who = "&user.name=" + EncodeQueryValue(req.user());
  } else if (req.via_delegation) {
    who = "&delegation=" + req.Param("delegation");
  } else {
    cluster::yarn::Token token = tokens_.Mint(req.auth_user, req.auth_user);
    token.kind = "WEBHDFS delegation";
    token.service = "127.0.0.1:" + std::to_string(rpc_port_);
    who = "&delegation=" + cluster::yarn::EncodeTokenUrlString(token);
  }
  std::string url = "http://127.0.0.1:" + std::to_string(dn_port_) + "/webhdfs/v1" +
                    EncodePath(req.path) + "?op=" + op + who +
                    "&namenoderpcaddress=127.0.0.1:" + std::to_string(rpc_port_);
  if (op == "CREATE") {
    url += "&createflag=&createparent=" + req.Param("createparent", "true") +
           "&overwrite=" + req.Param("overwrite", "false");
    if (!req.Param("permission").empty()) url += "&permission=" + EncodeQueryValue(req.Param("permission"));
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    const Node* node = Find(req.path);
    if (node == nullptr) return FileNotFound("File does not exist: " + req.path);
    if (node->entry.dir) return FileNotFound("Path is not a file: " + req.path);
    url += "&offset=" + EncodeQueryValue(req.Param("offset", "0"));
    if (!req.Param("length").empty()) url += "&length=" + EncodeQueryValue(req.Param("length"));
  }
  if (req.Param("noredirect") == "true") {
    ordered_json j;
    j["Location"] = url;
    return {200, Dump(j), ""};
  }
  return {307, "", url};
}

Reply FakeHdfs::GetFileStatus(const Request& req) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Find(req.path) == nullptr) return FileNotFound("File does not exist: " + req.path);
  return {200, "{\"FileStatus\":" + StatusJsonLocked(req.path, "") + "}", ""};
}

// Laid out like the real NameNode's streamed listing: one entry per line.
Reply FakeHdfs::ListStatus(const Request& req) {
  std::lock_guard<std::mutex> lock(mu_);
  const Node* node = Find(req.path);
  if (node == nullptr) return FileNotFound("File " + req.path + " does not exist.");
  std::vector<std::string> entries;
  if (!node->entry.dir) {
    entries.push_back(StatusJsonLocked(req.path, ""));
  } else {
    for (const std::string& child : ChildrenLocked(req.path)) {
      entries.push_back(StatusJsonLocked(child, BaseName(child)));
    }
  }
  return {200, "{\"FileStatuses\":{\"FileStatus\":[\n" + Join(entries, ",\n") + "\n]}}\n", ""};
}

Reply FakeHdfs::Delete(const Request& req) {
  std::lock_guard<std::mutex> lock(mu_);
  const Node* node = Find(req.path);
  if (node == nullptr || req.path == "/") return Boolean(false);
  if (node->entry.dir && req.Param("recursive", "false") != "true" && !ChildrenLocked(req.path).empty()) {
    return RemoteException(403, "PathIsNotEmptyDirectoryException",
                           "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException",
                           "`" + req.path + " is non empty': Directory is not empty");
  }
  auto it = nodes_.lower_bound(req.path + "/");
  while (it != nodes_.end() && StartsWith(it->first, req.path + "/")) it = nodes_.erase(it);
  nodes_.erase(req.path);
  (void)RemoveTree(LocalPath(req.path));
  return Boolean(true);
}

// FSDirRenameOp's old rename (what WebHDFS's RENAME without renameoptions calls): false, with
// nothing changed, when the source is missing, the destination's parent is missing, or the
// destination exists as a file; an existing directory as the destination receives the source.
Reply FakeHdfs::Rename(const Request& req) {
  std::string to = Normalize(req.Param("destination"));
  if (to.empty()) return IllegalArgument("Invalid value for webhdfs parameter \"destination\": " + req.Param("destination"));
  std::lock_guard<std::mutex> lock(mu_);
  const Node* from = Find(req.path);
  if (from == nullptr || req.path == "/") return Boolean(false);
  if (to == req.path) return Boolean(true);
  if (const Node* existing = Find(to); existing != nullptr && existing->entry.dir) to += "/" + BaseName(req.path);
  if (Find(to) != nullptr || StartsWith(to, req.path + "/")) return Boolean(false);
  const Node* parent = Find(Parent(to));
  if (parent == nullptr || !parent->entry.dir) return Boolean(false);
  if (::rename(LocalPath(req.path).c_str(), LocalPath(to).c_str()) != 0) {
    return RemoteException(500, "IOException", "java.io.IOException",
                           "rename " + LocalPath(req.path) + ": " + std::strerror(errno));
  }
  std::map<std::string, Node> moved;
  auto it = nodes_.lower_bound(req.path + "/");
  while (it != nodes_.end() && StartsWith(it->first, req.path + "/")) {
    moved[to + it->first.substr(req.path.size())] = it->second;
    it = nodes_.erase(it);
  }
  moved[to] = nodes_.at(req.path);
  nodes_.erase(req.path);
  nodes_.merge(moved);
  return Boolean(true);
}

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

// ---- the namespace -------------------------------------------------------------------------

const FakeHdfs::Node* FakeHdfs::Find(const std::string& path) const {
  auto it = nodes_.find(path);
  return it == nodes_.end() ? nullptr : &it->second;
}

// mkdir -p, failing like HDFS when a file is in the way.
bool FakeHdfs::MakeDirLocked(const std::string& path, const std::string& owner,
                             const std::string& permission, Reply* error) {
  std::string current;
  for (const std::string& part : Split(path, '/')) {
    current += "/" + part;
    const Node* node = Find(current);
    if (node != nullptr && node->entry.dir) continue;
    if (node != nullptr) {
      *error = current == path
                   ? RemoteException(403, "FileAlreadyExistsException",
                                     "org.apache.hadoop.fs.FileAlreadyExistsException",
                                     "Path is not a directory: " + current)
                   : RemoteException(403, "ParentNotDirectoryException",
                                     "org.apache.hadoop.fs.ParentNotDirectoryException",
                                     "Parent path is not a directory: " + current);
      return false;
    }
    if (::mkdir(LocalPath(current).c_str(), 0755) != 0 && errno != EEXIST) {
      *error = RemoteException(500, "IOException", "java.io.IOException",
                               "mkdir " + LocalPath(current) + ": " + std::strerror(errno));
      return false;
    }
    nodes_[current] = Node{Entry{true, 0, NowMs(), permission, owner}, NextFileIdLocked(), 0};
  }
  return true;
}

// Direct children, in HDFS's (byte) order.
std::vector<std::string> FakeHdfs::ChildrenLocked(const std::string& path) const {
  std::string prefix = path == "/" ? "/" : path + "/";
  std::vector<std::string> out;
  for (auto it = nodes_.lower_bound(prefix); it != nodes_.end() && StartsWith(it->first, prefix); ++it) {
    if (it->first != prefix && it->first.find('/', prefix.size()) == std::string::npos) {
      out.push_back(it->first);
    }
  }
  return out;
}

// Field order as the real NameNode writes them.
std::string FakeHdfs::StatusJsonLocked(const std::string& path, const std::string& suffix) const {
  const Node& node = nodes_.at(path);
  const Entry& e = node.entry;
  ordered_json j;
  j["accessTime"] = e.dir ? 0 : node.access_time;
  j["blockSize"] = e.dir ? 0 : 134217728;
  j["childrenNum"] = e.dir ? static_cast<int64_t>(ChildrenLocked(path).size()) : 0;
  j["fileId"] = node.file_id;
  j["group"] = "supergroup";
  j["length"] = e.length;
  j["modificationTime"] = e.mtime_ms;
  j["owner"] = e.owner;
  j["pathSuffix"] = suffix;
  j["permission"] = e.permission;
  j["replication"] = e.dir ? 0 : 1;
  j["storagePolicy"] = 0;
  j["type"] = e.dir ? "DIRECTORY" : "FILE";
  return Dump(j);
}

Result<FakeHdfs::Entry> FakeHdfs::Stat(const std::string& hdfs_path) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Node* node = Find(Normalize(hdfs_path));
  if (node == nullptr) return Status::NotFound("fake HDFS: no " + hdfs_path);
  return node->entry;
}

std::string FakeHdfs::LocalPath(const std::string& hdfs_path) const {
  std::string path = Normalize(hdfs_path);
  return storage_dir_ + "/root" + (path == "/" || path.empty() ? "" : path);
}

std::vector<std::string> FakeHdfs::CreatedFiles() const {
  std::lock_guard<std::mutex> lock(mu_);
  return created_files_;
}

std::vector<std::string> FakeHdfs::ListRecursive(const std::string& prefix) const {
  std::string path = Normalize(prefix);
  std::string below = path == "/" ? "/" : path + "/";
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (auto it = nodes_.lower_bound(below); it != nodes_.end() && StartsWith(it->first, below); ++it) {
    if (!it->second.entry.dir) out.push_back(it->first);
  }
  return out;
}

Status FakeHdfs::MakeDir(const std::string& hdfs_path, const std::string& owner, const std::string& permission) {
  std::lock_guard<std::mutex> lock(mu_);
  Reply error;
  if (!MakeDirLocked(Normalize(hdfs_path), owner, permission, &error)) {
    return Status::FailedPrecondition("fake HDFS: cannot make directory " + hdfs_path);
  }
  return Status::Ok();
}

Status FakeHdfs::PutFile(const std::string& hdfs_path, const std::string& bytes, const std::string& owner,
                         const std::string& permission) {
  const std::string path = Normalize(hdfs_path);
  std::lock_guard<std::mutex> lock(mu_);
  Reply error;
  const Node* existing = Find(path);
  if (existing != nullptr && existing->entry.dir) return Status::AlreadyExists("fake HDFS: " + path + " is a directory");
  if (!MakeDirLocked(Parent(path), owner, "755", &error)) {
    return Status::FailedPrecondition("fake HDFS: cannot make the parent of " + path);
  }
  LOOM_RETURN_IF_ERROR(WriteFileAtomic(LocalPath(path), bytes, 0644));
  int64_t now = NowMs();
  nodes_[path] = Node{Entry{false, static_cast<int64_t>(bytes.size()), now, permission, owner}, NextFileIdLocked(), now};
  return Status::Ok();
}

}  // namespace loom::yarn_double
