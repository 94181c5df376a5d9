#include "executor/task_processes.h"

#include <signal.h>

#include <algorithm>
#include <thread>

#include "core/strings.h"

namespace loom::executor {

using std::chrono::milliseconds;

MembersPlan PlanMembers(const SpawnOptions& base, const control::ClusterSpecResponse& spec,
                        const std::string& log_dir, const std::string& task_name,
                        const std::optional<std::string>& visible_devices) {
  MembersPlan plan;
  // An AM that sends no per-process envs means one process.
  const int n = std::max(1, spec.processes_size());
  SpawnOptions o = base;
  if (n > 1 && !o.env.count("OMP_NUM_THREADS")) {
    // N processes each with a thread per core would overload the container.
    o.env["OMP_NUM_THREADS"] = "1";
    plan.notes.push_back("OMP_NUM_THREADS=1 for each of the " + std::to_string(n) +
                         " processes (torchrun's default; set it to override)");
  }
  std::vector<std::string> devices;
  const int per_process = spec.gpus_per_process();
  if (n > 1 && per_process > 0) {
    if (!visible_devices) {
      plan.notes.push_back("CUDA_VISIBLE_DEVICES is not set: left unset, each of the " + std::to_string(n) +
                           " processes sees the container's GPUs");
    } else {
      for (const std::string& d : Split(*visible_devices, ',')) {
        if (!Trim(d).empty()) devices.push_back(Trim(d));
      }
      if (static_cast<int>(devices.size()) < per_process * n) {
        plan.warnings.push_back("CUDA_VISIBLE_DEVICES=" + *visible_devices + " lists fewer than " +
                                std::to_string(n) + " processes x " + std::to_string(per_process) +
                                " GPUs: every process sees all of them");
        devices.clear();
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    MemberPlan m{o, ""};
    if (i < spec.processes_size()) {
      for (const auto& [k, v] : spec.processes(i).env()) m.options.env[k] = v;
    }
    const std::string suffix = i == 0 ? "" : "." + std::to_string(i);
    m.options.stdout_path = log_dir + "/stdout" + suffix;
    m.options.stderr_path = log_dir + "/stderr" + suffix;
    if (!devices.empty()) {
      std::vector<std::string> slice(devices.begin() + i * per_process, devices.begin() + (i + 1) * per_process);
      m.options.env["CUDA_VISIBLE_DEVICES"] = Join(slice, ",");
      plan.notes.push_back("process " + std::to_string(i) + " gets GPUs " + Join(slice, ",") +
                           " (CUDA_VISIBLE_DEVICES)");
    }
    m.label = n == 1 ? task_name
                     : "process " + std::to_string(i) + " of " + std::to_string(n) + " (LOCAL_RANK " +
                           std::to_string(i) + ")";
    plan.members.push_back(std::move(m));
  }
  return plan;
}

Result<size_t> TaskProcesses::Start(SpawnOptions o, std::string label) {
  o.new_session = true;             // its own process group: stopped as a whole
  o.parent_death_signal = SIGKILL;  // the executor gone: so is the task
  std::string stderr_path = o.stderr_path;
  LOOM_ASSIGN_OR_RETURN(Subprocess child, Subprocess::Spawn(o));
  members_.push_back({std::move(label), std::move(stderr_path), std::move(child), std::nullopt});
  return members_.size() - 1;
}

bool TaskProcesses::OnReaped(pid_t pid, int wstatus) {
  for (size_t i = 0; i < members_.size(); ++i) {
    Member& m = members_[i];
    if (m.exit || pid != m.process.pid()) continue;
    m.process.MarkReaped();
    m.exit = ExitInfo::FromWaitStatus(wstatus);
    if (!m.exit->success() && !first_failed_) first_failed_ = i;
    return true;
  }
  return false;
}

bool TaskProcesses::AllEnded() const {
  return std::all_of(members_.begin(), members_.end(), [](const Member& m) { return m.exit.has_value(); });
}

std::vector<pid_t> TaskProcesses::LiveGroups() const {
  std::vector<pid_t> groups;
  for (const Member& m : members_) {
    // An ended leader may have left processes in its group.
    if (!m.exit || ProcessGroupAlive(m.process.pgid())) groups.push_back(m.process.pgid());
  }
  return groups;
}

const TaskProcesses::Member* TaskProcesses::FirstFailed() const {
  return first_failed_ ? &members_[*first_failed_] : nullptr;
}

const TaskProcesses::Member& TaskProcesses::Decisive() const { return members_[first_failed_.value_or(0)]; }

void TerminateProcessGroups(const std::vector<pid_t>& pgids, milliseconds grace) {
  using Clock = std::chrono::steady_clock;
  std::vector<pid_t> live;
  for (pid_t pgid : pgids) {
    if (pgid > 1 && ::kill(-pgid, SIGTERM) == 0) live.push_back(pgid);
  }
  auto deadline = Clock::now() + grace;
  while (!live.empty() && Clock::now() < deadline) {
    std::erase_if(live, [](pid_t pgid) { return !ProcessGroupAlive(pgid); });
    if (!live.empty()) std::this_thread::sleep_for(milliseconds(10));
  }
  for (pid_t pgid : live) ::kill(-pgid, SIGKILL);
}

std::string HowItEnded(const ExitInfo& e) {
  return e.signal ? "was killed by signal " + std::to_string(e.signal) + " (" + SignalName(e.signal) + ")"
                  : "exited with code " + std::to_string(e.exit_code);
}

}  // namespace loom::executor
