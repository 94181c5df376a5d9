#include "hadoop/hdfs/webhdfs.h"

#include "core/strings.h"
#include "hadoop/hdfs/curl_library.h"
#include "hadoop/hdfs/spnego.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace loom::hadoop {
namespace {

using nlohmann::json;


// "/a b/c" -> "/a%20b/c": each segment escaped, the separators kept.
std::string EncodePath(const std::string& path) {
  std::string out;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    out += '/';
    out += PercentEncode(std::string_view(path).substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A request body: a local file (streamed, so any size) or bytes in memory.
struct Body {
  FILE* file = nullptr;
  std::string_view bytes;
  size_t offset = 0;  // into `bytes`
  int64_t size = 0;
};

size_t ReadBody(char* buf, size_t size, size_t n, void* userdata) {
  auto* body = static_cast<Body*>(userdata);
  size_t want = size * n;
  if (body->file != nullptr) {
    size_t got = std::fread(buf, 1, want, body->file);
    return std::ferror(body->file) ? CURL_READFUNC_ABORT : got;
  }
  size_t got = std::min(want, body->bytes.size() - body->offset);
  std::copy_n(body->bytes.data() + body->offset, got, buf);
  body->offset += got;
  return got;
}

// libcurl rewinds the body when it must resend it (e.g. after an early error reply).
int SeekBody(void* userdata, curl_off_t offset, int origin) {
  auto* body = static_cast<Body*>(userdata);
  if (origin != SEEK_SET || offset < 0 || offset > body->size) return CURL_SEEKFUNC_CANTSEEK;
  if (body->file != nullptr) {
    return std::fseek(body->file, static_cast<long>(offset), SEEK_SET) == 0 ? CURL_SEEKFUNC_OK
                                                                            : CURL_SEEKFUNC_FAIL;
  }
  body->offset = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

using Response = HttpResponse;

// One WebHDFS exchange. Redirects are never followed: WebHDFS's second step must carry the
// body to the DataNode, which libcurl would not resend on a 307 of a body-less PUT. The
// DataNode's unsolicited "100 Continue" is an informational reply that libcurl skips.
// `authenticate`: through SPNEGO when the process has a Kerberos login (NameNode calls without
// a delegation token); DataNode steps and delegation-token calls go as they are.
Result<Response> Perform(const std::string& method, const std::string& url, Body* body, bool authenticate = false) {
  HttpRequest request;
  request.method = method;
  request.url = url;
  if (body != nullptr) {
    request.read_body = ReadBody;
    request.seek_body = SeekBody;
    request.body = body;
    request.body_size = body->size;
    // No "Expect: 100-continue": the body goes out at once. The DataNode sends its 100
    // regardless, and a server that sent none would cost curl's 1 s wait per file.
    request.headers = {"Content-Type: application/octet-stream", "Expect:"};
  }
  auto response = authenticate ? AuthenticatedExchange(request) : HttpExchange(request);
  if (!response.ok() && response.status().code() == StatusCode::kUnavailable) {
    return Status::Unavailable("WebHDFS " + response.status().message());
  }
  return response;
}

// Never throws: a body that is not JSON parses to a `discarded` value.
json ParseJson(const std::string& body) { return json::parse(body, nullptr, false); }

// A failed WebHDFS call as a Status: {"RemoteException":{"exception":..,"message":..}} is what
// the NameNode and DataNode send; anything else is quoted (cut short).
Status RemoteError(const std::string& op, const std::string& path, const Response& r) {
  std::string exception, message;
  try {
    json j = ParseJson(r.body);
    if (j.is_object() && j.contains("RemoteException") && j["RemoteException"].is_object()) {
      const json& e = j["RemoteException"];
      exception = e.value("exception", "");
      message = e.value("message", "");
      // A DataNode passes on the NameNode's IPC error, whose text is the Java stack trace.
      if (size_t nl = message.find('\n'); nl != std::string::npos) message.resize(nl);
    }
  } catch (const json::exception&) {
  }
  std::string text = "WebHDFS " + op + " " + path + ": HTTP " + std::to_string(r.code);
  if (!exception.empty()) {
    text += ": " + exception + ": " + message;
  } else if (!r.body.empty()) {
    text += ": " + r.body.substr(0, 300);
  }
  // A server's message may quote the request's URL, with its delegation token.
  text = RedactUrlSecrets(text);
  if (exception == "FileNotFoundException") return Status::NotFound(text);
  // InvalidToken: a delegation token that is cancelled, expired or not the NameNode's.
  if (exception == "AccessControlException" || exception == "InvalidToken") return Status::PermissionDenied(text);
  if (exception == "FileAlreadyExistsException") return Status::AlreadyExists(text);
  if (r.code == 401 || exception == "SecurityException") return Status::Unauthenticated(text);
  if (exception == "StandbyException" || exception == "RetriableException" || r.code >= 500) {
    return Status::Unavailable(text);
  }
  if (r.code == 400 || exception == "IllegalArgumentException") return Status::InvalidArgument(text);
  return Status::FailedPrecondition(text);
}

Result<HdfsFileStatus> ToFileStatus(const json& j) {
  if (!j.is_object()) return Status::Internal("a FileStatus is not a JSON object");
  HdfsFileStatus s;
  s.path_suffix = j.value("pathSuffix", "");
  s.type = j.value("type", "");
  s.length = j.value("length", int64_t{0});
  s.modification_time = j.value("modificationTime", int64_t{0});
  s.permission = j.value("permission", "");
  s.owner = j.value("owner", "");
  return s;
}

Status BadJson(const std::string& op, const std::string& path, const std::string& body,
               const std::string& why) {
  return Status::Internal("WebHDFS " + op + " " + path + ": unexpected answer (" + why +
                          "): " + body.substr(0, 300));
}

// {"boolean":true|false}, the answer of MKDIRS, DELETE and RENAME.
Result<bool> ParseBoolean(const std::string& op, const std::string& path, const std::string& body) {
  json j = ParseJson(body);
  if (!j.is_object() || !j.contains("boolean") || !j["boolean"].is_boolean()) {
    return BadJson(op, path, body, "no \"boolean\"");
  }
  return j["boolean"].get<bool>();
}

// Who a NameNode call is from: user.name= (with SPNEGO when logged in), or a delegation token.
struct Auth {
  const std::string& user;
  const std::string& delegation;  // a token's URL string; "" for none
};

// http://nn:9870/webhdfs/v1/<path>?op=OP&user.name=U<extra> (or &delegation=T)
std::string Url(const std::string& base, const Auth& auth, const std::string& path,
                const std::string& op, const std::string& extra = "") {
  // The URL string is URL-safe Base64 without padding: nothing to escape.
  std::string who = auth.delegation.empty() ? "&user.name=" + PercentEncode(auth.user)
                                            : "&delegation=" + auth.delegation;
  return base + "/webhdfs/v1" + EncodePath(path) + "?op=" + op + who + extra;
}

Status CheckPath(const std::string& op, const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return Status::InvalidArgument("WebHDFS " + op + ": '" + path + "' is not an absolute HDFS path");
  }
  return Status::Ok();
}

// A standby NameNode answers every WebHDFS call with 403 and a RemoteException
// StandbyException ("Operation category READ is not supported in state standby"): its
// ExceptionHandler maps any IOException to FORBIDDEN.
bool IsStandby(const Response& r) {
  if (r.code != 403) return false;
  json j = ParseJson(r.body);
  if (!j.is_object() || !j.contains("RemoteException") || !j["RemoteException"].is_object()) return false;
  const json& e = j["RemoteException"];
  return e.value("exception", "") == "StandbyException" ||
         e.value("javaClassName", "") == "org.apache.hadoop.ipc.StandbyException";
}

// The NameNode last found active per NameNode list, for the whole process (each `loom`
// command builds new WebHdfs objects; none should ask the standby first every time).
std::mutex g_active_mu;
std::map<std::string, size_t>& ActiveNameNodes() {
  static auto* active = new std::map<std::string, size_t>();
  return *active;
}

// One call to the NameNodes: the active one first, then each other in order while they are
// standby or unreachable (as DFSClient's failover proxy does, without its backoff: WebHDFS
// callers retry whole operations themselves). The last answer or error is returned.
Result<Response> NameNodeCall(const std::vector<std::string>& bases, const std::string& method,
                              const Auth& auth, const std::string& path, const std::string& op,
                              const std::string& extra) {
  std::string key = Join(bases, ",");
  size_t first = 0;
  if (bases.size() > 1) {
    std::lock_guard lock(g_active_mu);
    if (auto it = ActiveNameNodes().find(key); it != ActiveNameNodes().end()) first = it->second % bases.size();
  }
  Result<Response> last = Status::Unavailable("WebHDFS: no NameNode address");
  for (size_t i = 0; i < bases.size(); ++i) {
    size_t index = (first + i) % bases.size();
    last = Perform(method, Url(bases[index], auth, path, op, extra), nullptr,
                   /*authenticate=*/auth.delegation.empty());
    bool skip = last.ok() ? IsStandby(*last) : last.status().code() == StatusCode::kUnavailable;
    if (!skip || bases.size() == 1) {
      if (index != first) {
        std::lock_guard lock(g_active_mu);
        ActiveNameNodes()[key] = index;
      }
      return last;
    }
    if (i + 1 < bases.size()) {
      spdlog::warn("NameNode {} is {} for WebHDFS {}; trying {}", bases[index],
                   last.ok() ? "standby" : "unreachable (" + RedactUrlSecrets(last.status().message()) + ")", op,
                   bases[(index + 1) % bases.size()]);
    }
  }
  return last;
}

// CREATE in its two steps: a body-less PUT to the NameNode, which redirects to a DataNode,
// then the bytes to that DataNode.
Status CreateTwoSteps(const std::vector<std::string>& bases, const Auth& auth, const std::string& path,
                      const std::string& permission, Body& body) {
  LOOM_RETURN_IF_ERROR(CheckPath("CREATE", path));
  std::string extra = "&overwrite=true&permission=" + PercentEncode(permission);
  LOOM_ASSIGN_OR_RETURN(Response step1, NameNodeCall(bases, "PUT", auth, path, "CREATE", extra));
  std::string location = step1.location;
  if (step1.code == 200) {  // a gateway that answers as if noredirect=true
    json j = ParseJson(step1.body);
    if (j.is_object() && j.contains("Location") && j["Location"].is_string()) {
      location = j["Location"].get<std::string>();
    }
  } else if (step1.code != 307) {
    return RemoteError("CREATE", path, step1);
  }
  if (location.empty()) return BadJson("CREATE", path, step1.body, "no redirect to a DataNode");
  LOOM_ASSIGN_OR_RETURN(Response step2, Perform("PUT", location, &body));
  if (step2.code != 201 && step2.code != 200) return RemoteError("CREATE", path, step2);
  return Status::Ok();
}

}  // namespace

WebHdfs::WebHdfs(std::string base, std::string user) : user_(std::move(user)) {
  for (std::string b : Split(base, ',')) {
    b = Trim(b);
    while (!b.empty() && b.back() == '/') b.pop_back();
    if (!b.empty()) bases_.push_back(b);
  }
  if (bases_.empty()) bases_.push_back("");
}

WebHdfs WebHdfs::ForConf(const HadoopConf& conf, const std::string& user) {
  return WebHdfs(WebHdfsBaseList(conf), user);
}

Status WebHdfs::Mkdirs(const std::string& path, const std::string& permission) {
  LOOM_RETURN_IF_ERROR(CheckPath("MKDIRS", path));
  std::string extra = "&permission=" + PercentEncode(permission);
  LOOM_ASSIGN_OR_RETURN(Response r, NameNodeCall(bases_, "PUT", Auth{user_, delegation_}, path, "MKDIRS", extra));
  if (r.code != 200) return RemoteError("MKDIRS", path, r);
  LOOM_ASSIGN_OR_RETURN(bool made, ParseBoolean("MKDIRS", path, r.body));
  // HDFS reports failures as exceptions; false would mean something it did not explain.
  if (!made) return Status::Internal("WebHDFS MKDIRS " + path + ": the NameNode answered false");
  return Status::Ok();
}

Result<HdfsFileStatus> WebHdfs::Upload(const std::string& local_file, const std::string& path,
                                       const std::string& permission) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(local_file.c_str(), "rb"), &std::fclose);
  if (!file) return Status::FromErrno("WebHDFS CREATE " + path + ": open " + local_file, errno);
  struct stat st;
  if (::fstat(fileno(file.get()), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status::InvalidArgument("WebHDFS CREATE " + path + ": " + local_file +
                                   " is not a regular file");
  }
  Body body;
  body.file = file.get();
  body.size = st.st_size;
  LOOM_RETURN_IF_ERROR(CreateTwoSteps(bases_, Auth{user_, delegation_}, path, permission, body));
  // The NodeManager compares a LocalResource's size and timestamp with HDFS's exactly, so
  // they must come from the NameNode, not from the local file or clock.
  return GetFileStatus(path);
}

Result<HdfsFileStatus> WebHdfs::Create(const std::string& path, const std::string& bytes,
                                       const std::string& permission) {
  Body body;
  body.bytes = bytes;
  body.size = static_cast<int64_t>(bytes.size());
  LOOM_RETURN_IF_ERROR(CreateTwoSteps(bases_, Auth{user_, delegation_}, path, permission, body));
  // The NodeManager compares a LocalResource's size and timestamp with HDFS's exactly, so
  // they must come from the NameNode, not from the local file or clock.
  return GetFileStatus(path);
}

Result<HdfsFileStatus> WebHdfs::GetFileStatus(const std::string& path) {
  LOOM_RETURN_IF_ERROR(CheckPath("GETFILESTATUS", path));
  LOOM_ASSIGN_OR_RETURN(Response r, NameNodeCall(bases_, "GET", Auth{user_, delegation_}, path, "GETFILESTATUS", ""));
  if (r.code != 200) return RemoteError("GETFILESTATUS", path, r);
  try {
    json j = ParseJson(r.body);
    if (!j.is_object() || !j.contains("FileStatus")) {
      return BadJson("GETFILESTATUS", path, r.body, "no FileStatus");
    }
    return ToFileStatus(j["FileStatus"]);
  } catch (const json::exception& e) {
    return BadJson("GETFILESTATUS", path, r.body, e.what());
  }
}

Result<std::vector<HdfsFileStatus>> WebHdfs::ListStatus(const std::string& path) {
  LOOM_RETURN_IF_ERROR(CheckPath("LISTSTATUS", path));
  LOOM_ASSIGN_OR_RETURN(Response r, NameNodeCall(bases_, "GET", Auth{user_, delegation_}, path, "LISTSTATUS", ""));
  if (r.code != 200) return RemoteError("LISTSTATUS", path, r);
  try {
    json j = ParseJson(r.body);
    if (!j.is_object() || !j.contains("FileStatuses") || !j["FileStatuses"].is_object() ||
        !j["FileStatuses"].contains("FileStatus") || !j["FileStatuses"]["FileStatus"].is_array()) {
      return BadJson("LISTSTATUS", path, r.body, "no FileStatuses.FileStatus array");
    }
    std::vector<HdfsFileStatus> out;
    for (const json& entry : j["FileStatuses"]["FileStatus"]) {
      LOOM_ASSIGN_OR_RETURN(HdfsFileStatus s, ToFileStatus(entry));
      out.push_back(std::move(s));
    }
    return out;
  } catch (const json::exception& e) {
    return BadJson("LISTSTATUS", path, r.body, e.what());
  }
}

Result<std::string> WebHdfs::Open(const std::string& path) { return OpenRange(path, 0, -1); }

Result<std::string> WebHdfs::OpenRange(const std::string& path, int64_t offset, int64_t length) {
  LOOM_RETURN_IF_ERROR(CheckPath("OPEN", path));
  std::string extra;
  if (offset > 0) extra += "&offset=" + std::to_string(offset);
  if (length >= 0) extra += "&length=" + std::to_string(length);
  LOOM_ASSIGN_OR_RETURN(Response step1, NameNodeCall(bases_, "GET", Auth{user_, delegation_}, path, "OPEN", extra));
  if (step1.code == 200) return std::move(step1.body);  // HttpFS serves the bytes itself
  if (step1.code != 307 || step1.location.empty()) return RemoteError("OPEN", path, step1);
  LOOM_ASSIGN_OR_RETURN(Response step2, Perform("GET", step1.location, nullptr));
  if (step2.code != 200) return RemoteError("OPEN", path, step2);
  return std::move(step2.body);
}

Result<bool> WebHdfs::Delete(const std::string& path, bool recursive) {
  LOOM_RETURN_IF_ERROR(CheckPath("DELETE", path));
  std::string extra = recursive ? "&recursive=true" : "&recursive=false";
  LOOM_ASSIGN_OR_RETURN(Response r, NameNodeCall(bases_, "DELETE", Auth{user_, delegation_}, path, "DELETE", extra));
  if (r.code == 404) return false;  // HDFS answers false itself; a gateway may say 404
  if (r.code != 200) return RemoteError("DELETE", path, r);
  return ParseBoolean("DELETE", path, r.body);
}

Result<bool> WebHdfs::Rename(const std::string& from, const std::string& to) {
  LOOM_RETURN_IF_ERROR(CheckPath("RENAME", from));
  LOOM_RETURN_IF_ERROR(CheckPath("RENAME", to));
  std::string extra = "&destination=" + PercentEncode(to);
  LOOM_ASSIGN_OR_RETURN(Response r, NameNodeCall(bases_, "PUT", Auth{user_, delegation_}, from, "RENAME", extra));
  if (r.code != 200) return RemoteError("RENAME", from, r);
  return ParseBoolean("RENAME", from, r.body);
}

void WebHdfs::UseDelegationToken(const Token& token) { delegation_ = EncodeTokenUrlString(token); }

Result<Token> WebHdfs::GetDelegationToken(const std::string& renewer) {
  // Token operations need the Kerberos login itself (Java's getRequireAuth): never a token.
  const std::string none;
  std::string extra = renewer.empty() ? "" : "&renewer=" + PercentEncode(renewer);
  LOOM_ASSIGN_OR_RETURN(Response r, NameNodeCall(bases_, "GET", Auth{user_, none}, "/", "GETDELEGATIONTOKEN", extra));
  if (r.code != 200) return RemoteError("GETDELEGATIONTOKEN", "/", r);
  json j = ParseJson(r.body);
  if (!j.is_object() || !j.contains("Token") || !j["Token"].is_object() || !j["Token"].contains("urlString") ||
      !j["Token"]["urlString"].is_string()) {
    return BadJson("GETDELEGATIONTOKEN", "/", r.body, "no Token.urlString");
  }
  Result<Token> token = DecodeTokenUrlString(j["Token"]["urlString"].get<std::string>());
  // Not the body: it holds the token, and errors reach logs.
  if (!token.ok()) return BadJson("GETDELEGATIONTOKEN", "/", "", token.status().message());
  return token;
}

Result<int64_t> WebHdfs::RenewDelegationToken(const Token& token) {
  const std::string none;
  LOOM_ASSIGN_OR_RETURN(Response r, NameNodeCall(bases_, "PUT", Auth{user_, none}, "/", "RENEWDELEGATIONTOKEN",
                                                 "&token=" + EncodeTokenUrlString(token)));
  if (r.code != 200) return RemoteError("RENEWDELEGATIONTOKEN", "/", r);
  json j = ParseJson(r.body);
  if (!j.is_object() || !j.contains("long") || !j["long"].is_number_integer()) {
    return BadJson("RENEWDELEGATIONTOKEN", "/", r.body, "no \"long\"");
  }
  return j["long"].get<int64_t>();
}

Status WebHdfs::CancelDelegationToken(const Token& token) {
  const std::string none;
  LOOM_ASSIGN_OR_RETURN(Response r, NameNodeCall(bases_, "PUT", Auth{user_, none}, "/", "CANCELDELEGATIONTOKEN",
                                                 "&token=" + EncodeTokenUrlString(token)));
  if (r.code != 200) return RemoteError("CANCELDELEGATIONTOKEN", "/", r);
  return Status::Ok();
}

}  // namespace loom::hadoop
