#include "portal/history_mirror.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "core/files.h"
#include "core/history_location.h"
#include "core/strings.h"
#include "hadoop/hdfs/webhdfs.h"

namespace loom::portal {

namespace {

constexpr int64_t kFirstBackoffMs = 5000;
constexpr int64_t kMaxBackoffMs = 3600 * 1000;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool IsRecordFile(const std::string& name) {
  const auto& files = HistoryRecordFiles();
  return std::find(files.begin(), files.end(), name) != files.end();
}

// Sets `path`'s modification time to `ms` (HDFS's modificationTime of the file it copies).
void SetMtime(const std::string& path, int64_t ms) {
  timespec times[2];
  times[0].tv_sec = 0;
  times[0].tv_nsec = UTIME_OMIT;
  times[1].tv_sec = ms / 1000;
  times[1].tv_nsec = (ms % 1000) * 1000000;
  (void)::utimensat(AT_FDCWD, path.c_str(), times, 0);
}

}  // namespace

HistoryMirror::HistoryMirror(std::string webhdfs, std::string user, std::string location, std::string cache_dir,
                             HistoryMirrorOptions options)
    : webhdfs_(std::move(webhdfs)),
      user_(std::move(user)),
      location_(std::move(location)),
      cache_dir_(std::move(cache_dir)),
      options_(options) {}

Result<std::unique_ptr<HistoryMirror>> HistoryMirror::ForCluster(const hadoop::HadoopConf& conf, const std::string& user,
                                                                 const std::string& location,
                                                                 const std::string& cache_dir,
                                                                 HistoryMirrorOptions options) {
  config::Config c;
  c.Set("loom.history.location", location, "loom portal");
  LOOM_ASSIGN_OR_RETURN(HistoryLocation parsed, ParseHistoryLocation(c));
  auto refuse = [&](const std::string& why) {
    return Status::InvalidArgument("history location '" + location + "': " + why);
  };
  if (!parsed.set()) return refuse("no HDFS directory given");
  if (parsed.scheme == HistoryLocation::Scheme::kFile) {
    return refuse("a local directory; the portal reads one as a job root itself, with no mirror");
  }
  if (parsed.scheme == HistoryLocation::Scheme::kHdfs && !parsed.authority.empty()) {
    std::string authority = StartsWith(ToLower(conf.default_fs), "hdfs://") ? conf.default_fs.substr(7) : "";
    if (size_t slash = authority.find('/'); slash != std::string::npos) authority.resize(slash);
    if (ToLower(authority) != ToLower(parsed.authority)) {
      return refuse("not on fs.defaultFS (" + conf.default_fs + "), whose WebHDFS is the one Loom reads");
    }
  }
  return std::make_unique<HistoryMirror>(hadoop::WebHdfsBaseList(conf), user, parsed.path, cache_dir, options);
}

bool HistoryMirror::LoadKnown(const std::string& id, Known* known) {
  if (auto it = known_.find(id); it != known_.end()) {
    *known = it->second;
    return true;
  }
  struct stat st {};
  const std::string status = cache_dir_ + "/" + id + "/" + kHistoryStatusFile;
  if (::lstat(status.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  known->status_mtime_ms = int64_t{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1000000;
  known->status_length = st.st_size;
  known_[id] = *known;
  return true;
}

void HistoryMirror::Postpone(const std::string& id, int64_t now_ms) {
  Retry& r = retry_[id];
  r.backoff_ms = r.backoff_ms == 0 ? kFirstBackoffMs : std::min(r.backoff_ms * 2, kMaxBackoffMs);
  r.next_ms = now_ms + r.backoff_ms;
}

Result<MirrorReport> HistoryMirror::SyncOnce() {
  std::lock_guard<std::mutex> lock(mu_);
  MirrorReport report;
  hadoop::WebHdfs fs(webhdfs_, user_);
  auto listing = fs.ListStatus(location_);
  if (!listing.ok() && listing.status().code() == StatusCode::kNotFound) return report;  // no job ended there yet
  if (!listing.ok()) return listing.status().WithContext("listing the history location " + location_ + " in HDFS");
  LOOM_RETURN_IF_ERROR(MakeDirs(cache_dir_, 0755));
  std::vector<hadoop::HdfsFileStatus> jobs;
  for (const hadoop::HdfsFileStatus& e : *listing) {
    if (e.type == "DIRECTORY" && IsHistoryJobId(e.path_suffix)) jobs.push_back(e);
  }
  // Newest first: a job that just ended shows before the backlog of a first sync.
  std::sort(jobs.begin(), jobs.end(), [](const auto& a, const auto& b) {
    return a.modification_time != b.modification_time ? a.modification_time > b.modification_time
                                                      : a.path_suffix < b.path_suffix;
  });
  const int64_t now = NowMs();
  int copies = 0, rechecks = 0;
  for (const hadoop::HdfsFileStatus& job : jobs) {
    const std::string& id = job.path_suffix;
    ++report.listed;
    Known known;
    if (LoadKnown(id, &known)) {
      // Finished; only a record that ended moments ago may still get the client's status.json.
      if (now - known.status_mtime_ms >= options_.recheck_window.count()) continue;
      if (rechecks >= options_.max_rechecks_per_sync) {
        ++report.pending;
        continue;
      }
      ++rechecks;
      auto status = fs.GetFileStatus(hadoop::JoinHdfsPath(hadoop::JoinHdfsPath(location_, id), kHistoryStatusFile));
      if (status.ok() && status->modification_time == known.status_mtime_ms && status->length == known.status_length) {
        continue;
      }
      if (!status.ok()) {  // being replaced (or gone): the copy here stands until a new one is whole
        ++report.pending;
        continue;
      }
    } else if (auto r = retry_.find(id); r != retry_.end() && r->second.next_ms > now) {
      ++report.pending;
      continue;
    }
    if (copies >= options_.max_copies_per_sync) {
      ++report.pending;
      continue;
    }
    ++copies;
    Result<bool> copied = CopyRecord(id);
    if (copied.ok() && *copied) {
      ++report.copied;
      retry_.erase(id);
    } else {
      ++report.pending;
      Postpone(id, now);
    }
  }
  return report;
}

Result<bool> HistoryMirror::CopyRecord(const std::string& id) {
  hadoop::WebHdfs fs(webhdfs_, user_);
  const std::string dir = hadoop::JoinHdfsPath(location_, id);
  auto listing = fs.ListStatus(dir);
  if (!listing.ok()) {
    if (listing.status().code() == StatusCode::kNotFound) return false;
    return listing.status();
  }
  std::map<std::string, hadoop::HdfsFileStatus> files;
  for (const hadoop::HdfsFileStatus& e : *listing) {
    if (e.type == "FILE" && IsRecordFile(e.path_suffix)) files[e.path_suffix] = e;
  }
  auto status_entry = files.find(kHistoryStatusFile);
  if (status_entry == files.end()) return false;  // not finished (yet)
  const hadoop::HdfsFileStatus listed_status = status_entry->second;
  for (const auto& [name, e] : files) {
    if (e.length > options_.max_file_bytes) {
      return Status::FailedPrecondition(dir + "/" + name + " is " + std::to_string(e.length) + " bytes, over the " +
                                        std::to_string(options_.max_file_bytes) + " the mirror copies");
    }
  }
  const std::string tmp = cache_dir_ + "/.tmp-" + id + "-" + HistoryTempSuffix();
  if (::mkdir(tmp.c_str(), 0755) != 0) return Status::FromErrno("mkdir " + tmp, errno);
  auto drop = [&](Result<bool> r) {
    (void)RemoveTree(tmp);
    return r;
  };
  for (const auto& [name, e] : files) {
    if (name == kHistoryStatusFile) continue;
    auto bytes = fs.Open(hadoop::JoinHdfsPath(dir, name));
    if (!bytes.ok()) return drop(bytes.status().code() == StatusCode::kNotFound ? Result<bool>(false) : bytes.status());
    if (Status s = WriteFileAtomic(tmp + "/" + name, *bytes); !s.ok()) return drop(s);
  }
  // status.json last, and the same one as listed: a writer that replaced the record meanwhile
  // removed it first, so a different or missing one means the rest may be of two writers.
  const std::string status_path = hadoop::JoinHdfsPath(dir, kHistoryStatusFile);
  auto status = fs.Open(status_path);
  auto after = fs.GetFileStatus(status_path);
  if (!status.ok() || !after.ok() || after->modification_time != listed_status.modification_time ||
      after->length != listed_status.length || static_cast<int64_t>(status->size()) != listed_status.length) {
    return drop(false);
  }
  auto parsed = nlohmann::json::parse(*status, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return drop(Status::InvalidArgument(status_path + " is not a job's final status"));
  const std::string local_status = tmp + "/" + kHistoryStatusFile;
  if (Status s = WriteFileAtomic(local_status, *status); !s.ok()) return drop(s);
  SetMtime(local_status, listed_status.modification_time);

  const std::string target = cache_dir_ + "/" + id;
  std::string old;
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0) {
    old = cache_dir_ + "/.old-" + id + "-" + HistoryTempSuffix();
    if (::rename(target.c_str(), old.c_str()) != 0) return drop(Status::FromErrno("rename " + target, errno));
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) return drop(Status::FromErrno("rename " + tmp + " to " + target, errno));
  if (!old.empty()) (void)RemoveTree(old);
  known_[id] = Known{listed_status.modification_time, listed_status.length};
  return true;
}

}  // namespace loom::portal
