#pragma once
// HistoryMirror: a local copy of the job records in a history location in HDFS
// (loom.history.location; cluster/yarn/history_publish.h writes them), for `loom portal`,
// which reads job dirs: `cache_dir`/<job id>/ holds the record's files (job.json, config.xml,
// events.jsonl, metrics.jsonl, status.json), the layout of a job dir (history/job_dir.h), so
// that history::LoadJobView reads it.
//
// A record is copied once it is finished (its status.json is there), and whole: its files go
// to a hidden temporary dir in `cache_dir`, checked against status.json's length and time after
// the rest was read (a writer writes status.json last and removes it first when it replaces a
// record), and the dir is renamed into place. The copy's status.json keeps the HDFS file's
// modification time, so that a restarted mirror knows what it has. A finished record does not
// change, with one exception: the client that ended a YARN job writes its status.json over the
// AM's moments later. So a record is looked at again while its status.json is younger than
// `recheck_window`, and copied anew if that changed.
//
// Bounded work per SyncOnce: one LISTSTATUS of the location, then at most
// `max_copies_per_sync` records copied and `max_rechecks_per_sync` looked at again, newest
// first; the rest waits for the next call. An unfinished or unreadable record is tried again
// later, each time after twice as long (up to an hour).
//
// Never writes outside `cache_dir`: a name in the listing that is not a plain job id
// (IsHistoryJobId: no "/", "..", leading "." or anything but [A-Za-z0-9_.-]) is skipped, and
// only the record's own file names are written. Names starting with "." in `cache_dir` are the
// mirror's temporary dirs: readers of `cache_dir` skip them.
//
// Threading: SyncOnce from one thread at a time (it holds a lock); the portal calls it every
// few seconds from a thread of its own.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"
#include "hadoop/conf/hadoop_conf.h"

namespace loom::portal {

struct HistoryMirrorOptions {
  int max_copies_per_sync = 50;
  int max_rechecks_per_sync = 200;
  // A file of a record larger than this is not copied (the record is skipped, and said once).
  int64_t max_file_bytes = int64_t{512} << 20;
  std::chrono::milliseconds recheck_window{std::chrono::minutes(10)};
};

// What one SyncOnce did.
struct MirrorReport {
  int listed = 0;     // job dirs in the location
  int copied = 0;     // records copied (new, or changed since)
  int pending = 0;    // records left for a later call: unfinished, refused, or over this call's bounds
};

class HistoryMirror {
 public:
  // `webhdfs`: the NameNodes' WebHDFS bases (hadoop::WebHdfsBaseList of the cluster's conf);
  // `user`: user.name= on a cluster without Kerberos (with Kerberos the process's login
  // authenticates, through SPNEGO); `location`: the location's HDFS path ("/loom-history").
  HistoryMirror(std::string webhdfs, std::string user, std::string location, std::string cache_dir,
                HistoryMirrorOptions options = {});
  // From a loom.history.location value as a job would give it (hdfs:///path, /path, or
  // hdfs://<fs.defaultFS's authority>/path) and the cluster's configuration. InvalidArgument
  // for any other value.
  static Result<std::unique_ptr<HistoryMirror>> ForCluster(const hadoop::HadoopConf& conf, const std::string& user,
                                                           const std::string& location, const std::string& cache_dir,
                                                           HistoryMirrorOptions options = {});

  // Copies what is new or changed (see the top). A location that does not exist yet is an empty
  // one. Unavailable (or the WebHDFS error) when the location cannot be listed; a record that
  // cannot be copied is left for later and does not fail the call.
  Result<MirrorReport> SyncOnce();

  const std::string& cache_dir() const { return cache_dir_; }
  const std::string& location() const { return location_; }

 private:
  struct Known {
    int64_t status_mtime_ms = 0;   // of the copy's status.json (HDFS's modificationTime)
    int64_t status_length = 0;
  };
  struct Retry {
    int64_t next_ms = 0;
    int64_t backoff_ms = 0;
  };
  // Copies <location>/<id>; true when copied, false when not finished (yet); an error when
  // it could not be read or written.
  Result<bool> CopyRecord(const std::string& id);
  // What the cache holds of `id` (from its status.json), if anything.
  bool LoadKnown(const std::string& id, Known* known);
  void Postpone(const std::string& id, int64_t now_ms);

  const std::string webhdfs_, user_, location_, cache_dir_;
  const HistoryMirrorOptions options_;
  std::mutex mu_;
  std::map<std::string, Known> known_;
  std::map<std::string, Retry> retry_;
};

}  // namespace loom::portal
