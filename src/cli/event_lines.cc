#include "cli/event_lines.h"

#include <cstdio>
#include <ctime>
#include <vector>

#include "core/job_state.h"
#include "core/strings.h"
#include "history/event_log.h"
#include "history/events.h"
#include "history/job_view.h"

namespace loom::cli {
namespace {

using nlohmann::json;

std::string ClockTime(int64_t ms) {
  std::time_t t = ms / 1000;
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

// A task's memory as the task table shows it: MiB, with a decimal while it is small.
std::string FormatRss(int64_t bytes) {
  char buf[32];
  double mib = static_cast<double>(bytes) / (1 << 20);
  if (mib < 10) std::snprintf(buf, sizeof(buf), "%.1fM", mib);
  else std::snprintf(buf, sizeof(buf), "%lldM", static_cast<long long>(bytes >> 20));
  return buf;
}

}  // namespace

std::string DescribeEvent(const json& e) {
  std::string type = e.value("event", "");
  std::string when = ClockTime(history::EventMillis(e, "ts", 0));
  if (type == history::events::kTaskState) {
    std::string text = e.value("state", "?");  // shown as written, even a spelling this Loom does not know
    std::optional<TaskState> state = ParseTaskState(text);
    std::string line = when + "  " + e.value("task", "?") + " " + text;
    if (e.contains("address")) line += " " + e.value("address", "");
    if (e.contains("gpus")) line += " GPUs " + e.value("gpus", "");
    if (e.contains("exit_code") && state != TaskState::kSucceeded) line += " exit " + std::to_string(history::EventInt(e, "exit_code", 0, -255, 255));
    if (e.contains("diagnostics") && state == TaskState::kFailed) line += "\n    " + e.value("diagnostics", "");
    return line;
  }
  if (type == history::events::kAmStarted) {
    std::string line = when + "  AM started (pid " + std::to_string(history::EventInt(e, "pid", 0, 0, 1 << 30)) + ", " +
                       e.value("address", "") + ")";
    if (std::string url = e.value("status_url", ""); !url.empty()) line += "; dashboard: " + url;
    return line;
  }
  if (type == history::events::kGangComplete) {
    return when + "  gang complete: " + (e.contains("cluster_spec") ? e["cluster_spec"].dump() : "");
  }
  if (type == history::events::kJobFinished) return when + "  job " + e.value("state", "?");
  if (type == history::events::kStageStarted) {
    std::vector<std::string> tasks;
    for (const auto& t : e.value("tasks", json::array())) tasks.push_back(t.get<std::string>());
    return when + "  prepare stage succeeded; training stage started: " + Join(tasks, ", ");
  }
  if (type == history::events::kJobWarning) return when + "  warning: " + e.value("message", "");
  if (type == history::events::kTensorBoard) {
    return when + "  TensorBoard (" + e.value("task", "?") + "): " + e.value("url", "?");
  }
  if (type == history::events::kTaskRestarting) {
    return when + "  " + e.value("task", "?") + " failed (exit " + std::to_string(history::EventInt(e, "exit_code", 0, -255, 255)) +
           "); restarting it alone, restart " + std::to_string(history::EventInt(e, "restart", 0, 0, 1 << 20));
  }
  if (type == history::events::kJobRestarting) {
    return when + "  gang failed (" + e.value("reason", "") + "); restarting it, attempt " +
           std::to_string(history::EventInt(e, "attempt", 0, 0, 1 << 20) + 1);
  }
  if (type == history::events::kJobSubmitted) return when + "  submitted";
  if (type == history::events::kTasksPending) {
    std::string line = when + "  waiting for containers:";
    for (const auto& p : e.value("tasks", json::array())) {
      line += "\n    " + p.value("task", std::string("?")) + " (" + p.value("resources", std::string("?")) + ") " +
              history::FormatDuration(history::EventMillis(p, "waited_ms", 0)) + ": " + p.value("reason", std::string("?"));
    }
    return line;
  }
  if (type == history::events::kBackendSubmitted) {
    return when + "  submitted to " + e.value("backend", "?") + " (" + e.value("where", "?") + ") as " + e.value("id", "?");
  }
  if (type == history::events::kBackendState) {
    std::string state = e.value("state", "?");
    // The local backend's queue has no id of its own.
    std::string line = when + "  " + (e.contains("id") ? e.value("id", "?") + " " : "") + state;
    if (state == "QUEUED") line += ", position " + std::to_string(history::EventInt(e, "position", 0, 0, 1 << 20));
    if (state == "ADMITTED") {
      line += " after " + history::FormatDuration(history::EventMillis(e, "waited_ms", 0)) + " in the queue";
    }
    if (std::string reason = e.value("reason", ""); !reason.empty()) line += ": " + reason;
    if (std::string url = e.value("tracking_url", ""); !url.empty()) line += "\n    tracking URL: " + url;
    return line;
  }
  if (type == history::events::kTaskMetrics) {
    std::vector<std::string> samples;
    for (const auto& m : e.value("tasks", json::array())) {
      samples.push_back(m.value("task", std::string("?")) + " " +
                        FormatRss(history::EventInt(m, "rss_bytes", 0, 0, int64_t{1} << 60)));
    }
    return when + "  memory (RSS): " + (samples.empty() ? std::string("no sample") : Join(samples, ", "));
  }
  if (type == history::events::kContainerReleased) {
    return when + "  container " + e.value("container", "?") + " on " + e.value("host", "?") + " given back unused: " +
           e.value("reason", "?");
  }
  if (type == history::events::kDependencyTimeout) {
    return when + "  " + e.value("type", "?") + " still running after group '" + e.value("group", "?") +
           "' finished: " + (e.value("ignored", false) ? "stopping it (.ignored=true)" : "failing the job");
  }
  // A kind this loom does not know (a newer AM's): its fields, never a bare name.
  json fields = e;
  fields.erase("event");
  fields.erase("ts");
  return when + "  " + type + (fields.empty() ? "" : " " + fields.dump());
}

}  // namespace loom::cli
