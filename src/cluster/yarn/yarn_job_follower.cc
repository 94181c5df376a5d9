// Following a submitted YARN job to its end: the AM's events over its control plane while it
// answers, else the record it keeps in HDFS; the RM's report; and the job's end recorded here
// and in HDFS.

#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cluster/yarn/cluster_rms.h"
#include "cluster/yarn/history_publish.h"
#include "cluster/yarn/history_upload.h"
#include "cluster/yarn/yarn_job_submitter_internal.h"
#include "control/auth.h"
#include "core/files.h"
#include "core/job_state.h"
#include "core/strings.h"
#include "hadoop/hdfs/webhdfs.h"
#include "hadoop/ipc/yarn_clients.h"
#include "history/event_log.h"
#include "history/events.h"
#include "history/history_copy.h"
#include "history/job_view.h"
#include "history/metrics_log.h"

namespace loom::cluster::yarn {

using nlohmann::json;
namespace ypb = ::hadoop::yarn;

namespace {

// "[Sun Nov 22 18:58:42 +0000 2026] Application is added ..." -> "Application is added ...".
std::string WithoutTimestamp(std::string diag) {
  if (!diag.empty() && diag[0] == '[') {
    if (size_t close = diag.find("] "); close != std::string::npos) diag.erase(0, close + 2);
  }
  while (!diag.empty() && (diag.back() == ' ' || diag.back() == '\n')) diag.pop_back();
  return diag;
}

// The job's record in HDFS at its end, never with less than is there: job.json and status.json,
// and events.jsonl only where this client's copy holds every line the AM uploaded. A job found
// from another client never writes its events (its copy is the HDFS one, read whole).
Status RecordEndInHdfs(const YarnJobRecord& record, const history::JobDir& dir, bool* events_whole) {
  auto there = hadoop::WebHdfs(record.webhdfs, record.user).GetFileStatus(record.staging_dir + "/history/events.jsonl");
  bool absent = !there.ok() && there.status().code() == StatusCode::kNotFound;
  bool with_events = absent || (there.ok() && !record.imported && there->length <= record.am_events_offset);
  if (there.ok() && !with_events && !record.imported) {
    spdlog::warn("kept the AM's record of {} in HDFS ({} bytes of events; this client has {} of them)",
                 record.application_id, there->length, record.am_events_offset);
  }
  *events_whole = with_events;
  return UploadHistory(record.webhdfs, record.user, record.staging_dir, dir, /*replace_status=*/true, std::nullopt,
                       with_events);
}

// The same record in the job's history location (loom.history.location), this client's
// status.json over the AM's; its events only where they hold every line of the AM's, else the
// AM's (from the location, or the staging dir's copy).
Status RecordEndInHistoryLocation(const YarnJobRecord& record, const history::JobDir& dir, bool events_whole) {
  if (record.history_location.empty()) return Status::Ok();
  HistoryPublish p;
  p.webhdfs = record.webhdfs;
  p.user = record.user;
  p.location = record.history_location;
  p.job_id = history::RecordJobId(dir);
  p.replace = true;
  if (!events_whole) p.events_from_hdfs = record.staging_dir + "/history/events.jsonl";
  return PublishHistory(p, dir).WithContext("writing the job's record to " + record.history_location + "/" + p.job_id +
                                            " in HDFS (loom.history.location)");
}
}  // namespace

void YarnJobSubmitter::Mirror(history::JobDir dir) {
  while (!stop_) {
    Status s = Sync(dir);
    if (!s.ok()) spdlog::warn("{}", s.ToString());
    auto record = YarnJobRecord::Read(dir);
    if (record.ok() && record->cleaned) return;  // the end is recorded and cleaned up
    // Quick while the application starts, calmer once it runs.
    int steps = am_ended_ ? 1 : record.ok() && record->last_state == "RUNNING" ? 5 : 2;
    for (int i = 0; i < steps && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Status YarnJobSubmitter::Sync(const history::JobDir& dir) {
  std::lock_guard<std::mutex> lock(sync_mu_);
  DirLock flock(dir);
  return SyncLocked(dir);
}

Status YarnJobSubmitter::SyncLocked(const history::JobDir& dir) {
  LOOM_ASSIGN_OR_RETURN(YarnJobRecord record, YarnJobRecord::Read(dir));
  // Not submitted yet (the client is staging it): the RM does not know the id so far.
  if (record.cleaned || !record.submitted) return Status::Ok();
  LOOM_ASSIGN_OR_RETURN(std::vector<hadoop::HostPort> rm_addrs, hadoop::ParseHostPortList(record.rm));
  LOOM_ASSIGN_OR_RETURN(auto app, hadoop::ParseApplicationId(record.application_id));
  hadoop::ApplicationClient rm(RmsOf(rm_addrs), record.user, has_conf_ ? FailoverOf(conf_) : hadoop::FailoverSettings{});
  auto report = rm.GetApplicationReport(app);
  // The job's end as this client records it: a final row for every task (stopped with a
  // killed job, lost with a failed one: its AM or node died under them), no secret left, the
  // history in HDFS first (a job's record outlives its staging), then the staging files.
  // The AM's events that its copy in HDFS holds past what this client has of them.
  auto catch_up_from_hdfs = [&] {
    auto caught_up = CatchUpFromHdfs(record.webhdfs, record.user, record.staging_dir, record.am_events_offset, dir);
    if (!caught_up.ok()) return caught_up.status();
    record.am_events_offset = *caught_up;
    return Status::Ok();
  };
  json end_extra = {{"yarn_application_id", record.application_id}};
  auto end_job = [&](const std::string& state, const std::string& diagnostics) {
    // What the AM recorded in HDFS that did not reach this client yet, before the end's rows.
    if (!record.imported) {
      if (Status s = catch_up_from_hdfs(); !s.ok()) spdlog::warn("the AM's record in HDFS: {}", s.ToString());
    }
    (void)FetchMetrics(record.webhdfs, record.user, record.staging_dir, dir);  // uploaded by the AM as it ended
    (void)history::EndJob(dir, state, diagnostics, end_extra, state == "FAILED" ? TaskState::kLost : TaskState::kKilled);
    ::unlink(dir.secret().c_str());
    bool events_whole = true;
    Status up = RecordEndInHdfs(record, dir, &events_whole);
    // Its failure is said, and never holds up the clean-up: a location this user cannot write
    // to would otherwise keep the job from ever being done.
    if (Status s = RecordEndInHistoryLocation(record, dir, events_whole); !s.ok()) spdlog::warn("{}", s.ToString());
    Status cleaned = CleanStaging(record.webhdfs, record.user, record.staging_dir);
    record.cleaned = up.ok() && cleaned.ok();
    if (!record.cleaned) spdlog::warn("cleaning {}: {}", record.staging_dir, (up.ok() ? cleaned : up).ToString());
  };
  if (!report.ok() && IsApplicationNotFound(report.status())) {
    // The RM forgot it (restarted without a state store): it will never report an end.
    end_job("FAILED", "the ResourceManager at " + record.rm + " no longer knows " + record.application_id);
    return record.Write(dir);
  }
  if (!report.ok()) {
    return report.status().WithContext("asking " + record.rm + " about " + record.application_id);
  }
  history::EventLog local(dir.events());

  // The AM's events, copied over the control plane (needs the secret this client holds);
  // a job found from another client reads the copy the AM keeps in HDFS instead.
  auto secret = control::ReadSecretFile(dir.secret());
  if (record.imported) {
    if (auto bytes = hadoop::WebHdfs(record.webhdfs, record.user).Open(record.staging_dir + "/history/events.jsonl"); bytes.ok()) {
      (void)WriteFileAtomic(dir.events(), *bytes);
    }
  }
  std::string am_address;
  if (report->rpc_port() > 0 && !report->host().empty() && report->host() != "N/A") {
    std::string host = report->host();
    if (size_t slash = host.find('/'); slash != std::string::npos) host = host.substr(slash + 1);  // "name/ip"
    am_address = host + ":" + std::to_string(report->rpc_port());
    if (!PathExists(dir.am_addr())) (void)WriteFileAtomic(dir.am_addr(), am_address + "\n");
  }
  auto pull_events = [&] {
    bool reached = !am_address.empty() && secret.ok() && PullAmEvents(am_address, *secret, &record, dir);
    if (reached || am_address.empty() || record.imported) return;
    // The AM runs but does not answer from here (a gateway that cannot resolve or reach the
    // node): its own copy of the events in HDFS, said once.
    if (report->yarn_application_state() == ypb::RUNNING && !said_following_hdfs_) {
      spdlog::warn("the AM at {} does not answer from here; following the job's record in HDFS instead ({}/history, "
                   "rewritten by the AM every 2 s)",
                   am_address, record.staging_dir);
      said_following_hdfs_ = true;
    }
    auto now = std::chrono::steady_clock::now();
    if (now < next_hdfs_read_) return;  // the AM rewrites it every 2 s: no WebHDFS read per poll
    next_hdfs_read_ = now + std::chrono::seconds(1);
    (void)catch_up_from_hdfs();  // a failed read is tried again on the next poll
  };
  pull_events();

  // YARN's own state, after the AM's events so that RUNNING never precedes "AM started"; while
  // the application waits, the scheduler's reason (e.g. the queue's AM resource limit).
  std::string state = ypb::YarnApplicationStateProto_Name(report->yarn_application_state());
  bool waiting = report->yarn_application_state() == ypb::ACCEPTED || report->yarn_application_state() == ypb::SUBMITTED;
  std::string reason = waiting ? WithoutTimestamp(report->diagnostics()) : "";
  if (state != record.last_state || reason != record.last_reason) {
    json e = {{"id", record.application_id}, {"state", state}};
    if (!reason.empty()) e["reason"] = reason;
    if (report->yarn_application_state() == ypb::RUNNING && !report->trackingurl().empty()) {
      e["tracking_url"] = report->trackingurl();
    }
    (void)local.Append(history::events::kBackendState, e);
    record.last_state = state;
    record.last_reason = reason;
  }

  if (auto final_state = FinalStateOf(*report)) {
    pull_events();  // the AM may still answer for a moment
    std::string diag = final_state->second.empty() ? "YARN application " + record.application_id + " " + state
                                                   : final_state->second;
    if (final_state->first == "KILLED") {
      // Loom's cause of the kill: recorded here, or sent to the RM by a client elsewhere
      // (YARN's own words then stay in yarn_diagnostics); else YARN's words name who killed it.
      std::string cause = history::KillCause(dir);
      const std::string with = " with diagnostic message: ";  // ClientRMService's words
      if (size_t at = diag.find(with); cause.empty() && at != std::string::npos &&
                                       StartsWith(diag.substr(at + with.size()), "killed")) {
        cause = diag.substr(at + with.size());
      }
      if (!cause.empty()) {
        end_extra["yarn_diagnostics"] = diag;
        diag = cause;
      }
    }
    end_job(final_state->first, diag);
  }
  return record.Write(dir);
}

bool YarnJobSubmitter::PullAmEvents(const std::string& am_address, const std::string& secret, YarnJobRecord* record,
                                    const history::JobDir& dir) {
  auto now = std::chrono::steady_clock::now();
  if (!am_ || am_->address != am_address || (!am_->client && now >= am_->resolve_again)) {
    am_ = std::make_unique<AmChannel>();
    am_->address = am_address;
    auto client = control::ControlClient::Connect(am_address, secret);
    if (!client.ok()) {
      // A name this machine cannot resolve: asked again now and then, not on every sync.
      am_->resolve_again = now + std::chrono::seconds(10);
      spdlog::debug("the AM at {}: {}", am_address, client.status().ToString());
      return false;
    }
    am_->client = std::move(*client);
  }
  if (!am_->client) return false;
  // After a failed call, a call only once gRPC has the connection back (it retries in the
  // background): a sync never waits out a deadline on an AM that cannot be reached.
  if (am_->failed) {
    if (!am_->client->Connected()) return false;
    am_->failed = false;
  }
  for (int round = 0; round < 100; ++round) {
    grpc::ClientContext ctx;
    am_->client->Prepare(ctx, std::chrono::seconds(2));
    control::JobStateRequest req;
    req.set_events_offset(record->am_events_offset);
    // The samples since this copy's newest, once a sync: the running tasks' CPU, RSS and GPU
    // for `loom status` (the AM's metrics.jsonl replaces this copy at the end, FetchMetrics).
    // Each task's samples come in time order, so the newest line here is the one to ask after.
    if (round == 0) {
      std::vector<history::TaskSample> newest = history::ReadSamplesAfter(dir.metrics(), 0, 1);
      req.set_send_samples(true);
      req.set_samples_after_ms(newest.empty() ? 0 : newest.back().ms);
    }
    control::JobStateResponse resp;
    if (!am_->client->stub().JobState(&ctx, req, &resp).ok()) {
      am_->failed = true;
      return false;
    }
    if (!resp.samples().empty()) (void)AppendWholeLines(dir.metrics(), resp.samples());
    if (resp.events().empty()) return true;
    if (!AppendWholeLines(dir.events(), resp.events()).ok()) return false;
    record->am_events_offset = resp.events_end();
    // The AM's events as its EventLog writes them: compact JSON, "event" second.
    static const std::string kEnded = std::string("\"event\":\"") + history::events::kJobFinished + "\"";
    if (resp.events().find(kEnded) != std::string::npos) am_ended_ = true;
  }
  return true;
}

}  // namespace loom::cluster::yarn
