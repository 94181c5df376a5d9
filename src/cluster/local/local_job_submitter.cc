#include "cluster/local/local_job_submitter.h"

#include <signal.h>
#include <sys/wait.h>

#include <thread>

#include "cluster/local/cgroup.h"
#include "control/auth.h"
#include "core/files.h"
#include "core/strings.h"

namespace loom::cluster::local {

LocalJobSubmitter::~LocalJobSubmitter() {
  // The AM outlives a client that merely stops following; it is not ours to kill here.
  if (am_) {
    int wstatus;
    if (::waitpid(am_->pid(), &wstatus, WNOHANG) != 0) am_->MarkReaped();
    am_->Release();
  }
}

Status LocalJobSubmitter::Submit(const history::JobDir& dir) {
  SpawnOptions o;
  o.argv = {loom_binary_, "am", "--job-dir", dir.root()};
  o.env = CurrentEnvironment();
  o.env["LOOM_JOB_ID"] = dir.job_id();
  o.env[control::kSecretFileEnv] = dir.secret();
  o.stdout_path = dir.am_log();
  o.stderr_path = dir.am_log();
  o.cwd = dir.root();
  LOOM_ASSIGN_OR_RETURN(Subprocess am, Subprocess::Spawn(o));
  LOOM_RETURN_IF_ERROR(WriteFileAtomic(dir.am_pid(), std::to_string(am.pid()) + "\n"));
  am_ = std::move(am);
  return Status::Ok();
}

std::optional<pid_t> LocalJobSubmitter::LiveAmPid(const history::JobDir& dir) {
  auto text = ReadFile(dir.am_pid());
  if (!text.ok()) return std::nullopt;
  auto pid = ParseInt(*text);
  if (!pid.ok() || *pid <= 1) return std::nullopt;
  for (pid_t p : FindProcessesWithEnv("LOOM_JOB_ID=" + dir.job_id())) {
    if (p == *pid) return p;
  }
  return std::nullopt;
}

Status LocalJobSubmitter::Kill(const history::JobDir& dir, std::chrono::milliseconds grace) {
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
  // Whatever is left of the job (an AM that ignored SIGTERM, or tasks of an AM that died
  // before it could stop them) carries the job's marker, and its task cgroups go too.
  KillProcessesWithEnv("LOOM_JOB_ID=" + dir.job_id());
  KillAndRemoveCgroupTree("loom/" + dir.job_id());
  return Status::Ok();
}

}  // namespace loom::cluster::local
