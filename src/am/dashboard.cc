#include "am/dashboard.h"

#include "history/job_record.h"
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
  auto record = history::JobRecord::Read(dir_);
  const std::string user = record.ok() ? record->user : "";
  if ((!q.states.empty() && !q.states.count(view->state)) || (!q.user.empty() && q.user != user)) return page;
  page.total = 1;
  if (q.offset == 0) {
    page.jobs.push_back(web::JobSummary::Of(*view, user).ToJson());
  }
  return page;
}

std::string OwnJobCatalog::PrometheusMetrics() const {
  auto view = history::LoadJobView(dir_);
  if (!view.ok()) return "";
  view->id = job_id_;
  return web::TaskMetricsText(*view);
}

Dashboard::Dashboard(history::JobDir dir, std::string job_id)
    : catalog_(std::move(dir), std::move(job_id)),
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
  job_asked_.wait_for(lock, limit, [&] { return last_job_request_ > ended; });
}

}  // namespace loom::am
