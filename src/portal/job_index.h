#pragma once
// JobIndex: what `loom portal` knows of the jobs in its history roots ($LOOM_HOME/jobs, and the
// local mirror of a history location in HDFS: portal/history_mirror.h), one summary per job,
// kept in memory so that the job list answers from it, newest first, with 10,000 jobs as fast
// as with ten. Refresh() rereads only what changed: a job dir whose events.jsonl or status.json
// changed size or time, or that is new; an ended job (status.json) is read once. A job whose
// record holds a link (web/job_files.h) is left out. The same id in two roots: the first
// root's.
//
// Threading: Refresh from one thread (the portal's refresher); the rest from any.

#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "web/job_api.h"

namespace loom::portal {

class JobIndex : public web::JobCatalog {
 public:
  explicit JobIndex(std::vector<std::string> roots) : roots_(std::move(roots)) {}

  // Brings the index up to date with the roots; returns how many jobs were (re)read.
  int Refresh();
  size_t size() const;

  std::string ServerKind() const override { return "portal"; }
  Result<Location> Find(const std::string& job_id) const override;
  web::JobPage List(const web::JobQuery& query) const override;
  // A job's dashboard is live while its record says its AM serves one and it has not ended.
  bool Live(const history::JobView& view) const override { return !view.final && !view.dashboard_url.empty(); }
  // loom_jobs{state=...}: the jobs of each state; loom_portal_jobs_indexed.
  std::string PrometheusMetrics() const override;

 private:
  struct Entry {
    std::string root, id;
    web::JobSummary summary;  // summary.state "": not read yet
    // What was read: events.jsonl's size and time, status.json's time (0: none yet).
    int64_t events_size = 0, events_mtime_ns = 0, status_mtime_ns = 0;
  };
  static bool Newer(const Entry& a, const Entry& b);

  const std::vector<std::string> roots_;
  mutable std::shared_mutex mu_;
  std::map<std::string, Entry> by_id_;
  std::vector<const Entry*> newest_first_;  // into by_id_, rebuilt by Refresh
};

}  // namespace loom::portal
