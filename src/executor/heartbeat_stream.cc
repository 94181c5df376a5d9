#include "executor/heartbeat_stream.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "core/clock_wait.h"
#include "executor/timing_policy.h"

namespace loom::executor {

namespace {
int64_t Ns(Clock::TimePoint t) { return t.time_since_epoch().count(); }
}  // namespace

void HeartbeatStream::Start() {
  Clock& clock = *options_.clock;
  // Here, not on the thread: a test that advances a fake clock right after Start counts from here.
  last_heard_ns_ = Ns(clock.Now());
  // A fake clock's jump may end a wait: the thread looks again.
  clock_watch_ = clock.Watch([this] {
    { std::lock_guard<std::mutex> l(mu_); }
    cv_.notify_all();
  });
  thread_ = std::thread([this] { Loop(); });
}

void HeartbeatStream::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    if (open_) open_->TryCancel();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  options_.clock->Unwatch(clock_watch_);
  clock_watch_ = 0;
}

void HeartbeatStream::Offer(const MetricsSample& sample) {
  {
    std::lock_guard<std::mutex> l(mu_);
    latest_ = sample;
    fresh_ = true;
  }
  cv_.notify_all();
}

void HeartbeatStream::Loop() {
  Clock& clock = *options_.clock;
  const std::chrono::milliseconds interval = HeartbeatInterval(options_.interval);
  auto am_silent_too_long = [&] {
    Clock::TimePoint last_heard{Clock::Duration(last_heard_ns_.load())};
    return AmLost(options_.interval, options_.max_missed, last_heard, clock.Now());
  };
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    grpc::ClientContext ctx;
    options_.am->Prepare(ctx);
    open_ = &ctx;
    lock.unlock();
    auto stream = options_.am->stub().Heartbeats(&ctx);
    std::thread reader([&] {
      control::HeartbeatResponse resp;
      while (stream->Read(&resp)) {
        last_heard_ns_ = Ns(clock.Now());
        if (resp.stop() && !am_wants_stop_.exchange(true)) options_.wake();
      }
    });
    bool broken = false;
    lock.lock();
    while (!stop_ && !broken) {
      fresh_ = false;
      control::HeartbeatRequest req;
      *req.mutable_task() = options_.task;
      req.set_rss_bytes(latest_.rss_bytes);
      req.set_gpu_utilization_percent(latest_.gpu_utilization_percent);
      req.set_gpu_memory_bytes(latest_.gpu_memory_bytes);
      if (latest_.cpu_cores) req.set_cpu_cores(static_cast<float>(*latest_.cpu_cores));
      for (const GpuDevice& d : latest_.gpus) {
        control::GpuDevice* g = req.add_gpus();
        g->set_index(d.index);
        g->set_utilization_percent(d.utilization_percent);
        g->set_memory_bytes(d.memory_used_bytes);
      }
      req.set_sample_seq(latest_.seq);
      lock.unlock();
      broken = !stream->Write(req);
      lock.lock();
      if (am_silent_too_long()) break;
      if (!broken) WaitOnClock(clock, cv_, lock, clock.Now() + interval, [this] { return stop_ || fresh_; });
    }
    open_ = nullptr;
    lock.unlock();
    ctx.TryCancel();
    reader.join();
    (void)stream->Finish();
    lock.lock();
    if (stop_) return;
    if (am_silent_too_long()) {
      spdlog::error("AM unreachable for {} ms", AmSilenceLimit(options_.interval, options_.max_missed).count());
      am_lost_ = true;
      options_.wake();
      return;
    }
    WaitOnClock(clock, cv_, lock, clock.Now() + interval, [this] { return stop_; });  // then open a new stream
  }
}

}  // namespace loom::executor
