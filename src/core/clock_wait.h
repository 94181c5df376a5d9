#pragma once
// Waiting on a condition variable until a deadline read on a Clock. A real clock's deadline is
// steady_clock's, so the wait can time out by itself; a FakeClock's time moves only by Advance,
// so the waiter must have given the clock a Watch callback that notifies `cv`, and each wake
// checks the deadline again.

#include <condition_variable>
#include <mutex>

#include "core/clock.h"

namespace loom {

// Waits until `pred` holds or `clock` reaches `until`; `lock` is held on cv's mutex. Returns
// pred's last value, as condition_variable::wait_until does.
template <typename Pred>
bool WaitOnClock(const Clock& clock, std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 Clock::TimePoint until, Pred pred) {
  if (clock.IsReal()) {
    return cv.wait_until(lock, until, pred);
  }
  cv.wait(lock, [&] { return pred() || clock.Now() >= until; });
  return pred();
}

// One wait for a wake, or (real clock only) for `until`: the caller looks again at what is due.
inline void WaitOnceOnClock(const Clock& clock, std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                            Clock::TimePoint until = Clock::TimePoint::max()) {
  if (clock.IsReal() && until != Clock::TimePoint::max()) {
    cv.wait_until(lock, until);
  } else {
    cv.wait(lock);
  }
}

}  // namespace loom
