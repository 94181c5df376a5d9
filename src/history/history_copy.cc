#include "history/history_copy.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "core/config/config.h"
#include "core/files.h"
#include "history/job_record.h"

namespace loom::history {

namespace {

namespace fs = std::filesystem;

// mkdir -p for the location: parents 0755, the location itself 01777 (set explicitly: the
// umask would take the bits away).
Status MakeLocationDir(const std::string& location_dir) {
  if (IsDirectory(location_dir)) return Status::Ok();
  std::string parent = fs::path(location_dir).parent_path().string();
  if (!parent.empty()) LOOM_RETURN_IF_ERROR(MakeDirs(parent, 0755));
  if (::mkdir(location_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::FromErrno("mkdir " + location_dir, errno);
  }
  if (!IsDirectory(location_dir)) return Status::FailedPrecondition(location_dir + " is not a directory");
  // Only a directory this call made: one that was there keeps the mode its owner gave it.
  if (::chmod(location_dir.c_str(), 01777) != 0 && errno != EPERM) return Status::FromErrno("chmod " + location_dir, errno);
  return Status::Ok();
}

}  // namespace

Result<HistoryLocation> HistoryLocationOf(const JobDir& dir) {
  config::Config conf;
  if (!PathExists(dir.config())) return HistoryLocation{};
  LOOM_RETURN_IF_ERROR(conf.MergeXmlFile(dir.config(), /*recorded_sources=*/true));
  return ParseHistoryLocation(conf);
}

std::string RecordJobId(const JobDir& dir) {
  auto job = JobRecord::Read(dir);
  return job.ok() && !job->job_id.empty() ? job->job_id : dir.job_id();
}

Status CopyRecordToDirectory(const JobDir& dir, const std::string& location_dir, const std::string& job_id) {
  if (!IsHistoryJobId(job_id)) return Status::InvalidArgument("'" + job_id + "' is not a job id a history location takes");
  if (!PathExists(dir.status())) return Status::FailedPrecondition(dir.root() + " has no final status yet");
  const std::string target = location_dir + "/" + job_id;
  if (PathExists(target + "/" + kHistoryStatusFile)) return Status::Ok();  // the first record stands
  LOOM_RETURN_IF_ERROR(MakeLocationDir(location_dir));
  const std::string tmp = location_dir + "/.tmp-" + job_id + "-" + HistoryTempSuffix();
  if (::mkdir(tmp.c_str(), 0755) != 0) return Status::FromErrno("mkdir " + tmp, errno);
  ::chmod(tmp.c_str(), 0755);
  auto fail = [&](const Status& s) {
    (void)RemoveTree(tmp);
    return s;
  };
  for (const std::string& name : HistoryRecordFiles()) {
    const std::string from = dir.root() + "/" + name;
    struct stat st {};
    if (::lstat(from.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // absent, or not a plain file
    std::error_code ec;
    fs::copy_file(from, tmp + "/" + name, fs::copy_options::overwrite_existing, ec);
    if (ec) return fail(Status::Internal("copy " + from + " to " + tmp + ": " + ec.message()));
    ::chmod((tmp + "/" + name).c_str(), 0644);
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    int err = errno;
    // Another writer's record got there first (rename(2) never replaces a non-empty dir).
    if ((err == EEXIST || err == ENOTEMPTY) && PathExists(target + "/" + kHistoryStatusFile)) return fail(Status::Ok());
    return fail(Status::FromErrno("rename " + tmp + " to " + target, err));
  }
  return Status::Ok();
}

Status CopyRecordToHistoryLocation(const JobDir& dir) {
  LOOM_ASSIGN_OR_RETURN(HistoryLocation location, HistoryLocationOf(dir));
  if (location.scheme != HistoryLocation::Scheme::kPath && location.scheme != HistoryLocation::Scheme::kFile) {
    return Status::Ok();  // none, or HDFS: the yarn backend's
  }
  return CopyRecordToDirectory(dir, location.path, RecordJobId(dir))
      .WithContext("copying the job's record to its history location " + location.value);
}

}  // namespace loom::history
