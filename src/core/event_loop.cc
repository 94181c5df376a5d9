#include "core/event_loop.h"

#include "core/clock_wait.h"

namespace loom {

EventLoop::EventLoop(Clock& clock) : clock_(clock) {
  // A fake clock's jump may make a timer due: wake the loop to look.
  watch_ = clock_.Watch([this] {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  });
}

EventLoop::~EventLoop() { clock_.Unwatch(watch_); }

void EventLoop::Post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(fn));
  }
  cv_.notify_one();
}

EventLoop::TimerId EventLoop::PostAfter(std::chrono::milliseconds delay, std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  TimerId id = next_id_++;
  timers_.emplace(clock_.Now() + delay, std::make_pair(id, std::move(fn)));
  cv_.notify_one();
  return id;
}

void EventLoop::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopped_) {
    auto now = clock_.Now();
    std::function<void()> fn;
    if (!timers_.empty() && timers_.begin()->first <= now) {
      fn = std::move(timers_.begin()->second.second);
      timers_.erase(timers_.begin());
    } else if (!queue_.empty()) {
      fn = std::move(queue_.front());
      queue_.pop_front();
    } else {
      WaitOnceOnClock(clock_, cv_, lock, timers_.empty() ? Clock::TimePoint::max() : timers_.begin()->first);
      continue;
    }
    lock.unlock();
    fn();
    lock.lock();
  }
}

void EventLoop::RunPending() {
  while (true) {
    std::deque<std::function<void()>> batch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      batch.swap(queue_);
    }
    if (batch.empty()) return;
    for (auto& fn : batch) fn();
  }
}

void EventLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

}  // namespace loom
