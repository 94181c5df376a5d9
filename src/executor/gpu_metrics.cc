#include "executor/gpu_metrics.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>

#include "core/files.h"
#include "core/strings.h"
#include "core/subprocess.h"

namespace loom::executor {

Result<GpuSample> ParseNvidiaSmi(const std::string& text) {
  GpuSample s;
  for (const std::string& raw : Split(text, '\n')) {
    std::string line = Trim(raw);
    if (line.empty()) continue;
    auto fields = Split(line, ',');
    if (fields.size() != 2 && fields.size() != 3) {
      return Status::InvalidArgument("nvidia-smi: unexpected line '" + line + "'");
    }
    auto number = [](const std::string& f) -> int64_t {
      auto n = ParseInt(Trim(f));
      return n.ok() && *n >= 0 ? *n : 0;  // "[N/A]", "[Not Supported]"
    };
    GpuDevice d;
    d.index = fields.size() == 3 ? static_cast<int>(std::min<int64_t>(number(fields[2]), 1 << 20)) : s.gpus;
    d.utilization_percent = static_cast<int>(std::min<int64_t>(number(fields[0]), 100));
    d.memory_used_bytes = std::min<int64_t>(number(fields[1]), int64_t{1} << 30) * 1024 * 1024;
    ++s.gpus;
    s.max_utilization_percent = std::max(s.max_utilization_percent, d.utilization_percent);
    s.memory_used_bytes += d.memory_used_bytes;
    s.devices.push_back(d);
  }
  if (s.gpus == 0) return Status::InvalidArgument("nvidia-smi reported no GPU");
  return s;
}

Result<GpuSample> SampleGpus(const std::string& nvidia_smi, const std::string& visible, const std::string& path_env,
                             std::chrono::milliseconds timeout) {
  LOOM_ASSIGN_OR_RETURN(std::string program, FindProgram(nvidia_smi, path_env));
  char out_path[] = "/tmp/loom-nvidia-smi-XXXXXX";
  int out_fd = ::mkstemp(out_path);
  if (out_fd < 0) return Status::FromErrno("mkstemp", errno);
  ::close(out_fd);
  SpawnOptions o;
  // The index last: the site wrappers that answer a discovery query (--query-gpu=index) by
  // its prefix are not mistaken.
  o.argv = {program, "--query-gpu=utilization.gpu,memory.used,index", "--format=csv,noheader,nounits"};
  if (!visible.empty()) o.argv.push_back("--id=" + visible);
  o.env = {{"PATH", path_env}};
  o.stdout_path = out_path;
  o.stderr_path = "/dev/null";
  auto child = Subprocess::Spawn(o);
  if (!child.ok()) {
    ::unlink(out_path);
    return child.status();
  }
  int pidfd = OpenPidFd(child->pid());
  bool in_time = true;
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    in_time = ::poll(&p, 1, static_cast<int>(timeout.count())) > 0;
    ::close(pidfd);
  }
  if (!in_time) ::kill(-child->pgid(), SIGKILL);
  auto exit = child->Wait();
  auto text = ReadFile(out_path);
  ::unlink(out_path);
  if (!in_time) return Status::DeadlineExceeded(nvidia_smi + " took longer than " + std::to_string(timeout.count()) + " ms");
  if (!exit.ok()) return exit.status();
  if (!exit->success()) return Status::Internal(nvidia_smi + " ended with " + exit->Describe());
  if (!text.ok()) return text.status();
  return ParseNvidiaSmi(*text);
}

std::function<Result<GpuSample>()> TaskGpuSampler(const std::string& nvidia_smi,
                                                  const std::map<std::string, std::string>& env,
                                                  std::chrono::milliseconds metrics_interval) {
  auto visible = env.find("CUDA_VISIBLE_DEVICES");
  auto path = env.find("PATH");
  return [nvidia_smi, visible = visible == env.end() ? "" : visible->second,
          path = path == env.end() ? "/usr/bin:/bin" : path->second,
          timeout = std::clamp(metrics_interval, std::chrono::milliseconds(1000), std::chrono::milliseconds(5000))] {
    return SampleGpus(nvidia_smi, visible, path, timeout);
  };
}

}  // namespace loom::executor
