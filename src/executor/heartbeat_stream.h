#pragma once
// An executor's heartbeats to its AM: one long-lived gRPC stream (a message each way per
// interval costs far less than a call per heartbeat), opened again when it breaks, until the
// AM has been silent for max-missed-heartbeats intervals. Each heartbeat carries the latest
// metrics sample; a new sample is sent at once, so the AM sees it within
// loom.task.metrics-interval-ms whatever the heartbeat interval. The AM answers whether the
// task should stop. Its waits and the AM's silence are read on a Clock (core/clock.h): a test
// finds the AM lost by advancing a FakeClock.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "control/control_client.h"
#include "core/clock.h"
#include "executor/task_metrics.h"

namespace loom::executor {

class HeartbeatStream {
 public:
  struct Options {
    const control::ControlClient* am = nullptr;  // outlives this
    control::TaskRef task;
    std::chrono::milliseconds interval{1000};
    int max_missed = 1;
    std::function<void()> wake;  // called when the AM asks to stop or is found lost
    Clock* clock = &Clock::Real();  // outlives this
  };

  explicit HeartbeatStream(Options options) : options_(std::move(options)) {}
  ~HeartbeatStream() { Stop(); }
  HeartbeatStream(const HeartbeatStream&) = delete;
  HeartbeatStream& operator=(const HeartbeatStream&) = delete;

  // Starts the sending thread; the AM's silence is counted from here.
  void Start();
  // Ends the stream and joins the thread; idempotent.
  void Stop();
  // The latest sample: sent at once.
  void Offer(const MetricsSample& sample);
  bool am_wants_stop() const { return am_wants_stop_; }
  bool am_lost() const { return am_lost_; }

 private:
  void Loop();

  const Options options_;
  std::thread thread_;
  int clock_watch_ = 0;
  std::atomic<int64_t> last_heard_ns_{0};  // when the AM last answered, on the clock
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                   // guarded by mu_
  bool fresh_ = false;                  // a sample not yet sent, guarded by mu_
  grpc::ClientContext* open_ = nullptr;  // the open stream's, guarded by mu_
  MetricsSample latest_;                // guarded by mu_
  std::atomic<bool> am_wants_stop_{false};
  std::atomic<bool> am_lost_{false};
};

}  // namespace loom::executor
