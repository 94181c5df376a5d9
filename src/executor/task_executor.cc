#include "executor/task_executor.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "control/auth.h"
#include "control/executor_env.h"
#include "control/control.grpc.pb.h"
#include "control/control_client.h"
#include "core/clock.h"
#include "core/config/config.h"
#include "core/files.h"
#include "core/host_resolver.h"
#include "core/job_spec.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "core/test_hooks.h"
#include "executor/entry_point.h"
#include "executor/gpu_metrics.h"
#include "executor/heartbeat_stream.h"
#include "executor/mpi_task.h"
#include "executor/port_reserver.h"
#include "executor/process_tree.h"
#include "executor/signal_waiter.h"
#include "executor/task_metrics.h"
#include "executor/task_processes.h"
#include "executor/timing_policy.h"

namespace loom::executor {
namespace {

using std::chrono::milliseconds;

class TaskExecutor {
 public:
  TaskExecutor(std::map<std::string, std::string> env, std::optional<std::string> secret, Clock& clock)
      : env_(std::move(env)), given_secret_(std::move(secret)), clock_(clock) {}
  ~TaskExecutor();
  int Run();

 private:
  Status Init();
  // Registers with the AM, retrying while it cannot be reached for at most
  // loom.task.executor.registry-timeout-sec (0: forever, as TonY). DeadlineExceeded when it
  // gave up; Aborted when a signal ended the wait (stop_signal_).
  Status Register();
  // One metrics sample (loom.task.metrics-interval-ms, executor/task_metrics.h); the heartbeat
  // thread sends it at once.
  void SampleMetrics();
  // Tells the AM the task's TensorBoard URL once something answers on its TB_PORT.
  void MaybeAnnounceTensorBoard();
  // Waits for the gang; returns nullopt when SIGTERM or a lost AM ended the wait.
  Result<std::optional<control::ClusterSpecResponse>> AwaitClusterSpec();
  // Starts the task's processes (loom.<type>.processes), each a member; on failure none is left.
  Status StartUserProcesses(const control::ClusterSpecResponse& spec);
  // Waits until every member has ended; returns the task's exit code (shell convention).
  int Supervise();
  void StartHeartbeats();
  void StopHeartbeats() { if (heartbeats_) heartbeats_->Stop(); }
  bool AmWantsStop() const { return heartbeats_ && heartbeats_->am_wants_stop(); }
  bool AmLost() const { return heartbeats_ && heartbeats_->am_lost(); }
  void Report(const ExitInfo& info);
  void ReapChildren();
  // A unary call to the AM that answers with an Ack, within `timeout`.
  template <typename Request>
  grpc::Status CallAm(grpc::Status (control::Control::Stub::*method)(grpc::ClientContext*, const Request&,
                                                                      control::Ack*),
                      const Request& req, milliseconds timeout) {
    control::Ack ack;
    grpc::ClientContext ctx;
    am_->Prepare(ctx, timeout);
    return (am_->stub().*method)(&ctx, req, &ack);
  }
  control::TaskRef Ref() const;

  std::map<std::string, std::string> env_;
  control::ExecutorEnv wiring_;  // what the AM and the backend told this executor
  TaskId task_;
  std::string log_dir_;
  std::string secret_;
  std::optional<std::string> given_secret_;  // RunTaskExecutor's `secret`
  Clock& clock_;                // every deadline and beat is read on it
  SignalWaiter waits_{clock_, [this] { ReapChildren(); }};  // the main thread's only place of waiting
  std::unique_ptr<control::ControlClient> am_;  // the AM's control plane, the secret on every call
  ReservedPort port_;
  ReservedPort tb_port_;        // TB_PORT, for the task that serves TensorBoard (wiring_.reserve_tb_port)
  bool tb_announced_ = false;
  control::RegisterResponse params_;
  int stop_signal_ = 0;         // the signal that ended the registration

  TaskProcesses processes_;             // loom.<type>.processes (executor/task_processes.h)
  std::optional<ExitInfo> task_exit_;   // the task's: the first failed member's, else member 0's
  std::string report_stderr_path_;      // whose stderr tail the exit report carries
  std::optional<TaskMetrics> metrics_;  // made in Init, once the wiring is known
  CpuMeter cpu_meter_;                   // the task's process groups, from sample to sample
  std::string stop_reason_;

  std::unique_ptr<HeartbeatStream> heartbeats_;  // once registered
  // Framework mpi (executor/mpi_task.h): the launcher's agent socket, or a rank-holding task's
  // guests. Last, so that it is destroyed first: it uses am_.
  std::unique_ptr<MpiTask> mpi_;
};

TaskExecutor::~TaskExecutor() { StopHeartbeats(); }

control::TaskRef TaskExecutor::Ref() const {
  control::TaskRef ref;
  ref.set_type(task_.type);
  ref.set_index(task_.index);
  return ref;
}

namespace {

// A backend that ships --src_dir as an archive (YARN unpacks it into its own directory) asks
// for its entries to appear in the working dir, where the user's command and relative paths
// expect them, as the local backend copies them.
void LinkIntoWorkdir(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (PathExists(name)) continue;  // the container's own files win
    if (::symlink((dir + "/" + name).c_str(), name.c_str()) != 0) {
      spdlog::warn("cannot link {} into the working dir: {}", name, std::strerror(errno));
    }
  }
  if (ec) spdlog::warn("cannot read {}: {}", dir, ec.message());
}

}  // namespace

Status TaskExecutor::Init() {
  LOOM_ASSIGN_OR_RETURN(wiring_, control::ExecutorEnv::FromEnv(env_));
  LOOM_ASSIGN_OR_RETURN(task_, ParseTaskId(wiring_.task_id));
  if (TestHook(env_, "LOOM_TEST_UNREACHABLE_AM", task_.ToString())) {
    spdlog::warn("test hook: registering where no AM listens");
    wiring_.am_address = "127.0.0.1:1";
  }
  std::string am = wiring_.am_address;
  if (given_secret_) {
    secret_ = std::move(*given_secret_);
    given_secret_.reset();
  } else {
    LOOM_ASSIGN_OR_RETURN(secret_, control::ReadSecretFile(wiring_.secret_file));
  }
  log_dir_ = wiring_.log_dir.empty() ? "." : wiring_.log_dir;
  metrics_.emplace(wiring_.gpu_metrics ? TaskGpuSampler(wiring_.gpu_exec_path, env_, milliseconds(wiring_.metrics_interval_ms))
                                       : nullptr);
  if (!wiring_.link_into_workdir.empty()) LinkIntoWorkdir(wiring_.link_into_workdir);
  int low = wiring_.port_low, high = wiring_.port_high, preferred = wiring_.preferred_port;
  // Their errors name loom.task.port-range: in the user's spelling.
  auto reserve = [&](int preferred_port) -> Result<ReservedPort> {
    Result<ReservedPort> r = ReservedPort::Reserve(low, high, preferred_port);
    if (!r.ok()) return Status(r.status().code(), config::Respell(r.status().message(), wiring_.key_prefix));
    return r;
  };
  LOOM_ASSIGN_OR_RETURN(port_, reserve(preferred));
  if (wiring_.reserve_tb_port) {
    LOOM_ASSIGN_OR_RETURN(tb_port_, reserve(0));
    spdlog::info("holding TB_PORT {} for TensorBoard", tb_port_.port());
  }
  // Resolved here, not by gRPC: its resolvers wait on AAAA answers or go through NSS.
  LOOM_ASSIGN_OR_RETURN(am_, control::ControlClient::Connect(am, secret_, {.retries = true}));
  return Status::Ok();
}

Status TaskExecutor::Register() {
  control::RegisterRequest req;
  *req.mutable_task() = Ref();
  req.set_host(wiring_.host.empty() ? "127.0.0.1" : wiring_.host);
  req.set_port(port_.port());
  req.set_executor_pid(::getpid());
  req.set_container_id(wiring_.container_id);
  req.set_tb_port(tb_port_.port());
  if (auto gpus = env_.find("CUDA_VISIBLE_DEVICES"); gpus != env_.end() && !wiring_.planned_gpus.empty()) {
    req.set_gpus(gpus->second);
  }
  req.set_gpu_note(wiring_.gpu_note);
  // The AM may still be starting its server when the container comes up, or be out of reach
  // (or too busy to answer) for a while: retry, for loom.task.executor.registry-timeout-sec.
  const int64_t limit_ms = wiring_.registry_timeout_ms;  // 0: forever
  RegistrationRetry retry{.limit = milliseconds(limit_ms), .start = clock_.Now()};
  while (true) {
    grpc::ClientContext ctx;
    am_->Prepare(ctx);
    ctx.set_deadline(std::chrono::system_clock::now() + RegistrationCallLimit(retry, clock_.Now()));
    ctx.set_wait_for_ready(true);
    grpc::Status s;
    if (int sig = waits_.CallWatchingSignals([&] { s = am_->stub().Register(&ctx, req, &params_); },
                                             [&] { ctx.TryCancel(); })) {
      stop_signal_ = sig;
      return Status::Aborted("stopped by " + SignalName(sig) + " while registering with the AM");
    }
    if (s.ok()) return Status::Ok();
    bool unreachable = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                       s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
    if (!unreachable) {
      return Status(static_cast<StatusCode>(s.error_code()), "register with the AM: " + s.error_message());
    }
    ++retry.failures;
    RegistrationStep step = DecideRegistrationRetry(retry, clock_.Now());
    if (step.give_up) {
      return Status::DeadlineExceeded(
          "gave up registering with the AM at " + wiring_.am_address + " after " + std::to_string(limit_ms) +
          " ms (" + config::Respell("loom.task.executor.registry-timeout-sec", wiring_.key_prefix) + "=" +
          FormatSeconds(limit_ms) + "): " + s.error_message());
    }
    if (int sig = waits_.WaitUntil(clock_.Now() + step.wait)) {
      stop_signal_ = sig;
      return Status::Aborted("stopped by " + SignalName(sig) + " while registering with the AM");
    }
  }
}

void TaskExecutor::StartHeartbeats() {
  heartbeats_ = std::make_unique<HeartbeatStream>(HeartbeatStream::Options{
      am_.get(), Ref(), milliseconds(params_.heartbeat_interval_ms()), params_.max_missed_heartbeats(),
      [this] { waits_.Wake(); }, &clock_});
  if (TestHook(env_, "LOOM_TEST_DROP_HEARTBEATS", task_.ToString())) {
    spdlog::warn("test hook: sending no heartbeats");
    return;
  }
  heartbeats_->Start();
}

void TaskExecutor::ReapChildren() {
  // We are a subreaper: orphans of the user process land here and are reaped too.
  int wstatus;
  pid_t pid;
  while ((pid = ::waitpid(-1, &wstatus, WNOHANG)) > 0) {
    if (mpi_ && mpi_->OnReaped(pid, wstatus)) continue;  // an MPI daemon this task hosted
    processes_.OnReaped(pid, wstatus);
  }
}

Result<std::optional<control::ClusterSpecResponse>> TaskExecutor::AwaitClusterSpec() {
  control::ClusterSpecRequest req;
  *req.mutable_task() = Ref();
  control::ClusterSpecResponse resp;
  grpc::ClientContext ctx;
  am_->Prepare(ctx);
  grpc::Status status;
  // The call blocks until the gang is complete; wait for it beside the signals and the
  // heartbeat thread's verdict, so SIGTERM or a lost AM can end the wait.
  bool cancelled = false;
  int sig = waits_.CallWatchingSignals(
      [&] { status = am_->stub().GetClusterSpec(&ctx, req, &resp); },
      [&] {
        cancelled = true;
        ctx.TryCancel();
      },
      [&] { return AmLost() || AmWantsStop(); });
  if (cancelled) {
    stop_reason_ = sig ? "stopped by " + SignalName(sig) + " while waiting for the gang"
                       : AmLost() ? "AM lost while waiting for the gang" : "stopped by the AM";
    return std::optional<control::ClusterSpecResponse>();
  }
  if (!status.ok()) {
    return Status(static_cast<StatusCode>(status.error_code()), "waiting for the cluster spec: " + status.error_message());
  }
  return std::optional<control::ClusterSpecResponse>(resp);
}

Status TaskExecutor::StartUserProcesses(const control::ClusterSpecResponse& spec) {
  SpawnOptions o;
  o.env = env_;
  // The executor's own wiring is not the user's business, and the secret path least of all.
  control::ExecutorEnv::RemoveWiring(o.env);
  o.env.erase("MALLOC_ARENA_MAX");  // TonY#346
  o.env["PYTHONUNBUFFERED"] = "1";  // logs reach the files as they are printed
  for (const auto& [k, v] : spec.env()) o.env[k] = v;
  // As TonY runs it: `bash -c <command>` (bash execs a plain command line in place, so the user
  // process is still this executor's child and gets its signals). An entry point shipped without
  // its execute bit runs through its #! interpreter.
  auto path = o.env.find("PATH");
  Result<std::string> bash = FindBash(path == o.env.end() ? "" : path->second);
  if (!bash.ok()) return bash.status().WithContext("starting " + task_.ToString());
  o.argv = BashCommandArgv(*bash, spec.command());

  // loom.<type>.processes, and loom.<type>.process-gpus=split: each process its slice of the GPUs.
  auto visible = env_.find("CUDA_VISIBLE_DEVICES");
  MembersPlan plan = PlanMembers(o, spec, log_dir_, task_.ToString(),
                                 visible == env_.end() ? std::nullopt : std::optional<std::string>(visible->second));
  for (const std::string& note : plan.notes) spdlog::info("{}", note);
  for (const std::string& warning : plan.warnings) spdlog::warn("{}", warning);
  const size_t n = plan.members.size();
  for (size_t i = 0; i < n; ++i) {
    Result<size_t> started = processes_.Start(std::move(plan.members[i].options), std::move(plan.members[i].label));
    if (!started.ok()) {
      processes_.Clear();  // each Subprocess kills and reaps its group
      return started.status().WithContext(n == 1 ? "starting " + task_.ToString()
                                                 : "starting process " + std::to_string(i) + " of " +
                                                       std::to_string(n) + " of " + task_.ToString());
    }
    spdlog::info("started {}{} (pid {}): {}", task_.ToString(), n == 1 ? "" : " process " + std::to_string(i),
                 processes_.members().back().process.pid(), spec.command());
  }

  control::TaskStartedRequest req;
  *req.mutable_task() = Ref();
  req.set_pid(processes_.members()[0].process.pid());
  for (const TaskProcesses::Member& m : processes_.members()) req.add_pids(m.process.pid());
  grpc::Status s = CallAm(&control::Control::Stub::TaskStarted, req, std::chrono::seconds(10));
  if (!s.ok()) spdlog::warn("TaskStarted not acknowledged: {}", s.error_message());
  return Status::Ok();
}

int TaskExecutor::Supervise() {
  const milliseconds grace(params_.stop_grace_ms());
  const bool watchdog = wiring_.memory_enforced_by == "watchdog" && params_.memory_limit_bytes() > 0;
  bool terminating = false, killed_for_memory = false;
  auto terminate = [&](const std::string& reason) {
    if (terminating) return;
    terminating = true;
    stop_reason_ = reason;
    spdlog::warn("stopping {}: {}", task_.ToString(), reason);
    TerminateProcessGroups(processes_.LiveGroups(), grace);
  };

  // Metrics every loom.task.metrics-interval-ms (the first at once); the memory watchdog reads
  // the RSS on its own, faster beat, whatever that interval; an announced TensorBoard port is
  // probed until it answers (executor/timing_policy.h).
  SupervisionPacer pacer({.metrics_every = milliseconds(wiring_.metrics_interval_ms),
                          .watchdog = watchdog,
                          .execution_timeout = milliseconds(params_.execution_timeout_ms())},
                         clock_.Now());
  auto state = [&] { return SupervisionPacer::State{terminating, tb_port_.port() && !tb_announced_}; };
  while (!processes_.AllEnded()) {
    // Woken at once by SIGCHLD, signals or the heartbeat thread; the timeout paces the beats.
    int sig = waits_.WaitForEvent(static_cast<int>(pacer.Wait(state(), clock_.Now()).count()));
    if (processes_.AllEnded()) break;
    const Clock::TimePoint now = clock_.Now();
    if (sig) terminate("stopped by " + SignalName(sig));
    if (AmWantsStop()) terminate("stopped by the AM");
    if (AmLost()) terminate("AM unreachable for " + std::to_string(int64_t{params_.heartbeat_interval_ms()} * params_.max_missed_heartbeats()) + " ms");
    if (pacer.DueAt(state(), now).timed_out) {
      terminate("execution timeout: ran longer than " +
                config::Respell("loom.task.executor.execution-timeout-ms", wiring_.key_prefix) + "=" +
                std::to_string(params_.execution_timeout_ms()));
    }
    // One process of several failed: the task has failed (as torchrun's agent sees it), and the
    // others, likely blocked in a collective with it, are stopped.
    if (const TaskProcesses::Member* failed = processes_.FirstFailed()) {
      terminate(failed->label + " " + HowItEnded(*failed->exit));
    }
    if (processes_.AllEnded()) break;
    const SupervisionPacer::Due due = pacer.DueAt(state(), now);
    if (due.sample) {
      SampleMetrics();
      pacer.Sampled(clock_.Now());
    }
    if (due.tb_probe) {
      MaybeAnnounceTensorBoard();
      pacer.Probed(clock_.Now());
    }
    if (!due.watch) continue;
    pacer.Watched(now);
    std::vector<pid_t> groups = processes_.LiveGroups();
    int64_t rss = ProcessGroupsRssBytes(groups) + (mpi_ ? mpi_->GuestRssBytes() : 0);  // MPI ranks hosted
    metrics_->NoteRss(rss);
    if (rss > params_.memory_limit_bytes() && !killed_for_memory) {
      // Memory is urgent: no grace, even if a gentler stop is already under way.
      killed_for_memory = terminating = true;
      stop_reason_ = "memory limit exceeded: RSS " + std::to_string(rss >> 20) + " MiB > " +
                     std::to_string(params_.memory_limit_bytes() >> 20) + " MiB";
      const size_t n = processes_.members().size();
      if (n > 1) stop_reason_ += " (the " + std::to_string(n) + " processes together)";
      spdlog::warn("{}", stop_reason_);
      for (pid_t pgid : groups) ::kill(-pgid, SIGKILL);
      // The MPI daemons this task hosts, and their ranks, count in the RSS: they go at once too,
      // not after the stop grace (Stop is idempotent: the one after Supervise does nothing).
      if (mpi_) mpi_->Stop(milliseconds(0));
    }
  }
  // The processes are gone; whatever they left in their groups goes too.
  if (std::vector<pid_t> left = processes_.LiveGroups(); !left.empty()) {
    TerminateProcessGroups(left, milliseconds(std::min<int64_t>(grace.count(), 2000)));
  }
  ReapChildren();
  rusage ru{};
  ::getrusage(RUSAGE_CHILDREN, &ru);
  metrics_->NoteRss(int64_t{ru.ru_maxrss} * 1024);
  // The task's exit is the first failed process's (its stderr tail explains it), else process 0's.
  const TaskProcesses::Member& decisive = processes_.Decisive();
  task_exit_ = decisive.exit;
  report_stderr_path_ = decisive.stderr_path;
  spdlog::info("{} ended: {}{}", task_.ToString(), task_exit_->Describe(),
               stop_reason_.empty() ? "" : " (" + stop_reason_ + ")");
  return task_exit_->ShellCode();
}

void TaskExecutor::SampleMetrics() {
  const double now_s = SecondsSinceBoot();  // before /proc is read (CpuMeter::Update)
  std::vector<ProcStat> procs = MembersOf(ReadProcStats(/*with_zombies=*/true), processes_.LiveGroups(), {});
  int64_t rss = SumRssBytes(procs) + (mpi_ ? mpi_->GuestRssBytes() : 0);  // MPI ranks hosted
  std::optional<CpuReading> cpu = cpu_meter_.Update(procs, now_s);
  // Nothing resident: the processes have ended (zombies left, or none), a moment before their
  // exit is seen. Not a sample of the task: plots and `loom status` would show it dropping to 0.
  if (rss == 0) return;
  MetricsSample sample = metrics_->Sample(rss, cpu);
  if (heartbeats_) heartbeats_->Offer(sample);
}

void TaskExecutor::MaybeAnnounceTensorBoard() {
  const std::string host = wiring_.host.empty() ? "127.0.0.1" : wiring_.host;
  if (!PortAnswers(host, tb_port_.port(), 200)) return;
  control::TensorBoardRequest req;
  *req.mutable_task() = Ref();
  req.set_url("http://" + host + ":" + std::to_string(tb_port_.port()) + "/");
  grpc::Status s = CallAm(&control::Control::Stub::RegisterTensorBoard, req, std::chrono::seconds(5));
  if (!s.ok()) {
    spdlog::warn("TensorBoard at {} not registered (tried again): {}", req.url(), s.error_message());
    return;
  }
  tb_announced_ = true;
  spdlog::info("TensorBoard answers at {}", req.url());
}

void TaskExecutor::Report(const ExitInfo& info) {
  if (AmLost()) return;
  control::ExitReport req;
  *req.mutable_task() = Ref();
  req.set_exit_code(info.exit_code);
  req.set_signal(info.signal);
  if (metrics_) metrics_->FillReport(&req);
  req.set_reason(stop_reason_);
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);
  req.set_executor_peak_rss_bytes(int64_t{self.ru_maxrss} * 1024);
  if (!info.success()) {
    std::string stderr_path = report_stderr_path_.empty() ? log_dir_ + "/stderr" : report_stderr_path_;
    for (const auto& line : TailLines(stderr_path, static_cast<size_t>(params_.stderr_tail_lines()))) {
      *req.add_stderr_tail() = line;
    }
  }
  grpc::Status s = CallAm(&control::Control::Stub::ReportExit, req, std::chrono::seconds(5));
  if (!s.ok()) spdlog::warn("exit report not delivered: {}", s.error_message());
}

int TaskExecutor::Run() {
  // Signals are taken synchronously through a signalfd; block them before any thread exists
  // so that no gRPC thread receives them instead.
  waits_.Open();
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);

  Status s = Init();
  if (!s.ok()) {
    spdlog::error("executor cannot start: {}", s.ToString());
    return kExitConfigError;
  }
  spdlog::info("executor for {} holds port {}", task_.ToString(), port_.port());
  if (auto delay = TestHook(env_, "LOOM_TEST_DELAY_REGISTRATION_MS", task_.ToString())) {
    spdlog::warn("test hook: delaying registration by {} ms", *delay);
    std::this_thread::sleep_for(milliseconds(*delay));
  }
  s = Register();
  if (!s.ok()) {
    spdlog::error("{}", s.ToString());
    return stop_signal_ ? 128 + stop_signal_ : kExitAmUnreachable;
  }
  StartHeartbeats();
  auto spec = AwaitClusterSpec();
  if (!spec.ok() || !*spec) {
    spdlog::error("no cluster spec: {}", spec.ok() ? stop_reason_ : spec.status().ToString());
    return spec.ok() ? 128 + SIGTERM : kExitAmUnreachable;
  }
  mpi_ = std::make_unique<MpiTask>(MpiTask::Options{am_.get(), task_, env_, AbsolutePath("."),
                                                     AbsolutePath(log_dir_), wiring_.container_id});
  s = mpi_->Prepare(&**spec);
  if (s.ok()) s = StartUserProcesses(**spec);
  if (!s.ok()) {
    mpi_->Stop(milliseconds(0));
    // Could not even start: report it like a failed process so the diagnostics say why.
    spdlog::error("{}", s.ToString());
    stop_reason_ = s.message();
    Report(ExitInfo{127, 0});
    return 127;
  }
  if (auto after = TestHook(env_, "LOOM_TEST_CRASH_EXECUTOR_MS", task_.ToString())) {
    std::thread([after] {
      std::this_thread::sleep_for(milliseconds(*after));
      spdlog::warn("test hook: executor crashing");
      ::_exit(99);
    }).detach();
  }
  int code = Supervise();
  mpi_->Stop(milliseconds(params_.stop_grace_ms()));  // its guests end with the task
  StopHeartbeats();
  Report(*task_exit_);
  port_.Release();
  tb_port_.Release();
  return code;
}

}  // namespace

int RunTaskExecutor(const std::map<std::string, std::string>& env, std::optional<std::string> secret, Clock& clock) {
  return TaskExecutor(env, std::move(secret), clock).Run();
}

}  // namespace loom::executor
