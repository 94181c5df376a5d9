#include "executor/task_executor.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "control/auth.h"
#include "control/executor_env.h"
#include "control/control.grpc.pb.h"
#include "core/files.h"
#include "core/job_spec.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "core/test_hooks.h"
#include "executor/entry_point.h"
#include "executor/port_reserver.h"
#include "executor/process_tree.h"

namespace loom::executor {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class TaskExecutor {
 public:
  explicit TaskExecutor(std::map<std::string, std::string> env) : env_(std::move(env)) {}
  ~TaskExecutor();
  int Run();

 private:
  Status Init();
  Status Register();
  // Waits for the gang; returns nullopt when SIGTERM or a lost AM ended the wait.
  Result<std::optional<control::ClusterSpecResponse>> AwaitClusterSpec();
  Status StartUserProcess(const control::ClusterSpecResponse& spec);
  int Supervise();
  void StartHeartbeats();
  void StopHeartbeats();
  void HeartbeatLoop();
  void Report(const ExitInfo& info);
  void Wake();
  // Drains the signalfd; returns the first terminating signal seen (0 if none).
  int DrainSignals();
  // Waits up to `timeout_ms` for a signal or a Wake(); returns the terminating signal, if any.
  int WaitForEvent(int timeout_ms);
  void ReapChildren();
  void AttachSecret(grpc::ClientContext& ctx) const { ctx.AddMetadata(control::kSecretMetadataKey, secret_); }
  control::TaskRef Ref() const;

  std::map<std::string, std::string> env_;
  control::ExecutorEnv wiring_;  // what the AM and the backend told this executor
  TaskId task_;
  std::string log_dir_;
  std::string secret_;
  std::unique_ptr<control::Control::Stub> stub_;
  ReservedPort port_;
  control::RegisterResponse params_;

  int signal_fd_ = -1;
  int wake_fd_ = -1;
  std::optional<Subprocess> user_;
  std::optional<ExitInfo> user_exit_;
  int64_t peak_rss_ = 0;
  std::string stop_reason_;

  std::thread heartbeat_thread_;
  std::mutex hb_mu_;
  std::condition_variable hb_cv_;
  bool hb_stop_ = false;
  grpc::ClientContext* hb_ctx_ = nullptr;  // the open heartbeat stream's, guarded by hb_mu_
  std::atomic<bool> am_wants_stop_{false};
  std::atomic<bool> am_lost_{false};
  std::atomic<int64_t> rss_for_heartbeat_{0};
};

TaskExecutor::~TaskExecutor() {
  StopHeartbeats();
  if (signal_fd_ >= 0) ::close(signal_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

control::TaskRef TaskExecutor::Ref() const {
  control::TaskRef ref;
  ref.set_type(task_.type);
  ref.set_index(task_.index);
  return ref;
}

void TaskExecutor::Wake() {
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
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
  std::string am = wiring_.am_address;
  LOOM_ASSIGN_OR_RETURN(secret_, control::ReadSecretFile(wiring_.secret_file));
  log_dir_ = wiring_.log_dir.empty() ? "." : wiring_.log_dir;
  if (!wiring_.link_into_workdir.empty()) LinkIntoWorkdir(wiring_.link_into_workdir);
  int low = wiring_.port_low, high = wiring_.port_high, preferred = wiring_.preferred_port;
  LOOM_ASSIGN_OR_RETURN(port_, ReservedPort::Reserve(low, high, preferred));
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
  stub_ = control::Control::NewStub(grpc::CreateCustomChannel(am, grpc::InsecureChannelCredentials(), args));
  return Status::Ok();
}

Status TaskExecutor::Register() {
  control::RegisterRequest req;
  *req.mutable_task() = Ref();
  req.set_host(wiring_.host.empty() ? "127.0.0.1" : wiring_.host);
  req.set_port(port_.port());
  req.set_executor_pid(::getpid());
  req.set_container_id(wiring_.container_id);
  // The AM may still be starting its server when the container comes up: retry while it is
  // unavailable, for up to 30 s.
  auto deadline = Clock::now() + std::chrono::seconds(30);
  milliseconds backoff(50);
  while (true) {
    grpc::ClientContext ctx;
    AttachSecret(ctx);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    ctx.set_wait_for_ready(true);
    grpc::Status s = stub_->Register(&ctx, req, &params_);
    if (s.ok()) return Status::Ok();
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE || Clock::now() > deadline) {
      return Status(static_cast<StatusCode>(s.error_code()), "register with the AM: " + s.error_message());
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, milliseconds(1000));
  }
}

void TaskExecutor::StartHeartbeats() {
  if (TestHook(env_, "LOOM_TEST_DROP_HEARTBEATS", task_.ToString())) {
    spdlog::warn("test hook: sending no heartbeats");
    return;
  }
  heartbeat_thread_ = std::thread([this] { HeartbeatLoop(); });
}

void TaskExecutor::StopHeartbeats() {
  {
    std::lock_guard<std::mutex> l(hb_mu_);
    hb_stop_ = true;
    if (hb_ctx_) hb_ctx_->TryCancel();
  }
  hb_cv_.notify_all();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
}

void TaskExecutor::HeartbeatLoop() {
  milliseconds interval(std::max(10, params_.heartbeat_interval_ms()));
  milliseconds lost_after = interval * std::max(1, params_.max_missed_heartbeats());
  std::atomic<int64_t> last_ok{Clock::now().time_since_epoch().count()};
  auto am_silent_too_long = [&] {
    return Clock::now().time_since_epoch().count() - last_ok.load() >= std::chrono::nanoseconds(lost_after).count();
  };
  std::unique_lock<std::mutex> lock(hb_mu_);
  while (!hb_stop_) {
    // One stream for as long as it lasts; a broken one is opened again until the AM has been
    // silent for max-missed-heartbeats intervals.
    grpc::ClientContext ctx;
    AttachSecret(ctx);
    hb_ctx_ = &ctx;
    lock.unlock();
    auto stream = stub_->Heartbeats(&ctx);
    std::thread reader([&] {
      control::HeartbeatResponse resp;
      while (stream->Read(&resp)) {
        last_ok = Clock::now().time_since_epoch().count();
        if (resp.stop() && !am_wants_stop_.exchange(true)) Wake();
      }
    });
    bool broken = false;
    lock.lock();
    while (!hb_stop_ && !broken) {
      lock.unlock();
      control::HeartbeatRequest req;
      *req.mutable_task() = Ref();
      req.set_rss_bytes(rss_for_heartbeat_.load());
      broken = !stream->Write(req);
      lock.lock();
      if (am_silent_too_long()) break;
      if (!broken) hb_cv_.wait_for(lock, interval, [this] { return hb_stop_; });
    }
    hb_ctx_ = nullptr;
    lock.unlock();
    ctx.TryCancel();
    reader.join();
    (void)stream->Finish();
    lock.lock();
    if (hb_stop_) return;
    if (am_silent_too_long()) {
      spdlog::error("AM unreachable for {} ms", lost_after.count());
      am_lost_ = true;
      Wake();
      return;
    }
    hb_cv_.wait_for(lock, interval, [this] { return hb_stop_; });  // then open a new stream
  }
}

int TaskExecutor::DrainSignals() {
  int terminating = 0;
  signalfd_siginfo si;
  while (::read(signal_fd_, &si, sizeof(si)) == sizeof(si)) {
    if (si.ssi_signo == SIGCHLD) ReapChildren();
    else if (!terminating) terminating = static_cast<int>(si.ssi_signo);
  }
  return terminating;
}

int TaskExecutor::WaitForEvent(int timeout_ms) {
  pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  ::poll(fds, 2, timeout_ms);
  if (fds[1].revents & POLLIN) {
    uint64_t v;
    (void)!::read(wake_fd_, &v, sizeof(v));
  }
  return DrainSignals();
}

void TaskExecutor::ReapChildren() {
  // We are a subreaper: orphans of the user process land here and are reaped too.
  int wstatus;
  pid_t pid;
  while ((pid = ::waitpid(-1, &wstatus, WNOHANG)) > 0) {
    if (user_ && pid == user_->pid()) {
      user_->MarkReaped();
      user_exit_ = ExitInfo::FromWaitStatus(wstatus);
    }
  }
}

Result<std::optional<control::ClusterSpecResponse>> TaskExecutor::AwaitClusterSpec() {
  control::ClusterSpecRequest req;
  *req.mutable_task() = Ref();
  control::ClusterSpecResponse resp;
  grpc::ClientContext ctx;
  AttachSecret(ctx);
  grpc::Status status;
  std::atomic<bool> done{false};
  // The call blocks until the gang is complete; wait for it beside the signals and the
  // heartbeat thread's verdict, so SIGTERM or a lost AM can end the wait.
  std::thread call([&] {
    status = stub_->GetClusterSpec(&ctx, req, &resp);
    done = true;
    Wake();
  });
  bool cancelled = false;
  while (!done) {
    int sig = WaitForEvent(1000);
    if ((sig || am_lost_ || am_wants_stop_) && !cancelled) {
      stop_reason_ = sig ? "stopped by " + SignalName(sig) + " while waiting for the gang"
                         : am_lost_ ? "AM lost while waiting for the gang" : "stopped by the AM";
      ctx.TryCancel();
      cancelled = true;
    }
  }
  call.join();
  if (cancelled) return std::optional<control::ClusterSpecResponse>();
  if (!status.ok()) {
    return Status(static_cast<StatusCode>(status.error_code()), "waiting for the cluster spec: " + status.error_message());
  }
  return std::optional<control::ClusterSpecResponse>(resp);
}

Status TaskExecutor::StartUserProcess(const control::ClusterSpecResponse& spec) {
  SpawnOptions o;
  // A plain command line ("python3 train.py --epochs 3") is exec'd directly: one process less
  // between the executor and the framework, and signals reach the user process itself. Anything
  // that needs a shell (quotes, variables, pipes, redirections) goes through /bin/sh.
  const std::string& cmd = spec.command();
  bool needs_shell = cmd.find_first_of("$`'\"\\|&;<>()*?[]#~=%{}!\n") != std::string::npos;
  // An entry point shipped without its execute bit runs through its #! interpreter.
  std::vector<std::string> words = Split(cmd, ' ');
  if (needs_shell || words.empty()) {
    o.argv = {"/bin/sh", "-c", WithInterpreter(cmd)};
  } else {
    o.argv = WithInterpreter(std::move(words));
  }
  o.env = env_;
  // The executor's own wiring is not the user's business, and the secret path least of all.
  control::ExecutorEnv::RemoveWiring(o.env);
  o.env.erase("MALLOC_ARENA_MAX");  // TonY#346
  o.env["PYTHONUNBUFFERED"] = "1";  // logs reach the files as they are printed
  for (const auto& [k, v] : spec.env()) o.env[k] = v;
  o.stdout_path = log_dir_ + "/stdout";
  o.stderr_path = log_dir_ + "/stderr";
  o.new_session = true;                // its own process group: stopped as a whole
  o.parent_death_signal = SIGKILL;     // the executor gone: so is the task
  LOOM_ASSIGN_OR_RETURN(Subprocess child, Subprocess::Spawn(o));
  spdlog::info("started {} (pid {}): {}", task_.ToString(), child.pid(), spec.command());
  user_ = std::move(child);

  control::TaskStartedRequest req;
  *req.mutable_task() = Ref();
  req.set_pid(user_->pid());
  control::Ack ack;
  grpc::ClientContext ctx;
  AttachSecret(ctx);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status s = stub_->TaskStarted(&ctx, req, &ack);
  if (!s.ok()) spdlog::warn("TaskStarted not acknowledged: {}", s.error_message());
  return Status::Ok();
}

int TaskExecutor::Supervise() {
  const pid_t pgid = user_->pgid();
  const milliseconds grace(params_.stop_grace_ms());
  const bool watchdog = wiring_.memory_enforced_by == "watchdog" && params_.memory_limit_bytes() > 0;
  std::optional<Clock::time_point> exec_deadline;
  if (params_.execution_timeout_ms() > 0) exec_deadline = Clock::now() + milliseconds(params_.execution_timeout_ms());
  bool terminating = false, killed_for_memory = false;
  auto terminate = [&](const std::string& reason) {
    if (terminating) return;
    terminating = true;
    stop_reason_ = reason;
    spdlog::warn("stopping {}: {}", task_.ToString(), reason);
    TerminateProcessGroup(pgid, grace);
  };

  while (!user_exit_) {
    // Woken at once by SIGCHLD, signals or the heartbeat thread; the timeout paces the RSS
    // sampling and the execution deadline.
    int sig = WaitForEvent(500);
    if (user_exit_) break;
    if (sig) terminate("stopped by " + SignalName(sig));
    if (am_wants_stop_) terminate("stopped by the AM");
    if (am_lost_) terminate("AM unreachable for " + std::to_string(int64_t{params_.heartbeat_interval_ms()} * params_.max_missed_heartbeats()) + " ms");
    if (exec_deadline && Clock::now() >= *exec_deadline) {
      terminate("execution timeout: ran longer than loom.task.executor.execution-timeout-ms=" +
                std::to_string(params_.execution_timeout_ms()));
    }
    int64_t rss = ProcessGroupRssBytes(pgid);
    rss_for_heartbeat_ = rss;
    peak_rss_ = std::max(peak_rss_, rss);
    if (watchdog && rss > params_.memory_limit_bytes() && !killed_for_memory) {
      // Memory is urgent: no grace, even if a gentler stop is already under way.
      killed_for_memory = terminating = true;
      stop_reason_ = "memory limit exceeded: RSS " + std::to_string(rss >> 20) + " MiB > " +
                     std::to_string(params_.memory_limit_bytes() >> 20) + " MiB";
      spdlog::warn("{}", stop_reason_);
      ::kill(-pgid, SIGKILL);
    }
  }
  // The main process is gone; whatever it left in its group goes too.
  if (ProcessGroupAlive(pgid)) TerminateProcessGroup(pgid, milliseconds(std::min<int64_t>(grace.count(), 2000)));
  ReapChildren();
  rusage ru{};
  ::getrusage(RUSAGE_CHILDREN, &ru);
  peak_rss_ = std::max<int64_t>(peak_rss_, int64_t{ru.ru_maxrss} * 1024);
  spdlog::info("{} ended: {}{}", task_.ToString(), user_exit_->Describe(),
               stop_reason_.empty() ? "" : " (" + stop_reason_ + ")");
  return user_exit_->ShellCode();
}

void TaskExecutor::Report(const ExitInfo& info) {
  if (am_lost_) return;
  control::ExitReport req;
  *req.mutable_task() = Ref();
  req.set_exit_code(info.exit_code);
  req.set_signal(info.signal);
  req.set_peak_rss_bytes(peak_rss_);
  req.set_reason(stop_reason_);
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);
  req.set_executor_peak_rss_bytes(int64_t{self.ru_maxrss} * 1024);
  if (!info.success()) {
    for (const auto& line : TailLines(log_dir_ + "/stderr", static_cast<size_t>(params_.stderr_tail_lines()))) {
      *req.add_stderr_tail() = line;
    }
  }
  control::Ack ack;
  grpc::ClientContext ctx;
  AttachSecret(ctx);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Status s = stub_->ReportExit(&ctx, req, &ack);
  if (!s.ok()) spdlog::warn("exit report not delivered: {}", s.error_message());
}

int TaskExecutor::Run() {
  // Signals are taken synchronously through a signalfd; block them before any thread exists
  // so that no gRPC thread receives them instead.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&mask, s);
  ::pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  signal_fd_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
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
    return kExitAmUnreachable;
  }
  StartHeartbeats();
  auto spec = AwaitClusterSpec();
  if (!spec.ok() || !*spec) {
    spdlog::error("no cluster spec: {}", spec.ok() ? stop_reason_ : spec.status().ToString());
    return spec.ok() ? 128 + SIGTERM : kExitAmUnreachable;
  }
  s = StartUserProcess(**spec);
  if (!s.ok()) {
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
  StopHeartbeats();
  Report(*user_exit_);
  port_.Release();
  return code;
}

}  // namespace

int RunTaskExecutor(const std::map<std::string, std::string>& env) { return TaskExecutor(env).Run(); }

}  // namespace loom::executor
