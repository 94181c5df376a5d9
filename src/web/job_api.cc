#include "web/job_api.h"

#include <unistd.h>

#include <charconv>
#include <string_view>

#include "core/files.h"
#include "core/job_spec.h"
#include "core/strings.h"
#include "core/version.h"
#include "history/metrics_log.h"
#include "web/embedded_assets.h"
#include "web/prometheus.h"

namespace loom::web {

using nlohmann::json;

namespace {

constexpr size_t kMaxEventsPerAnswer = 5000;
constexpr size_t kMaxSamplesPerAnswer = 20000;
constexpr int64_t kDefaultLogBytes = 64 << 10;
constexpr int64_t kMaxLogBytes = 1 << 20;

// Invalid UTF-8 (a task's output may hold any bytes) becomes U+FFFD instead of an exception.
HttpResponse JsonAnswer(const json& body) {
  HttpResponse r;
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  return r;
}

// A query parameter as an integer in [lo, hi]; `fallback` when absent.
Result<int64_t> IntParam(const HttpRequest& req, const std::string& name, int64_t fallback, int64_t lo, int64_t hi) {
  auto it = req.params.find(name);
  if (it == req.params.end() || it->second.empty()) return fallback;
  const std::string& v = it->second;
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < lo || n > hi) {
    return Status::InvalidArgument("query parameter " + name + "=" + v + ": expected an integer in [" +
                                   std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return n;
}

std::string Param(const HttpRequest& req, const std::string& name) {
  auto it = req.params.find(name);
  return it == req.params.end() ? "" : it->second;
}

HttpResponse ErrorAnswer(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument: return JsonError(400, s.message());
    case StatusCode::kNotFound: return JsonError(404, s.message());
    case StatusCode::kPermissionDenied: return JsonError(403, s.message());
    case StatusCode::kUnavailable: return JsonError(502, s.message());
    default: return JsonError(500, s.message());
  }
}

const EmbeddedAsset* FindAsset(std::string_view path) {
  for (size_t i = 0; i < kEmbeddedAssetCount; ++i) {
    if (path == kEmbeddedAssets[i].path) return &kEmbeddedAssets[i];
  }
  return nullptr;
}

HttpResponse AssetAnswer(std::string_view path) {
  const EmbeddedAsset* a = FindAsset(path);
  if (!a) return JsonError(404, "no such page: /" + std::string(path));
  HttpResponse r;
  r.content_type = a->content_type;
  r.body.assign(reinterpret_cast<const char*>(a->data), a->size);
  return r;
}

std::string JoinPath(const JobCatalog::Location& where) {
  return where.relative.empty() ? where.root : where.root + "/" + where.relative;
}

std::string BelowRecord(const JobCatalog::Location& where, const std::string& file) {
  return where.relative.empty() ? file : where.relative + "/" + file;
}

// The log files a task may have, in the job dir's layout (history/job_dir.h).
const std::vector<std::string>& TaskLogNames() {
  static const std::vector<std::string> names = {"stdout", "stderr", "executor.log"};
  return names;
}

}  // namespace

Result<LogChunk> JobCatalog::ReadLog(const Location& where, const history::TaskView& task, const std::string& name,
                                     int64_t offset, int64_t limit) const {
  std::string relative;
  if (task.id == "am") {
    relative = BelowRecord(where, "am.log");
  } else {
    LOOM_ASSIGN_OR_RETURN(TaskId id, ParseTaskId(task.id));
    relative = BelowRecord(where, "tasks/" + id.DirName() + "/" + name);
  }
  LOOM_ASSIGN_OR_RETURN(int fd, OpenBelow(where.root, relative));
  return ReadLogChunk(fd, offset, limit);
}

JobSummary JobSummary::Of(const history::JobView& view) {
  return {view.id,          view.name,         view.user,        view.backend.empty() ? "local" : view.backend,
          view.state,       view.diagnostics, view.submitted_ms, view.finished_ms,
          view.tasks.size()};
}

bool JobQuery::Matches(const JobSummary& job) const {
  if (!states.empty() && !states.count(job.state)) return false;
  if (!user.empty() && job.user != user) return false;
  if (!backend.empty() && job.backend != backend) return false;
  if (since_ms && job.submitted_ms < since_ms) return false;
  if (until_ms && job.submitted_ms > until_ms) return false;
  return name.empty() || ToLower(job.name).find(name) != std::string::npos ||
         ToLower(job.job_id).find(name) != std::string::npos;
}

json JobSummary::ToJson() const {
  return {{"job_id", job_id},       {"name", name},
          {"user", user},           {"backend", backend},
          {"state", state},         {"submitted_ms", submitted_ms},
          {"finished_ms", finished_ms}, {"tasks", tasks},
          {"diagnostics", diagnostics}};
}

HttpResponse WebApp::Handle(const HttpRequest& request) const {
  const std::string& path = request.path;
  if (path == "/" || path == "/index.html") return AssetAnswer("index.html");
  if (path.rfind("/assets/", 0) == 0) return AssetAnswer(std::string_view(path).substr(1));
  if (path == "/metrics") {
    HttpResponse r;
    r.content_type = kPrometheusContentType;
    r.body = catalog_.PrometheusMetrics();
    return r;
  }
  // The AM's page of old, which scripts may read: the job as `loom status --json` shows it.
  if (path == "/status.json" && !catalog_.OwnJob().empty()) {
    return Job(catalog_.OwnJob(), {}, request);
  }
  std::vector<std::string> parts = Split(path, '/', /*skip_empty=*/false);
  // "/api/x" splits into "", "api", "x".
  if (parts.size() >= 3 && parts[0].empty() && parts[1] == "api") {
    return Api(std::vector<std::string>(parts.begin() + 2, parts.end()), request);
  }
  return JsonError(404, "no such page: " + path);
}

HttpResponse WebApp::Api(const std::vector<std::string>& parts, const HttpRequest& request) const {
  if (parts.size() == 1 && parts[0] == "info") {
    json info = {{"server", catalog_.ServerKind()}, {"version", kVersion}};
    if (!catalog_.OwnJob().empty()) info["job_id"] = catalog_.OwnJob();
    return JsonAnswer(info);
  }
  if (parts.size() == 1 && parts[0] == "jobs") {
    JobQuery q;
    for (const std::string& s : Split(Param(request, "state"), ',')) q.states.insert(s);
    q.user = Param(request, "user");
    q.backend = Param(request, "backend");
    q.name = ToLower(Param(request, "name"));
    auto since = IntParam(request, "since", 0, 0, INT64_MAX);
    auto until = IntParam(request, "until", 0, 0, INT64_MAX);
    auto offset = IntParam(request, "offset", 0, 0, 1 << 30);
    auto limit = IntParam(request, "limit", 50, 1, 500);
    for (const auto* r : {&since, &until, &offset, &limit}) {
      if (!r->ok()) return ErrorAnswer(r->status());
    }
    q.since_ms = *since;
    q.until_ms = *until;
    q.offset = static_cast<int>(*offset);
    q.limit = static_cast<int>(*limit);
    JobPage page = catalog_.List(q);
    return JsonAnswer({{"total", page.total}, {"offset", q.offset}, {"limit", q.limit}, {"jobs", page.jobs}});
  }
  if (parts.size() >= 2 && parts[0] == "jobs") {
    return Job(parts[1], std::vector<std::string>(parts.begin() + 2, parts.end()), request);
  }
  return JsonError(404, "no such API: /api/" + Join(parts, "/"));
}

HttpResponse WebApp::Job(const std::string& job_id, const std::vector<std::string>& rest,
                         const HttpRequest& request) const {
  auto where = catalog_.Find(job_id);
  if (!where.ok()) return ErrorAnswer(where.status());
  if (Status s = CheckRecordHasNoLinks(where->root, where->relative); !s.ok()) return ErrorAnswer(s);
  const history::JobDir dir(JoinPath(*where));
  auto view = history::LoadJobView(dir);
  if (!view.ok()) return ErrorAnswer(view.status());
  view->id = job_id;  // a YARN AM's job dir is named after its container, not the job

  if (rest.empty()) {
    json j = history::ToJson(*view);
    j["live"] = catalog_.Live(*view);
    return JsonAnswer(j);
  }
  const std::string& what = rest[0];
  if (what == "events" && rest.size() == 1) {
    auto after = IntParam(request, "after", 0, 0, INT64_MAX);
    if (!after.ok()) return ErrorAnswer(after.status());
    auto fd = OpenBelow(where->root, BelowRecord(*where, "events.jsonl"));
    if (!fd.ok()) return ErrorAnswer(fd.status());
    EventsChunk chunk = ReadEventsFrom(*fd, *after, kMaxEventsPerAnswer);
    return JsonAnswer({{"events", chunk.events}, {"next", chunk.next}, {"more", chunk.more}});
  }
  if (what == "metrics" && rest.size() == 1) {
    auto after = IntParam(request, "after", 0, 0, INT64_MAX);
    if (!after.ok()) return ErrorAnswer(after.status());
    json samples = json::array();
    bool truncated = false;
    // Only after the check that the record holds no link: its path may be read directly.
    for (const history::TaskSample& s :
         history::ReadSamplesAfter(dir.metrics(), *after, kMaxSamplesPerAnswer, &truncated)) {
      samples.push_back(json::parse(history::SampleLine(s)));
    }
    return JsonAnswer({{"samples", samples}, {"truncated", truncated}});
  }
  if (what == "config" && rest.size() == 1) {
    auto fd = OpenBelow(where->root, BelowRecord(*where, "config.xml"));
    if (!fd.ok()) return ErrorAnswer(fd.status());
    LogChunk whole = ReadLogChunk(*fd, 0, 16 << 20);
    auto entries = ConfigEntries(whole.data, "config.xml");
    if (!entries.ok()) return ErrorAnswer(Status::Internal(entries.status().message()));
    return JsonAnswer({{"entries", *entries}});
  }
  if (what == "logs" && rest.size() == 1) {
    json logs = json::array();
    for (const history::TaskView& t : view->tasks) {
      for (const std::string& name : TaskLogNames()) logs.push_back({{"task", t.id}, {"name", name}});
    }
    logs.push_back({{"task", "am"}, {"name", "am.log"}});
    return JsonAnswer({{"logs", logs}});
  }
  if (what == "logs" && rest.size() == 3) {
    const std::string& task_id = rest[1];
    const std::string& name = rest[2];
    history::TaskView am_task;
    am_task.id = "am";
    const history::TaskView* task = nullptr;
    if (task_id == "am" && name == "am.log") {
      task = &am_task;
    } else {
      for (const history::TaskView& t : view->tasks) {
        if (t.id == task_id) task = &t;
      }
      if (!task) return JsonError(404, "job " + job_id + " has no task " + task_id);
      bool known = false;
      for (const std::string& n : TaskLogNames()) known = known || n == name;
      if (!known) return JsonError(404, "no log " + name + " (stdout, stderr, executor.log)");
    }
    auto offset = IntParam(request, "offset", 0, INT64_MIN + 1, INT64_MAX);
    auto limit = IntParam(request, "limit", kDefaultLogBytes, 1, kMaxLogBytes);
    if (!offset.ok()) return ErrorAnswer(offset.status());
    if (!limit.ok()) return ErrorAnswer(limit.status());
    auto chunk = catalog_.ReadLog(*where, *task, name, *offset, *limit);
    if (!chunk.ok()) return ErrorAnswer(chunk.status());
    return JsonAnswer({{"offset", chunk->offset},
                       {"size", chunk->size},
                       {"data", chunk->data},
                       {"next", chunk->offset + static_cast<int64_t>(chunk->data.size())},
                       {"eof", chunk->eof}});
  }
  return JsonError(404, "no such API: /api/jobs/" + job_id + "/" + Join(rest, "/"));
}

std::string TaskMetricsText(const history::JobView& view) {
  PrometheusText out;
  auto task_labels = [&](const history::TaskView& t) {
    return PrometheusLabels{{"job", view.id}, {"task", t.id}};
  };
  out.Family("loom_task_cpu_cores", "gauge", "CPU the task's processes use, in cores (latest sample).");
  for (const history::TaskView& t : view.tasks) {
    if (t.latest && t.latest->cpu_cores) out.Sample("loom_task_cpu_cores", task_labels(t), *t.latest->cpu_cores);
  }
  out.Family("loom_task_rss_bytes", "gauge", "Resident memory of the task's processes (latest sample).");
  for (const history::TaskView& t : view.tasks) {
    if (t.latest) out.Sample("loom_task_rss_bytes", task_labels(t), static_cast<double>(t.latest->rss_bytes));
  }
  // Both GPU families from one pass: a family's samples must stand together.
  std::vector<std::pair<PrometheusLabels, const history::GpuValue*>> gpus;
  for (const history::TaskView& t : view.tasks) {
    if (!t.latest) continue;
    for (const history::GpuValue& g : t.latest->gpus) {
      PrometheusLabels l = task_labels(t);
      l.emplace_back("gpu", std::to_string(g.index));
      gpus.emplace_back(std::move(l), &g);
    }
  }
  out.Family("loom_task_gpu_utilization_percent", "gauge", "Utilisation of each of the task's GPUs (latest sample).");
  for (const auto& [l, g] : gpus) out.Sample("loom_task_gpu_utilization_percent", l, g->utilization_percent);
  out.Family("loom_task_gpu_memory_bytes", "gauge", "Memory used on each of the task's GPUs (latest sample).");
  for (const auto& [l, g] : gpus) out.Sample("loom_task_gpu_memory_bytes", l, static_cast<double>(g->memory_bytes));
  out.Family("loom_task_restarts_total", "counter", "Restarts of the task alone (its type's restart policy).");
  for (const history::TaskView& t : view.tasks) out.Sample("loom_task_restarts_total", task_labels(t), t.restarts);
  out.Family("loom_job_attempt", "gauge", "Restarts of the whole gang so far.");
  out.Sample("loom_job_attempt", {{"job", view.id}}, view.attempt);
  out.Family("loom_task_state", "gauge", "1 for each task's current state.");
  for (const history::TaskView& t : view.tasks) {
    PrometheusLabels l = task_labels(t);
    l.emplace_back("state", t.StateText());
    out.Sample("loom_task_state", l, 1);
  }
  return out.text();
}

}  // namespace loom::web
