#pragma once
// EventLoop: one thread runs every posted closure and timer in order, so the state it guards
// (the AM's job) is touched by one thread only, as in Mesos' actors. Post() and friends are
// thread-safe; the closures themselves run on the loop thread. Timers run on the loop's Clock
// (core/clock.h), which a test can drive.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>

#include "core/clock.h"

namespace loom {

class EventLoop {
 public:
  using TimerId = uint64_t;

  explicit EventLoop(Clock& clock = Clock::Real());
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  void Post(std::function<void()> fn);
  TimerId PostAfter(std::chrono::milliseconds delay, std::function<void()> fn);
  // Runs until Stop(); returns after the closure that called Stop() finishes.
  void Run();
  // After Run() returned: runs the closures still queued (not the timers), so that nothing
  // posted late (an RPC waiting for its reply) is silently dropped.
  void RunPending();
  void Stop();
  Clock& clock() const { return clock_; }

 private:
  Clock& clock_;
  int watch_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::multimap<Clock::TimePoint, std::pair<TimerId, std::function<void()>>> timers_;
  TimerId next_id_ = 1;
  bool stopped_ = false;
};

}  // namespace loom
