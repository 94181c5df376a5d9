#pragma once
// The executor's main thread waits in one place for three things: a terminating signal
// (SIGTERM, SIGINT, SIGHUP, read from a signalfd), a wake from one of its other threads (the
// heartbeats, an RPC's caller) and the clock (a deadline on the real one, a jump of a fake one).
// So a SIGTERM ends any wait at once, and a unit test drives the waits by advancing a FakeClock.

#include <functional>

#include "core/clock.h"

namespace loom::executor {

class SignalWaiter {
 public:
  // `on_child` runs on the waiting thread for each SIGCHLD read: the caller reaps there.
  SignalWaiter(Clock& clock, std::function<void()> on_child);
  ~SignalWaiter();
  SignalWaiter(const SignalWaiter&) = delete;
  SignalWaiter& operator=(const SignalWaiter&) = delete;

  // Blocks SIGTERM, SIGINT, SIGHUP and SIGCHLD on the calling thread and opens the signalfd:
  // call it before any other thread exists, which then inherits the mask, so that no thread but
  // the waiting one takes them.
  void Open();
  // Ends the current or next wait; safe from any thread.
  void Wake();
  // Waits up to `timeout_ms` for a signal or a Wake(); returns the terminating signal, if any
  // (0: none). On a fake clock, until a signal, a Wake() or the clock's next jump (the timeout
  // is the clock's to count).
  int WaitForEvent(int timeout_ms);
  // Waits until `deadline` on the clock, unless a terminating signal comes first (returned).
  int WaitUntil(Clock::TimePoint deadline);
  // Runs the blocking `call` on a thread of its own while this thread watches the signals; a
  // terminating signal, or `also_when` turning true (checked at each wake), runs `cancel` once
  // (it must make `call` return). Returns the signal that cancelled the call (0: none).
  int CallWatchingSignals(const std::function<void()>& call, const std::function<void()>& cancel,
                          const std::function<bool()>& also_when = nullptr);

 private:
  // Reads every pending signal; returns the first terminating one (0: none).
  int Drain();

  Clock& clock_;
  std::function<void()> on_child_;
  int signal_fd_ = -1;
  int wake_fd_ = -1;
  int clock_watch_ = 0;
};

}  // namespace loom::executor
