#include "hadoop/logs/yarn_log_reader.h"

#include <algorithm>

#include "core/strings.h"

namespace loom::hadoop {
namespace {

LogChunk Slice(std::string bytes, int64_t offset, LogSource source, bool complete) {
  LogChunk c;
  c.file_length = static_cast<int64_t>(bytes.size());
  c.source = source;
  c.complete = complete;
  // A file shorter than what was already read was replaced or truncated: all of it is new.
  c.offset = offset >= 0 && offset <= c.file_length ? offset : 0;
  c.bytes = c.offset == 0 ? std::move(bytes) : bytes.substr(static_cast<size_t>(c.offset));
  return c;
}

}  // namespace

YarnLogReader::YarnLogReader(const HadoopConf& conf, std::string user)
    : conf_(conf), user_(std::move(user)), aggregated_(conf, user_) {}

YarnLogReader::YarnLogReader(const HadoopConf& conf, std::string user, WebHdfs hdfs)
    : conf_(conf), user_(std::move(user)), aggregated_(conf, user_, std::move(hdfs)) {}

std::string YarnLogReader::HttpAddress(const ContainerLogLocation& where) const {
  if (!where.node_http_address.empty()) return where.node_http_address;
  if (where.node_id.empty()) return "";
  Result<HostPort> node = ParseHostPort(where.node_id);
  if (!node.ok()) return "";
  return node->host + ":" + std::to_string(conf_.nm_webapp.port);
}

std::string YarnLogReader::NmGoneReason(const ContainerLogLocation& where, const std::string& nm_said) const {
  std::string why = "the NodeManager " + HttpAddress(where) + " no longer serves the logs of " + where.container_id;
  if (!nm_said.empty()) why += " (\"" + nm_said + "\")";
  if (!conf_.log_aggregation_enable) {
    why += ", and log aggregation is off (yarn.log-aggregation-enable is not true in " + conf_.conf_dir +
           "/yarn-site.xml): a NodeManager keeps a finished application's logs for "
           "yarn.nodemanager.log.retain-seconds (3 hours by default) and then deletes them";
  } else {
    why += ": it stops serving an application's logs once it has uploaded them to HDFS, a few seconds after "
           "the application ends";
  }
  return why;
}

Result<LogChunk> YarnLogReader::FromAggregated(const std::string& app_id, const ContainerLogLocation& where,
                                               const std::string& file, int64_t offset, const Status& nm_status,
                                               const std::string& nm_said) {
  Result<AggregatedLog> a = aggregated_.Read(app_id, where.node_id, where.container_id, file);
  if (a.ok()) return Slice(std::move(a->bytes), offset, LogSource::kAggregated, true);
  const Status& s = a.status();
  const std::string http = HttpAddress(where);
  if (!nm_status.ok()) {
    // Neither place answered: say both, as retryable when the NodeManager was the problem.
    std::string text = nm_status.message() + "; and from HDFS: " + s.message();
    return s.code() == StatusCode::kNotFound ? Status::Unavailable(text) : Status(s.code(), text);
  }
  if (s.code() != StatusCode::kNotFound) return s.WithContext("reading the aggregated logs of " + where.container_id);
  if (http.empty()) return s;
  return Status::NotFound(NmGoneReason(where, nm_said) + "; " + s.message());
}

Result<LogChunk> YarnLogReader::ReadFrom(const std::string& app_id, const ContainerLogLocation& where,
                                         const std::string& file, int64_t offset) {
  if (where.container_id.empty()) return Status::InvalidArgument("no container id");
  if (file.empty() || file.find('/') != std::string::npos) return Status::InvalidArgument("'" + file + "' is not a log file name");
  offset = std::max<int64_t>(offset, 0);
  const std::string http = HttpAddress(where);
  Status nm_status;
  std::string nm_said;
  if (!http.empty()) {
    NmWebLogs nm(conf_.nm_web_scheme == "https" ? "https://" + http : http, user_);  // yarn.http.policy
    // Following: ask for the tail only. It covers the new bytes unless more than the window
    // arrived since the last read, which then costs one whole-file request.
    std::optional<int64_t> size;
    if (offset > 0) size = -tail_window_;
    Result<NmLogContent> r = nm.ReadLog(where.container_id, file, size);
    if (r.ok() && r->answer == NmLogAnswer::kServed && size) {
      int64_t covered_from = r->file_length - static_cast<int64_t>(r->bytes.size());
      if (offset >= covered_from && offset <= r->file_length) {
        LogChunk c;
        c.offset = offset;
        c.file_length = r->file_length;
        c.bytes = r->bytes.substr(static_cast<size_t>(offset - covered_from));
        c.complete = !r->container_running;
        return c;
      }
      if (offset > r->file_length && covered_from == 0) return Slice(std::move(r->bytes), offset, LogSource::kNodeManager, !r->container_running);
      r = nm.ReadLog(where.container_id, file);
    }
    if (r.ok()) {
      switch (r->answer) {
        case NmLogAnswer::kServed:
          return Slice(std::move(r->bytes), offset, LogSource::kNodeManager, !r->container_running);
        case NmLogAnswer::kNoSuchFile: {
          std::string text = "container " + where.container_id + " has no log file '" + file + "' on the NodeManager " + http;
          Result<NmLogListing> listing = nm.ListLogs(where.container_id);
          if (listing.ok() && listing->answer == NmLogAnswer::kServed) {
            std::vector<std::string> names;
            for (const NmLogFileInfo& f : listing->files) {
              if (std::find(names.begin(), names.end(), f.name) == names.end()) names.push_back(f.name);
            }
            text += " (it has: " + Join(names, ", ") + ")";
          }
          return Status::NotFound(text);
        }
        case NmLogAnswer::kUnknownContainer:
          nm_said = r->message;
          break;
      }
    } else if (r.status().code() == StatusCode::kUnavailable || r.status().code() == StatusCode::kInternal) {
      nm_status = r.status();  // the node may be gone for good: its logs may be in HDFS
    } else {
      return r.status();
    }
  }
  return FromAggregated(app_id, where, file, offset, nm_status, nm_said);
}

Result<std::string> YarnLogReader::Read(const std::string& app_id, const ContainerLogLocation& where,
                                        const std::string& file) {
  LOOM_ASSIGN_OR_RETURN(LogChunk c, ReadFrom(app_id, where, file, 0));
  return std::move(c.bytes);
}

Result<std::vector<std::string>> YarnLogReader::List(const std::string& app_id, const ContainerLogLocation& where) {
  if (where.container_id.empty()) return Status::InvalidArgument("no container id");
  const std::string http = HttpAddress(where);
  Status nm_status;
  std::string nm_said;
  if (!http.empty()) {
    NmWebLogs nm(conf_.nm_web_scheme == "https" ? "https://" + http : http, user_);  // yarn.http.policy
    Result<NmLogListing> r = nm.ListLogs(where.container_id);
    if (r.ok() && r->answer == NmLogAnswer::kServed) {
      std::vector<std::string> names;
      for (const NmLogFileInfo& f : r->files) {
        if (std::find(names.begin(), names.end(), f.name) == names.end()) names.push_back(f.name);
      }
      return names;
    }
    if (r.ok()) {
      nm_said = r->message;
    } else if (r.status().code() == StatusCode::kUnavailable || r.status().code() == StatusCode::kInternal) {
      nm_status = r.status();
    } else {
      return r.status();
    }
  }
  Result<std::vector<std::string>> a = aggregated_.List(app_id, where.node_id, where.container_id);
  if (a.ok()) return a;
  const Status& s = a.status();
  if (!nm_status.ok()) {
    std::string text = nm_status.message() + "; and from HDFS: " + s.message();
    return s.code() == StatusCode::kNotFound ? Status::Unavailable(text) : Status(s.code(), text);
  }
  if (s.code() != StatusCode::kNotFound || http.empty()) return s;
  return Status::NotFound(NmGoneReason(where, nm_said) + "; " + s.message());
}

}  // namespace loom::hadoop
