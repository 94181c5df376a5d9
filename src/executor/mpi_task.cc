#include "executor/mpi_task.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include <spdlog/spdlog.h>

#include "control/executor_env.h"
#include "core/files.h"
#include "core/mpi_command.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "executor/exec_socket.h"
#include "executor/guest_processes.h"
#include "runtime/mpi.h"

namespace loom::executor {

namespace {

constexpr char kDeleted[] = " (deleted)";

constexpr char kScratchPrefix[] = "loom-mpi-";

// A fresh private (0700) directory "loom-mpi-<pid>-<name>-XXXXXX" under the first parent that
// takes one, "" if none does. The pid is the executor's: see SweepScratchDirs.
std::string MakeScratchDir(const std::vector<std::string>& parents, const std::string& name) {
  for (const std::string& parent : parents) {
    std::string tmpl = parent + "/" + kScratchPrefix + std::to_string(::getpid()) + "-" + name + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) return tmpl;
  }
  return "";
}

// Removes the scratch dirs of executors that are gone without removing theirs (SIGKILL): Open
// MPI's shared-memory files in /dev/shm would hold memory until the machine restarts.
void SweepScratchDirs(const std::vector<std::string>& parents) {
  for (const std::string& parent : parents) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(parent, ec)) {
      std::string name = entry.path().filename().string();
      if (!StartsWith(name, kScratchPrefix)) continue;
      std::string digits = name.substr(std::strlen(kScratchPrefix));
      digits = digits.substr(0, digits.find('-'));
      auto pid = ParseInt(digits);
      struct stat st {};
      if (!pid.ok() || *pid <= 0 || ::lstat(entry.path().c_str(), &st) != 0 || st.st_uid != ::getuid()) continue;
      if (::kill(static_cast<pid_t>(*pid), 0) == 0 || errno != ESRCH) continue;  // its executor lives
      if (RemoveTree(entry.path().string()).ok()) spdlog::info("removed {}, left by a killed executor", entry.path().string());
    }
  }
}

}  // namespace

std::string MpiTask::SelfExe() {
  std::string exe = SelfExecutable();
  if (EndsWith(exe, kDeleted)) exe.resize(exe.size() - std::string(kDeleted).size());
  return exe;
}

MpiTask::MpiTask(Options options) : options_(std::move(options)) {
  for (std::string* dir : {&options_.work_dir, &options_.log_dir}) {
    while (dir->size() > 1 && dir->back() == '/') dir->pop_back();
  }
}

MpiTask::~MpiTask() { Stop(std::chrono::milliseconds(0)); }

control::TaskRef MpiTask::Ref() const {
  control::TaskRef ref;
  ref.set_type(options_.task.type);
  ref.set_index(options_.task.index);
  return ref;
}

Status MpiTask::Prepare(control::ClusterSpecResponse* spec) {
  if (!spec->has_mpi()) return Status::Ok();
  if (!spec->mpi().hostfile().empty()) return PrepareLauncher(spec).WithContext("preparing the MPI launcher");
  if (spec->mpi().hosts_ranks()) return PrepareRankHost(spec).WithContext("preparing to host MPI ranks");
  return Status::Ok();
}

Status MpiTask::PrepareLauncher(control::ClusterSpecResponse* spec) {
  LOOM_ASSIGN_OR_RETURN(std::vector<runtime::MpiHost> hosts, runtime::ParseMpiHostfile(spec->mpi().hostfile()));
  // Private: the socket lets whoever reaches it run commands in the job's other tasks.
  private_dir_ = options_.work_dir + "/.loom-mpi";
  (void)RemoveTree(private_dir_);  // a previous run's, in a reused container dir
  if (::mkdir(private_dir_.c_str(), 0700) != 0) return Status::FromErrno("mkdir " + private_dir_, errno);
  std::string hostfile = private_dir_ + "/hostfile";
  LOOM_RETURN_IF_ERROR(WriteFileAtomic(hostfile, spec->mpi().hostfile(), 0600));
  ExecSocket::Options o;
  o.path = private_dir_ + "/exec.sock";
  o.hosts = hosts;
  o.am = options_.am;
  o.task = Ref();
  o.container_id = options_.container_id;
  LOOM_ASSIGN_OR_RETURN(socket_, ExecSocket::Start(o));

  auto& env = *spec->mutable_env();
  std::string agent = SelfExe() + " mpi-rsh";
  env["OMPI_MCA_plm_rsh_agent"] = agent;
  env["OMPI_MCA_orte_default_hostfile"] = hostfile;
  env[runtime::kExecSocketEnv] = o.path;
  if (::getuid() == 0) {
    // mpirun refuses to run as root unless told twice; the container is the isolation here.
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
    spdlog::warn("running as root (uid 0): mpirun allowed to run as root (OMPI_ALLOW_RUN_AS_ROOT=1)");
  }
  int slots = 0;
  for (const auto& h : hosts) slots += h.slots;
  spdlog::info("MPI launcher: {} hosts, {} slots in {}; mpirun's rsh agent: {}", hosts.size(), slots, hostfile, agent);
  return Status::Ok();
}

Status MpiTask::PrepareRankHost(control::ClusterSpecResponse* spec) {
  // Open MPI's session directory and its shared-memory files (btl vader) go to a directory of
  // this task's own: two daemons on one machine sharing one would collide, and their ranks
  // crash. /dev/shm keeps the shared memory in memory; /tmp keeps the Unix socket paths that
  // PMIx puts in it short (a YARN container's dir can be too deep for them).
  const std::vector<std::string> parents = {"/dev/shm", "/tmp", options_.work_dir};
  SweepScratchDirs(parents);
  scratch_dir_ = MakeScratchDir(parents, options_.task.DirName());
  if (scratch_dir_.empty()) return Status::FromErrno("creating a scratch dir for Open MPI", errno);

  GuestProcesses::Options g;
  g.env = options_.env;
  control::ExecutorEnv::RemoveWiring(g.env);  // never the secret, nor the AM's address
  g.env.erase("MALLOC_ARENA_MAX");
  g.env["PYTHONUNBUFFERED"] = "1";
  for (const auto& [k, v] : spec->env()) g.env[k] = v;
  g.env["TMPDIR"] = scratch_dir_;
  g.env["OMPI_MCA_btl_vader_backing_directory"] = scratch_dir_;
  g.env[kMpiWorkdirEnv] = options_.work_dir;
  g.cwd = options_.work_dir;
  g.log_path = options_.log_dir + "/mpi-daemon.log";
  g.marker = "LOOM_MPI_GUEST_OF=" + options_.task.ToString() + "/" + std::to_string(::getpid());
  guests_ = std::make_unique<GuestProcesses>(std::move(g));

  // It has no command of its own: an idle process stands for it, so that it runs, is
  // stopped and ends like every task.
  std::string self = SelfExe();
  spec->set_command((self.find_first_of(" '\"$\\") == std::string::npos ? self : ShellQuote(self)) + " mpi-idle");
  guest_thread_ = std::thread([this] { GuestLoop(); });
  report_thread_ = std::thread([this] { ReportLoop(); });
  spdlog::info("hosting MPI ranks: Open MPI's daemons run here as guests (log: {}, scratch: {})",
               options_.log_dir + "/mpi-daemon.log", scratch_dir_);
  return Status::Ok();
}

void MpiTask::GuestLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  std::chrono::milliseconds backoff(100);
  // Every guest id ever taken: after a stream broke the AM sends its open calls again (it cannot
  // know which arrived), and a guest runs once, even one that has ended since.
  std::set<int64_t> taken;
  while (!stopping_) {
    grpc::ClientContext ctx;
    options_.am->Prepare(ctx);
    stream_ctx_ = &ctx;
    lock.unlock();
    control::GuestsRequest req;
    *req.mutable_task() = Ref();
    req.set_container_id(options_.container_id);
    auto reader = options_.am->stub().Guests(&ctx, req);
    control::GuestCommand cmd;
    while (reader->Read(&cmd)) {
      backoff = std::chrono::milliseconds(100);
      if (cmd.stop()) {
        if (guests_->Stop(cmd.id())) spdlog::info("stopping guest {}: its caller went away", cmd.id());
        continue;
      }
      if (!taken.insert(cmd.id()).second) {
        spdlog::debug("guest {} sent again after a broken stream: already taken", cmd.id());
        continue;
      }
      // This thread starts every guest and lives until they are stopped: a guest's
      // parent-death signal follows the thread that started it.
      Result<pid_t> pid = guests_->Start(cmd.id(), cmd.command());
      if (pid.ok()) {
        spdlog::info("guest {} started (pid {}): {}", cmd.id(), *pid, cmd.command().substr(0, 120));
      } else {
        spdlog::warn("guest {} not started: {}", cmd.id(), pid.status().ToString());
        control::GuestExit exit;
        exit.set_id(cmd.id());
        exit.set_error(pid.status().message());
        QueueReport(exit);
      }
    }
    grpc::Status s = reader->Finish();
    lock.lock();
    stream_ctx_ = nullptr;
    if (stopping_) break;
    // The AM ends the streams when the job ends; anything else is tried again (a broken
    // connection), until the task stops: the heartbeats decide whether the AM is lost.
    if (!s.ok()) spdlog::warn("Guests stream ended: {} (opened again)", s.error_message());
    cv_.wait_for(lock, backoff, [this] { return stopping_; });
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
}

void MpiTask::QueueReport(const control::GuestExit& exit) {
  {
    std::lock_guard<std::mutex> l(mu_);
    reports_.push_back(exit);
    *reports_.back().mutable_task() = Ref();
    reports_.back().set_container_id(options_.container_id);
  }
  cv_.notify_all();
}

void MpiTask::ReportLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || !reports_.empty(); });
    if (reports_.empty()) return;  // stopping, nothing left to send
    control::GuestExit exit = reports_.front();
    reports_.pop_front();
    bool last_chance = stopping_;
    lock.unlock();
    for (int attempt = 0; attempt < 3; ++attempt) {
      grpc::ClientContext ctx;
      options_.am->Prepare(ctx);
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(last_chance ? 1 : 5));
      control::Ack ack;
      grpc::Status s = options_.am->stub().GuestExited(&ctx, exit, &ack);
      if (s.ok() || s.error_code() != grpc::StatusCode::UNAVAILABLE || last_chance) {
        if (!s.ok()) spdlog::info("end of guest {} not taken by the AM: {}", exit.id(), s.error_message());
        break;
      }
    }
    lock.lock();
  }
}

bool MpiTask::OnReaped(pid_t pid, int wstatus) {
  if (!guests_) return false;
  auto reaped = guests_->Reaped(pid, wstatus);
  if (!reaped) return false;
  spdlog::info("guest {} (pid {}) ended: {}", reaped->first, pid, reaped->second.Describe());
  control::GuestExit exit;
  exit.set_id(reaped->first);
  exit.set_exit_code(reaped->second.exit_code);
  exit.set_signal(reaped->second.signal);
  QueueReport(exit);
  return true;
}

int64_t MpiTask::GuestRssBytes() const { return guests_ ? guests_->RssBytes() : 0; }

void MpiTask::Stop(std::chrono::milliseconds grace) {
  if (stopped_) return;
  stopped_ = true;
  // Open calls get a moment (mpirun has ended: its daemons are ending too), then are
  // cancelled, and the AM stops their daemons.
  if (socket_) socket_->Stop(std::min(grace, std::chrono::milliseconds(2000)));
  // The guests first, while the thread that started them still lives (their parent-death
  // signal would otherwise kill them without grace).
  if (guests_) guests_->StopAll(grace);
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    if (stream_ctx_) stream_ctx_->TryCancel();
  }
  cv_.notify_all();
  if (guest_thread_.joinable()) guest_thread_.join();
  if (report_thread_.joinable()) report_thread_.join();
  if (!private_dir_.empty()) (void)RemoveTree(private_dir_);
  if (!scratch_dir_.empty()) (void)RemoveTree(scratch_dir_);
}

}  // namespace loom::executor
