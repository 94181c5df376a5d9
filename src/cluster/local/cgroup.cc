#include "cluster/local/cgroup.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/files.h"
#include "core/strings.h"

namespace loom::cluster::local {
namespace {

bool WriteSmall(const std::string& path, const std::string& value) {
  std::ofstream f(path);
  if (!f) return false;
  f << value;
  f.flush();
  return static_cast<bool>(f);
}

std::optional<std::string> CgroupV2Mount() {
  std::ifstream mounts("/proc/self/mounts");
  std::string dev, dir, type, rest;
  while (mounts >> dev >> dir >> type) {
    std::getline(mounts, rest);
    if (type == "cgroup2") return dir;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> TaskCgroup::WritableSelfCgroup() {
  auto mount = CgroupV2Mount();
  if (!mount) return std::nullopt;
  auto self = ReadFile("/proc/self/cgroup");
  if (!self.ok()) return std::nullopt;
  for (const std::string& line : Split(*self, '\n')) {
    if (StartsWith(line, "0::")) {
      std::string rel = Trim(line.substr(3));
      std::string path = *mount + (rel == "/" ? "" : rel);
      if (::access(path.c_str(), W_OK) == 0) return path;
    }
  }
  return std::nullopt;
}

Result<TaskCgroup> TaskCgroup::Create(const std::string& relative, int64_t memory_limit_bytes) {
  auto self = WritableSelfCgroup();
  if (!self) return Status::Unavailable("cgroup v2 is not mounted writable here");
  TaskCgroup cg;
  cg.path_ = *self + "/" + relative;
  LOOM_RETURN_IF_ERROR(MakeDirs(cg.path_));
  // Enable the memory controller level by level; this fails (harmlessly) wherever a level
  // holds processes itself or the controller is not delegated.
  std::string level = *self;
  for (const std::string& part : Split(relative, '/')) {
    WriteSmall(level + "/cgroup.subtree_control", "+memory");
    level += "/" + part;
  }
  if (memory_limit_bytes > 0 && PathExists(cg.path_ + "/memory.max")) {
    cg.memory_enforced_ = WriteSmall(cg.path_ + "/memory.max", std::to_string(memory_limit_bytes));
    WriteSmall(cg.path_ + "/memory.swap.max", "0");
  }
  return cg;
}

void TaskCgroup::KillAll() const {
  if (WriteSmall(path_ + "/cgroup.kill", "1")) return;
  // Kernels before 5.14: kill the members one by one until none is left.
  for (int round = 0; round < 20; ++round) {
    auto procs = ReadFile(procs_path());
    if (!procs.ok() || Trim(*procs).empty()) return;
    for (const std::string& p : Split(*procs, '\n')) {
      if (auto pid = ParseInt(p); pid.ok()) ::kill(static_cast<pid_t>(*pid), SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Status TaskCgroup::Remove() const {
  for (int i = 0; i < 200; ++i) {
    if (::rmdir(path_.c_str()) == 0 || errno == ENOENT) return Status::Ok();
    if (errno != EBUSY) return Status::FromErrno("rmdir " + path_, errno);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Status::Unavailable("cgroup " + path_ + " still busy");
}

int64_t TaskCgroup::OomKills() const {
  auto text = ReadFile(path_ + "/memory.events");
  if (!text.ok()) return 0;
  for (const std::string& line : Split(*text, '\n')) {
    if (StartsWith(line, "oom_kill ")) {
      auto v = ParseInt(line.substr(9));
      return v.ok() ? *v : 0;
    }
  }
  return 0;
}

void RemoveEmptyCgroupTree(const std::string& relative) {
  auto self = TaskCgroup::WritableSelfCgroup();
  if (!self) return;
  std::vector<std::string> parts = Split(relative, '/');
  while (!parts.empty()) {
    if (::rmdir((*self + "/" + Join(parts, "/")).c_str()) != 0) return;
    parts.pop_back();
  }
}

void KillAndRemoveCgroupTree(const std::string& relative) {
  auto self = TaskCgroup::WritableSelfCgroup();
  if (!self) return;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(*self + "/" + relative, ec)) {
    if (!entry.is_directory()) continue;
    TaskCgroup task;
    task.path_ = entry.path().string();
    task.KillAll();
    (void)task.Remove();
  }
  RemoveEmptyCgroupTree(relative);
}

}  // namespace loom::cluster::local
