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
      server_([this](const web::HttpRequest& r) { return app_.Handle(r); }) {}

Result<int> Dashboard::Start(const std::string& bind_address) { return server_.Start(bind_address, 0); }

}  // namespace loom::am
