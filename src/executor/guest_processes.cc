#include "executor/guest_processes.h"

#include <signal.h>
#include <unistd.h>

#include <set>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "executor/entry_point.h"
#include "executor/process_tree.h"

namespace loom::executor {

Result<pid_t> GuestProcesses::Start(int64_t id, const std::string& command) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopping_) return Status::FailedPrecondition("the task is ending");
  for (const auto& [pid, g] : guests_) {
    if (g.id == id) return Status::AlreadyExists("guest " + std::to_string(id) + " already runs");
  }
  SpawnOptions o;
  o.env = options_.env;
  // Under bash, as every command a task runs (entry_point.h).
  auto path = o.env.find("PATH");
  LOOM_ASSIGN_OR_RETURN(std::string bash, FindBash(path == o.env.end() ? "" : path->second));
  o.argv = {bash, "-c", command};
  size_t eq = options_.marker.find('=');
  if (eq != std::string::npos) o.env[options_.marker.substr(0, eq)] = options_.marker.substr(eq + 1);
  o.cwd = options_.cwd;
  o.stdout_path = options_.log_path;
  o.stderr_path = options_.log_path;
  o.new_session = true;             // its own group, stopped as a whole
  o.parent_death_signal = SIGKILL;  // the executor gone: so are its guests
  LOOM_ASSIGN_OR_RETURN(Subprocess child, Subprocess::Spawn(o));
  pid_t pid = child.pid();
  guests_[pid] = Guest{id, std::move(child)};
  return pid;
}

std::optional<std::pair<int64_t, ExitInfo>> GuestProcesses::Reaped(pid_t pid, int wstatus) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = guests_.find(pid);
  if (it == guests_.end()) return std::nullopt;
  it->second.process.MarkReaped();
  int64_t id = it->second.id;
  // Erasing kills what the guest left in its group (Subprocess's destructor): a guest's end is
  // its whole group's.
  guests_.erase(it);
  return std::make_pair(id, ExitInfo::FromWaitStatus(wstatus));
}

bool GuestProcesses::Stop(int64_t id) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [pid, g] : guests_) {
    if (g.id == id) return ::kill(-g.process.pgid(), SIGTERM) == 0;
  }
  return false;
}

size_t GuestProcesses::running() const {
  std::lock_guard<std::mutex> l(mu_);
  return guests_.size();
}

int64_t GuestProcesses::RssBytes() const {
  std::set<pid_t> tree;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [pid, g] : guests_) tree.insert(pid);
  }
  if (tree.empty()) return 0;
  return RssBytesOf(ReadProcStats(), {}, std::move(tree));
}

void GuestProcesses::StopAll(std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    for (auto& [pid, g] : guests_) ::kill(-g.process.pgid(), SIGTERM);
  }
  // What carries the marker: the guests, and what they started in groups of their own.
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline && !FindProcessesWithEnv(options_.marker).empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Pass after pass: one may have forked between a pass's look at /proc and its kill.
  int killed = 0;
  for (int pass = 0; pass < 100; ++pass) {
    int n = KillProcessesWithEnv(options_.marker);
    if (n == 0) break;
    killed += n;
  }
  if (killed > 0) spdlog::warn("{} guest process(es) did not stop within {} ms: killed", killed, grace.count());
  std::lock_guard<std::mutex> l(mu_);
  guests_.clear();  // each Subprocess reaps its child (unless the executor did already)
}

}  // namespace loom::executor
