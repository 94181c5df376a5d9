#pragma once
// HistoryUploader: the AM's copy of its job record in HDFS (<staging>/history/), refreshed while
// the job runs, so that `loom status|logs <application id>` from any machine with the
// cluster's configuration sees the job's tasks without the job's secret. Thread-safe.

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "cluster/yarn/wire/credentials.h"
#include "history/job_dir.h"

namespace loom::cluster::yarn {

class HistoryUploader {
 public:
  // Uploads `dir`'s job.json once, then events.jsonl whenever it grew, every `interval`.
  // With `delegation` (a Kerberized cluster) every WebHDFS call authenticates with that token.
  HistoryUploader(std::string webhdfs, std::string user, std::string staging_dir, history::JobDir dir,
                  std::chrono::milliseconds interval, std::optional<Token> delegation = std::nullopt);
  // Stops the thread; the job's final record is its owner's to upload (UploadHistory).
  ~HistoryUploader();

 private:
  void Loop();
  void UploadIfChanged();

  const std::string webhdfs_, user_, staging_dir_;
  const history::JobDir dir_;
  const std::chrono::milliseconds interval_;
  const std::optional<Token> delegation_;
  int64_t uploaded_size_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace loom::cluster::yarn
