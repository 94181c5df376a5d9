#include "web/connection_watchdog.h"

#include <algorithm>

namespace loom::web {

using SteadyClock = std::chrono::steady_clock;

ConnectionWatchdog::ConnectionWatchdog() : thread_([this] { Run(); }) {}

ConnectionWatchdog::~ConnectionWatchdog() {
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
    c.deadline = SteadyClock::now() + in;
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
    auto next = SteadyClock::time_point::max();
    auto now = SteadyClock::now();
    for (WatchedConnection* c : conns_) {
      if (c->fired) continue;
      if (c->deadline <= now) {
        ::shutdown(c->fd, c->how);
        c->fired = true;
      } else {
        next = std::min(next, c->deadline);
      }
    }
    if (next == SteadyClock::time_point::max()) {
      cv_.wait(lock);
    } else {
      cv_.wait_until(lock, next);
    }
  }
}

}  // namespace loom::web
