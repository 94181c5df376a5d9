#include "cluster/local/local_am_side.h"

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <chrono>

#include <spdlog/spdlog.h>

#include "cluster/container_env.h"
#include "cluster/local/local_container_broker.h"
#include "control/auth.h"
#include "core/files.h"
#include "core/forwarded_env.h"
#include "core/subprocess.h"
#include "core/user_name.h"
#include "history/events.h"
#include "history/history_copy.h"
#include "history/job_view.h"

namespace loom::cluster::local {
namespace {

// The $LOOM_HOME a job dir (<home>/jobs/<id>) belongs to, resolved: its jobs share memory.
std::string HomeOf(const history::JobDir& dir) {
  std::string jobs = dir.root().substr(0, dir.root().find_last_of('/'));
  std::string home = jobs.substr(0, jobs.find_last_of('/'));
  char resolved[PATH_MAX];
  return ::realpath(home.c_str(), resolved) ? std::string(resolved) : home;
}

// A look after this long even without a change: the close of a dead holder's descriptor is
// reported a moment before its lock is dropped, and a ledger on an odd file system may not
// report at all.
constexpr std::chrono::milliseconds kSettle{200};
constexpr std::chrono::milliseconds kFallback{2000};

}  // namespace

std::map<std::string, std::string> LocalContainerEnv(const std::map<std::string, std::string>& am_env) {
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : am_env) {
    if (PassesIntoContainers(k) || k == "USER" || k == "LOGNAME" || k == "HOME") env[k] = v;
  }
  for (const auto& [k, v] : ForwardedCredentials(am_env)) env[k] = v;
  if (!env.count("USER") || !env.count("LOGNAME") || !env.count("HOME")) {
    // /etc/passwd read directly: the static binary must not load the host's NSS modules.
    if (auto pw = CurrentPasswdEntry()) {
      env.emplace("USER", pw->name);
      env.emplace("LOGNAME", pw->name);
      if (!pw->home.empty()) env.emplace("HOME", pw->home);
    }
  }
  return env;
}

Result<AmSetup> LocalAmSide::Prepare(const history::JobDir& dir, const std::map<std::string, std::string>& env) {
  AmSetup setup;
  auto secret = env.find(control::kSecretFileEnv);
  setup.secret_file = secret != env.end() ? secret->second : dir.secret();
  setup.executor_binary = SelfExecutable();
  setup.executor_env = LocalContainerEnv(env);
  // Tasks run beside the job dir as the same Unix user: they can read its secret file. So the
  // executors get a secret of their own, which the AM alone makes and hands out (through a
  // pipe), and the file's only reads the job's state, for a client that follows the job.
  LOOM_ASSIGN_OR_RETURN(executor_secret_, control::GenerateSecret());
  setup.executor_secret = executor_secret_;
  return setup;
}

Status LocalAmSide::Admit(const history::JobDir& dir, const config::Config& conf, const JobSpec& spec,
                          history::EventLog& events) {
  LOOM_ASSIGN_OR_RETURN(HostInventory host, HostInventory::Detect(conf));
  // The client refused such a job already; one that slipped through must not wait forever.
  LOOM_RETURN_IF_ERROR(host.CheckFits(spec));
  host_ = host;
  Resources total = spec.TotalResources();
  LedgerRequest request;
  request.job_id = dir.job_id();
  request.home = HomeOf(dir);
  request.memory_mib = total.memory_mib;
  request.vcores = total.vcores;
  request.gpus = total.gpus;
  request.memory_capacity_mib = host.memory_mib;
  request.gpu_indices = host.gpus;
  reserved_memory_mib_ = total.memory_mib;
  LOOM_ASSIGN_OR_RETURN(ledger_, ResourceLedger::Open(ResourceLedger::DefaultDir()));
  LOOM_ASSIGN_OR_RETURN(admission_, ledger_->Join(request));
  if (admission_.admitted) return Status::Ok();

  // The caller blocked these in every thread; until the job runs they are ours to take.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&mask, s);
  int sig_fd = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sig_fd < 0) return Status::FromErrno("signalfd", errno);
  const auto queued_at = std::chrono::steady_clock::now();
  int shown_position = 0;
  std::string shown_reason;
  std::chrono::milliseconds timeout = kFallback;
  while (!admission_.admitted) {
    if (admission_.position != shown_position || admission_.reason != shown_reason) {
      shown_position = admission_.position;
      shown_reason = admission_.reason;
      spdlog::info("queued, position {}: {}", shown_position, shown_reason);
      (void)events.Append(history::events::kBackendState,
                          {{"state", "QUEUED"}, {"reason", shown_reason}, {"position", shown_position}});
    }
    pollfd fds[2] = {{ledger_->change_fd(), POLLIN, 0}, {sig_fd, POLLIN, 0}};
    ::poll(fds, 2, static_cast<int>(timeout.count()));
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo si{};
      (void)!::read(sig_fd, &si, sizeof(si));
      ::close(sig_fd);
      ledger_->Release();
      // Whoever asked for the kill recorded why before sending it (history::RecordKillCause).
      std::string cause = history::KillCause(dir);
      int sig = static_cast<int>(si.ssi_signo);
      if (cause.empty()) cause = "killed: the AM received " + SignalName(sig) + " from outside Loom";
      return Status::Cancelled(cause + " (while queued)");
    }
    timeout = (fds[0].revents & POLLIN) ? kSettle : kFallback;
    ledger_->DrainChanges();
    auto next = ledger_->Retry();
    if (!next.ok()) {
      ::close(sig_fd);
      return next.status();
    }
    admission_ = *next;
  }
  ::close(sig_fd);
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - queued_at);
  spdlog::info("admitted after {} ms in the queue", waited.count());
  (void)events.Append(history::events::kBackendState,
                      {{"state", "ADMITTED"}, {"waited_ms", waited.count()}, {"gpus", admission_.gpus}});
  return Status::Ok();
}

Result<std::unique_ptr<ContainerBroker>> LocalAmSide::MakeBroker(const history::JobDir& dir, const config::Config& conf,
                                                                 std::function<int()>, const std::string&) {
  if (!host_) {
    LOOM_ASSIGN_OR_RETURN(HostInventory detected, HostInventory::Detect(conf));
    host_ = detected;
  }
  HostInventory pool = *host_;
  if (ledger_ && admission_.admitted) {
    // The job's share of the machine, for its whole life: restarts reuse the same GPUs.
    pool.gpus = admission_.gpus;
    pool.memory_mib = reserved_memory_mib_;
  }
  return std::unique_ptr<ContainerBroker>(
      std::make_unique<LocalContainerBroker>(pool, dir, /*host_has_gpus=*/!host_->gpus.empty(),
                                             ledger_ ? ledger_->record_fd() : -1, executor_secret_));
}

void LocalAmSide::Finish(const history::JobDir& dir, const std::string&, const std::string&) {
  if (ledger_) ledger_->Release();
  // The record to the job's history location (loom.history.location), when it has its end;
  // otherwise whoever writes the end copies it (LocalBackend::Kill).
  if (!PathExists(dir.status())) return;
  if (Status s = history::CopyRecordToHistoryLocation(dir); !s.ok()) spdlog::warn("{}", s.ToString());
}

}  // namespace loom::cluster::local
