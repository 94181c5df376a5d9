#include "cluster/local/local_container_broker.h"

#include "control/auth.h"
#include "control/executor_env.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "cluster/local/job_processes.h"
#include "core/files.h"
#include "core/strings.h"

namespace loom::cluster::local {

using Clock = std::chrono::steady_clock;

LocalContainerBroker::LocalContainerBroker(HostInventory pool, history::JobDir job_dir, bool host_has_gpus, int hold_fd,
                                           std::string executor_secret)
    : hold_fd_(hold_fd),
      executor_secret_(std::move(executor_secret)),
      inventory_(std::move(pool)),
      job_dir_(std::move(job_dir)),
      job_id_(job_dir_.job_id()),
      use_cgroups_(TaskCgroup::WritableSelfCgroup().has_value()),
      pin_gpus_(host_has_gpus || !inventory_.gpus.empty()),
      free_memory_mib_(inventory_.memory_mib),
      free_gpus_(inventory_.gpus) {}

LocalContainerBroker::~LocalContainerBroker() {
  Shutdown(std::chrono::milliseconds(0));
  if (reaper_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      reaper_stop_ = true;
    }
    Wake();
    reaper_.join();
  }
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  // Executors the reaper never saw end: killed and reaped here, and their records go with them.
  for (auto& [id, slot] : slots_) {
    if (!slot.executor) continue;
    slot.executor.reset();
    ::unlink(job_dir_.executor(id).c_str());
  }
  ::rmdir(job_dir_.executors_dir().c_str());  // only when empty
}

std::string LocalContainerBroker::Describe() const {
  std::vector<std::string> gpus;
  for (int g : inventory_.gpus) gpus.push_back(std::to_string(g));
  // The pool is the job's reserved share of the host; vcores are a share of all of them.
  return "local backend (reserved " + FormatMib(inventory_.memory_mib) + " memory" +
         (gpus.empty() ? "" : ", GPUs " + Join(gpus, ",")) + "; " + std::to_string(inventory_.vcores) +
         " vcores shared" + (use_cgroups_ ? "; cgroup v2 per task" : "; process groups") + ")";
}

Status LocalContainerBroker::Start(ContainerEvents* events) {
  events_ = events;
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return Status::FromErrno("epoll/eventfd", errno);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  reaper_ = std::thread([this] { ReaperLoop(); });
  return Status::Ok();
}

void LocalContainerBroker::Wake() {
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

Status LocalContainerBroker::Request(const ContainerRequest& request) {
  const Resources& r = request.resources;
  if (r.memory_mib > inventory_.memory_mib || r.gpus > static_cast<int>(inventory_.gpus.size()) ||
      r.vcores > inventory_.vcores) {
    return Status::ResourceExhausted("task " + request.task.ToString() + " asks for " + r.ToString() +
                                     " but this host has " + inventory_.ToString());
  }
  std::vector<Container> granted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return Status::Cancelled("broker is shutting down");
    pending_.push_back(request);
    granted = AllocateLocked();
  }
  for (const auto& c : granted) events_->OnAllocated(c);
  return Status::Ok();
}

std::vector<Container> LocalContainerBroker::AllocateLocked() {
  std::vector<Container> granted;
  // First come, first served: a request that does not fit holds back the ones behind it, so a
  // big task is not starved by a stream of small ones.
  while (!pending_.empty()) {
    const ContainerRequest& req = pending_.front();
    if (req.resources.memory_mib > free_memory_mib_ || req.resources.gpus > static_cast<int>(free_gpus_.size())) break;
    Slot slot;
    slot.container.id = "container_" + job_id_ + "_" + std::to_string(next_container_++);
    slot.container.task = req.task;
    slot.container.host = "127.0.0.1";
    slot.resources = req.resources;
    free_memory_mib_ -= req.resources.memory_mib;
    for (int i = 0; i < req.resources.gpus; ++i) {
      slot.gpus.push_back(free_gpus_.front());
      free_gpus_.erase(free_gpus_.begin());
    }
    if (pin_gpus_) {
      std::vector<std::string> ids;
      for (int g : slot.gpus) ids.push_back(std::to_string(g));
      // Set even when empty: a task that asked for no GPU must not see any.
      slot.container.env["CUDA_VISIBLE_DEVICES"] = Join(ids, ",");
    }
    control::ExecutorEnv wiring;
    wiring.host = slot.container.host;
    wiring.container_id = slot.container.id;
    wiring.AddTo(slot.container.env);
    granted.push_back(slot.container);
    slots_.emplace(slot.container.id, std::move(slot));
    pending_.pop_front();
  }
  return granted;
}

void LocalContainerBroker::ReleaseLocked(Slot& slot) {
  free_memory_mib_ += slot.resources.memory_mib;
  for (int g : slot.gpus) free_gpus_.push_back(g);
  std::sort(free_gpus_.begin(), free_gpus_.end());
  slot.gpus.clear();
  slot.resources = {};
}

namespace {

// An archive resource, unpacked by its file name's extension as a YARN NodeManager chooses
// (README §13 fact 6), but keeping symlinks in zips too: Info-ZIP's unzip restores them, and a
// venv's bin/python is one. A file of no archive kind (a .pex venv) is copied as it is, as the
// NodeManager does.
Status Unpack(const std::string& archive, const std::string& dest) {
  std::string lower = ToLower(archive);
  if (EndsWith(lower, ".zip") || EndsWith(lower, ".jar")) {
    LOOM_RETURN_IF_ERROR(MakeDirs(dest));
    return RunTool({"unzip", "-q", "-o", archive, "-d", dest});
  }
  if (EndsWith(lower, ".tar.gz") || EndsWith(lower, ".tgz") || EndsWith(lower, ".tar")) {
    LOOM_RETURN_IF_ERROR(MakeDirs(dest));
    return RunTool({"tar", EndsWith(lower, ".tar") ? "-xf" : "-xzf", archive, "-C", dest});
  }
  return CopyTree(archive, dest);
}

// A pipe's read end (close-on-exec: only the child it is handed to keeps it) that holds
// `secret`, already written and closed: the executor reads it to the end and closes it before
// any user process starts, so the secret is in no file, argument or environment of the task.
Result<int> SecretPipe(const std::string& secret) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Status::FromErrno("pipe for the executor's secret", errno);
  std::string line = secret + "\n";  // far below a pipe's capacity: the write does not block
  bool written = ::write(fds[1], line.data(), line.size()) == static_cast<ssize_t>(line.size());
  int err = errno;
  ::close(fds[1]);
  if (!written) {
    ::close(fds[0]);
    return Status::FromErrno("writing the executor's secret", err);
  }
  return fds[0];
}

}  // namespace

Status LocalContainerBroker::Localize(const LaunchSpec& spec, const std::string& work_dir) {
  LOOM_RETURN_IF_ERROR(MakeDirs(work_dir));
  for (const LocalResource& r : spec.resources) {
    std::string dest = r.name == "." ? work_dir : work_dir + "/" + r.name;
    LOOM_RETURN_IF_ERROR(r.archive ? Unpack(r.source, dest) : CopyTree(r.source, dest));
  }
  return Status::Ok();
}

Status LocalContainerBroker::Launch(const Container& container, const LaunchSpec& spec) {
  std::string task_dir = job_dir_.task_dir(container.task);
  std::string work_dir = job_dir_.task_work(container.task);
  Status localized = Localize(spec, work_dir);
  if (!localized.ok()) return localized.WithContext("localizing " + container.task.ToString());
  LOOM_RETURN_IF_ERROR(MakeDirs(job_dir_.executors_dir()));

  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(container.id);
  if (it == slots_.end()) return Status::NotFound("unknown container " + container.id);
  Slot& slot = it->second;
  if (slot.stopping || shutting_down_) return Status::Cancelled("container " + container.id + " is being stopped");

  SpawnOptions o;
  o.argv = spec.argv;
  o.env = spec.env;
  for (const auto& [k, v] : container.env) o.env[k] = v;
  control::ExecutorEnv wiring;
  wiring.log_dir = task_dir;
  wiring.memory_enforced_by = "watchdog";  // unless a cgroup with the memory controller does it
  o.cwd = work_dir;
  o.stdout_path = task_dir + "/executor.log";
  o.stderr_path = task_dir + "/executor.log";
  o.parent_death_signal = SIGTERM;  // the AM gone: the executor stops its task and exits
  if (hold_fd_ >= 0) o.inherit_fds.push_back(hold_fd_);
  if (use_cgroups_) {
    auto cg = TaskCgroup::Create("loom/" + job_id_ + "/" + container.task.DirName(),
                                 slot.resources.memory_mib * 1024 * 1024);
    if (cg.ok()) {
      o.cgroup_procs_path = cg->procs_path();
      if (cg->memory_enforced()) wiring.memory_enforced_by = "cgroup";
      slot.cgroup = *cg;
    } else {
      spdlog::warn("no cgroup for {}: {}", container.task.ToString(), cg.status().ToString());
    }
  }
  int secret_fd = -1;
  if (!executor_secret_.empty()) {
    LOOM_ASSIGN_OR_RETURN(secret_fd, SecretPipe(executor_secret_));
    o.env.erase(control::kSecretFileEnv);
    wiring.secret_fd = secret_fd;
    o.inherit_fds.push_back(secret_fd);
  }
  wiring.AddTo(o.env);
  Result<Subprocess> spawned = Subprocess::Spawn(o);
  if (secret_fd >= 0) ::close(secret_fd);  // the executor's copy is the only one
  LOOM_ASSIGN_OR_RETURN(Subprocess child, std::move(spawned));
  // The executor hides its environ (job_processes.h): without the record, `loom gc|rm` and the
  // removal of a dead AM's leftovers, run by a user who is not root, would not see it. On an
  // error `child` goes out of scope, which kills and reaps it.
  if (Status s = RecordProcess(job_dir_.executor(container.id), child.pid()); !s.ok()) {
    return s.WithContext("recording the executor of " + container.task.ToString());
  }
  slot.pidfd = OpenPidFd(child.pid());
  if (slot.pidfd < 0) {
    int err = errno;
    ::unlink(job_dir_.executor(container.id).c_str());
    return Status::FromErrno("pidfd_open", err);
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = slot.pidfd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, slot.pidfd, &ev);
  spdlog::info("launched {} in {} (executor pid {})", container.task.ToString(), container.id, child.pid());
  slot.executor = std::move(child);
  return Status::Ok();
}

Status LocalContainerBroker::Stop(const std::string& container_id, std::chrono::milliseconds grace) {
  std::optional<ContainerExit> released;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(container_id);
    if (it == slots_.end()) return Status::Ok();  // already gone
    Slot& slot = it->second;
    if (!slot.executor) {
      // Allocated but never launched: give the resources back at once.
      released = ContainerExit{container_id, slot.container.task, 137, "stopped before launch"};
      ReleaseLocked(slot);
      if (slot.cgroup) (void)slot.cgroup->Remove();
      slots_.erase(it);
      drained_.notify_all();
    } else if (!slot.stopping) {
      slot.stopping = true;
      ::kill(slot.executor->pid(), SIGTERM);
      // The executor needs `grace` to stop its user process; give it a moment more to report.
      slot.kill_at = Clock::now() + grace + std::chrono::milliseconds(1000);
    }
  }
  Wake();
  if (released) events_->OnCompleted(*released);
  return Status::Ok();
}

void LocalContainerBroker::ForceKill(Slot& slot) {
  if (slot.cgroup) slot.cgroup->KillAll();
  if (slot.executor) ::kill(-slot.executor->pgid(), SIGKILL);
  KillProcessesWithEnv(MarkerFor(slot.container.id));
}

void LocalContainerBroker::Shutdown(std::chrono::milliseconds grace) {
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutting_down_ = true;
    pending_.clear();
    for (auto& [id, slot] : slots_) ids.push_back(id);
  }
  for (const auto& id : ids) (void)Stop(id, grace);
  std::unique_lock<std::mutex> lock(mu_);
  if (!reaper_.joinable()) return;
  if (!drained_.wait_for(lock, grace + std::chrono::seconds(3), [&] { return slots_.empty(); })) {
    for (auto& [id, slot] : slots_) ForceKill(slot);
    drained_.wait_for(lock, std::chrono::seconds(5), [&] { return slots_.empty(); });
  }
  lock.unlock();
  RemoveEmptyCgroupTree("loom/" + job_id_);
  ::rmdir(job_dir_.executors_dir().c_str());  // only when empty: every executor was reaped
}

void LocalContainerBroker::ReaperLoop() {
  while (true) {
    int timeout_ms = -1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (reaper_stop_) return;
      auto now = Clock::now();
      for (auto& [id, slot] : slots_) {
        if (!slot.kill_at) continue;
        if (*slot.kill_at <= now) {
          spdlog::warn("{} did not stop in time: SIGKILL", slot.container.task.ToString());
          ForceKill(slot);
          slot.kill_at.reset();
          continue;
        }
        int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(*slot.kill_at - now).count()) + 1;
        timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
      }
    }
    epoll_event evs[16];
    int n = ::epoll_wait(epoll_fd_, evs, 16, timeout_ms);
    std::vector<ContainerExit> exits;
    std::vector<Container> granted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::vector<std::map<std::string, Slot>::iterator> ended;
      for (int i = 0; i < n; ++i) {
        int fd = evs[i].data.fd;
        if (fd == wake_fd_) {
          uint64_t v;
          (void)!::read(wake_fd_, &v, sizeof(v));
          continue;
        }
        for (auto it = slots_.begin(); it != slots_.end(); ++it) {
          Slot& slot = it->second;
          if (slot.pidfd != fd) continue;
          int wstatus = 0;
          if (::waitpid(slot.executor->pid(), &wstatus, WNOHANG) <= 0) break;
          slot.executor->MarkReaped();
          // Reaped: its pid is free for another process, which the record must not name.
          ::unlink(job_dir_.executor(slot.container.id).c_str());
          ExitInfo info = ExitInfo::FromWaitStatus(wstatus);
          ContainerExit exit{slot.container.id, slot.container.task, info.ShellCode(), ""};
          if (info.signal) exit.diagnostics = "executor " + info.Describe();
          // Whatever the task left behind (daemons, escaped children) goes with it.
          if (slot.cgroup) {
            if (slot.cgroup->memory_enforced() && slot.cgroup->OomKills() > 0) {
              exit.diagnostics += (exit.diagnostics.empty() ? "" : "; ") +
                                  std::string("the kernel killed a process at the container's memory limit of ") +
                                  FormatMib(slot.resources.memory_mib);
            }
            slot.cgroup->KillAll();
            (void)slot.cgroup->Remove();
          }
          ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
          ::close(fd);
          slot.pidfd = -1;
          exits.push_back(exit);
          ended.push_back(it);
          break;
        }
      }
      // Whatever left the task's group (and cgroup) too, for all that ended at once in one pass
      // over /proc; only then are their GPUs and memory free for others.
      std::vector<std::string> markers;
      for (auto it : ended) markers.push_back(MarkerFor(it->second.container.id));
      KillProcessesWithEnv(markers);
      for (auto it : ended) {
        ReleaseLocked(it->second);
        slots_.erase(it);
      }
      if (!exits.empty()) {
        if (!shutting_down_) granted = AllocateLocked();
        drained_.notify_all();
      }
    }
    for (const auto& e : exits) events_->OnCompleted(e);
    for (const auto& c : granted) events_->OnAllocated(c);
  }
}

}  // namespace loom::cluster::local
