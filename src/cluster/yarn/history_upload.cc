#include "cluster/yarn/history_upload.h"

#include <sys/stat.h>

#include <spdlog/spdlog.h>

#include "cluster/yarn/hdfs/webhdfs.h"
#include "core/files.h"

namespace loom::cluster::yarn {

namespace {
WebHdfs Connect(const std::string& webhdfs, const std::string& user, const std::optional<Token>& delegation) {
  WebHdfs fs(webhdfs, user);
  if (delegation) fs.UseDelegationToken(*delegation);  // the AM has no Kerberos ticket
  return fs;
}
}  // namespace

HistoryUploader::HistoryUploader(std::string webhdfs, std::string user, std::string staging_dir, history::JobDir dir,
                                 std::chrono::milliseconds interval, std::optional<Token> delegation)
    : webhdfs_(std::move(webhdfs)),
      user_(std::move(user)),
      staging_dir_(std::move(staging_dir)),
      dir_(std::move(dir)),
      interval_(interval),
      delegation_(std::move(delegation)),
      thread_([this] { Loop(); }) {}

HistoryUploader::~HistoryUploader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void HistoryUploader::Loop() {
  WebHdfs fs = Connect(webhdfs_, user_, delegation_);
  std::string history = staging_dir_ + "/history";
  if (Status s = fs.Mkdirs(history, "700"); !s.ok()) {
    spdlog::warn("history in HDFS: {}", s.ToString());
    return;
  }
  if (PathExists(dir_.job_json())) (void)fs.Upload(dir_.job_json(), history + "/job.json", "600");
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (cv_.wait_for(lock, interval_, [this] { return stop_; })) return;
    lock.unlock();
    UploadIfChanged();
    lock.lock();
  }
}

void HistoryUploader::UploadIfChanged() {
  struct stat st {};
  if (::stat(dir_.events().c_str(), &st) != 0 || st.st_size == uploaded_size_) return;
  auto up = Connect(webhdfs_, user_, delegation_).Upload(dir_.events(), staging_dir_ + "/history/events.jsonl", "600");
  if (up.ok()) {
    uploaded_size_ = st.st_size;
  } else {
    spdlog::warn("history in HDFS: {}", up.status().ToString());
  }
}

}  // namespace loom::cluster::yarn
