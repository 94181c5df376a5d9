#include "cluster/yarn/history_publish.h"

#include <sys/stat.h>

#include "core/files.h"
#include "core/history_location.h"
#include "core/strings.h"
#include "hadoop/hdfs/webhdfs.h"

namespace loom::cluster::yarn {

namespace {

std::string ParentOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

// HDFS's rename never replaces a file: the old one goes first (a reader that finds it missing
// meanwhile finds no status.json either, which the caller removed first or writes last).
Status RenameOver(hadoop::WebHdfs& fs, const std::string& from, const std::string& to) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    LOOM_ASSIGN_OR_RETURN(bool moved, fs.Rename(from, to));
    if (moved) return Status::Ok();
    // Nothing to move (gone meanwhile): the file there is not removed for nothing.
    LOOM_RETURN_IF_ERROR(fs.GetFileStatus(from).status().WithContext("renaming it to " + to));
    LOOM_RETURN_IF_ERROR(fs.Delete(to, /*recursive=*/false).status());
  }
  (void)fs.Delete(from, false);
  return Status::Aborted("another writer keeps writing " + to);
}

}  // namespace

Status CheckHistoryLocation(const HistoryLocation& location, const hadoop::HadoopConf& conf, const std::string& key) {
  auto refuse = [&](const std::string& why) {
    return Status::InvalidArgument(key + "='" + location.value + "': " + why);
  };
  switch (location.scheme) {
    case HistoryLocation::Scheme::kUnset:
    case HistoryLocation::Scheme::kPath:
      return Status::Ok();
    case HistoryLocation::Scheme::kFile:
      return refuse("a directory on this machine, which the job's AM (in a YARN container) cannot write to; on "
                    "--cluster yarn give an HDFS directory: hdfs:///path or /path");
    case HistoryLocation::Scheme::kHdfs:
      break;
  }
  if (location.authority.empty()) return Status::Ok();
  // fs.defaultFS's authority: "host:port", or an HA nameservice's name.
  std::string default_fs = conf.default_fs;
  std::string authority = StartsWith(ToLower(default_fs), "hdfs://") ? default_fs.substr(7) : "";
  if (size_t slash = authority.find('/'); slash != std::string::npos) authority.resize(slash);
  if (!authority.empty() && ToLower(authority) == ToLower(location.authority)) return Status::Ok();
  return refuse("Loom writes job records through fs.defaultFS's WebHDFS (" + default_fs +
                "), and this names another file system; give a path on it: hdfs:///path or /path");
}

Status PublishHistory(const HistoryPublish& p, const history::JobDir& dir) {
  if (!IsHistoryJobId(p.job_id)) return Status::InvalidArgument("'" + p.job_id + "' is not a job id a history location takes");
  if (p.location.empty() || p.location[0] != '/') return Status::InvalidArgument("history location '" + p.location + "' is not an HDFS path");
  if (!PathExists(dir.status())) return Status::FailedPrecondition(dir.root() + " has no final status yet");
  hadoop::WebHdfs fs(p.webhdfs, p.user);
  if (p.delegation) fs.UseDelegationToken(*p.delegation);
  const std::string target = hadoop::JoinHdfsPath(p.location, p.job_id);
  const std::string status_path = target + "/" + kHistoryStatusFile;
  if (!p.replace) {
    auto there = fs.GetFileStatus(status_path);
    if (there.ok()) return Status::Ok();  // the record that is there stands
    if (there.status().code() != StatusCode::kNotFound) return there.status();
  }
  auto root = fs.GetFileStatus(p.location);
  if (!root.ok() && root.status().code() == StatusCode::kNotFound) {
    LOOM_RETURN_IF_ERROR(fs.Mkdirs(ParentOf(p.location), "755"));
    LOOM_RETURN_IF_ERROR(fs.Mkdirs(p.location, "1777"));
  } else if (!root.ok()) {
    return root.status();
  } else if (root->type != "DIRECTORY") {
    return Status::FailedPrecondition(p.location + " in HDFS is not a directory");
  }
  LOOM_RETURN_IF_ERROR(fs.Mkdirs(target, "755"));
  if (p.replace) LOOM_RETURN_IF_ERROR(fs.Delete(status_path, false).status());

  const std::string nonce = HistoryTempSuffix();
  for (const std::string& name : HistoryRecordFiles()) {
    const std::string to = target + "/" + name;
    const std::string tmp = target + "/." + name + ".tmp-" + nonce;
    const std::string from = dir.root() + "/" + name;
    if (name == "events.jsonl" && !p.events_from_hdfs.empty()) {
      if (fs.GetFileStatus(to).ok()) continue;  // the AM's, whole
      auto bytes = fs.Open(p.events_from_hdfs);
      if (!bytes.ok()) {
        if (bytes.status().code() == StatusCode::kNotFound) continue;
        return bytes.status();
      }
      LOOM_RETURN_IF_ERROR(fs.Create(tmp, *bytes, "644").status());
      LOOM_RETURN_IF_ERROR(RenameOver(fs, tmp, to));
      continue;
    }
    struct stat st {};
    if (::lstat(from.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // absent, or not a plain file
    if (name == "metrics.jsonl") {
      // The AM's samples are never replaced with fewer (UploadHistory's rule).
      if (auto there = fs.GetFileStatus(to); there.ok() && there->length > st.st_size) continue;
    }
    LOOM_RETURN_IF_ERROR(fs.Upload(from, tmp, "644").status());
    if (name != kHistoryStatusFile) {
      LOOM_RETURN_IF_ERROR(RenameOver(fs, tmp, to));
      continue;
    }
    // status.json, last: a writer that got there first keeps its end unless this one replaces.
    LOOM_ASSIGN_OR_RETURN(bool moved, fs.Rename(tmp, to));
    if (moved) continue;
    if (!p.replace) {
      (void)fs.Delete(tmp, false);
      continue;
    }
    LOOM_RETURN_IF_ERROR(RenameOver(fs, tmp, to));
  }
  return Status::Ok();
}

}  // namespace loom::cluster::yarn
