#include "hadoop/logs/nm_web_logs.h"

#include <algorithm>
#include <cctype>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/hdfs/curl_library.h"
#include "hadoop/hdfs/spnego.h"

namespace loom::hadoop {
namespace {

using nlohmann::json;

constexpr char kUnknownContainer[] = "Unknown container";
constexpr char kNoSuchLog[] = "Cannot find this log";
constexpr char kRunningNote[] = "This log file belongs to a running container (";


using HttpAnswer = HttpResponse;

// One GET on its own connection. Redirects are not followed: a NodeManager redirects only
// to a log server (yarn.log.server.url) once it no longer has the container. A NodeManager
// that is gone must not hold `loom logs -f` up for long; a stalled transfer of a large log
// fails too, but a slow one is fine. A Kerberized cluster's NodeManager web is SPNEGO
// (kerberos/ K1): with a Kerberos login the request negotiates as WebHDFS does.
Result<HttpAnswer> Get(const std::string& url, const char* accept) {
  HttpRequest request;
  request.url = url;
  request.headers = {accept};
  request.connect_timeout_s = 10;
  request.stall_timeout_s = 60;
  return AuthenticatedExchange(request);
}

// The message of a {"RemoteException":{...}} body, or the body itself (cut short).
std::string ErrorText(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("RemoteException") && j["RemoteException"].is_object()) {
    const json& e = j["RemoteException"];
    if (e.contains("message") && e["message"].is_string()) {
      std::string message = e["message"].get<std::string>();
      return message.substr(0, message.find('\n'));  // without a Java stack trace
    }
  }
  return body.substr(0, 400);
}

// Answers every endpoint shares: redirects and errors. nullopt: not one of them.
std::optional<Status> CommonError(long code, const std::string& body, const std::string& what) {
  if (code == 400) return Status::InvalidArgument(what + ": the NodeManager rejected the request (HTTP 400): " + ErrorText(body));
  if (code == 401 || code == 403) {
    return Status::PermissionDenied(what + ": HTTP " + std::to_string(code) + ": " + ErrorText(body));
  }
  if (code >= 500) return Status::Unavailable(what + ": HTTP " + std::to_string(code) + ": " + ErrorText(body));
  return std::nullopt;
}

bool Redirected(long code) { return code == 301 || code == 302 || code == 303 || code == 307 || code == 308; }

// "Name:value" (the wrapper's header lines have no space after the colon).
bool TakeLine(std::string_view body, size_t& pos, std::string_view& line) {
  size_t nl = body.find('\n', pos);
  if (nl == std::string_view::npos) return false;
  line = body.substr(pos, nl - pos);
  pos = nl + 1;
  return true;
}

Result<int64_t> JsonSize(const json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) return ParseInt(v.get<std::string>());  // 3.3 sends "fileSize":"9"
  return Status::InvalidArgument("not a size");
}

// One containerLogsInfo object: {"containerLogInfo":[...] or {...}, "logAggregationType":...}.
Status AddLogsInfo(const json& info, NmLogListing& out) {
  if (!info.is_object()) return Status::Internal("containerLogsInfo is not an object");
  bool aggregated = info.contains("logAggregationType") && info["logAggregationType"] == "AGGREGATED";
  if (!info.contains("containerLogInfo") || info["containerLogInfo"].is_null()) return Status::Ok();  // no files
  const json& files = info["containerLogInfo"];
  std::vector<json> list = files.is_array() ? files.get<std::vector<json>>() : std::vector<json>{files};
  for (const json& f : list) {
    if (!f.is_object() || !f.contains("fileName") || !f["fileName"].is_string()) {
      return Status::Internal("a containerLogInfo without fileName");
    }
    NmLogFileInfo info_out;
    info_out.name = f["fileName"].get<std::string>();
    if (f.contains("fileSize")) {
      Result<int64_t> size = JsonSize(f["fileSize"]);
      if (size.ok()) info_out.length = *size;
    }
    if (f.contains("lastModifiedTime") && f["lastModifiedTime"].is_string()) {
      info_out.last_modified = f["lastModifiedTime"].get<std::string>();
    }
    info_out.aggregated = aggregated;
    out.files.push_back(std::move(info_out));
  }
  return Status::Ok();
}

}  // namespace

Result<NmLogContent> ParseContainerLogsAnswer(long code, const std::string& body, const std::string& location,
                                              const std::string& container_id, const std::string& file,
                                              std::optional<int64_t> size) {
  const std::string what = "container " + container_id + " log " + file;
  NmLogContent out;
  if (Redirected(code)) {
    out.answer = NmLogAnswer::kUnknownContainer;
    out.message = "the NodeManager no longer has it and redirects to the log server " + location;
    return out;
  }
  if (code == 404 || (code == 500 && body.find(kUnknownContainer) != std::string::npos)) {
    // 404 "Cannot find this log on the local disk." is a missing file of a served container.
    // Any other 404 (404 "Unknown container", or a NodeManager without this endpoint) means
    // the NM cannot help: the aggregated logs may.
    out.answer = body.find(kNoSuchLog) != std::string::npos ? NmLogAnswer::kNoSuchFile : NmLogAnswer::kUnknownContainer;
    out.message = Trim(ErrorText(body));
    return out;
  }
  if (auto error = CommonError(code, body, what)) return *error;
  if (code != 200) return Status::Internal(what + ": unexpected HTTP " + std::to_string(code) + ": " + body.substr(0, 200));

  std::string_view b = body;
  const std::string head = "Container: " + container_id + " on ";
  if (!StartsWith(b, "Container: ")) {
    // NodeManagers before Hadoop 2.9 sent the bytes without the wrapper.
    out.bytes = body;
    out.file_length = static_cast<int64_t>(body.size());
    return out;
  }
  auto bad = [&](const std::string& why) {
    return Status::Internal(what + ": the NodeManager's answer is not in the expected layout (" + why + ")");
  };
  size_t pos = 0;
  std::string_view line;
  if (!TakeLine(b, pos, line) || !StartsWith(line, head)) return bad("first line");
  size_t rule = line.size();
  if (!TakeLine(b, pos, line) || !StartsWith(line, "LogAggregationType: ")) return bad("LogAggregationType");
  if (!TakeLine(b, pos, line) || line != std::string(rule, '=')) return bad("rule");
  if (!TakeLine(b, pos, line) || line != "LogType:" + file) return bad("LogType");
  if (!TakeLine(b, pos, line) || !StartsWith(line, "LogLastModifiedTime:")) return bad("LogLastModifiedTime");
  out.last_modified = std::string(line.substr(std::string_view("LogLastModifiedTime:").size()));
  if (!TakeLine(b, pos, line) || !StartsWith(line, "LogLength:")) return bad("LogLength");
  Result<int64_t> length = ParseInt(line.substr(std::string_view("LogLength:").size()));
  if (!length.ok() || *length < 0) return bad("LogLength value");
  out.file_length = *length;
  if (!TakeLine(b, pos, line) || line != "LogContents:") return bad("LogContents");
  // The NM sends min(|size|, LogLength) bytes, from the end for a negative size
  // (LogToolUtils.outputContainerLogThroughZeroCopy); nothing separates them from the trailer.
  int64_t n = out.file_length;
  if (size) n = std::min<int64_t>(*size < 0 ? -*size : *size, out.file_length);
  if (static_cast<int64_t>(b.size() - pos) < n) {
    return Status::Unavailable(what + ": the NodeManager sent fewer bytes than LogLength says (cut off?)");
  }
  out.bytes = std::string(b.substr(pos, n));
  pos += n;
  const std::string end = "End of LogType:" + file;
  std::string_view rest = b.substr(pos);
  if (!StartsWith(rest, end + ".")) {
    // The file changed between the NM's stat and its read (truncated, say): retrying helps.
    return Status::Unavailable(what + ": the bytes did not end where LogLength said (the file changed while it was read)");
  }
  rest.remove_prefix(end.size() + 1);
  const std::string running = kRunningNote + container_id + ") and so may not be complete.";
  if (StartsWith(rest, running)) {
    out.container_running = true;
    rest.remove_prefix(running.size());
  }
  if (!StartsWith(rest, "\n" + std::string(end.size() + 50, '*') + "\n\n")) return bad("trailer");
  // Anything after the trailer is the container's aggregated logs of a rolling upload,
  // which the NM appends; the local file is what is asked for.
  return out;
}

Result<NmLogListing> ParseLogListAnswer(long code, const std::string& body, const std::string& location) {
  NmLogListing out;
  if (Redirected(code)) {
    out.answer = NmLogAnswer::kUnknownContainer;
    out.message = "the NodeManager no longer has it and redirects to the log server " + location;
    return out;
  }
  // 3.3.6 answers 500 (a WebApplicationException wrapping NotFoundException "Unknown
  // container") for a container it does not have; 404 from other versions.
  if (code == 404 || (code == 500 && body.find(kUnknownContainer) != std::string::npos)) {
    out.answer = NmLogAnswer::kUnknownContainer;
    out.message = Trim(ErrorText(body));
    return out;
  }
  if (auto error = CommonError(code, body, "container log list")) return *error;
  if (code != 200) return Status::Internal("container log list: unexpected HTTP " + std::to_string(code));
  json j = json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("containerLogsInfo")) {
    return Status::Internal("container log list: not the expected JSON: " + body.substr(0, 200));
  }
  try {
    const json& infos = j["containerLogsInfo"];
    if (infos.is_array()) {
      for (const json& info : infos) LOOM_RETURN_IF_ERROR(AddLogsInfo(info, out));
    } else {
      LOOM_RETURN_IF_ERROR(AddLogsInfo(infos, out));
    }
  } catch (const json::exception& e) {
    return Status::Internal(std::string("container log list: ") + e.what());
  }
  return out;
}

NmWebLogs::NmWebLogs(std::string http_address, std::string user)
    : http_address_(std::move(http_address)), user_(std::move(user)) {}

namespace {

Result<std::string> BaseUrl(std::string http_address) {
  std::string scheme = "http";
  if (size_t at = http_address.find("://"); at != std::string::npos) {
    scheme = ToLower(http_address.substr(0, at));
    http_address = http_address.substr(at + 3);
  }
  if (scheme != "http" && scheme != "https") return Status::InvalidArgument("NodeManager web scheme '" + scheme + "'");
  Result<HostPort> hp = ParseHostPort(http_address);
  if (!hp.ok()) return Status::InvalidArgument("NodeManager web address '" + http_address + "' is not host:port");
  bool ipv6 = hp->host.find(':') != std::string::npos;
  return scheme + "://" + (ipv6 ? "[" + hp->host + "]" : hp->host) + ":" + std::to_string(hp->port) + "/ws/v1/node";
}

}  // namespace

Result<NmLogContent> NmWebLogs::ReadLog(const std::string& container_id, const std::string& file,
                                        std::optional<int64_t> size) const {
  LOOM_ASSIGN_OR_RETURN(std::string base, BaseUrl(http_address_));
  std::string url = base + "/containerlogs/" + PercentEncode(container_id) + "/" + PercentEncode(file);
  std::vector<std::string> query;
  if (size) query.push_back("size=" + std::to_string(*size));
  if (!user_.empty()) query.push_back("user.name=" + PercentEncode(user_));
  if (!query.empty()) url += "?" + Join(query, "&");
  Result<HttpAnswer> a = Get(url, "Accept: text/plain");
  if (!a.ok()) return a.status().WithContext("NodeManager " + http_address_);
  Result<NmLogContent> out = ParseContainerLogsAnswer(a->code, a->body, a->location, container_id, file, size);
  if (!out.ok()) return out.status().WithContext("NodeManager " + http_address_);
  return out;
}

Result<NmLogListing> NmWebLogs::ListLogs(const std::string& container_id) const {
  LOOM_ASSIGN_OR_RETURN(std::string base, BaseUrl(http_address_));
  std::string url = base + "/containers/" + PercentEncode(container_id) + "/logs";
  if (!user_.empty()) url += "?user.name=" + PercentEncode(user_);
  Result<HttpAnswer> a = Get(url, "Accept: application/json");
  if (!a.ok()) return a.status().WithContext("NodeManager " + http_address_);
  Result<NmLogListing> out = ParseLogListAnswer(a->code, a->body, a->location);
  if (!out.ok()) return out.status().WithContext("NodeManager " + http_address_ + ", container " + container_id);
  return out;
}

}  // namespace loom::hadoop
