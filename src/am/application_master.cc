#include "am/application_master.h"

#include "control/executor_env.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <sys/resource.h>
#include <unistd.h>

#include <thread>

#include <spdlog/spdlog.h>

#include "core/files.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "history/job_view.h"
#include "history/events.h"

namespace loom::am {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

// A reported exit in the shell's convention: the code, or 128 + the signal that ended it.
int ReportedExitCode(const control::ExitReport& r) { return r.signal() ? 128 + r.signal() : r.exit_code(); }
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

ApplicationMaster::ApplicationMaster(AmOptions options, cluster::ContainerBroker& broker, history::EventLog& events)
    : opts_(std::move(options)), broker_(broker), events_(events) {
  tracker_.emplace(opts_.spec);
  for (const TaskId& id : opts_.spec.AllTasks()) slots_[id];
}

ApplicationMaster::~ApplicationMaster() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now());
}

Status ApplicationMaster::StartServer() {
  service_ = std::make_unique<ControlServiceImpl>(opts_.secret, this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(opts_.bind_address + ":0", grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) return Status::Unavailable("cannot start the control plane on " + opts_.bind_address);
  return Status::Ok();
}

Result<JobState> ApplicationMaster::Run() {
  LOOM_RETURN_IF_ERROR(StartServer().WithContext("starting the AM"));
  if (opts_.spec.framework == Framework::kHorovod) {
    // horovodrun serves Horovod's gloo rendezvous store itself; here the AM does, on a port of
    // the job's range: its processes reach it as they reach each other.
    rendezvous_ = std::make_unique<RendezvousServer>();
    // The store is unauthenticated: it listens on the address the processes are told, when that
    // is an address of this host, not on every interface; else on the AM's bind address.
    auto start = [this](const std::string& address) {
      return rendezvous_->Start(address, opts_.spec.port_low, opts_.spec.port_high);
    };
    auto port = start(opts_.advertise_host);
    if (!port.ok() && opts_.advertise_host != opts_.bind_address) port = start(opts_.bind_address);
    if (!port.ok()) return port.status().WithContext("starting the Horovod rendezvous store");
  }
  std::string address = opts_.advertise_host + ":" + std::to_string(port_);
  (void)WriteFileAtomic(opts_.job_dir.am_addr(), address + "\n");
  nlohmann::json started = {{"pid", ::getpid()}, {"address", address}, {"backend", broker_.Describe()}};
  for (const auto& [k, v] : opts_.location) started[k] = v;
  if (!opts_.status_url.empty()) started["status_url"] = opts_.status_url;
  if (rendezvous_) started["rendezvous"] = opts_.advertise_host + ":" + std::to_string(rendezvous_->port());
  (void)events_.Append(history::events::kAmStarted, started);
  spdlog::info("AM for {} listening on {} ({})", opts_.job_id, address, broker_.Describe());
  LOOM_RETURN_IF_ERROR(broker_.Start(this));

  loop_.Post([this] { RequestContainers(); });
  if (opts_.spec.application_timeout_ms > 0) {
    loop_.PostAfter(std::chrono::milliseconds(opts_.spec.application_timeout_ms), [this] {
      Fail("application timeout: the job ran longer than " + opts_.spec.KeyName("loom.application.timeout") + "=" +
               std::to_string(opts_.spec.application_timeout_ms) + " ms",
           /*retryable=*/false);
    });
  }
  loop_.PostAfter(std::chrono::milliseconds(opts_.spec.heartbeat_interval_ms), [this] { CheckHeartbeats(); });
  loop_.Run();
  loop_done_ = true;  // from now on calls are answered on their own threads

  // Stragglers (a task that ignored SIGTERM) are forced; this returns once nothing is left.
  broker_.Shutdown(std::chrono::milliseconds(opts_.spec.stop_grace_ms));
  if (rendezvous_) rendezvous_->Stop();
  WaitForEventsFetched();
  // Calls that arrived while the job was ending get their answer ("job is ending"), before and
  // while the server shuts down: Shutdown waits for every open call, so the handlers they
  // posted must keep running meanwhile, or it would wait out its whole deadline.
  loop_.RunPending();
  std::atomic<bool> down{false};
  std::thread shutdown([this, &down] {
    // gRPC waits out the deadline for its own idle machinery; replies are flushed well within it.
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(20));
    down = true;
  });
  while (!down) {
    loop_.RunPending();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  shutdown.join();
  loop_.RunPending();
  return tracker_->state();
}

void ApplicationMaster::RequestContainers() {
  ArmAllocationTimeout();
  for (const auto& type : opts_.spec.types) {
    for (int i = 0; i < type.instances; ++i) {
      TaskId id{type.name, i};
      if (!tracker_->Started(id)) {
        // TonY asks YARN for the training stage only once the prepare stage completed.
        RecordTask(id, {{"waiting", "for the prepare stage (" + PrepareStageNames(opts_.spec) + ")"}});
        continue;
      }
      if (!RequestContainer(id)) return;
    }
  }
  MaybeStartTrainingStage();  // a prepare stage without tracked tasks waits for nothing
}

bool ApplicationMaster::RequestContainer(const TaskId& id, json extra) {
  const TaskTypeSpec* type = opts_.spec.FindType(id.type);
  Status s = type ? broker_.Request({id, type->resources, type->node_label}) : Status::NotFound("no type " + id.type);
  if (!s.ok()) {
    Fail("cannot get a container for " + id.ToString() + ": " + s.message());
    return false;
  }
  RecordTask(id, std::move(extra));
  return true;
}

void ApplicationMaster::MaybeStartTrainingStage() {
  if (IsTerminal(tracker_->state())) return;
  std::vector<TaskId> ids = tracker_->StartTrainingStageIfReady();
  if (ids.empty()) return;
  std::vector<std::string> names;
  for (const TaskId& id : ids) names.push_back(id.ToString());
  spdlog::info("prepare stage ({}) succeeded; starting the training stage: {}", PrepareStageNames(opts_.spec),
               Join(names, ", "));
  (void)events_.Append(history::events::kStageStarted, {{"stage", "training"}, {"tasks", names}});
  spec_ready_ = false;  // the training stage is a gang of its own
  ArmAllocationTimeout();
  for (const TaskId& id : ids) {
    if (!RequestContainer(id, {{"waiting", ""}})) return;
  }
}

ApplicationMaster::TaskSlot* ApplicationMaster::Slot(const TaskId& id) {
  auto it = slots_.find(id);
  return it == slots_.end() ? nullptr : &it->second;
}

void ApplicationMaster::RecordTask(const TaskId& id, json extra) {
  const TaskRecord* r = tracker_->Find(id);
  if (!r) return;
  json e = {{"task", id.ToString()}, {"state", TaskStateName(r->state)}};
  if (attempt_) e["attempt"] = attempt_;
  for (auto& [k, v] : extra.items()) e[k] = v;
  (void)events_.Append(history::events::kTaskState, e);
}

// ---- Containers ----------------------------------------------------------------------------

void ApplicationMaster::OnAllocated(const cluster::Container& container) {
  loop_.Post([this, container] {
    TaskSlot* slot = Slot(container.task);
    const TaskRecord* rec = tracker_->Find(container.task);
    if (!slot || !rec || IsTerminal(tracker_->state()) || rec->state != TaskState::kPending) {
      (void)broker_.Stop(container.id, std::chrono::milliseconds(0));  // not needed (any more)
      return;
    }
    slot->container = container;
    cluster::LaunchSpec launch;
    launch.argv = {opts_.executor_binary, "executor"};
    launch.env = opts_.executor_env;
    for (const auto& [k, v] : opts_.spec.container_env) launch.env[k] = v;
    control::ExecutorEnv wiring;
    wiring.job_id = opts_.job_id;
    wiring.task_id = container.task.ToString();
    wiring.restart_count = attempt_ + slot->restarts;
    wiring.preferred_port = slot->previous_port;
    wiring.am_address = opts_.advertise_host + ":" + std::to_string(port_);
    wiring.secret_file = opts_.secret_file;
    wiring.port_low = opts_.spec.port_low;
    wiring.port_high = opts_.spec.port_high;
    wiring.reserve_tb_port = runtime::ReservesTbPort(opts_.spec, container.task);
    wiring.registry_timeout_ms = opts_.spec.executor_registry_timeout_ms;
    wiring.key_prefix = opts_.spec.key_prefix;
    wiring.metrics_interval_ms = opts_.spec.metrics_interval_ms;
    const TaskTypeSpec* task_type = opts_.spec.FindType(container.task.type);
    // TonY samples GPUs only for types that have some.
    wiring.gpu_metrics = opts_.spec.gpu_metrics && task_type && task_type->resources.gpus > 0;
    wiring.gpu_exec_path = opts_.spec.gpu_exec_path;
    wiring.AddTo(launch.env);
    if (!opts_.spec.src_dir.empty()) launch.resources.push_back({opts_.spec.src_dir, ".", false});
    if (!opts_.spec.python_venv.empty()) launch.resources.push_back({opts_.spec.python_venv, "venv", true});
    if (const TaskTypeSpec* type = opts_.spec.FindType(container.task.type)) {
      for (const std::string& f : type->extra_files) {
        // TonY's syntax: src[::name][#archive]
        std::string src = f;
        bool archive = EndsWith(src, "#archive");
        if (archive) src = src.substr(0, src.size() - 8);
        std::string name = src.substr(src.find_last_of('/') + 1);
        if (size_t sep = src.find("::"); sep != std::string::npos) {
          name = src.substr(sep + 2);
          src = src.substr(0, sep);
        }
        launch.resources.push_back({src, name, archive});
      }
    }
    Status s = broker_.Launch(container, launch);
    if (!s.ok()) {
      (void)broker_.Stop(container.id, std::chrono::milliseconds(0));
      auto stop = tracker_->OnTaskFinished(container.task, 1, false, "launch failed: " + s.message());
      RecordTask(container.task, {{"exit_code", 1}, {"diagnostics", "launch failed: " + s.message()}});
      StopTasks(stop);
      AfterTransition();
      return;
    }
    tracker_->OnLaunched(container.task);
    slot->last_heartbeat_ns = NowNs();
    ArmRegistrationTimeout(container.task, container.id);
    json placed = {{"container", container.id}, {"host", container.host}};
    if (!container.node_id.empty()) placed["node_id"] = container.node_id;
    if (!container.node_http.empty()) placed["node_http"] = container.node_http;
    RecordTask(container.task, placed);
  });
}

void ApplicationMaster::OnContainerError(const TaskId& task, const Status& error) {
  loop_.Post([this, task, error] { Fail("cannot get a container for " + task.ToString() + ": " + error.message()); });
}

std::string ApplicationMaster::DescribeExit(const TaskId& id, const cluster::ContainerExit& exit) const {
  auto it = slots_.find(id);
  const TaskSlot& slot = it->second;
  std::string text;
  if (slot.report) {
    const control::ExitReport& r = *slot.report;
    text = r.signal() ? "killed by signal " + std::to_string(r.signal()) + " (" + SignalName(r.signal()) + ")"
                      : "exit code " + std::to_string(r.exit_code());
    if (!r.reason().empty()) text += " (" + r.reason() + ")";
    // The cluster's words add nothing to a reported exit unless the cluster ended it.
    if (!exit.diagnostics.empty() && exit.by_cluster) text += "; " + exit.diagnostics;
    if (r.stderr_tail_size() > 0) {
      text += "; last stderr lines:";
      for (const auto& line : r.stderr_tail()) text += "\n    " + line;
    }
  } else if (exit.by_cluster) {
    // A lost node, preemption, a memory limit: the executor never got to report.
    text = "the cluster ended its container: " + exit.diagnostics;
  } else {
    text = "executor exited with code " + std::to_string(exit.exit_code) + " before reporting";
    if (!exit.diagnostics.empty()) text += " (" + exit.diagnostics + ")";
    // A hint that works wherever the container ran (its files may be on another host).
    text += "; see `loom logs " + opts_.job_id + " --task " + id.ToString() + " --file executor.log`";
  }
  return text;
}

void ApplicationMaster::OnCompleted(const cluster::ContainerExit& exit) {
  loop_.Post([this, exit] { TaskEnded(exit, /*container_gone=*/true); });
}

void ApplicationMaster::TaskEnded(const cluster::ContainerExit& exit, bool container_gone) {
  TaskSlot* slot = Slot(exit.task);
  if (!slot || !slot->container || slot->container->id != exit.container_id) return;
  if (slot->end_recorded == exit.container_id) {
    if (!container_gone) return;
    slot->container.reset();
    slot->end_recorded.clear();
    AfterTransition();
    return;
  }
  int code = exit.exit_code;
  if (slot->report) {
    code = ReportedExitCode(*slot->report);
  } else if (slot->stop_requested) {
    // Stopped before its executor could report: one convention on every backend, the
    // shell's 143 (SIGTERM). Backends differ here: YARN completes a released container with
    // ABORTED (-100) or KILLED_BY_APPMASTER (-105), the local one has the executor's code.
    code = kStoppedExitCode;
  }
  std::string diagnostics = code == 0 ? "" : DescribeExit(exit.task, exit);
  if (slot->stop_requested && code != 0) diagnostics = StopDiagnostics(*slot);
  if (code != 0 && !slot->stop_requested && MaybeRestartTask(exit.task, code, diagnostics)) return;
  // A task already ended by the AM (lost, not registered in time) keeps what it was told.
  const TaskRecord* before = tracker_->Find(exit.task);
  bool already_final = before && IsTerminal(before->state);
  auto stop = tracker_->OnTaskFinished(exit.task, code, slot->stop_requested, diagnostics);
  json extra = already_final ? json::object() : json{{"exit_code", code}};
  if (!diagnostics.empty() && !already_final) extra["diagnostics"] = diagnostics;
  if (slot->report && slot->report->peak_rss_bytes()) extra["peak_rss_bytes"] = slot->report->peak_rss_bytes();
  if (slot->report && slot->report->executor_peak_rss_bytes()) {
    extra["executor_peak_rss_bytes"] = slot->report->executor_peak_rss_bytes();
  }
  if (slot->report && slot->report->gpu_samples() > 0) {  // loom.task.gpu-metrics.enabled, GPUs held
    extra["max_gpu_utilization_percent"] = slot->report->max_gpu_utilization_percent();
    extra["peak_gpu_memory_bytes"] = slot->report->peak_gpu_memory_bytes();
  }
  RecordTask(exit.task, extra);
  if (container_gone) {
    slot->container.reset();
  } else {
    slot->end_recorded = exit.container_id;
  }
  for (auto& waiter : slot->spec_waiters) waiter(Status::Aborted("task ended"), {});
  slot->spec_waiters.clear();
  StopTasks(stop);
  if (!IsTerminal(tracker_->state()) && tracker_->GangComplete() && !spec_ready_) PublishClusterSpec();
  AfterTransition();
}

int64_t ApplicationMaster::NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

void ApplicationMaster::RequestStop(TaskSlot& slot) {
  slot.stop_requested = true;
  slot.stop = true;
}

bool ApplicationMaster::CanRestartTask(const TaskId& id, int exit_code) {
  const TaskTypeSpec* type = opts_.spec.FindType(id.type);
  TaskSlot* slot = Slot(id);
  return type && slot && !IsTerminal(tracker_->state()) && type->Restartable(exit_code) &&
         slot->restarts < type->max_restarts;
}

bool ApplicationMaster::MaybeRestartTask(const TaskId& id, int exit_code, const std::string& diagnostics) {
  if (!CanRestartTask(id, exit_code)) return false;
  const TaskTypeSpec* type = opts_.spec.FindType(id.type);
  TaskSlot* slot = Slot(id);
  ++slot->restarts;
  const TaskRecord* r = tracker_->Find(id);
  slot->previous_port = r ? r->port : 0;
  spdlog::warn("task {} failed ({}); restart {} of {}={}", id.ToString(), diagnostics, slot->restarts,
               opts_.spec.KeyName("loom." + id.type + ".max-restarts"), type->max_restarts);
  (void)events_.Append(history::events::kTaskRestarting, {{"task", id.ToString()},
                                           {"restart", slot->restarts},
                                           {"exit_code", exit_code},
                                           {"diagnostics", diagnostics}});
  slot->container.reset();
  slot->report.reset();
  slot->rss_bytes = 0;
  slot->recorded_rss = 0;  // the new run's first sample is recorded at once
  for (auto& waiter : slot->spec_waiters) waiter(Status::Aborted("task restarting"), {});
  slot->spec_waiters.clear();
  tracker_->RestartTask(id);
  RecordTask(id);
  Status s = broker_.Request({id, type->resources, type->node_label});
  if (!s.ok()) Fail("cannot get a container to restart " + id.ToString() + ": " + s.message());
  return true;
}

void ApplicationMaster::StopTasks(const std::vector<TaskId>& ids, const std::string& reason) {
  std::string why = reason;
  if (why.empty()) {
    JobState state = tracker_->state();
    why = state == JobState::kSucceeded ? "tracked tasks finished"
          : state == JobState::kKilled  ? "the job was killed"
          : state == JobState::kFailed  ? "the job failed"
                                        : "stopped";
  }
  for (const TaskId& id : ids) {
    TaskSlot* slot = Slot(id);
    if (!slot) continue;
    if (!slot->stop_requested) slot->stop_reason = why;  // the first reason stays
    RequestStop(*slot);
    if (slot->container) {
      (void)broker_.Stop(slot->container->id, std::chrono::milliseconds(opts_.spec.stop_grace_ms));
    } else if (tracker_->Find(id) && !IsTerminal(tracker_->Find(id)->state)) {
      // Never got a container: nothing runs, so it ends here.
      std::string diagnostics = StopDiagnostics(*slot);
      tracker_->OnTaskFinished(id, kStoppedExitCode, true, diagnostics);
      RecordTask(id, {{"exit_code", kStoppedExitCode}, {"diagnostics", diagnostics}});
    }
  }
}

std::string ApplicationMaster::StopDiagnostics(const TaskSlot& slot) {
  return "stopped by the AM" + (slot.stop_reason.empty() ? "" : ": " + slot.stop_reason);
}

void ApplicationMaster::Fail(const std::string& reason, bool retryable) {
  if (!IsTerminal(tracker_->state()) && !retryable) retryable_ = false;
  StopTasks(tracker_->Finish(JobState::kFailed, reason));
  AfterTransition();
}

void ApplicationMaster::RequestKill(const std::string& reason) {
  loop_.Post([this, reason] {
    kill_requested_ = true;
    StopTasks(tracker_->Finish(JobState::kKilled, reason));
    AfterTransition();
  });
}

// Once the attempt has its final state, go on as soon as no container is left: a failed gang
// starts again while restarts remain, anything else is the job's end.
void ApplicationMaster::AfterTransition() {
  job_over_ = IsTerminal(tracker_->state());
  FailExecCallsToEndedTasks();
  if (!IsTerminal(tracker_->state())) {
    MaybeStartTrainingStage();
    ArmDependencyTimeouts();
  }
  if (!IsTerminal(tracker_->state()) || finalized_) return;
  const bool next_attempt =
      tracker_->state() == JobState::kFailed && retryable_ && !kill_requested_ && attempt_ < opts_.spec.am_retry_count;
  for (auto& [id, slot] : slots_) {
    // A container whose task's end is recorded is only its executor exiting: the job's end does
    // not wait for it (the broker's shutdown does), a new gang does (processes, ports, devices).
    if (slot.container && (next_attempt || slot.end_recorded != slot.container->id)) return;
  }
  if (next_attempt) {
    StartNextAttempt();
    return;
  }
  Finalize();
}

void ApplicationMaster::StartNextAttempt() {
  ++attempt_;
  std::string why = tracker_->diagnostics();
  spdlog::warn("attempt {} failed ({}); restarting the gang ({} of {}={})", attempt_, why, attempt_,
               opts_.spec.KeyName("loom.am.retry-count"), opts_.spec.am_retry_count);
  (void)events_.Append(history::events::kJobRestarting, {{"attempt", attempt_}, {"reason", why}});
  tracker_.emplace(opts_.spec);
  for (auto& [id, slot] : slots_) {
    slot.container.reset();
    slot.report.reset();
    slot.stop_requested = false;
    slot.stop_reason.clear();
    slot.rss_bytes = 0;
    slot.recorded_rss = 0;
    slot.stop = false;
    slot.restarts = 0;
    slot.previous_port = 0;
    slot.tb_port = 0;
    slot.last_heartbeat_ns = 0;
    for (auto& waiter : slot.spec_waiters) waiter(Status::Aborted("gang restarting"), {});
    slot.spec_waiters.clear();
  }
  cluster_spec_ = runtime::ClusterSpec();
  spec_ready_ = false;
  job_over_ = false;
  armed_dependencies_.clear();
  RequestContainers();
}

void ApplicationMaster::ArmAllocationTimeout() {
  int64_t ms = opts_.spec.allocation_timeout_ms;
  if (ms <= 0) return;
  // Each stage's gang gets the whole timeout from the moment its containers are asked for: the
  // training stage's clock does not run while the prepare stage works.
  loop_.PostAfter(std::chrono::milliseconds(ms), [this, ms, attempt = attempt_, stage = tracker_->stage()] {
    if (attempt != attempt_ || stage != tracker_->stage() || IsTerminal(tracker_->state()) ||
        tracker_->GangComplete()) {
      return;
    }
    std::vector<std::string> never, unregistered;
    for (const TaskRecord& r : tracker_->tasks()) {
      if (!tracker_->Started(r.id)) continue;
      if (r.state == TaskState::kPending) never.push_back(r.id.ToString());
      if (r.state == TaskState::kLaunched) unregistered.push_back(r.id.ToString());
    }
    std::string gang = HasTrainingStage(opts_.spec) ? (stage ? "the training stage's gang" : "the prepare stage's gang")
                                                    : "the gang";
    std::string why = "gang allocation timeout: " + gang + " was not complete after " + std::to_string(ms) +
                      " ms (" + opts_.spec.KeyName("loom.container.allocation.timeout") + ")";
    if (!never.empty()) why += "; never got resources: " + Join(never, ", ");
    if (!unregistered.empty()) why += "; launched but not registered: " + Join(unregistered, ", ");
    // Everything held is given back: the stop of every task releases its container.
    Fail(why, /*retryable=*/false);
  });
}

void ApplicationMaster::ArmRegistrationTimeout(const TaskId& id, const std::string& container_id) {
  int64_t ms = opts_.spec.registration_timeout_ms;
  if (ms <= 0) return;
  loop_.PostAfter(std::chrono::milliseconds(ms), [this, id, container_id, ms] {
    TaskSlot* slot = Slot(id);
    const TaskRecord* r = tracker_->Find(id);
    if (!slot || !r || !slot->container || slot->container->id != container_id || r->state != TaskState::kLaunched) {
      return;
    }
    std::string why = "did not register within " + std::to_string(ms) + " ms (" + opts_.spec.KeyName("loom.container.registration.timeout") + ")";
    RequestStop(*slot);
    (void)broker_.Stop(container_id, std::chrono::milliseconds(0));
    StopTasks(tracker_->OnTaskFinished(id, 1, false, why));
    RecordTask(id, {{"exit_code", 1}, {"diagnostics", why}});
    AfterTransition();
  });
}

void ApplicationMaster::ArmDependencyTimeouts() {
  const auto& deps = opts_.spec.dependency_timeouts;
  for (size_t i = 0; i < deps.size(); ++i) {
    if (armed_dependencies_.count(i)) continue;
    bool group_done = true;
    for (const TaskRecord& r : tracker_->tasks()) {
      bool in_group = std::find(deps[i].group_types.begin(), deps[i].group_types.end(), r.id.type) !=
                      deps[i].group_types.end();
      if (in_group && !IsTerminal(r.state)) group_done = false;
    }
    if (!group_done) continue;
    armed_dependencies_.insert(i);
    loop_.PostAfter(std::chrono::seconds(deps[i].seconds), [this, i, attempt = attempt_] {
      if (attempt != attempt_ || IsTerminal(tracker_->state())) return;
      const DependencyTimeout& d = opts_.spec.dependency_timeouts[i];
      std::vector<TaskId> late;
      for (const TaskRecord& r : tracker_->tasks()) {
        if (r.id.type == d.type && !IsTerminal(r.state)) late.push_back(r.id);
      }
      if (late.empty()) return;
      std::string key = opts_.spec.KeyName("loom.application.dependency." + d.type + ".timeout.after." + d.group);
      std::string why = d.type + " still running " + std::to_string(d.seconds) + " s after group " + d.group + " (" +
                        Join(d.group_types, ",") + ") finished (" + key + ")";
      if (d.ignored) {
        spdlog::warn("{}: stopping it, as .ignored=true asks", why);
        (void)events_.Append(history::events::kDependencyTimeout, {{"type", d.type}, {"group", d.group}, {"ignored", true}});
        // Stopped by Loom: KILLED, not a failure; its row and the job's end say why.
        StopTasks(late, "still running " + std::to_string(d.seconds) + " s after group '" + d.group + "' (" +
                            Join(d.group_types, ",") + ") finished (" + key + ".ignored=true)");
      } else {
        Fail("group dependency timeout: " + why, /*retryable=*/false);
      }
    });
  }
}

void ApplicationMaster::Finalize() {
  finalized_ = true;
  exec_relay_.Shutdown(Status::Aborted("the job ended"));
  for (auto& [id, slot] : slots_) {
    for (auto& waiter : slot.spec_waiters) waiter(Status::Aborted("job ended"), {});
    slot.spec_waiters.clear();
  }
  std::string state = JobStateName(tracker_->state());
  json tasks = json::array();
  for (const TaskRecord& r : tracker_->tasks()) {
    tasks.push_back({{"task", r.id.ToString()}, {"state", TaskStateName(r.state)}, {"exit_code", r.exit_code}});
  }
  json status = {{"job_id", opts_.job_id},
                 {"state", state},
                 {"diagnostics", tracker_->diagnostics()},
                 {"finished_ms", history::NowMillis()},
                 {"attempts", attempt_ + 1},
                 {"tasks", tasks}};
  Status written = history::WriteFinalStatus(opts_.job_dir, status);
  if (written.ok()) {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    (void)events_.Append(history::events::kJobFinished, {{"state", state},
                                          {"diagnostics", tracker_->diagnostics()},
                                          {"am_peak_rss_bytes", int64_t{ru.ru_maxrss} * 1024}});
  } else {
    spdlog::warn("final status not written: {}", written.ToString());
  }
  spdlog::info("job {} {}: {}", opts_.job_id, state, tracker_->diagnostics());
  loop_.Stop();
}

// ---- Liveness -----------------------------------------------------------------------------

void ApplicationMaster::CheckHeartbeats() {
  if (finalized_) return;
  auto limit = std::chrono::milliseconds(int64_t{opts_.spec.heartbeat_interval_ms} * opts_.spec.max_missed_heartbeats);
  int64_t now = NowNs();
  for (auto& [id, slot] : slots_) {
    const TaskRecord* r = tracker_->Find(id);
    if (!r || !slot.container || slot.stop_requested) continue;
    if (r->state != TaskState::kRegistered && r->state != TaskState::kRunning) continue;
    if (now - slot.last_heartbeat_ns <= std::chrono::duration_cast<std::chrono::nanoseconds>(limit).count()) continue;
    std::string why = "lost: no heartbeat for " + std::to_string(limit.count()) + " ms (" + opts_.spec.KeyName("loom.task.max-missed-heartbeats") + "=" +
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
  if (rendezvous_) ctx.rendezvous_address = opts_.advertise_host + ":" + std::to_string(rendezvous_->port());
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
  resp->set_stop(slot->stop || job_over_);
  return Status::Ok();
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
    if (slot->container && (code == 0 || !CanRestartTask(*id, code))) {
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
  constexpr int64_t kMaxChunk = 1 << 20;
  resp->set_events_end(offset);
  int fd = ::open(opts_.job_dir.events().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::string buf(kMaxChunk, '\0');
  ssize_t n = ::pread(fd, buf.data(), buf.size(), offset);
  ::close(fd);
  if (n <= 0) return;
  buf.resize(static_cast<size_t>(n));
  size_t complete = buf.rfind('\n');  // never hand out half a line
  if (complete == std::string::npos) return;
  buf.resize(complete + 1);
  resp->set_events_end(offset + static_cast<int64_t>(buf.size()));
  resp->set_events(std::move(buf));
  int64_t prev = events_fetched_to_.load();
  while (resp->events_end() > prev && !events_fetched_to_.compare_exchange_weak(prev, resp->events_end())) {
  }
}

void ApplicationMaster::WaitForEventsFetched() {
  if (opts_.events_linger.count() <= 0 || events_fetched_to_.load() < 0) return;
  auto deadline = std::chrono::steady_clock::now() + opts_.events_linger;
  while (std::chrono::steady_clock::now() < deadline) {
    struct stat st {};
    if (::stat(opts_.job_dir.events().c_str(), &st) != 0 || events_fetched_to_.load() >= st.st_size) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace loom::am
