#include "hadoop/logs/aggregated_logs.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "core/strings.h"

namespace loom::hadoop {
namespace {

constexpr char kTmpSuffix[] = ".tmp";            // LogAggregationUtils.TMP_FILE_SUFFIX: an upload in progress
constexpr char kChecksumSuffix[] = "-checksum";  // IFile's side file during an upload

// A configured log directory as an HDFS path: "/tmp/logs", "hdfs://nn:9000/tmp/logs", or
// relative to the user's home like any Hadoop path.
Result<std::string> HdfsPath(const HadoopConf& conf, const std::string& user, std::string dir) {
  dir = Trim(dir);
  size_t scheme = dir.find("://");
  if (scheme != std::string::npos) {
    std::string fs = ToLower(dir.substr(0, scheme));
    std::string rest = dir.substr(scheme + 3);
    size_t slash = rest.find('/');
    std::string authority = rest.substr(0, slash);
    std::string fs_authority = conf.fs_port > 0 ? conf.fs_host + ":" + std::to_string(conf.fs_port) : conf.fs_host;
    if (fs != "hdfs" || (!authority.empty() && authority != fs_authority && authority != conf.fs_host)) {
      return Status::InvalidArgument("the remote log directory " + dir + " is not on fs.defaultFS (" + conf.default_fs +
                                     "), the only file system Loom reads logs from");
    }
    dir = slash == std::string::npos ? "/" : rest.substr(slash);
  }
  if (dir.empty()) return Status::InvalidArgument("an empty remote log directory");
  if (dir[0] != '/') dir = "/user/" + user + "/" + dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}


bool NodeFileMatches(const std::string& name, const std::string& node_file) {
  return name == node_file || StartsWith(name, node_file + "_");
}

}  // namespace

std::string NodeFileName(const std::string& node_id) {
  std::string out = node_id;
  std::replace(out.begin(), out.end(), ':', '_');
  return out;
}

Result<std::vector<std::string>> AggregatedLogDirs(const HadoopConf& conf, const std::string& user,
                                                   const std::string& app_id) {
  std::vector<std::string> parts = Split(app_id, '_', false);
  Result<int64_t> seq = parts.size() == 3 && parts[0] == "application" ? ParseInt(parts[2]) : Result<int64_t>(Status::InvalidArgument(""));
  if (!seq.ok() || *seq < 0) return Status::InvalidArgument("'" + app_id + "' is not an application id");
  char bucket[16];
  std::snprintf(bucket, sizeof bucket, "%04lld", static_cast<long long>(*seq % 10000));

  std::vector<std::string> formats = conf.log_aggregation_file_formats;
  for (const char* known : {"TFile", "IFile"}) {
    bool listed = std::any_of(formats.begin(), formats.end(), [&](const std::string& f) { return ToLower(f) == ToLower(known); });
    if (!listed) formats.push_back(known);
  }
  std::string base_suffix = conf.remote_app_log_dir_suffix.empty() ? "logs" : conf.remote_app_log_dir_suffix;
  std::string base_root = conf.remote_app_log_dir.empty() ? "/tmp/logs" : conf.remote_app_log_dir;
  std::vector<std::string> dirs;
  auto add = [&](const std::string& d) {
    if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  };
  for (const std::string& format : formats) {
    auto dir_it = conf.log_aggregation_format_dirs.find(format);
    auto suffix_it = conf.log_aggregation_format_suffixes.find(format);
    LOOM_ASSIGN_OR_RETURN(std::string root,
                          HdfsPath(conf, user, dir_it != conf.log_aggregation_format_dirs.end() ? dir_it->second : base_root));
    std::string suffix = suffix_it != conf.log_aggregation_format_suffixes.end() ? suffix_it->second
                                                                               : base_suffix + "-" + ToLower(format);
    std::string user_dir = JoinHdfsPath(root, user);
    add(user_dir + "/bucket-" + suffix + "/" + bucket + "/" + app_id);
    add(user_dir + "/" + suffix + "/" + app_id);
  }
  LOOM_ASSIGN_OR_RETURN(std::string root, HdfsPath(conf, user, base_root));
  add(JoinHdfsPath(root, user) + "/" + base_suffix + "/" + app_id);
  return dirs;
}

AggregatedLogs::AggregatedLogs(const HadoopConf& conf, std::string user)
    : AggregatedLogs(conf, user, WebHdfs::ForConf(conf, user)) {}

AggregatedLogs::AggregatedLogs(const HadoopConf& conf, std::string user, WebHdfs hdfs)
    : conf_(conf), user_(std::move(user)), hdfs_(std::move(hdfs)) {}

Result<std::vector<AggregatedNodeFile>> AggregatedLogs::NodeFiles(const std::string& app_id) {
  LOOM_ASSIGN_OR_RETURN(std::vector<std::string> dirs, AggregatedLogDirs(conf_, user_, app_id));
  // The directory found last time first: following a log lists one directory, not all.
  if (auto it = app_dir_.find(app_id); it != app_dir_.end()) {
    dirs.erase(std::remove(dirs.begin(), dirs.end(), it->second), dirs.end());
    dirs.insert(dirs.begin(), it->second);
  }
  std::vector<AggregatedNodeFile> files;
  Status first_error;
  for (const std::string& dir : dirs) {
    ++requests_;
    Result<std::vector<HdfsFileStatus>> listing = hdfs_.ListStatus(dir);
    if (!listing.ok()) {
      if (listing.status().code() != StatusCode::kNotFound && first_error.ok()) first_error = listing.status();
      continue;
    }
    size_t before = files.size();
    for (const HdfsFileStatus& s : *listing) {
      // A directory here is an archived <appId>.har, which needs HDFS's har:// reader.
      if (s.type != "FILE" || EndsWith(s.path_suffix, kTmpSuffix) || EndsWith(s.path_suffix, kChecksumSuffix)) continue;
      files.push_back({dir + "/" + s.path_suffix, s.path_suffix, s.length, s.modification_time});
    }
    std::sort(files.begin() + static_cast<ptrdiff_t>(before), files.end(),
              [](const AggregatedNodeFile& a, const AggregatedNodeFile& b) { return a.name < b.name; });
    if (files.size() > before) {
      app_dir_[app_id] = dir;
      // A 3.3 reader combines the bucketed directory with an older one; the first one that
      // has files is, in practice, the only one.
      break;
    }
  }
  if (!files.empty()) return files;
  if (!first_error.ok()) return first_error.WithContext("listing the aggregated logs of " + app_id);
  return Status::NotFound("no aggregated logs of " + app_id + " in HDFS (looked in " + Join(dirs, ", ") + ")");
}

Result<std::string> AggregatedLogs::OpenRange(const std::string& path, int64_t offset, int64_t length) {
  ++requests_;
  return hdfs_.OpenRange(path, offset, length);
}

Result<std::shared_ptr<const AggregatedLogFile>> AggregatedLogs::Load(const AggregatedNodeFile& f) {
  auto it = cache_.find(f.path);
  if (it != cache_.end() && it->second.length == f.length && it->second.mtime_ms == f.mtime_ms) return it->second.file;
  // Small files and TFiles are read whole; of a large IFile only its head, trailer and index.
  auto parse = [&]() -> Result<AggregatedLogFile> {
    if (f.length <= whole_file_limit_) {
      LOOM_ASSIGN_OR_RETURN(std::string bytes, OpenRange(f.path, 0, -1));
      return ParseAggregatedLogFile(bytes);
    }
    LOOM_ASSIGN_OR_RETURN(std::string head, OpenRange(f.path, 0, kIFileIdSize));
    LOOM_ASSIGN_OR_RETURN(std::string tail, OpenRange(f.path, f.length - kIFileTrailerSize, kIFileTrailerSize));
    LOOM_ASSIGN_OR_RETURN(AggregatedLogFormat format, DetectAggregatedLogFormat(head, tail));
    if (format == AggregatedLogFormat::kTFile) {
      LOOM_ASSIGN_OR_RETURN(std::string bytes, OpenRange(f.path, 0, -1));
      return ParseTFileLogs(bytes);
    }
    LOOM_ASSIGN_OR_RETURN(int64_t index_length, IFileIndexLength(tail, f.length));
    int64_t index_at = f.length - kIFileTrailerSize - index_length;
    LOOM_ASSIGN_OR_RETURN(std::string index, OpenRange(f.path, index_at, index_length));
    LOOM_ASSIGN_OR_RETURN(AggregatedLogFile file, ParseIFileIndex(index));
    for (const AggregatedLogEntry& e : file.entries) {
      if (e.offset < kIFileIdSize || e.length > index_at - e.offset) {
        return Status::InvalidArgument(e.container_id + "/" + e.file_name + " lies outside the log bytes");
      }
    }
    return file;
  };
  Result<AggregatedLogFile> file = parse();
  if (!file.ok()) return file.status().WithContext("aggregated log file " + f.path);
  auto parsed = std::make_shared<AggregatedLogFile>(std::move(*file));
  cache_[f.path] = Cached{f.length, f.mtime_ms, parsed};
  return std::shared_ptr<const AggregatedLogFile>(parsed);
}

Result<std::vector<std::pair<AggregatedNodeFile, std::shared_ptr<const AggregatedLogFile>>>> AggregatedLogs::Files(
    const std::string& app_id, const std::string& node_id) {
  LOOM_ASSIGN_OR_RETURN(std::vector<AggregatedNodeFile> all, NodeFiles(app_id));
  std::vector<std::pair<AggregatedNodeFile, std::shared_ptr<const AggregatedLogFile>>> out;
  std::vector<std::string> names;
  const std::string node_file = NodeFileName(node_id);
  for (const AggregatedNodeFile& f : all) {
    names.push_back(f.name);
    if (!node_id.empty() && !NodeFileMatches(f.name, node_file)) continue;
    LOOM_ASSIGN_OR_RETURN(std::shared_ptr<const AggregatedLogFile> parsed, Load(f));
    out.emplace_back(f, std::move(parsed));
  }
  if (out.empty()) {
    std::string dir = all.front().path.substr(0, all.front().path.rfind('/'));
    return Status::NotFound("the aggregated logs of " + app_id + " (" + dir + ") have no file for node " + node_id +
                            " (there are: " + Join(names, ", ") + ")");
  }
  return out;
}

Result<AggregatedLog> AggregatedLogs::Read(const std::string& app_id, const std::string& node_id,
                                           const std::string& container_id, const std::string& file) {
  LOOM_ASSIGN_OR_RETURN(auto files, Files(app_id, node_id));
  AggregatedLog out;
  bool container = false, found = false;
  std::vector<std::string> others, paths;
  std::set<std::string> other_containers;
  for (const auto& [node_file, parsed] : files) {
    paths.push_back(node_file.path);
    for (const AggregatedLogEntry& e : parsed->entries) {
      if (e.container_id != container_id) {
        other_containers.insert(e.container_id);
        continue;
      }
      container = true;
      if (e.file_name != file) {
        if (std::find(others.begin(), others.end(), e.file_name) == others.end()) others.push_back(e.file_name);
        continue;
      }
      found = true;
      out.path = node_file.path;
      out.mtime_ms = parsed->format == AggregatedLogFormat::kIFile ? std::max(out.mtime_ms, e.mtime_ms) : node_file.mtime_ms;
      if (static_cast<int64_t>(e.bytes.size()) == e.length) {
        out.bytes += e.bytes;
      } else {  // an IFile read index-only: fetch just this log
        Result<std::string> bytes = OpenRange(node_file.path, e.offset, e.length);
        if (!bytes.ok()) return bytes.status().WithContext("aggregated log file " + node_file.path);
        if (static_cast<int64_t>(bytes->size()) != e.length) {
          return Status::Unavailable("aggregated log file " + node_file.path + ": short read of " + container_id + "/" + file);
        }
        out.bytes += *bytes;
      }
    }
  }
  if (!container) {
    return Status::NotFound("container " + container_id + " is not in the aggregated logs " + Join(paths, ", ") +
                            " (they hold " + std::to_string(other_containers.size()) + " other containers)");
  }
  if (!found) {
    return Status::NotFound("container " + container_id + " has no log file '" + file + "' in the aggregated logs (it has: " +
                            Join(others, ", ") + ")");
  }
  return out;
}

Result<std::vector<std::string>> AggregatedLogs::List(const std::string& app_id, const std::string& node_id,
                                                      const std::string& container_id) {
  LOOM_ASSIGN_OR_RETURN(auto files, Files(app_id, node_id));
  std::vector<std::string> names, paths;
  bool container = false;
  for (const auto& [node_file, parsed] : files) {
    paths.push_back(node_file.path);
    for (const AggregatedLogEntry& e : parsed->entries) {
      if (e.container_id != container_id) continue;
      container = true;
      if (std::find(names.begin(), names.end(), e.file_name) == names.end()) names.push_back(e.file_name);
    }
  }
  if (!container) {
    return Status::NotFound("container " + container_id + " is not in the aggregated logs " + Join(paths, ", "));
  }
  return names;
}

}  // namespace loom::hadoop
