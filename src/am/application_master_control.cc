// The AM's control plane: the calls executors make (register, cluster spec, started, heartbeat,
// exit report, TensorBoard) and clients make (job state), each run on the event loop but the
// heartbeat; the cluster spec they are answered with; and the liveness their heartbeats show.

#include <algorithm>

#include <spdlog/spdlog.h>

#include "am/application_master.h"
#include "am/end_policy.h"
#include "history/events.h"

namespace loom::am {

using nlohmann::json;

namespace {

// JobStateResponse.samples: at most this many, the newest (control.proto).
constexpr size_t kMaxSamplesPerJobState = 5000;

TaskId FromRef(const control::TaskRef& ref) { return {ref.type(), ref.index()}; }

// Horovod's slot plan of the gang now complete, read from the very variables its processes are
// given, so that the store's scope sizes and the processes cannot disagree.
std::vector<GlooSlot> GlooPlan(const JobSpec& spec, const runtime::ClusterSpec& cluster, const JobTracker& tracker,
                               const std::string& job_id) {
  std::vector<GlooSlot> plan;
  for (const TaskRecord& r : tracker.tasks()) {
    if (!tracker.Started(r.id) || IsTerminal(r.state)) continue;  // another stage's
    for (const auto& env : runtime::BuildProcessEnvs(spec, cluster, {r.id, job_id})) {
      auto get = [&env](const char* k) {
        auto it = env.find(k);
        return it == env.end() ? std::string() : it->second;
      };
      if (get("HOROVOD_RANK").empty()) continue;  // a sidecar: outside the world
      plan.push_back({get("HOROVOD_HOSTNAME"), std::atoi(get("HOROVOD_LOCAL_RANK").c_str()),
                      std::atoi(get("HOROVOD_SIZE").c_str()), std::atoi(get("HOROVOD_LOCAL_SIZE").c_str()),
                      std::atoi(get("HOROVOD_CROSS_SIZE").c_str())});
    }
  }
  return plan;
}
}  // namespace

// ---- Liveness -----------------------------------------------------------------------------

void ApplicationMaster::CheckHeartbeats() {
  if (finalized_) return;
  const Clock::TimePoint now = opts_.clock->Now();
  for (auto& [id, slot] : slots_) {
    const TaskRecord* r = tracker_->Find(id);
    if (!r || !slot.container || slot.stop_requested) continue;
    if (r->state != TaskState::kRegistered && r->state != TaskState::kRunning) continue;
    if (!HeartbeatLost(opts_.spec, Clock::TimePoint(std::chrono::nanoseconds(slot.last_heartbeat_ns.load())), now)) {
      continue;
    }
    std::string why = "lost: no heartbeat for " + std::to_string(HeartbeatLimit(opts_.spec).count()) + " ms (" + opts_.spec.KeyName("loom.task.max-missed-heartbeats") + "=" +
                      std::to_string(opts_.spec.max_missed_heartbeats) + ")";
    spdlog::warn("task {} {}", id.ToString(), why);
    (void)broker_.Stop(slot.container->id, std::chrono::milliseconds(0));
    RequestStop(slot);
    StopTasks(tracker_->OnTaskFinished(id, 1, false, why));
    RecordTask(id, {{"exit_code", 1}, {"diagnostics", why}});
  }
  AfterTransition();
  RecordMetrics();
  loop_.PostAfter(std::chrono::milliseconds(opts_.spec.heartbeat_interval_ms), [this] { CheckHeartbeats(); });
}

void ApplicationMaster::RecordMetrics() {
  constexpr int64_t kSecondNs = 1000 * 1000 * 1000;
  constexpr int64_t kNotable = int64_t{1} << 20;  // or 10%, whichever is more
  constexpr int64_t kLarge = int64_t{16} << 20;   // or 25%: a task growing (or shrinking) fast
  if (IsTerminal(tracker_->state())) return;
  int64_t now = NowNs();
  json tasks = json::array();
  for (auto& [id, slot] : slots_) {
    const TaskRecord* r = tracker_->Find(id);
    int64_t rss = slot.rss_bytes.load();
    if (!r || r->state != TaskState::kRunning || !slot.container || rss <= 0) continue;
    bool first = slot.recorded_rss == 0;
    int64_t change = rss > slot.recorded_rss ? rss - slot.recorded_rss : slot.recorded_rss - rss;
    int64_t since = now - slot.recorded_rss_ns;
    bool notable = change >= std::max(kNotable, slot.recorded_rss / 10) && since >= 10 * kSecondNs;
    bool large = change >= std::max(kLarge, slot.recorded_rss / 4) && since >= kSecondNs;
    if (!first && !notable && !large) continue;
    slot.recorded_rss = rss;
    slot.recorded_rss_ns = now;
    tasks.push_back({{"task", id.ToString()}, {"rss_bytes", rss}});
  }
  if (!tasks.empty()) (void)events_.Append(history::events::kTaskMetrics, {{"tasks", tasks}});
}

// ---- Control plane ------------------------------------------------------------------------

std::optional<TaskId> ApplicationMaster::CheckTask(const control::TaskRef& ref, Status* error,
                                                   const std::string& container_id) {
  TaskId id = FromRef(ref);
  if (!tracker_->Find(id)) {
    *error = Status::InvalidArgument("unknown task " + id.ToString());
    return std::nullopt;
  }
  if (!container_id.empty()) {
    const TaskSlot* slot = Slot(id);
    if (!slot || !slot->container || slot->container->id != container_id) {
      *error = Status::FailedPrecondition(id.ToString() + " has no container " + container_id + " (stale executor?)");
      return std::nullopt;
    }
  }
  return id;
}

void ApplicationMaster::HandleRegister(const control::RegisterRequest& req, Reply<control::RegisterResponse> reply) {
  loop_.Post([this, req, reply] {
    Status error;
    auto id = CheckTask(req.task(), &error);
    if (!id) return reply(error, {});
    TaskSlot* slot = Slot(*id);
    if (req.port() <= 0 || req.port() > 65535 || req.host().empty() || req.tb_port() < 0 || req.tb_port() > 65535) {
      return reply(Status::InvalidArgument("register " + id->ToString() + ": bad address"), {});
    }
    if (!slot->container || (!req.container_id().empty() && req.container_id() != slot->container->id)) {
      return reply(Status::FailedPrecondition(id->ToString() + " has no such container (stale executor?)"), {});
    }
    if (IsTerminal(tracker_->state())) return reply(Status::Aborted("job is ending"), {});
    slot->last_heartbeat_ns = NowNs();
    slot->tb_port = req.tb_port();
    bool complete = tracker_->OnRegistered(*id, req.host(), req.port());
    json extra = {{"address", req.host() + ":" + std::to_string(req.port())}};
    if (!req.gpus().empty()) extra["gpus"] = req.gpus();
    RecordTask(*id, std::move(extra));
    // Said once per distinct note (one per node): other applications may share these GPUs.
    if (!req.gpu_note().empty() && warned_.insert(req.gpu_note()).second) {
      spdlog::warn("{}", req.gpu_note());
      (void)events_.Append(history::events::kJobWarning, {{"message", req.gpu_note()}, {"task", id->ToString()}});
    }
    control::RegisterResponse resp;
    resp.set_heartbeat_interval_ms(opts_.spec.heartbeat_interval_ms);
    resp.set_max_missed_heartbeats(opts_.spec.max_missed_heartbeats);
    resp.set_execution_timeout_ms(opts_.spec.execution_timeout_ms);
    resp.set_stderr_tail_lines(opts_.spec.stderr_tail_lines);
    resp.set_stop_grace_ms(opts_.spec.stop_grace_ms);
    if (const TaskTypeSpec* t = opts_.spec.FindType(id->type)) {
      resp.set_memory_limit_bytes(t->resources.memory_mib * 1024 * 1024);
    }
    reply(Status::Ok(), resp);
    if (complete || !opts_.spec.gang) PublishClusterSpec();
  });
}

void ApplicationMaster::PublishClusterSpec() {
  cluster_spec_ = runtime::ClusterSpec();
  for (const auto& type : opts_.spec.types) {
    if (!tracker_->Started({type.name, 0})) continue;  // a stage not yet started has no addresses
    std::vector<std::string> addrs;
    for (int i = 0; i < type.instances; ++i) {
      const TaskRecord* r = tracker_->Find({type.name, i});
      addrs.push_back(r && r->port ? r->host + ":" + std::to_string(r->port) : "");
    }
    cluster_spec_.Add(type.name, addrs);
  }
  if (tracker_->GangComplete() && !spec_ready_) {
    spec_ready_ = true;
    json gang = {{"tasks", tracker_->tasks().size()}, {"cluster_spec", json::parse(cluster_spec_.ToJson())}};
    if (HasTrainingStage(opts_.spec)) gang["stage"] = tracker_->stage() ? "training" : "prepare";
    (void)events_.Append(history::events::kGangComplete, gang);
    // Before anyone of this gang learns where the store is: a new gang (a restart, the training
    // stage) never reads the keys of processes before it, and each scope is cleared once all
    // its ranks are done with it.
    if (rendezvous_) rendezvous_->Reset(GlooPlan(opts_.spec, cluster_spec_, *tracker_, opts_.job_id));
  }
  AnswerSpecWaiters();
}

control::ClusterSpecResponse ApplicationMaster::SpecFor(const TaskId& id) const {
  control::ClusterSpecResponse resp;
  const TaskTypeSpec* type = opts_.spec.FindType(id.type);
  resp.set_command(type ? type->command : "");
  auto it = slots_.find(id);
  runtime::TaskContext ctx{id, opts_.job_id, attempt_ + (it == slots_.end() ? 0 : it->second.restarts),
                          it == slots_.end() ? 0 : it->second.tb_port};
  if (rendezvous_) ctx.rendezvous_address = opts_.setup.advertise_host + ":" + std::to_string(rendezvous_->port());
  auto env = runtime::BuildFrameworkEnv(opts_.spec, cluster_spec_, ctx);
  for (const auto& [k, v] : opts_.spec.execution_env) env[k] = v;
  resp.mutable_env()->insert(env.begin(), env.end());
  // loom.<type>.processes: each process's own ranks, and its share of the task's GPUs.
  if (type && type->processes > 1) {
    for (const auto& process_env : runtime::BuildProcessEnvs(opts_.spec, cluster_spec_, ctx)) {
      resp.add_processes()->mutable_env()->insert(process_env.begin(), process_env.end());
    }
    if (type->split_gpus) resp.set_gpus_per_process(type->resources.gpus / type->processes);
  }
  AddMpiRole(id, &resp);
  return resp;
}

void ApplicationMaster::AnswerSpecWaiters() {
  for (auto& [id, slot] : slots_) {
    const TaskRecord* r = tracker_->Find(id);
    if (!r || r->state == TaskState::kPending || r->state == TaskState::kLaunched) continue;
    for (auto& waiter : slot.spec_waiters) waiter(Status::Ok(), SpecFor(id));
    slot.spec_waiters.clear();
  }
}

void ApplicationMaster::HandleGetClusterSpec(const control::ClusterSpecRequest& req,
                                             Reply<control::ClusterSpecResponse> reply) {
  loop_.Post([this, req, reply] {
    Status error;
    auto id = CheckTask(req.task(), &error);
    if (!id) return reply(error, {});
    if (IsTerminal(tracker_->state())) return reply(Status::Aborted("job is ending"), {});
    const TaskRecord* r = tracker_->Find(*id);
    if (r->state == TaskState::kPending || r->state == TaskState::kLaunched) {
      return reply(Status::FailedPrecondition(id->ToString() + " asked for the cluster spec before registering"), {});
    }
    if (spec_ready_ || !opts_.spec.gang) return reply(Status::Ok(), SpecFor(*id));
    Slot(*id)->spec_waiters.push_back(reply);  // answered the moment the gang completes
  });
}

void ApplicationMaster::HandleTaskStarted(const control::TaskStartedRequest& req, Reply<control::Ack> reply) {
  loop_.Post([this, req, reply] {
    Status error;
    auto id = CheckTask(req.task(), &error);
    if (!id) return reply(error, {});
    const TaskRecord* r = tracker_->Find(*id);
    if (!IsTerminal(r->state)) {
      tracker_->OnRunning(*id);
      json started = {{"pid", req.pid()}};
      if (req.pids_size() > 1) started["pids"] = std::vector<int>(req.pids().begin(), req.pids().end());
      RecordTask(*id, started);
    }
    reply(Status::Ok(), {});
  });
}

// Runs on a gRPC thread: heartbeats are the most frequent message (one per task per second),
// so they only touch the slot's atomics and never wake the event loop.
Status ApplicationMaster::HandleHeartbeat(const control::HeartbeatRequest& req, control::HeartbeatResponse* resp) {
  TaskSlot* slot = Slot(FromRef(req.task()));
  if (!slot) return Status::InvalidArgument("unknown task " + FromRef(req.task()).ToString());
  slot->last_heartbeat_ns = NowNs();
  slot->rss_bytes = req.rss_bytes();
  slot->gpu_utilization_percent = req.gpu_utilization_percent();
  slot->gpu_memory_bytes = req.gpu_memory_bytes();
  // Each sample once: between two, the executor's heartbeats repeat the last one.
  if (req.sample_seq() != 0 && slot->sample_seq.exchange(req.sample_seq()) != req.sample_seq()) {
    RecordSample(FromRef(req.task()), req);
  }
  resp->set_stop(slot->stop || job_over_);
  return Status::Ok();
}

void ApplicationMaster::RecordSample(const TaskId& id, const control::HeartbeatRequest& req) {
  if (!metrics_log_) return;
  history::TaskSample sample;
  sample.ms = history::NowMillis();
  sample.task = id.ToString();
  if (req.has_cpu_cores()) sample.cpu_cores = req.cpu_cores();
  sample.rss_bytes = std::max<int64_t>(0, req.rss_bytes());
  for (const control::GpuDevice& g : req.gpus()) {
    sample.gpus.push_back({g.index(), std::clamp(g.utilization_percent(), 0, 100), std::max<int64_t>(0, g.memory_bytes())});
  }
  Status s = metrics_log_->Append(sample);
  if (s.ok() || metrics_log_failed_.exchange(true)) return;
  // Samples are what a person looks at afterwards, not what the job needs: it runs on.
  std::string message = "task metrics are no longer recorded: " + s.ToString();
  loop_.Post([this, message] {
    spdlog::warn("{}", message);
    (void)events_.Append(history::events::kJobWarning, {{"message", message}});
  });
}

void ApplicationMaster::HandleReportExit(const control::ExitReport& req, Reply<control::Ack> reply) {
  loop_.Post([this, req, reply] {
    Status error;
    auto id = CheckTask(req.task(), &error);
    if (!id) return reply(error, {});
    TaskSlot* slot = Slot(*id);
    slot->report = req;
    reply(Status::Ok(), {});
    // The task's end is what its executor reports, now: a cluster reports the container's end
    // only later (YARN: a NodeManager heartbeat, then an allocate), and that adds nothing. A
    // task restarted alone waits for its container to go (its port, its devices).
    const int code = ReportedExitCode(req);
    if (slot->container && !CanRestartTask(*id, code)) {
      TaskEnded({slot->container->id, *id, code, "", false}, /*container_gone=*/false);
    }
  });
}

void ApplicationMaster::HandleRegisterTensorBoard(const control::TensorBoardRequest& req, Reply<control::Ack> reply) {
  loop_.Post([this, req, reply] {
    Status error;
    auto id = CheckTask(req.task(), &error);
    if (!id) return reply(error, {});
    if (req.url().rfind("http://", 0) != 0 || req.url().size() > 512) {
      return reply(Status::InvalidArgument("TensorBoard of " + id->ToString() + ": bad URL"), {});
    }
    spdlog::info("TensorBoard of {} answers at {}", id->ToString(), req.url());
    json e = {{"task", id->ToString()}, {"url", req.url()}};
    if (attempt_) e["attempt"] = attempt_;
    (void)events_.Append(history::events::kTensorBoard, e);
    reply(Status::Ok(), {});
  });
}

void ApplicationMaster::HandleJobState(const control::JobStateRequest& req, Reply<control::JobStateResponse> reply) {
  control::JobStateResponse events;
  if (req.events_offset() >= 0) ReadEventsFrom(req.events_offset(), &events);
  if (req.send_samples() && !opts_.job_dir.root().empty()) {
    std::string lines;
    for (const history::TaskSample& s : history::ReadSamplesAfter(opts_.job_dir.metrics(), req.samples_after_ms(),
                                                                  kMaxSamplesPerJobState)) {
      lines += history::SampleLine(s);
    }
    events.set_samples(std::move(lines));
  }
  if (loop_done_) {
    // The job has ended and its state no longer changes; a call posted to the stopped loop
    // would never be answered, and the server's shutdown would wait for it.
    events.set_state(JobStateName(tracker_->state()));
    events.set_attempt(attempt_);
    reply(Status::Ok(), events);
    return;
  }
  loop_.Post([this, reply, events] {
    control::JobStateResponse resp = events;
    resp.set_state(JobStateName(tracker_->state()));
    resp.set_attempt(attempt_);
    reply(Status::Ok(), resp);
  });
}

void ApplicationMaster::ReadEventsFrom(int64_t offset, control::JobStateResponse* resp) const {
  history::EventLines lines = history::ReadEventLines(opts_.job_dir.events(), offset);
  resp->set_events_end(lines.end);
  if (lines.text.empty()) return;
  resp->set_events(std::move(lines.text));
  int64_t prev = events_fetched_to_.load();
  while (resp->events_end() > prev && !events_fetched_to_.compare_exchange_weak(prev, resp->events_end())) {
  }
}

void ApplicationMaster::WaitForEventsFetched() {
  if (opts_.setup.events_linger.count() <= 0 || events_fetched_to_.load() < 0) return;
  auto deadline = std::chrono::steady_clock::now() + opts_.setup.events_linger;
  while (std::chrono::steady_clock::now() < deadline) {
    struct stat st {};
    if (::stat(opts_.job_dir.events().c_str(), &st) != 0 || events_fetched_to_.load() >= st.st_size) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace loom::am
