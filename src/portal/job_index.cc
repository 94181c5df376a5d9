#include "portal/job_index.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <mutex>
#include <set>

#include "history/job_view.h"
#include "web/job_files.h"
#include "web/prometheus.h"

namespace loom::portal {

namespace {

int64_t MtimeNs(const struct stat& st) { return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec; }

// The job dirs of one root: real directories only (a link is not followed), names as ids.
std::vector<std::string> JobDirNames(const std::string& root) {
  std::vector<std::string> names;
  DIR* d = ::opendir(root.c_str());
  if (!d) return names;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) continue;
    names.emplace_back(e->d_name);
  }
  ::closedir(d);
  return names;
}

}  // namespace

bool JobIndex::Newer(const Entry& a, const Entry& b) {
  if (a.summary.submitted_ms != b.summary.submitted_ms) return a.summary.submitted_ms > b.summary.submitted_ms;
  return a.id > b.id;  // ids hold their submit time to the second: newest first too
}

int JobIndex::Refresh() {
  // What is there now, first root first.
  std::map<std::string, Entry> seen;
  for (const std::string& root : roots_) {
    for (const std::string& name : JobDirNames(root)) {
      if (seen.count(name)) continue;
      const std::string dir = root + "/" + name;
      struct stat st {};
      if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
      Entry e;
      e.root = root;
      e.id = name;
      if (::stat((dir + "/events.jsonl").c_str(), &st) == 0) {
        e.events_size = st.st_size;
        e.events_mtime_ns = MtimeNs(st);
      }
      if (::stat((dir + "/status.json").c_str(), &st) == 0) e.status_mtime_ns = MtimeNs(st);
      seen.emplace(name, std::move(e));
    }
  }
  // Read what is new or changed, outside the lock: List goes on meanwhile.
  int read = 0;
  {
    std::shared_lock lock(mu_);
    for (auto& [id, e] : seen) {
      auto old = by_id_.find(id);
      if (old != by_id_.end() && old->second.root == e.root && old->second.events_size == e.events_size &&
          old->second.events_mtime_ns == e.events_mtime_ns && old->second.status_mtime_ns == e.status_mtime_ns) {
        e = old->second;
        continue;
      }
      e.summary.state.clear();  // to be read
    }
  }
  for (auto it = seen.begin(); it != seen.end();) {
    Entry& e = it->second;
    if (!e.summary.state.empty()) {
      ++it;
      continue;
    }
    auto view = history::LoadJobView(history::JobDir(e.root + "/" + e.id));
    if (!web::CheckRecordHasNoLinks(e.root, e.id).ok() || !view.ok()) {
      it = seen.erase(it);
      continue;
    }
    ++read;
    view->id = e.id;
    e.summary = web::JobSummary::Of(*view);
    ++it;
  }
  std::unique_lock lock(mu_);
  by_id_ = std::move(seen);
  newest_first_.clear();
  newest_first_.reserve(by_id_.size());
  for (const auto& [id, e] : by_id_) newest_first_.push_back(&e);
  std::sort(newest_first_.begin(), newest_first_.end(), [](const Entry* a, const Entry* b) { return Newer(*a, *b); });
  return read;
}

size_t JobIndex::size() const {
  std::shared_lock lock(mu_);
  return by_id_.size();
}

Result<web::JobCatalog::Location> JobIndex::Find(const std::string& job_id) const {
  std::shared_lock lock(mu_);
  auto it = by_id_.find(job_id);
  if (it == by_id_.end()) return Status::NotFound("no job " + job_id + " in the portal's history");
  return Location{it->second.root, job_id};
}

web::JobPage JobIndex::List(const web::JobQuery& q) const {
  web::JobPage page;
  std::shared_lock lock(mu_);
  for (const Entry* entry : newest_first_) {
    const web::JobSummary& e = entry->summary;
    if (!q.Matches(e)) continue;
    if (page.total >= q.offset && page.total < int64_t{q.offset} + q.limit) page.jobs.push_back(e.ToJson());
    ++page.total;
  }
  return page;
}

std::string JobIndex::PrometheusMetrics() const {
  std::map<std::string, int64_t> by_state;
  size_t total = 0;
  {
    std::shared_lock lock(mu_);
    for (const auto& [id, e] : by_id_) ++by_state[e.summary.state];
    total = by_id_.size();
  }
  web::PrometheusText out;
  out.Family("loom_jobs", "gauge", "Jobs in the portal's history, by state.");
  for (const auto& [state, n] : by_state) out.Sample("loom_jobs", {{"state", state}}, static_cast<double>(n));
  out.Family("loom_portal_jobs_indexed", "gauge", "Jobs the portal indexes.");
  out.Sample("loom_portal_jobs_indexed", {}, static_cast<double>(total));
  return out.text();
}

}  // namespace loom::portal
