#pragma once
// Dashboard: the AM's web server, what `loom submit|status` print as the job's dashboard and
// what YARN shows as the application's tracking URL (through the RM's proxy, so every link of
// the page is relative). It serves the one front end and JSON API of `loom portal`
// (web/job_api.h) over the AM's own job: its record is the AM's job dir, which the AM writes
// as the job runs, so the page is live. Nothing is served that the job dir's record does not
// hold: not the job's secret, not credentials (web/job_files.h opens only the record's files).

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "cluster/am_side.h"
#include "core/status.h"
#include "history/job_dir.h"
#include "web/http_server.h"
#include "web/job_api.h"

namespace loom::am {

// The AM's catalog: one job, live while the AM runs.
class OwnJobCatalog : public web::JobCatalog {
 public:
  // `job_id` is the job's own id: on YARN the AM's job dir is named after the container's
  // working dir, not the job. `side`: where logs that are not in the job dir are read (none:
  // only the job dir's).
  OwnJobCatalog(history::JobDir dir, std::string job_id, const cluster::AmSide* side = nullptr)
      : dir_(std::move(dir)), job_id_(std::move(job_id)), side_(side) {}
  std::string ServerKind() const override { return "am"; }
  std::string OwnJob() const override { return job_id_; }
  Result<Location> Find(const std::string& job_id) const override;
  web::JobPage List(const web::JobQuery& query) const override;
  bool Live(const history::JobView&) const override { return true; }
  // The tasks' gauges (web::TaskMetricsText).
  std::string PrometheusMetrics() const override;
  // The job dir's copy where there is one (local), else the node's (YARN: the NodeManager's,
  // through the AmSide) of the task's container, or of the AM's own for am.log.
  Result<web::LogChunk> ReadLog(const Location& where, const history::TaskView& task, const std::string& name,
                                int64_t offset, int64_t limit) const override;

 private:
  history::JobDir dir_;
  std::string job_id_;
  const cluster::AmSide* side_;
};

class Dashboard {
 public:
  Dashboard(history::JobDir dir, std::string job_id, const cluster::AmSide* side = nullptr);
  // Listens on `bind_address` (numeric), an ephemeral port; returns the port.
  Result<int> Start(const std::string& bind_address);
  // Once the job ended: serves on while someone watches, so that the page sees the end. When
  // the job's JSON was asked for within `watched` before now, waits until it is asked for again
  // (the page's next poll, which finds the job final), at most `limit`, then a second more for
  // the rest of that poll; otherwise returns at once (nobody watches: the AM's exit is not held
  // up).
  void LingerForWatchers(std::chrono::milliseconds watched, std::chrono::milliseconds limit);
  void Stop() { server_.Stop(); }

 private:
  web::HttpResponse Handle(const web::HttpRequest& request);

  OwnJobCatalog catalog_;
  web::WebApp app_;
  std::mutex mu_;
  std::condition_variable job_asked_;
  std::chrono::steady_clock::time_point last_job_request_{};  // of api/jobs/<id> or status.json
  web::HttpServer server_;
};

}  // namespace loom::am
