#include "executor/heartbeat_stream.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace loom::executor {

using Clock = std::chrono::steady_clock;

void HeartbeatStream::Start() { thread_ = std::thread([this] { Loop(); }); }

void HeartbeatStream::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    if (open_) open_->TryCancel();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
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
  const std::chrono::milliseconds interval = std::max(options_.interval, std::chrono::milliseconds(10));
  const auto lost_after = interval * std::max(1, options_.max_missed);
  std::atomic<int64_t> last_ok{Clock::now().time_since_epoch().count()};
  auto am_silent_too_long = [&] {
    return Clock::now().time_since_epoch().count() - last_ok.load() >= std::chrono::nanoseconds(lost_after).count();
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
        last_ok = Clock::now().time_since_epoch().count();
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
      lock.unlock();
      broken = !stream->Write(req);
      lock.lock();
      if (am_silent_too_long()) break;
      if (!broken) cv_.wait_for(lock, interval, [this] { return stop_ || fresh_; });
    }
    open_ = nullptr;
    lock.unlock();
    ctx.TryCancel();
    reader.join();
    (void)stream->Finish();
    lock.lock();
    if (stop_) return;
    if (am_silent_too_long()) {
      spdlog::error("AM unreachable for {} ms", lost_after.count());
      am_lost_ = true;
      options_.wake();
      return;
    }
    cv_.wait_for(lock, interval, [this] { return stop_; });  // then open a new stream
  }
}

}  // namespace loom::executor
