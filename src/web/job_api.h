#pragma once
// The JSON API and the pages of the AM's dashboard and of `loom portal` (README: "Dashboard,
// portal and JSON API"): one router over a JobCatalog, which says which jobs a server knows and
// where their records are. The AM's catalog is its one job (am/dashboard.h); the portal's, the
// history it indexes (portal/job_index.h). Every path a client sends is checked here: a job id
// the catalog does not know, a task the job does not have, a log name not on the list, are 404
// before any file is opened, and files are opened only through web/job_files.h.

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "history/job_view.h"
#include "web/http_server.h"
#include "web/job_files.h"

namespace loom::web {

struct JobSummary;

struct JobQuery {
  std::set<std::string> states;  // any of them; empty: all
  std::string user, backend;     // equal; "": any
  std::string name;              // a substring of the name or id, any case; kept in lower case
  int64_t since_ms = 0, until_ms = 0;  // submitted in [since, until]; 0: open
  int offset = 0, limit = 50;

  // Whether the job passes every filter (offset and limit are the caller's paging).
  bool Matches(const JobSummary& job) const;
};

// A job as the list shows it.
struct JobSummary {
  std::string job_id, name, user, backend, state, diagnostics;
  int64_t submitted_ms = 0, finished_ms = 0;
  size_t tasks = 0;  // how many
  static JobSummary Of(const history::JobView& view);
  nlohmann::json ToJson() const;
};

struct JobPage {
  int64_t total = 0;  // the jobs that match, all pages
  std::vector<nlohmann::json> jobs;  // this page's summaries, newest first
};

class JobCatalog {
 public:
  virtual ~JobCatalog() = default;
  // "am" or "portal".
  virtual std::string ServerKind() const = 0;
  // The AM's own job ("" on the portal): its `/` opens that job's page.
  virtual std::string OwnJob() const { return ""; }
  // The directory that holds the job's record, and the job dir's path below it (one
  // component for the portal's job dirs; the AM's record is its root, relative ""). NotFound
  // for a job this server does not serve.
  struct Location {
    std::string root, relative;
  };
  virtual Result<Location> Find(const std::string& job_id) const = 0;
  // The page of the jobs that match (JobSummary::ToJson).
  virtual JobPage List(const JobQuery& query) const = 0;
  // Whether the job's AM serves it now (its dashboard is live).
  virtual bool Live(const history::JobView& view) const = 0;
  // The Prometheus text of GET /metrics.
  virtual std::string PrometheusMetrics() const = 0;
  // A task's log `name` from `offset` (negative: from the end), at most `limit` bytes. The
  // default reads the job dir's tasks/<type>-<index>/<name> (and am.log); the YARN AM reads
  // a running task's from its NodeManager.
  virtual Result<LogChunk> ReadLog(const Location& where, const history::TaskView& task, const std::string& name,
                                    int64_t offset, int64_t limit) const;
};

// Answers one request: the API under /api/, /metrics, and the front end's files (`/` is
// index.html).
class WebApp {
 public:
  explicit WebApp(const JobCatalog& catalog) : catalog_(catalog) {}
  HttpResponse Handle(const HttpRequest& request) const;

 private:
  HttpResponse Api(const std::vector<std::string>& parts, const HttpRequest& request) const;
  HttpResponse Job(const std::string& job_id, const std::vector<std::string>& rest, const HttpRequest& request) const;
  const JobCatalog& catalog_;
};

// The Prometheus families of one job's tasks (the AM's /metrics): CPU, RSS and GPU of each
// running task's latest sample, restarts, and each task's state.
std::string TaskMetricsText(const history::JobView& view);

}  // namespace loom::web
