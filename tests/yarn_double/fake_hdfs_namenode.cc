// FakeHdfs's NameNode: the WebHDFS operations it answers (MKDIRS, CREATE and OPEN step 1,
// GETFILESTATUS, LISTSTATUS, DELETE, RENAME), its answers and its errors.

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <mutex>

#include "core/files.h"
#include "core/strings.h"
#include "fake_hdfs.h"
#include "fake_hdfs_internal.h"

namespace loom::yarn_double {

namespace {

std::string HttpDate() {
  std::time_t now = std::time(nullptr);
  std::tm tm;
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

std::string EncodeQueryValue(const std::string& v) {
  std::string out = EncodePath(v);
  for (size_t at; (at = out.find('/')) != std::string::npos;) out.replace(at, 1, "%2F");
  return out;
}

Reply Boolean(bool value) {
  ordered_json j;
  j["boolean"] = value;
  return {200, Dump(j), ""};
}

}  // namespace

namespace fake_hdfs_internal {

Reply RemoteException(int code, const std::string& exception, const std::string& java_class,
                                const std::string& message) {
  // The keys in the recorded NameNode's order.
  const ordered_json j = {
      {"RemoteException", {{"exception", exception}, {"javaClassName", java_class}, {"message", message}}}};
  return {code, Dump(j), ""};
}

Reply FileNotFound(const std::string& message) {
  return RemoteException(404, "FileNotFoundException", "java.io.FileNotFoundException", message);
}

Reply IllegalArgument(const std::string& message) {
  return RemoteException(400, "IllegalArgumentException", "java.lang.IllegalArgumentException", message);
}

Reply InvalidToken(const std::string& message) {
  return RemoteException(403, "InvalidToken", "org.apache.hadoop.security.token.SecretManager$InvalidToken", message);
}

// The NameNode's (Jetty's) answer: headers as in the captures, JSON bodies chunked. SPNEGO mode
// (`auth_headers` not null): those instead of the simple-auth cookie.
std::string NameNodeResponse(const Reply& reply, const std::string& user, bool close,
                             const std::string* auth_headers) {
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

// Checks every operation shares: simple auth and a valid path.
std::optional<Reply> CheckCommon(const Request& req) {
  if (req.user().empty()) {
    return RemoteException(401, "SecurityException", "java.lang.SecurityException",
                           "Failed to obtain user group information: no user.name= (simple auth)");
  }
  if (req.path.empty()) return IllegalArgument("Invalid path name " + req.raw_path);
  return std::nullopt;
}

}  // namespace fake_hdfs_internal

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
    hadoop::Token token = tokens_.Mint(req.auth_user, req.auth_user);
    token.kind = "WEBHDFS delegation";
    token.service = "127.0.0.1:" + std::to_string(rpc_port_);
    who = "&delegation=" + hadoop::EncodeTokenUrlString(token);
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

}  // namespace loom::yarn_double
