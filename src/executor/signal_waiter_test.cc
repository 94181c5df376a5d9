#include "executor/signal_waiter.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "core/clock.h"

namespace loom::executor {
namespace {

using namespace std::chrono_literals;

TEST(SignalWaiter, AWakeBeforeTheWaitEndsIt) {
  FakeClock clock;  // a fake clock's wait has no timeout of its own: only the wake ends it
  SignalWaiter waits(clock, nullptr);
  waits.Wake();
  EXPECT_EQ(waits.WaitForEvent(60'000), 0);
}

TEST(SignalWaiter, WaitUntilEndsWhenTheFakeClockReachesTheDeadline) {
  FakeClock clock;
  SignalWaiter waits(clock, nullptr);
  auto deadline = clock.Now() + 5s;
  // Whether the jumps come before or during the wait, the watch's wake makes it look again.
  std::thread mover([&] {
    clock.Advance(3s);
    clock.Advance(2s);
  });
  EXPECT_EQ(waits.WaitUntil(deadline), 0);
  EXPECT_GE(clock.Now(), deadline);
  mover.join();
}

// The cases below block signals on the test's main thread (SignalWaiter::Open), as the
// executor does before it starts any thread; gtest runs every case on that thread.

TEST(SignalWaiter, ATerminatingSignalEndsTheWaitAndIsReturned) {
  FakeClock clock;
  SignalWaiter waits(clock, nullptr);
  waits.Open();
  ASSERT_EQ(::raise(SIGTERM), 0);  // pending, not delivered: Open blocked it
  EXPECT_EQ(waits.WaitUntil(clock.Now() + 1h), SIGTERM);
}

TEST(SignalWaiter, AChildsEndIsHandedToOnChildAndTheWaitGoesOn) {
  FakeClock clock;
  int reaped = 0;
  SignalWaiter waits(clock, [&] {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) ++reaped;
  });
  waits.Open();
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  while (reaped == 0) EXPECT_EQ(waits.WaitForEvent(-1), 0);  // SIGCHLD is not terminating
  EXPECT_EQ(reaped, 1);
}

TEST(SignalWaiter, ASignalDuringACallCancelsItOnceAndIsReturned) {
  FakeClock clock;
  SignalWaiter waits(clock, nullptr);
  waits.Open();
  std::promise<void> cancelled;
  int cancels = 0;
  int sig = waits.CallWatchingSignals(
      [&] {
        ::kill(::getpid(), SIGHUP);  // process-directed; only the waiter's signalfd takes it
        cancelled.get_future().wait();
      },
      [&] {
        ++cancels;
        cancelled.set_value();
      });
  EXPECT_EQ(sig, SIGHUP);
  EXPECT_EQ(cancels, 1);
}

TEST(SignalWaiter, ACallIsCancelledWhenAlsoWhenTurnsTrue) {
  FakeClock clock;
  SignalWaiter waits(clock, nullptr);
  std::promise<void> cancelled;
  bool am_lost = true;
  waits.Wake();  // as the heartbeat thread wakes the waiter when it finds the AM lost
  int sig = waits.CallWatchingSignals([&] { cancelled.get_future().wait(); }, [&] { cancelled.set_value(); },
                                      [&] { return am_lost; });
  EXPECT_EQ(sig, 0);
}

TEST(SignalWaiter, ACallThatReturnsIsNotCancelled) {
  SignalWaiter waits(Clock::Real(), nullptr);
  int cancels = 0;
  bool called = false;
  EXPECT_EQ(waits.CallWatchingSignals([&] { called = true; }, [&] { ++cancels; }, [] { return false; }), 0);
  EXPECT_TRUE(called);
  EXPECT_EQ(cancels, 0);
}

}  // namespace
}  // namespace loom::executor
