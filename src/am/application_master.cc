#include "am/application_master.h"

#include "am/end_policy.h"
#include "control/executor_env.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <thread>

#include <spdlog/spdlog.h>

#include "core/files.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "history/job_view.h"
#include "history/events.h"

namespace loom::am {

using nlohmann::json;

ApplicationMaster::ApplicationMaster(AmOptions options, cluster::ContainerBroker& broker, history::EventLog& events)
    : opts_(std::move(options)), broker_(broker), events_(events), loop_(*opts_.clock) {
  tracker_.emplace(opts_.spec);
  for (const TaskId& id : opts_.spec.AllTasks()) slots_[id];
  if (!opts_.job_dir.root().empty()) metrics_log_.emplace(opts_.job_dir.metrics());
}

ApplicationMaster::~ApplicationMaster() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now());
}

Status ApplicationMaster::StartServer() {
  service_ = std::make_unique<ControlServiceImpl>(opts_.secret, this, opts_.observer_secret);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(opts_.setup.bind_address + ":0", grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) return Status::Unavailable("cannot start the control plane on " + opts_.setup.bind_address);
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
    auto port = start(opts_.setup.advertise_host);
    if (!port.ok() && opts_.setup.advertise_host != opts_.setup.bind_address) port = start(opts_.setup.bind_address);
    if (!port.ok()) return port.status().WithContext("starting the Horovod rendezvous store");
  }
  std::string address = opts_.setup.advertise_host + ":" + std::to_string(port_);
  (void)WriteFileAtomic(opts_.job_dir.am_addr(), address + "\n");
  nlohmann::json started = {{"pid", ::getpid()}, {"address", address}, {"backend", broker_.Describe()}};
  for (const auto& [k, v] : opts_.setup.location) started[k] = v;
  if (!opts_.status_url.empty()) started["status_url"] = opts_.status_url;
  if (rendezvous_) started["rendezvous"] = opts_.setup.advertise_host + ":" + std::to_string(rendezvous_->port());
  (void)events_.Append(history::events::kAmStarted, started);
  spdlog::info("AM for {} listening on {} ({})", opts_.job_id, address, broker_.Describe());
  LOOM_RETURN_IF_ERROR(broker_.Start(this));

  loop_.Post([this] { RequestContainers(); });
  if (opts_.spec.application_timeout_ms > 0) {
    loop_.PostAfter(std::chrono::milliseconds(opts_.spec.application_timeout_ms), [this] {
      if (!ApplicationTimeoutApplies({true, IsTerminal(tracker_->state())})) return;
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
  std::vector<TaskId> ids;
  for (const auto& type : opts_.spec.types) {
    for (int i = 0; i < type.instances; ++i) {
      TaskId id{type.name, i};
      if (!tracker_->Started(id)) {
        // TonY asks YARN for the training stage only once the prepare stage completed.
        RecordTask(id, {{"waiting", "for the prepare stage (" + PrepareStageNames(opts_.spec) + ")"}});
        continue;
      }
      ids.push_back(id);
    }
  }
  if (!RequestGang(ids)) return;
  MaybeStartTrainingStage();  // a prepare stage without tracked tasks waits for nothing
}

// One request for a whole gang: a cluster asked over the network hears of it at once (YARN: in
// one allocate), not a task at a time.
bool ApplicationMaster::RequestGang(const std::vector<TaskId>& ids, const json& extra) {
  std::vector<cluster::ContainerRequest> requests;
  for (const TaskId& id : ids) {
    const TaskTypeSpec* type = opts_.spec.FindType(id.type);
    if (!type) {
      Fail("cannot get a container for " + id.ToString() + ": no type " + id.type);
      return false;
    }
    requests.push_back({id, type->resources, type->node_label});
  }
  if (Status s = broker_.RequestAll(requests); !s.ok()) {
    Fail("cannot get containers for " + std::to_string(requests.size()) + " tasks: " + s.message());
    return false;
  }
  for (const TaskId& id : ids) RecordTask(id, extra);
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
  RequestGang(ids, {{"waiting", ""}});
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
    launch.argv = {opts_.setup.executor_binary, "executor"};
    launch.env = opts_.setup.executor_env;
    for (const auto& [k, v] : opts_.spec.container_env) launch.env[k] = v;
    control::ExecutorEnv wiring;
    wiring.job_id = opts_.job_id;
    wiring.task_id = container.task.ToString();
    wiring.restart_count = attempt_ + slot->restarts;
    wiring.preferred_port = slot->previous_port;
    wiring.am_address = opts_.setup.advertise_host + ":" + std::to_string(port_);
    wiring.secret_file = opts_.setup.secret_file;
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
  if (MaybeRestartTask(exit.task, code, diagnostics)) return;
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
  if (slot->report && slot->report->cpu_samples() > 0) {  // two samples at least: one interval
    auto cores = [](float c) { return std::round(static_cast<double>(c) * 100) / 100; };
    extra["peak_cpu_cores"] = cores(slot->report->peak_cpu_cores());
    extra["avg_cpu_cores"] = cores(slot->report->avg_cpu_cores());
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

int64_t ApplicationMaster::NowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(opts_.clock->Now().time_since_epoch()).count();
}

void ApplicationMaster::RequestStop(TaskSlot& slot) {
  slot.stop_requested = true;
  slot.stop = true;
}

bool ApplicationMaster::CanRestartTask(const TaskId& id, int exit_code) {
  const TaskTypeSpec* type = opts_.spec.FindType(id.type);
  TaskSlot* slot = Slot(id);
  return type && slot &&
         DecideTaskEnd(*type, {exit_code, slot->stop_requested, IsTerminal(tracker_->state()), slot->restarts}) ==
             TaskEndAction::kRestartTask;
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
  slot->sample_seq = 0;
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
  const bool next_attempt = DecideAttemptEnd(opts_.spec, {tracker_->state(), retryable_, kill_requested_, attempt_}) ==
                            AttemptEndAction::kStartNextAttempt;
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
    slot.sample_seq = 0;
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
    std::vector<TaskRecord> started;
    for (const TaskRecord& r : tracker_->tasks()) {
      if (tracker_->Started(r.id)) started.push_back(r);
    }
    std::string gang = HasTrainingStage(opts_.spec) ? (stage ? "the training stage's gang" : "the prepare stage's gang")
                                                    : "the gang";
    std::optional<std::string> why =
        AllocationTimeoutWhy({attempt == attempt_ && stage == tracker_->stage(), IsTerminal(tracker_->state())},
                             tracker_->GangComplete(), started, gang, ms,
                             opts_.spec.KeyName("loom.container.allocation.timeout"));
    // Everything held is given back: the stop of every task releases its container.
    if (why) Fail(*why, /*retryable=*/false);
  });
}

void ApplicationMaster::ArmRegistrationTimeout(const TaskId& id, const std::string& container_id) {
  int64_t ms = opts_.spec.registration_timeout_ms;
  if (ms <= 0) return;
  loop_.PostAfter(std::chrono::milliseconds(ms), [this, id, container_id, ms] {
    TaskSlot* slot = Slot(id);
    const TaskRecord* r = tracker_->Find(id);
    if (!slot || !r || !RegistrationTimeoutApplies(slot->container && slot->container->id == container_id, r->state)) {
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
    if (!DependencyGroupDone(deps[i], tracker_->tasks())) continue;
    armed_dependencies_.insert(i);
    loop_.PostAfter(std::chrono::seconds(deps[i].seconds), [this, i, attempt = attempt_] {
      const DependencyTimeout& d = opts_.spec.dependency_timeouts[i];
      std::vector<TaskId> late;
      DependencyAction action =
          DecideDependencyTimeout(d, {attempt == attempt_, IsTerminal(tracker_->state())}, tracker_->tasks(), &late);
      if (action == DependencyAction::kNothing) return;
      std::string key = opts_.spec.KeyName("loom.application.dependency." + d.type + ".timeout.after." + d.group);
      std::string why = d.type + " still running " + std::to_string(d.seconds) + " s after group " + d.group + " (" +
                        Join(d.group_types, ",") + ") finished (" + key + ")";
      if (action == DependencyAction::kStopLateTasks) {
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
  Status written = history::WriteFinalStatus(opts_.job_dir, state, tracker_->diagnostics(),
                                             {{"job_id", opts_.job_id}, {"attempts", attempt_ + 1}, {"tasks", tasks}});
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

}  // namespace loom::am
