#include "cli/am_startup.h"

#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "core/files.h"
#include "core/strings.h"
#include "history/event_log.h"
#include "history/events.h"
#include "history/job_view.h"

namespace loom::cli {

namespace {
constexpr char kKey[] = "loom.am.startup-timeout";
}  // namespace

int64_t AmStartupTimeoutOf(const history::JobDir& dir) {
  config::Config conf;
  if (!conf.MergeXmlFile(dir.config(), /*recorded_sources=*/true).ok()) return 0;
  std::optional<std::string> value = conf.Get(kKey);
  if (!value) return 0;
  Result<int64_t> ms = ParseInt(*value);
  return ms.ok() && *ms > 0 ? *ms : 0;
}

std::optional<std::string> AmStartupExpired(const history::JobDir& dir, int64_t timeout_ms, int64_t now_ms) {
  if (timeout_ms <= 0 || PathExists(dir.status())) return std::nullopt;
  int64_t since = 0;
  bool started = false;
  std::string backend, state, reason;
  int64_t position = 0;
  for (const nlohmann::json& e : history::ReadEvents(dir.events())) {
    try {
      std::string type = e.value("event", "");
      if (type == history::events::kJobSubmitted) {
        if (since == 0) since = history::EventMillis(e, "ts", 0);
        backend = e.value("backend", backend);
      } else if (type == history::events::kBackendSubmitted) {
        since = history::EventMillis(e, "ts", since);  // the cluster has it from here on
        backend = e.value("backend", backend);
      } else if (type == history::events::kAmStarted) {
        started = true;
      } else if (type == history::events::kBackendState) {
        state = e.value("state", "");
        reason = e.value("reason", "");
        position = history::EventInt(e, "position", 0, 0, 1 << 20);
        started |= state == "RUNNING";  // YARN: the AM registered (its own event may lag)
      }
    } catch (const nlohmann::json::exception&) {
      // an event of the wrong shape says nothing about the AM
    }
  }
  if (started || since == 0 || now_ms - since < timeout_ms) return std::nullopt;
  config::Config conf;  // for the key as the user wrote it
  (void)conf.MergeXmlFile(dir.config(), /*recorded_sources=*/true);
  std::string why = "the AM did not start within " + config::Spelled(conf, kKey) + "=" + std::to_string(timeout_ms) + " ms";
  if (!state.empty()) {
    why += " (" + (backend == "yarn" ? std::string("YARN") : backend.empty() ? std::string("local") : backend) +
           ": still " + state;
    if (position > 0) why += ", position " + std::to_string(position);
    if (!reason.empty()) why += ": " + reason;
    why += ")";
  }
  return why;
}

std::optional<std::string> EnforceAmStartupTimeout(const history::JobDir& dir, cluster::Backend& backend,
                                                   int64_t timeout_ms) {
  std::optional<std::string> why = AmStartupExpired(dir, timeout_ms, history::NowMillis());
  if (!why) return std::nullopt;
  (void)history::RecordKillCause(dir, *why);  // what the AM says as it stops: Loom killed it
  // Someone else ended it meanwhile (the first final status wins): theirs is the end.
  Result<bool> ours = history::EndJobIfFirst(dir, "FAILED", *why);
  if (ours.ok() && *ours) {
    // The end is ours, so is its event: the AM, stopped before it ran the job, writes none.
    (void)history::EventLog(dir.events()).Append(history::events::kJobFinished, {{"state", "FAILED"}, {"diagnostics", *why}});
  } else if (auto view = history::LoadJobView(dir); view.ok() && view->final && view->diagnostics != *why) {
    return std::nullopt;
  }
  (void)backend.Kill(dir, std::chrono::milliseconds(10000), *why);
  return why;
}

}  // namespace loom::cli
