#include "am/dashboard.h"

#include <algorithm>
#include <optional>
#include <thread>

#include "history/job_view.h"

namespace loom::am {

Result<web::JobCatalog::Location> OwnJobCatalog::Find(const std::string& job_id) const {
  if (job_id != job_id_) return Status::NotFound("this AM serves job " + job_id_ + ", not " + job_id);
  return Location{dir_.root(), ""};
}

web::JobPage OwnJobCatalog::List(const web::JobQuery& q) const {
  web::JobPage page;
  auto view = history::LoadJobView(dir_);
  if (!view.ok()) return page;
  view->id = job_id_;
  web::JobSummary summary = web::JobSummary::Of(*view);
  if (!q.Matches(summary)) return page;
  page.total = 1;
  if (q.offset == 0) page.jobs.push_back(summary.ToJson());
  return page;
}

std::string OwnJobCatalog::PrometheusMetrics() const {
  auto view = history::LoadJobView(dir_);
  if (!view.ok()) return "";
  view->id = job_id_;
  return web::TaskMetricsText(*view);
}

Result<web::LogChunk> OwnJobCatalog::ReadLog(const Location& where, const history::TaskView& task,
                                             const std::string& name, int64_t offset, int64_t limit) const {
  auto local = web::JobCatalog::ReadLog(where, task, name, offset, limit);
  if (local.ok() || local.status().code() != StatusCode::kNotFound || !side_) return local;
  std::string container = task.container, node_http = task.node_http;
  if (task.id == "am") {
    auto view = history::LoadJobView(dir_);
    if (!view.ok()) return local;
    container = view->am_container;
    node_http = view->am_node_http;
  }
  if (container.empty() || node_http.empty()) return local;
  // The NodeManager serves a file's first or last N bytes: a window from `offset` is the
  // cheaper of the two.
  web::LogChunk chunk;
  if (offset < 0) {
    LOOM_ASSIGN_OR_RETURN(cluster::TaskLogPiece tail, side_->ReadTaskLog(container, node_http, name, -std::min(-offset, limit)));
    chunk.size = tail.file_length;
    chunk.data = std::move(tail.bytes);
    chunk.offset = chunk.size - static_cast<int64_t>(chunk.data.size());
  } else {
    LOOM_ASSIGN_OR_RETURN(cluster::TaskLogPiece head, side_->ReadTaskLog(container, node_http, name, 0));
    chunk.size = head.file_length;
    chunk.offset = std::min(offset, chunk.size);
    const int64_t want = std::min(limit, chunk.size - chunk.offset);
    if (want > 0) {
      // A tail read's bytes end at the file's length then, which may have grown since: where
      // they start is known from it, and a file that grew past the window is read from its head.
      std::optional<cluster::TaskLogPiece> piece;
      int64_t start = 0;
      if (chunk.size - chunk.offset < chunk.offset + want) {
        LOOM_ASSIGN_OR_RETURN(piece, side_->ReadTaskLog(container, node_http, name, -(chunk.size - chunk.offset)));
        start = piece->file_length - static_cast<int64_t>(piece->bytes.size());
        if (start > chunk.offset) piece.reset();
      }
      if (!piece) {
        LOOM_ASSIGN_OR_RETURN(piece, side_->ReadTaskLog(container, node_http, name, chunk.offset + want));
        start = 0;
      }
      chunk.size = std::max(chunk.size, piece->file_length);
      const int64_t skip = chunk.offset - start;
      if (static_cast<int64_t>(piece->bytes.size()) > skip) chunk.data = piece->bytes.substr(skip, want);
    }
  }
  chunk.eof = chunk.offset + static_cast<int64_t>(chunk.data.size()) >= chunk.size;
  return chunk;
}

Dashboard::Dashboard(history::JobDir dir, std::string job_id, const cluster::AmSide* side)
    : catalog_(std::move(dir), std::move(job_id), side),
      app_(catalog_),
      server_([this](const web::HttpRequest& r) { return Handle(r); }) {}

Result<int> Dashboard::Start(const std::string& bind_address) { return server_.Start(bind_address, 0); }

web::HttpResponse Dashboard::Handle(const web::HttpRequest& request) {
  web::HttpResponse answer = app_.Handle(request);
  if (request.path == "/api/jobs/" + catalog_.OwnJob() || request.path == "/status.json") {
    std::lock_guard lock(mu_);
    last_job_request_ = std::chrono::steady_clock::now();
    job_asked_.notify_all();
  }
  return answer;
}

void Dashboard::LingerForWatchers(std::chrono::milliseconds watched, std::chrono::milliseconds limit) {
  // Real time on purpose: it waits for another process (a browser), as the AM's linger for a
  // following client does.
  const auto ended = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  if (last_job_request_ < ended - watched) return;
  if (!job_asked_.wait_for(lock, limit, [&] { return last_job_request_ > ended; })) return;
  // The page asks for the job first, then for its events and metrics in the same poll: those
  // must still be answered, or the poll fails and the page never shows the end.
  lock.unlock();
  std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace loom::am
