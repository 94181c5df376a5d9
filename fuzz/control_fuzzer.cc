// Fuzzes the ApplicationMaster's control plane with arbitrary messages: the first byte picks the
// call (Register, GetClusterSpec, TaskStarted, Heartbeat, ReportExit, JobState), the rest is
// parsed as that protobuf message and handed to a real AM (with a test-double broker) exactly
// as its gRPC service would. Malformed or hostile messages must never crash it.

#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <thread>

#include <spdlog/spdlog.h>

#include "am/application_master.h"
#include "cluster/fake_container_broker.h"

namespace {

struct Harness {
  Harness() {
    spdlog::set_level(spdlog::level::off);
    static int made = 0;
    dir = std::filesystem::temp_directory_path() /
          ("loom_fuzz_am_" + std::to_string(::getpid()) + "_" + std::to_string(++made));
    std::filesystem::create_directories(dir);
    loom::TaskTypeSpec worker;
    worker.name = "worker";
    worker.instances = 3;
    worker.command = "true";
    worker.resources = {64, 1, 0};
    loom::TaskTypeSpec ps = worker;
    ps.name = "ps";
    ps.instances = 1;
    ps.role = loom::TaskRole::kUntracked;
    loom::am::AmOptions o;
    o.spec.framework = loom::Framework::kTensorFlow;
    o.spec.types = {worker, ps};
    o.spec.max_missed_heartbeats = 1000000;  // no task is ever lost while fuzzing
    o.job_dir = loom::history::JobDir(dir.string());
    o.job_id = "job_fuzz";
    o.secret = std::string(64, 's');
    o.setup.bind_address = "127.0.0.1";
    events = std::make_unique<loom::history::EventLog>(dir.string() + "/events.jsonl");
    am = std::make_unique<loom::am::ApplicationMaster>(o, broker, *events);
    runner = std::thread([this] {
      (void)am->Run();
      ended = true;
    });
    while (am->port() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    while (broker.requested() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    broker.GrantAll();
    while (broker.launched() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Only once its job ended (`ended`): the AM is then done with everything here.
  ~Harness() {
    runner.join();
    am.reset();
    events.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  std::filesystem::path dir;
  loom::cluster::FakeContainerBroker broker;
  std::unique_ptr<loom::history::EventLog> events;
  std::unique_ptr<loom::am::ApplicationMaster> am;
  std::atomic<bool> ended{false};
  std::thread runner;  // the last harness is left running: the fuzzer process exits without tearing it down
};

template <typename Req, typename Resp, typename Call>
void Send(const uint8_t* data, size_t size, Call call) {
  Req req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return;
  // The reply may come after this call has given up waiting (a task's end can end the job, and
  // that is slow under ASan), so it owns its promise. A call answered twice is an AM defect.
  auto done = std::make_shared<std::promise<void>>();
  auto answers = std::make_shared<std::atomic<int>>(0);
  auto answered = done->get_future();
  call(req, [done, answers](const loom::Status&, const Resp&) {
    if (answers->fetch_add(1) > 0) {
      std::fprintf(stderr, "control_fuzzer: a call was answered twice\n");
      std::abort();
    }
    done->set_value();
  });
  // Unanswered calls are legal (GetClusterSpec waits for the gang); don't wait for those long.
  answered.wait_for(std::chrono::milliseconds(50));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness* h = new Harness();
  if (h->ended) {
    // A fuzzed exit report or registration ended the job: go on against a fresh one, or every
    // later call would wait out its 50 ms on a stopped loop.
    delete h;
    h = new Harness();
  }
  if (size < 1) return 0;
  auto* am = h->am.get();
  const uint8_t* body = data + 1;
  size_t n = size - 1;
  using namespace loom::control;
  switch (data[0] % 6) {
    case 0:
      Send<RegisterRequest, RegisterResponse>(body, n, [am](auto& r, auto reply) { am->HandleRegister(r, reply); });
      break;
    case 1: {
      // May legitimately wait for the gang: answered later or when the job ends.
      ClusterSpecRequest req;
      if (req.ParseFromArray(body, static_cast<int>(n))) {
        am->HandleGetClusterSpec(req, [](const loom::Status&, const ClusterSpecResponse&) {});
      }
      break;
    }
    case 2:
      Send<TaskStartedRequest, Ack>(body, n, [am](auto& r, auto reply) { am->HandleTaskStarted(r, reply); });
      break;
    case 3: {
      HeartbeatRequest req;
      HeartbeatResponse resp;
      if (req.ParseFromArray(body, static_cast<int>(n))) (void)am->HandleHeartbeat(req, &resp);
      break;
    }
    case 4:
      Send<ExitReport, Ack>(body, n, [am](auto& r, auto reply) { am->HandleReportExit(r, reply); });
      break;
    case 5:
      Send<JobStateRequest, JobStateResponse>(body, n, [am](auto& r, auto reply) { am->HandleJobState(r, reply); });
      break;
  }
  return 0;
}
