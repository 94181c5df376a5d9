#include "web/connection_watchdog.h"

#include <algorithm>

#include "core/clock_wait.h"

namespace loom::web {

ConnectionWatchdog::ConnectionWatchdog(Clock& clock) : clock_(clock) {
  // A fake clock's jump may pass a deadline: the watchdog looks again (under its mutex, so that
  // a jump between its look and its wait is not missed).
  clock_watch_ = clock_.Watch([this] {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_one();
  });
  thread_ = std::thread([this] { Run(); });
}

ConnectionWatchdog::~ConnectionWatchdog() {
  clock_.Unwatch(clock_watch_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void ConnectionWatchdog::Arm(WatchedConnection& c, std::chrono::milliseconds in, int how) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    c.deadline = clock_.Now() + in;
    c.how = how;
    c.fired = false;
    conns_.insert(&c);
  }
  cv_.notify_one();
}

void ConnectionWatchdog::Disarm(WatchedConnection& c) {
  std::lock_guard<std::mutex> lock(mu_);
  conns_.erase(&c);
}

void ConnectionWatchdog::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    auto next = Clock::TimePoint::max();
    auto now = clock_.Now();
    for (WatchedConnection* c : conns_) {
      if (c->fired) continue;
      if (c->deadline <= now) {
        ::shutdown(c->fd, c->how);
        c->fired = true;
      } else {
        next = std::min(next, c->deadline);
      }
    }
    WaitOnceOnClock(clock_, cv_, lock, next);
  }
}

}  // namespace loom::web
