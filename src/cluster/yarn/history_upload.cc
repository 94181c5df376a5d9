#include "cluster/yarn/history_upload.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "core/files.h"
#include "hadoop/hdfs/webhdfs.h"

namespace loom::cluster::yarn {

namespace {
hadoop::WebHdfs Connect(const std::string& webhdfs, const std::string& user, const std::optional<hadoop::Token>& delegation) {
  hadoop::WebHdfs fs(webhdfs, user);
  if (delegation) fs.UseDelegationToken(*delegation);  // the AM has no Kerberos ticket
  return fs;
}
}  // namespace

Status UploadHistory(const std::string& webhdfs, const std::string& user, const std::string& staging_dir,
                     const history::JobDir& dir, bool replace_status, const std::optional<hadoop::Token>& delegation,
                     bool with_events) {
  hadoop::WebHdfs fs = Connect(webhdfs, user, delegation);
  LOOM_RETURN_IF_ERROR(fs.Mkdirs(staging_dir + "/history", "700"));
  for (const std::string& f : {dir.job_json(), dir.events(), dir.status()}) {
    if (!PathExists(f) || (f == dir.events() && !with_events)) continue;
    std::string to = staging_dir + "/history/" + f.substr(f.rfind('/') + 1);
    if (f == dir.status() && !replace_status && fs.GetFileStatus(to).ok()) continue;
    LOOM_RETURN_IF_ERROR(fs.Upload(f, to, "600").status());
  }
  // The AM's samples (metrics.jsonl), never replaced with less: a client's copy is the one it
  // fetched from there (FetchMetrics), or none.
  if (struct stat st {}; ::stat(dir.metrics().c_str(), &st) == 0) {
    const std::string to = staging_dir + "/history/metrics.jsonl";
    auto there = fs.GetFileStatus(to);
    if (!there.ok() || there->length <= st.st_size) LOOM_RETURN_IF_ERROR(fs.Upload(dir.metrics(), to, "600").status());
  }
  return Status::Ok();
}

Status FetchMetrics(const std::string& webhdfs, const std::string& user, const std::string& staging_dir,
                    const history::JobDir& dir) {
  auto bytes = hadoop::WebHdfs(webhdfs, user).Open(staging_dir + "/history/metrics.jsonl");
  if (!bytes.ok()) return bytes.status().code() == StatusCode::kNotFound ? Status::Ok() : bytes.status();
  return WriteFileAtomic(dir.metrics(), *bytes);
}

Result<int64_t> CatchUpFromHdfs(const std::string& webhdfs, const std::string& user, const std::string& staging_dir,
                                int64_t am_events_offset, const history::JobDir& dir) {
  constexpr int64_t kMaxChunk = 64 << 20;
  auto bytes = hadoop::WebHdfs(webhdfs, user).OpenRange(staging_dir + "/history/events.jsonl", am_events_offset, kMaxChunk);
  if (!bytes.ok() && bytes.status().code() == StatusCode::kNotFound) return am_events_offset;  // not uploaded yet
  if (!bytes.ok()) return bytes.status();
  size_t complete = bytes->rfind('\n');
  if (complete == std::string::npos) return am_events_offset;
  bytes->resize(complete + 1);
  LOOM_RETURN_IF_ERROR(AppendWholeLines(dir.events(), *bytes));
  return am_events_offset + static_cast<int64_t>(bytes->size());
}

Status AppendWholeLines(const std::string& path, const std::string& lines) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno("open " + path, errno);
  ssize_t n = ::write(fd, lines.data(), lines.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(lines.size())) return Status::FromErrno("append to " + path, err);
  return Status::Ok();
}

HistoryUploader::HistoryUploader(std::string webhdfs, std::string user, std::string staging_dir, history::JobDir dir,
                                 std::chrono::milliseconds interval, std::optional<hadoop::Token> delegation)
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
  hadoop::WebHdfs fs = Connect(webhdfs_, user_, delegation_);
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
