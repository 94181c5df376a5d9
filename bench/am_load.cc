// am_load: measures a real ApplicationMaster under N simulated executors.
//
// The AM runs in a child process with the real AM code and a broker that grants containers
// without starting anything (SimulatedBroker). This process then plays N executors over the
// same gRPC protocol: each registers and waits for the cluster spec (the gang), then all
// heartbeat once a second over their heartbeat streams. It reports, as one JSON line: time to complete the gang, the AM's CPU
// per second of steady heartbeating (from /proc/<pid>/stat), and the AM's RSS.
//
// Usage: am_load --tasks N [--heartbeat-seconds S] [--channels C]

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "am/application_master.h"
#include "control/auth.h"
#include "core/strings.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
constexpr char kSecret[] = "benchbenchbenchbenchbenchbenchbenchbenchbenchbenchbenchbenchbench";

// Grants every request at once and starts nothing: the executors are simulated elsewhere.
class SimulatedBroker : public loom::cluster::ContainerBroker {
 public:
  loom::Status Start(loom::cluster::ContainerEvents* e) override {
    events_ = e;
    return loom::Status::Ok();
  }
  loom::Status Request(const loom::cluster::ContainerRequest& r) override {
    events_->OnAllocated({"sim_" + r.task.DirName(), r.task, "127.0.0.1", {}});
    return loom::Status::Ok();
  }
  loom::Status Launch(const loom::cluster::Container&, const loom::cluster::LaunchSpec&) override {
    return loom::Status::Ok();
  }
  loom::Status Stop(const std::string& id, std::chrono::milliseconds) override { return loom::Status::Ok(); }
  void Shutdown(std::chrono::milliseconds) override {}
  std::string Describe() const override { return "simulated broker (benchmark)"; }

 private:
  loom::cluster::ContainerEvents* events_ = nullptr;
};

[[noreturn]] void RunAm(int tasks, const std::string& dir, int port_fd) {
  spdlog::set_level(spdlog::level::warn);
  loom::JobSpec spec;
  spec.framework = loom::Framework::kPyTorch;
  loom::TaskTypeSpec worker;
  worker.name = "worker";
  worker.instances = tasks;
  worker.command = "true";
  worker.resources = {64, 1, 0};
  spec.types.push_back(worker);
  loom::am::AmOptions o;
  o.spec = spec;
  o.job_dir = loom::history::JobDir(dir);
  o.job_id = "job_amload";
  o.secret = kSecret;
  o.setup.bind_address = "127.0.0.1";
  loom::cluster::ContainerBroker* broker = new SimulatedBroker();
  auto* events = new loom::history::EventLog(dir + "/events.jsonl");
  auto* am = new loom::am::ApplicationMaster(o, *broker, *events);
  std::thread announce([am, port_fd] {
    while (am->port() == 0) std::this_thread::sleep_for(1ms);
    int port = am->port();
    (void)!::write(port_fd, &port, sizeof(port));
  });
  announce.detach();
  (void)am->Run();
  ::_exit(0);
}

struct CpuSample {
  double cpu_seconds;
  Clock::time_point at;
};

CpuSample SampleCpu(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto fields = loom::Split(text.substr(text.rfind(')') + 2), ' ');
  double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  // utime and stime are fields 14 and 15 of stat; index 11 and 12 after the command.
  return {(std::stod(fields[11]) + std::stod(fields[12])) / ticks, Clock::now()};
}

long StatusKib(pid_t pid, const std::string& key) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (loom::StartsWith(line, key + ":")) return std::stol(line.substr(key.size() + 1));
  }
  return 0;
}

struct SimExecutor {
  grpc::ClientContext reg_ctx, spec_ctx;
  loom::control::RegisterRequest reg;
  loom::control::RegisterResponse reg_resp;
  loom::control::ClusterSpecRequest spec_req;
  loom::control::ClusterSpecResponse spec_resp;
};

// One simulated executor's heartbeat stream.
class HeartbeatStream : public grpc::ClientBidiReactor<loom::control::HeartbeatRequest, loom::control::HeartbeatResponse> {
 public:
  HeartbeatStream(loom::control::Control::Stub* stub, int index, std::atomic<long>* answered, std::atomic<long>* errors)
      : answered_(answered), errors_(errors) {
    ctx_.AddMetadata(loom::control::kSecretMetadataKey, kSecret);
    req_.mutable_task()->set_type("worker");
    req_.mutable_task()->set_index(index);
    stub->async()->Heartbeats(&ctx_, this);
    StartRead(&resp_);
    StartCall();
  }
  // Sends one heartbeat unless the previous one is still being written.
  void Beat() {
    if (writing_.exchange(true)) return;
    StartWrite(&req_);
  }
  void OnWriteDone(bool ok) override {
    writing_ = false;
    if (!ok) ++*errors_;
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    ++*answered_;
    StartRead(&resp_);
  }
  void OnDone(const grpc::Status& s) override {
    if (!s.ok() && s.error_code() != grpc::StatusCode::CANCELLED) ++*errors_;
  }

 private:
  grpc::ClientContext ctx_;
  loom::control::HeartbeatRequest req_;
  loom::control::HeartbeatResponse resp_;
  std::atomic<bool> writing_{false};
  std::atomic<long>* answered_;
  std::atomic<long>* errors_;
};

}  // namespace

int main(int argc, char** argv) {
  int tasks = 1000, hb_seconds = 10, channels = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--tasks") tasks = std::atoi(argv[i + 1]);
    if (a == "--heartbeat-seconds") hb_seconds = std::atoi(argv[i + 1]);
    if (a == "--channels") channels = std::atoi(argv[i + 1]);
  }
  std::string dir = std::filesystem::temp_directory_path() / ("loom_amload_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return 1;
  // Fork before this process touches gRPC: the AM gets a clean runtime.
  pid_t am_pid = ::fork();
  if (am_pid == 0) RunAm(tasks, dir, pipe_fds[1]);
  int port = 0;
  if (::read(pipe_fds[0], &port, sizeof(port)) != sizeof(port)) return 1;
  long rss_idle_kib = StatusKib(am_pid, "VmRSS");

  std::vector<std::unique_ptr<loom::control::Control::Stub>> stubs;
  for (int c = 0; c < channels; ++c) {
    grpc::ChannelArguments args;
    args.SetInt("loom.bench.channel", c);  // distinct args: distinct connections
    stubs.push_back(loom::control::Control::NewStub(
        grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), args)));
  }
  std::vector<std::unique_ptr<SimExecutor>> sims(tasks);
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<int> specs{0}, errors{0};

  auto t0 = Clock::now();
  for (int i = 0; i < tasks; ++i) {
    sims[i] = std::make_unique<SimExecutor>();
    SimExecutor* s = sims[i].get();
    auto* stub = stubs[i % channels].get();
    s->reg.mutable_task()->set_type("worker");
    s->reg.mutable_task()->set_index(i);
    s->reg.set_host("127.0.0.1");
    s->reg.set_port(20000 + i % 10000);
    s->reg.set_container_id("sim_worker-" + std::to_string(i));
    s->reg_ctx.AddMetadata(loom::control::kSecretMetadataKey, kSecret);
    stub->async()->Register(&s->reg_ctx, &s->reg, &s->reg_resp, [&, s, stub, i](grpc::Status st) {
      if (!st.ok()) {
        ++errors;
        std::lock_guard<std::mutex> l(mu);
        cv.notify_all();
        return;
      }
      s->spec_req.mutable_task()->set_type("worker");
      s->spec_req.mutable_task()->set_index(i);
      s->spec_ctx.AddMetadata(loom::control::kSecretMetadataKey, kSecret);
      stub->async()->GetClusterSpec(&s->spec_ctx, &s->spec_req, &s->spec_resp, [&](grpc::Status st2) {
        if (!st2.ok()) ++errors;
        else ++specs;
        std::lock_guard<std::mutex> l(mu);
        cv.notify_all();
      });
    });
  }
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait_for(l, 120s, [&] { return specs + errors >= tasks; });
  }
  double gang_s = std::chrono::duration<double>(Clock::now() - t0).count();
  long rss_gang_kib = StatusKib(am_pid, "VmRSS");

  // Steady state: every executor keeps its heartbeat stream open and sends a heartbeat a
  // second, spread over the second, as real executors do.
  std::atomic<long> beats{0}, beat_errors{0};
  std::vector<std::unique_ptr<HeartbeatStream>> streams;
  for (int i = 0; i < tasks; ++i) {
    streams.push_back(std::make_unique<HeartbeatStream>(stubs[i % channels].get(), i, &beats, &beat_errors));
  }
  CpuSample before = SampleCpu(am_pid);
  for (int second = 0; second < hb_seconds; ++second) {
    auto start = Clock::now();
    const int slices = 20;
    for (int slice = 0; slice < slices; ++slice) {
      std::this_thread::sleep_until(start + std::chrono::milliseconds(1000 * slice / slices));
      for (int i = slice; i < tasks; i += slices) streams[i]->Beat();
    }
    std::this_thread::sleep_until(start + 1s);
  }
  CpuSample after = SampleCpu(am_pid);
  double wall = std::chrono::duration<double>(after.at - before.at).count();
  double cpu_fraction = (after.cpu_seconds - before.cpu_seconds) / wall;
  long rss_kib = StatusKib(am_pid, "VmRSS"), hwm_kib = StatusKib(am_pid, "VmHWM");
  std::this_thread::sleep_for(500ms);  // let the last heartbeats land

  std::printf(
      "{\"tasks\": %d, \"gang_seconds\": %.3f, \"spec_errors\": %d, \"heartbeats\": %ld, \"heartbeat_errors\": %ld, "
      "\"am_cpu_fraction_of_one_core\": %.4f, \"am_rss_idle_mib\": %.1f, \"am_rss_after_gang_mib\": %.1f, "
      "\"am_rss_mib\": %.1f, \"am_peak_rss_mib\": %.1f}\n",
      tasks, gang_s, errors.load(), beats.load(), beat_errors.load(), cpu_fraction, rss_idle_kib / 1024.0,
      rss_gang_kib / 1024.0, rss_kib / 1024.0, hwm_kib / 1024.0);
  std::fflush(stdout);
  ::kill(am_pid, SIGKILL);
  ::waitpid(am_pid, nullptr, 0);
  std::filesystem::remove_all(dir);
  ::_exit(errors == 0 && beat_errors == 0 ? 0 : 1);  // skip gRPC teardown of thousands of contexts
}
