#pragma once
// The job's record in HDFS (<staging>/history/: job.json, events.jsonl, status.json, and the
// AM's metrics.jsonl, uploaded as the job ends, not while it runs: it grows by a line per task
// per sample, and HistoryUploader rewrites whole files), readable
// from any machine with the cluster's configuration, so that `loom status|logs <application id>`
// sees the job's tasks without the job's secret. The AM's events.jsonl there is the truth: the
// AM rewrites it while the job runs (HistoryUploader) and once more as it ends; a client
// replaces it only with a copy that holds every line of it.

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/status.h"
#include "hadoop/wire/credentials.h"
#include "history/job_dir.h"

namespace loom::cluster::yarn {

// `dir`'s job.json, events.jsonl, status.json and metrics.jsonl under <staging_dir>/history/. The AM passes
// `replace_status` false: a client's status.json, once there, is the record (it knows why a
// killed job was killed; the AM only sees SIGTERM). `delegation`: the AM's HDFS delegation
// token on a Kerberized cluster (WebHdfs::UseDelegationToken). `with_events` false leaves
// events.jsonl in HDFS as it is.
Status UploadHistory(const std::string& webhdfs, const std::string& user, const std::string& staging_dir,
                     const history::JobDir& dir, bool replace_status = true,
                     const std::optional<hadoop::Token>& delegation = std::nullopt, bool with_events = true);

// The AM's metrics.jsonl in HDFS into `dir`, for a client's copy of the record once the job
// ended (none there yet: nothing done).
Status FetchMetrics(const std::string& webhdfs, const std::string& user, const std::string& staging_dir,
                    const history::JobDir& dir);

// Appends to `dir`'s events what the AM's events.jsonl in HDFS holds past `am_events_offset`
// (whole lines only: the AM may be rewriting it) and returns the new offset. The AM's events
// reach a client this way when the client cannot reach the AM itself; the offsets are the
// ones the AM's JobState call hands out, so both ways mix.
Result<int64_t> CatchUpFromHdfs(const std::string& webhdfs, const std::string& user, const std::string& staging_dir,
                                int64_t am_events_offset, const history::JobDir& dir);

// Appends whole lines to an events.jsonl or metrics.jsonl in one write(2) on O_APPEND, so that
// they never interleave with the lines its owner appends.
Status AppendWholeLines(const std::string& path, const std::string& lines);

class HistoryUploader {
 public:
  // Uploads `dir`'s job.json once, then events.jsonl whenever it grew, every `interval`.
  // With `delegation` (a Kerberized cluster) every WebHDFS call authenticates with that token.
  HistoryUploader(std::string webhdfs, std::string user, std::string staging_dir, history::JobDir dir,
                  std::chrono::milliseconds interval, std::optional<hadoop::Token> delegation = std::nullopt);
  // Stops the thread; the job's final record is its owner's to upload (UploadHistory).
  ~HistoryUploader();

 private:
  void Loop();
  void UploadIfChanged();

  const std::string webhdfs_, user_, staging_dir_;
  const history::JobDir dir_;
  const std::chrono::milliseconds interval_;
  const std::optional<hadoop::Token> delegation_;
  int64_t uploaded_size_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace loom::cluster::yarn
