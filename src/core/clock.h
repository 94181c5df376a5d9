#pragma once
// Time that tests can drive. Code that waits or times out (the AM's event loop and its timers,
// heartbeat liveness) reads a Clock instead of std::chrono::steady_clock, so a unit test runs a
// 20-second timeout by advancing a FakeClock instead of sleeping, as Mesos' Clock::advance.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>

namespace loom {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
  // false for a FakeClock: its time moves only by Advance, so a waiter cannot wait_until a
  // deadline on it; it waits to be woken by the callback it gave Watch.
  virtual bool IsReal() const { return true; }
  // `wake` runs after every jump of a fake clock's time (never for the real one), until Unwatch.
  virtual int Watch(std::function<void()> wake) { return 0; }
  virtual void Unwatch(int id) {}

  // steady_clock.
  static Clock& Real();
};

// Starts at an arbitrary fixed point; moves only when told.
class FakeClock : public Clock {
 public:
  TimePoint Now() const override { return TimePoint(Duration(now_.load())); }
  bool IsReal() const override { return false; }
  int Watch(std::function<void()> wake) override;
  void Unwatch(int id) override;
  // Moves time forward by `d`, then wakes every watcher: timers now due run.
  void Advance(Duration d);

 private:
  std::atomic<Duration::rep> now_{std::chrono::duration_cast<Duration>(std::chrono::hours(1000)).count()};
  std::mutex mu_;  // held while watchers run: Unwatch returns only once none is running
  std::map<int, std::function<void()>> watchers_;
  int next_id_ = 1;
};

}  // namespace loom
