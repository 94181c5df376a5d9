#include "cluster/local/local_backend.h"

#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "cluster/local/cgroup.h"
#include "cluster/local/job_processes.h"
#include "cluster/local/resource_ledger.h"
#include "control/auth.h"
#include "control/executor_env.h"
#include "core/files.h"
#include "core/interpreter_check.h"
#include "core/strings.h"
#include "history/history_copy.h"
#include "history/job_view.h"

namespace loom::cluster::local {

LocalBackend::~LocalBackend() {
  // The AM outlives a client that merely stops following; it is not ours to kill here.
  if (am_) {
    int wstatus;
    if (::waitpid(am_->pid(), &wstatus, WNOHANG) != 0) am_->MarkReaped();
    am_->Release();
  }
}

Status LocalBackend::Submit(const JobSpec& spec, const history::JobDir& dir) {
  SpawnOptions o;
  o.argv = {loom_binary_, "am", "--job-dir", dir.root()};
  o.env = CurrentEnvironment();
  o.env[control::kJobIdEnv] = dir.job_id();
  o.env[control::kSecretFileEnv] = dir.secret();
  o.stdout_path = dir.am_log();
  o.stderr_path = dir.am_log();
  o.cwd = dir.root();
  LOOM_ASSIGN_OR_RETURN(Subprocess am, Subprocess::Spawn(o));
  LOOM_RETURN_IF_ERROR(WriteFileAtomic(dir.am_pid(), std::to_string(am.pid()) + "\n"));
  am_ = std::move(am);
  return Status::Ok();
}

Status LocalBackend::CheckFits(const JobSpec& spec) {
  LOOM_RETURN_IF_ERROR(inventory_.CheckFits(spec));
  if (spec.history_location.scheme == HistoryLocation::Scheme::kHdfs) {
    return Status::InvalidArgument(spec.KeyName("loom.history.location") + "='" + spec.history_location.value +
                                   "': an HDFS directory is for --cluster yarn; on the local backend give a local "
                                   "directory: /path or file:///path");
  }
  // The tasks run here and inherit this environment: a missing interpreter would fail them all.
  const char* path = std::getenv("PATH");
  LOOM_RETURN_IF_ERROR(CheckInterpreterOnThisHost(spec, path ? path : ""));
  return ResourceLedger::CheckUsable(ResourceLedger::DefaultDir());
}

std::optional<pid_t> LocalBackend::LiveAmPid(const history::JobDir& dir) {
  auto text = ReadFile(dir.am_pid());
  if (!text.ok()) return std::nullopt;
  auto pid = ParseInt(*text);
  if (!pid.ok() || *pid <= 1) return std::nullopt;
  for (pid_t p : FindProcessesWithEnv("LOOM_JOB_ID=" + dir.job_id())) {
    if (p == *pid) return p;
  }
  return std::nullopt;
}

Status LocalBackend::Kill(const history::JobDir& dir, std::chrono::milliseconds grace, const std::string& cause) {
  // Before the signal: the AM reads it on SIGTERM. A job already ended keeps its own end.
  if (!cause.empty() && !PathExists(dir.status())) (void)history::RecordKillCause(dir, cause);
  std::optional<pid_t> pid = LiveAmPid(dir);
  if (pid) {
    ::kill(*pid, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + grace;
    while (ProcessAlive(*pid) && std::chrono::steady_clock::now() < deadline) {
      if (am_ && am_->pid() == *pid) {
        int wstatus;
        if (::waitpid(*pid, &wstatus, WNOHANG) == *pid) {
          am_->MarkReaped();
          break;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  RemoveLeftovers(dir);
  ::unlink(dir.secret().c_str());  // nothing of the job is left to read it
  // The AM writes KILLED; if it was already dead, the record is ours to finish.
  std::string first = history::KillCause(dir);
  Status ended = history::EndJob(dir, "KILLED", (first.empty() ? cause : first) + "; the AM was not running");
  CopyToHistoryLocation(dir);
  return ended;
}

void LocalBackend::CopyToHistoryLocation(const history::JobDir& dir) {
  // The AM copies the record as it ends; this is for the ends it did not write (it was dead,
  // or killed while queued). The first copy stands.
  if (Status s = history::CopyRecordToHistoryLocation(dir); !s.ok()) std::fprintf(stderr, "loom: %s\n", s.ToString().c_str());
}

void LocalBackend::RemoveLeftovers(const history::JobDir& dir) {
  // Whatever is left of the job (an AM that ignored SIGTERM, or tasks of an AM that died
  // before it could stop them) carries the job's marker or is a recorded executor, and its task
  // cgroups go too.
  KillJobProcesses(dir);
  KillAndRemoveCgroupTree("loom/" + dir.job_id());
}

Status LocalBackend::Sync(const history::JobDir& dir) {
  if (PathExists(dir.status())) {
    // No secret outlives its job: once the AM is gone too, nothing will read it again.
    if (!LiveAmPid(dir)) ::unlink(dir.secret().c_str());
    return Status::Ok();
  }
  if (!PathExists(dir.am_pid()) || LiveAmPid(dir)) return Status::Ok();
  // The AM is gone and wrote no final status (it crashed, or was killed with -9); EndJob
  // leaves a status it wrote as it exited alone.
  RemoveLeftovers(dir);
  ::unlink(dir.secret().c_str());
  Status ended =
      history::EndJob(dir, "FAILED", "the ApplicationMaster exited unexpectedly, without a final status; see " + dir.am_log());
  CopyToHistoryLocation(dir);
  return ended;
}

int LocalBackend::AmExitFd(const history::JobDir& dir) {
  std::optional<pid_t> pid = LiveAmPid(dir);
  return pid ? OpenPidFd(*pid) : -1;
}

Result<std::string> LocalBackend::ReadLog(const history::JobDir& dir, const LogTarget& target, int64_t offset) {
  if (target.file.find('/') != std::string::npos) return Status::InvalidArgument("bad log name " + target.file);
  std::string path = target.task ? dir.task_dir(*target.task) + "/" + target.file : dir.root() + "/" + target.file;
  if (!PathExists(path)) return Status::NotFound(path + " does not exist (yet)");
  return ReadFileFrom(path, offset);
}

}  // namespace loom::cluster::local
