#include "history/job_view.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "core/files.h"
#include "core/job_state.h"
#include "history/event_log.h"
#include "history/events.h"
#include "history/job_record.h"

namespace loom::history {

using nlohmann::json;

namespace {
// A count of cores in an event: a finite number in [0, 2^20]; nothing otherwise.
std::optional<double> Cores(const json& e, const char* key) {
  auto it = e.find(key);
  if (it == e.end() || !it->is_number()) return std::nullopt;
  double v = it->get<double>();
  if (!(v >= 0 && v <= double(1 << 20))) return std::nullopt;
  return v;
}
}  // namespace

std::string TaskView::StateText() const { return unknown_state.empty() ? TaskStateName(state) : unknown_state; }

TaskView* JobView::FindTask(const std::string& task_id) {
  for (auto& t : tasks) {
    if (t.id == task_id) return &t;
  }
  tasks.push_back(TaskView{task_id});
  return &tasks.back();
}

void JobView::Apply(const json& e) {
  // events.jsonl is a file, so its content is input: an event of the wrong shape is skipped.
  try {
    ApplyChecked(e);
  } catch (const json::exception&) {
  }
}

void JobView::ApplyChecked(const json& e) {
  if (!e.is_object()) return;
  std::string type = e.value("event", "");
  int64_t ts = EventMillis(e, "ts", 0);
  if (type == events::kJobSubmitted) {
    id = e.value("job_id", id);
    name = e.value("name", name);
    backend = e.value("backend", backend);
    submitted_ms = ts;
    if (e.contains("tasks")) {
      for (const auto& t : e["tasks"]) FindTask(t.get<std::string>());
    }
  } else if (type == events::kAmStarted) {
    if (!final) state = "RUNNING";
    am_container = e.value("container", am_container);
    am_node_id = e.value("node_id", am_node_id);
    am_node_http = e.value("node_http", am_node_http);
    if (!final) dashboard_url = e.value("status_url", "");
  } else if (type == events::kTaskState) {
    TaskView* t = FindTask(e.value("task", "?"));
    // The one place a task's state is read from text: the rest of Loom goes by TaskState.
    // `now`: the state this event leaves the task in, when it is one this Loom knows.
    std::optional<TaskState> now;
    if (t->unknown_state.empty()) now = t->state;
    if (e.contains("state")) {
      std::string text = e.value("state", "");
      now = ParseTaskState(text);
      t->unknown_state = now ? "" : text;
    }
    if (now) t->state = *now;
    if (t->state != TaskState::kPending) t->waiting.clear();
    if (e.contains("waiting")) t->waiting = e.value("waiting", "");  // e.g. for the prepare stage
    if (e.contains("address")) t->address = e.value("address", "");
    if (e.contains("exit_code")) t->exit_code = static_cast<int>(EventInt(e, "exit_code", 0, -255, 255));
    if (e.contains("diagnostics")) t->diagnostics = e.value("diagnostics", "");
    if (e.contains("container")) {
      std::string container = e.value("container", "");
      if (!t->container.empty() && container != t->container) t->earlier.push_back({t->container, t->node_id, t->node_http});
      t->container = container;
    }
    if (e.contains("node_id")) t->node_id = e.value("node_id", "");
    if (e.contains("node_http")) t->node_http = e.value("node_http", "");
    if (e.contains("gpus")) t->gpus = e.value("gpus", "");
    if (e.contains("peak_rss_bytes")) t->peak_rss_bytes = EventInt(e, "peak_rss_bytes", 0, 0, int64_t{1} << 60);
    if (auto cores = Cores(e, "peak_cpu_cores")) t->peak_cpu_cores = cores;
    if (auto cores = Cores(e, "avg_cpu_cores")) t->avg_cpu_cores = cores;
    if (now && IsTerminal(*now)) t->latest.reset();
    if (now == TaskState::kRunning) t->started_ms = ts;
    if (now && IsTerminal(*now)) {
      t->finished_ms = ts;
      if (t->id == tensorboard_task) {  // its TensorBoard went with it
        tensorboard_url.clear();
        tensorboard_task.clear();
      }
    }
  } else if (type == events::kTasksPending) {
    for (const auto& p : e.value("tasks", json::array())) {
      TaskView* t = FindTask(p.value("task", "?"));
      if (t->state != TaskState::kPending) continue;
      t->waiting = FormatDuration(EventMillis(p, "waited_ms", 0)) + " for " + p.value("resources", std::string("a container")) +
                   ": " + p.value("reason", std::string("?"));
    }
  } else if (type == events::kTaskMetrics) {
    for (const auto& m : e.value("tasks", json::array())) {
      TaskView* t = FindTask(m.value("task", std::string("?")));
      if (IsTerminal(t->state)) continue;  // a late sample: the end has the peak
      t->rss_bytes = EventInt(m, "rss_bytes", 0, 0, int64_t{1} << 60);
      t->peak_rss_bytes = std::max(t->peak_rss_bytes, t->rss_bytes);
    }
  } else if (type == events::kTaskRestarting) {
    FindTask(e.value("task", "?"))->restarts = static_cast<int>(EventInt(e, "restart", 0, 0, 1 << 20));
  } else if (type == events::kJobWarning) {
    std::string message = e.value("message", "");
    if (!message.empty() && std::find(warnings.begin(), warnings.end(), message) == warnings.end()) {
      warnings.push_back(message);
    }
  } else if (type == events::kTensorBoard) {
    std::string task = e.value("task", std::string());
    auto t = std::find_if(tasks.begin(), tasks.end(), [&](const TaskView& v) { return v.id == task; });
    // A late answer from a task that already ended (or a job that did) is no link.
    if (!final && (t == tasks.end() || !IsTerminal(t->state))) {
      tensorboard_url = e.value("url", tensorboard_url);
      tensorboard_task = task;
    }
  } else if (type == events::kJobRestarting) {
    tensorboard_url.clear();
    tensorboard_task.clear();
    attempt = static_cast<int>(EventInt(e, "attempt", attempt, 0, 1 << 20));
    for (auto& t : tasks) {  // a new attempt starts every task afresh; its containers stay known
      TaskView fresh{t.id};
      fresh.earlier = std::move(t.earlier);
      if (!t.container.empty()) fresh.earlier.push_back({t.container, t.node_id, t.node_http});
      t = std::move(fresh);
    }
  } else if (type == events::kBackendSubmitted) {
    backend_id = e.value("id", backend_id);
  } else if (type == events::kBackendState) {
    backend_id = e.value("id", backend_id);
    backend_state = e.value("state", "");
    if (std::string reason = e.value("reason", ""); !reason.empty()) backend_state += ": " + reason;
    tracking_url = e.value("tracking_url", tracking_url);
    // The local backend's queue: QUEUED until the job is admitted (then AM_STARTED: RUNNING).
    if (backend_state.rfind("QUEUED", 0) == 0) {
      if (!final && (state == "SUBMITTED" || state == "QUEUED")) state = "QUEUED";
      queue_position = static_cast<int>(EventInt(e, "position", 0, 0, 1 << 20));
      queue_reason = e.value("reason", "");
    } else {
      if (state == "QUEUED") state = "SUBMITTED";
      queue_position = 0;
      queue_reason.clear();
    }
  } else if (type == events::kJobFinished) {
    state = e.value("state", state);
    diagnostics = e.value("diagnostics", diagnostics);
    finished_ms = ts;
    MarkEnded();
  }
}

void JobView::MarkEnded() {
  dashboard_url.clear();
  tensorboard_url.clear();
  tensorboard_task.clear();
}

void JobView::ApplySamples(const std::map<std::string, TaskSample>& samples) {
  for (TaskView& t : tasks) {
    auto s = samples.find(t.id);
    if (s == samples.end() || IsTerminal(t.state) || final || s->second.ms < t.started_ms) continue;
    t.latest = s->second;
  }
}

std::set<std::string> JobView::RunningTasks() const {
  std::set<std::string> ids;
  if (final) return ids;
  for (const TaskView& t : tasks) {
    if (t.started_ms > 0 && !IsTerminal(t.state)) ids.insert(t.id);
  }
  return ids;
}

Result<JobView> LoadJobView(const JobDir& dir) {
  if (!IsDirectory(dir.root())) return Status::NotFound("no job directory " + dir.root());
  JobView view;
  view.id = dir.job_id();
  if (auto job = JobRecord::Read(dir); job.ok()) {
    view.name = job->name;
    view.user = job->user;
    view.backend = job->backend;
    view.submitted_ms = job->submitted_ms;
  }
  for (const json& e : ReadEvents(dir.events())) view.Apply(e);
  if (auto text = ReadFile(dir.status()); text.ok()) {
    try {
      json s = json::parse(*text);
      view.state = s.value("state", view.state);
      view.diagnostics = s.value("diagnostics", view.diagnostics);
      view.finished_ms = EventMillis(s, "finished_ms", view.finished_ms);
      view.final = true;
      view.MarkEnded();
    } catch (const json::exception&) {
    }
  }
  // Only while tasks run: an ended job's view (`loom list` reads thousands) reads no samples.
  if (std::set<std::string> running = view.RunningTasks(); !running.empty()) {
    view.ApplySamples(ReadLatestSamples(dir.metrics(), running));
  }
  return view;
}

namespace {
// Writes `path` whole unless it exists: link(2) fails if it does, an atomic
// first-writer-wins across processes. AlreadyExists when another writer was first.
Status WriteFirst(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  LOOM_RETURN_IF_ERROR(WriteFileAtomic(tmp, content));
  int rc = ::link(tmp.c_str(), path.c_str());
  int err = errno;
  ::unlink(tmp.c_str());
  if (rc != 0) {
    if (err == EEXIST) return Status::AlreadyExists(path + " already written");
    return Status::FromErrno("link " + path, err);
  }
  return Status::Ok();
}
}  // namespace

Status WriteFinalStatus(const JobDir& dir, const std::string& state, const std::string& diagnostics,
                        const json& extra) {
  json status = {{"job_id", dir.job_id()}, {"state", state}, {"diagnostics", diagnostics}, {"finished_ms", NowMillis()}};
  for (const auto& [k, v] : extra.items()) status[k] = v;
  return WriteFirst(dir.status(), status.dump(2) + "\n");
}

Status RecordKillCause(const JobDir& dir, const std::string& cause) {
  return WriteFirst(dir.kill_cause(), cause + "\n");
}

std::string KillCause(const JobDir& dir) {
  auto text = ReadFile(dir.kill_cause());
  if (!text.ok()) return "";
  std::string cause = *text;
  while (!cause.empty() && (cause.back() == '\n' || cause.back() == '\r')) cause.pop_back();
  return cause;
}

Status EndJob(const JobDir& dir, const std::string& state, const std::string& diagnostics, const json& extra,
              TaskState task_state) {
  return EndJobIfFirst(dir, state, diagnostics, extra, task_state).status();
}

Result<bool> EndJobIfFirst(const JobDir& dir, const std::string& state, const std::string& diagnostics,
                           const json& extra, TaskState task_state) {
  if (PathExists(dir.status())) return false;
  LOOM_ASSIGN_OR_RETURN(JobView view, LoadJobView(dir));
  EventLog log(dir.events());
  for (const TaskView& t : view.tasks) {
    if (IsTerminal(t.state)) continue;
    json row = {{"task", t.id}, {"state", TaskStateName(task_state)}, {"diagnostics", "ended with the job: " + diagnostics}};
    // A task that had a process was stopped with SIGTERM by whoever ended the job (YARN's
    // NodeManager, or its executor once the AM was gone): the shell's 143, as for every task
    // Loom stops. One that never started has no exit code.
    if (t.state != TaskState::kPending) row["exit_code"] = kStoppedExitCode;
    LOOM_RETURN_IF_ERROR(log.Append(events::kTaskState, row));
  }
  Status s = WriteFinalStatus(dir, state, diagnostics, extra);
  if (s.code() == StatusCode::kAlreadyExists) return false;
  LOOM_RETURN_IF_ERROR(s);
  return true;
}

json ToJson(const JobView& v) {
  json tasks = json::array();
  for (const TaskView& t : v.tasks) {
    json task = {{"task", t.id},
                 {"state", t.StateText()},
                 {"address", t.address},
                 {"exit_code", t.exit_code},
                 {"diagnostics", t.diagnostics},
                 {"peak_rss_bytes", t.peak_rss_bytes},
                 {"rss_bytes", t.rss_bytes},
                 {"restarts", t.restarts},
                 {"started_ms", t.started_ms},
                 {"finished_ms", t.finished_ms}};
    if (!t.container.empty()) task["container"] = t.container;
    if (!t.node_id.empty()) task["node_id"] = t.node_id;
    if (!t.waiting.empty()) task["waiting"] = t.waiting;
    if (!t.gpus.empty()) task["gpus"] = t.gpus;
    if (t.latest) {
      json m = {{"ms", t.latest->ms}};
      if (t.latest->cpu_cores) m["cpu_cores"] = *t.latest->cpu_cores;
      m["rss_bytes"] = t.latest->rss_bytes;
      if (!t.latest->gpus.empty()) {
        json gpus = json::array();
        for (const GpuValue& g : t.latest->gpus) {
          gpus.push_back({{"index", g.index}, {"utilization_percent", g.utilization_percent}, {"memory_bytes", g.memory_bytes}});
        }
        m["gpus"] = std::move(gpus);
      }
      task["metrics"] = std::move(m);
    }
    if (t.peak_cpu_cores) task["peak_cpu_cores"] = *t.peak_cpu_cores;
    if (t.avg_cpu_cores) task["avg_cpu_cores"] = *t.avg_cpu_cores;
    tasks.push_back(std::move(task));
  }
  json j = {{"job_id", v.id},
            {"name", v.name},
            {"user", v.user},
            {"backend", v.backend},
            {"state", v.state},
            {"diagnostics", v.diagnostics},
            {"submitted_ms", v.submitted_ms},
            {"finished_ms", v.finished_ms},
            {"final", v.final},
            {"attempt", v.attempt},
            {"tasks", tasks}};
  if (!v.backend_state.empty()) j["backend_state"] = v.backend_state;
  if (!v.backend_id.empty()) j["backend_id"] = v.backend_id;
  if (v.state == "QUEUED") {
    j["queue_position"] = v.queue_position;
    j["queue_reason"] = v.queue_reason;
  }
  if (!v.tracking_url.empty()) j["tracking_url"] = v.tracking_url;
  if (!v.dashboard_url.empty()) j["dashboard_url"] = v.dashboard_url;
  if (!v.tensorboard_url.empty()) j["tensorboard_url"] = v.tensorboard_url;
  if (!v.warnings.empty()) j["warnings"] = v.warnings;
  return j;
}

std::string FormatDuration(int64_t ms) {
  if (ms <= 0) return "-";
  char buf[32];
  if (ms < 60000) std::snprintf(buf, sizeof(buf), "%.1fs", ms / 1000.0);
  else if (ms < 3600000) std::snprintf(buf, sizeof(buf), "%lldm%02llds", (long long)ms / 60000, (long long)(ms / 1000) % 60);
  else std::snprintf(buf, sizeof(buf), "%lldh%02lldm", (long long)ms / 3600000, (long long)(ms / 60000) % 60);
  return buf;
}

namespace {
std::string FormatCores(std::optional<double> cores) {
  if (!cores) return "";
  char buf[32];
  std::snprintf(buf, sizeof(buf), *cores < 10 ? "%.2f" : "%.1f", *cores);
  return buf;
}

// "87% 15.2G" a device, several separated by commas.
std::string FormatGpus(const std::vector<GpuValue>& gpus) {
  std::string out;
  for (const GpuValue& g : gpus) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s%d%% %.1fG", out.empty() ? "" : ", ", g.utilization_percent,
                  static_cast<double>(g.memory_bytes) / (1 << 30));
    out += buf;
  }
  return out;
}
}  // namespace

std::string RenderTaskTable(const JobView& view) {
  size_t w = 4;
  bool gpus = false;
  for (const auto& t : view.tasks) {
    w = std::max(w, t.id.size());
    gpus = gpus || (t.latest && !t.latest->gpus.empty());
  }
  std::string out;
  char line[512];
  // CPU after RSS: what reads RSS right after the address of a running task still finds it.
  std::snprintf(line, sizeof(line), "  %-*s  %-10s  %-21s  %-5s  %-8s  %-5s  %-8s%s\n", (int)w, "TASK", "STATE", "ADDRESS",
                "EXIT", "RSS", "CPU", "TIME", gpus ? "  GPU" : "");
  out += line;
  for (const auto& t : view.tasks) {
    bool done = t.finished_ms > 0;
    std::string exit = done ? std::to_string(t.exit_code) : "";
    // Now while it runs, then the peak (RSS) and the average (CPU).
    int64_t rss_bytes = done ? t.peak_rss_bytes : t.latest ? t.latest->rss_bytes : t.rss_bytes ? t.rss_bytes : t.peak_rss_bytes;
    std::string rss = rss_bytes ? std::to_string(rss_bytes >> 20) + "M" : "";
    std::string cpu = FormatCores(done ? t.avg_cpu_cores : t.latest ? t.latest->cpu_cores : std::nullopt);
    int64_t end = done ? t.finished_ms : NowMillis();
    std::string time = t.started_ms ? FormatDuration(end - t.started_ms) : "";
    std::string gpu = gpus && !done && t.latest ? "  " + FormatGpus(t.latest->gpus) : "";
    std::snprintf(line, sizeof(line), "  %-*s  %-10s  %-21s  %-5s  %-8s  %-5s  %-8s%s", (int)w, t.id.c_str(), t.StateText().c_str(),
                  t.address.c_str(), exit.c_str(), rss.c_str(), cpu.c_str(), time.c_str(), gpu.c_str());
    std::string row = line;
    while (!row.empty() && row.back() == ' ') row.pop_back();
    out += row + "\n";
  }
  return out;
}

}  // namespace loom::history
