#pragma once
// ConnectionWatchdog: a whole-time limit on the connections of a cpp-httplib server, which
// times only single reads and writes: a client that sends a byte every few seconds would hold a
// serving thread for ever. A serving thread arms its connection with a deadline; at the
// deadline the watchdog shuts the socket down (for reading: cpp-httplib then takes the client
// as gone and closes the connection unanswered; both ways: an answer stops too). Used by the
// dashboard's and portal's HttpServer and by the AM's rendezvous store. Deadlines are read on
// a Clock: a unit test passes a FakeClock and moves it past a deadline instead of waiting.

#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "core/clock.h"

namespace loom::web {

// One serving thread's connection.
struct WatchedConnection {
  int fd = -1;  // the caller's own duplicate of the socket (so that the watchdog never shuts a
                // number cpp-httplib closed and another connection took), closed by the caller
  Clock::TimePoint deadline;
  int how = SHUT_RD;   // what is shut at the deadline
  bool fired = false;  // guarded by the watchdog
};

class ConnectionWatchdog {
 public:
  explicit ConnectionWatchdog(Clock& clock = Clock::Real());
  ~ConnectionWatchdog();
  ConnectionWatchdog(const ConnectionWatchdog&) = delete;
  ConnectionWatchdog& operator=(const ConnectionWatchdog&) = delete;

  // `c` is shut (`how`) once `in` has passed, unless armed again or disarmed before.
  void Arm(WatchedConnection& c, std::chrono::milliseconds in, int how);
  // After this, the watchdog never touches `c` again.
  void Disarm(WatchedConnection& c);

 private:
  void Run();

  Clock& clock_;
  int clock_watch_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                     // mu_
  std::set<WatchedConnection*> conns_;    // mu_: those of the serving threads, a few
  std::thread thread_;
};

}  // namespace loom::web
