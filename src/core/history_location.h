#pragma once
// loom.history.location (TonY's tony.history.location): where every job's final record is kept
// after the job ended, one directory per job id, for `loom portal` to read. The value is a
// directory:
//   hdfs:///path, hdfs://<fs.defaultFS authority>/path  HDFS (the yarn backend)
//   file:///path                                         a local directory (the local backend)
//   /path                                                fs.defaultFS on yarn, a local directory locally
// Unset, empty or tony-default.xml's placeholder (/path/to/tony-history): no history location.
// Which backend takes which form is the backend's to check (Backend::CheckFits); this only
// parses.

#include <string>
#include <string_view>
#include <vector>

#include "core/config/config.h"
#include "core/status.h"

namespace loom {

struct HistoryLocation {
  enum class Scheme {
    kUnset,  // no history location
    kPath,   // "/path": no scheme
    kHdfs,   // "hdfs://[authority]/path"
    kFile,   // "file:///path"
  };
  Scheme scheme = Scheme::kUnset;
  std::string authority;  // hdfs://<authority>/...; "" for hdfs:///... and the other forms
  std::string path;       // absolute, normal form ("/a/b": no "//", no trailing "/")
  std::string value;      // as written

  bool set() const { return scheme != Scheme::kUnset; }
  // Where job `job_id`'s record goes.
  std::string JobPath(const std::string& job_id) const { return path + "/" + job_id; }
};

// The history location of `conf` (loom.history.location). InvalidArgument naming the key as
// written, its value and its source: a scheme other than hdfs or file, a relative path, "." or
// ".." segments, the root itself, or control characters.
Result<HistoryLocation> ParseHistoryLocation(const config::Config& conf);

// The file names of a job's final record in the history location, in the order they are
// written: status.json last, so that a reader that finds it finds the rest whole. Nothing else
// of a job dir goes there (not its secret, nor kill_cause, am.pid, logs or task dirs).
const std::vector<std::string>& HistoryRecordFiles();
inline constexpr char kHistoryStatusFile[] = "status.json";

// Whether `name` may be a job's directory in a history location: 1-255 of [A-Za-z0-9_.-], not
// starting with "." (so never "." or "..", nor a writer's hidden temporary name). Writers and
// readers both check, so that no job id read from a record or a listing leads outside it.
bool IsHistoryJobId(std::string_view name);

// "<pid>-<8 random hex digits>": the suffix of a writer's or the mirror's temporary names,
// which no other process picks.
std::string HistoryTempSuffix();

}  // namespace loom
