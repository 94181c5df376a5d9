// The event loop's timers on a FakeClock: they run when the test moves time, in time order, and
// never before; a condition wait on a FakeClock ends at its deadline or its condition.

#include "core/clock.h"

#include <future>
#include <thread>
#include <vector>

#include "core/clock_wait.h"
#include "core/event_loop.h"
#include "core/testing.h"

namespace loom {
namespace {

using namespace std::chrono_literals;

class FakeClockLoopTest : public ::testing::Test {
 protected:
  void SetUp() override { runner_ = std::thread([this] { loop_.Run(); }); }
  void TearDown() override {
    loop_.Stop();
    runner_.join();
  }
  // What the timers had done once the loop ran everything due so far: timers due are run before
  // closures posted after them.
  std::vector<int> Fired() {
    std::promise<std::vector<int>> seen;
    loop_.Post([&] { seen.set_value(fired_); });
    return seen.get_future().get();
  }

  FakeClock clock_;
  EventLoop loop_{clock_};
  std::vector<int> fired_;  // touched on the loop thread only
  std::thread runner_;
};

TEST_F(FakeClockLoopTest, TimersRunOnlyWhenTimeIsAdvancedPastThem) {
  loop_.PostAfter(20s, [this] { fired_.push_back(20); });
  loop_.PostAfter(5s, [this] { fired_.push_back(5); });
  EXPECT_EQ(Fired(), std::vector<int>{});
  clock_.Advance(4999ms);
  EXPECT_EQ(Fired(), std::vector<int>{});
  clock_.Advance(1ms);
  EXPECT_EQ(Fired(), std::vector<int>{5});
  clock_.Advance(1h);
  EXPECT_EQ(Fired(), (std::vector<int>{5, 20}));
}

TEST_F(FakeClockLoopTest, ATimerArmedByATimerCountsFromTheTimeItWasArmed) {
  // A periodic check, as the AM's heartbeat check re-arms itself.
  std::function<void()> tick = [this, &tick] {
    fired_.push_back(static_cast<int>(fired_.size()));
    loop_.PostAfter(1s, tick);
  };
  loop_.PostAfter(1s, tick);
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(1s);
    (void)Fired();  // the tick has run and armed the next one
  }
  EXPECT_EQ(Fired(), (std::vector<int>{0, 1, 2}));
  clock_.Advance(10s);  // one jump: due once, as Mesos' Clock::advance
  EXPECT_EQ(Fired(), (std::vector<int>{0, 1, 2, 3}));
  clock_.Advance(999ms);  // the next is due 1 s after that one ran
  EXPECT_EQ(Fired(), (std::vector<int>{0, 1, 2, 3}));
  clock_.Advance(1ms);
  EXPECT_EQ(Fired(), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(FakeClock, MovesOnlyWhenToldAndTheRealOneMovesByItself) {
  FakeClock fake;
  Clock::TimePoint t = fake.Now();
  EXPECT_EQ(fake.Now(), t);
  fake.Advance(250ms);
  EXPECT_EQ(fake.Now() - t, 250ms);
  EXPECT_FALSE(fake.IsReal());
  EXPECT_TRUE(Clock::Real().IsReal());
  EXPECT_LE(std::chrono::steady_clock::now() - Clock::Real().Now(), 1s);
}

// A waiter on a FakeClock, as the heartbeat stream and the YARN broker wait: the clock's Watch
// wakes it after each jump, and it returns once the clock has reached its deadline or its
// condition holds.
class WaitOnClockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    watch_ = clock_.Watch([this] {
      std::lock_guard<std::mutex> l(mu_);
      cv_.notify_all();
    });
  }
  void TearDown() override { clock_.Unwatch(watch_); }
  // Starts a wait until 5 s from now; its result arrives in the future.
  std::future<bool> WaitFiveSeconds() {
    Clock::TimePoint until = clock_.Now() + 5s;
    return std::async(std::launch::async, [this, until] {
      std::unique_lock<std::mutex> lock(mu_);
      return WaitOnClock(clock_, cv_, lock, until, [this] { return done_; });
    });
  }

  FakeClock clock_;
  int watch_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;  // guarded by mu_
};

TEST_F(WaitOnClockTest, EndsWhenTheClockReachesTheDeadline) {
  std::future<bool> waited = WaitFiveSeconds();
  clock_.Advance(4s);
  EXPECT_EQ(waited.wait_for(0s), std::future_status::timeout);
  clock_.Advance(1s);
  EXPECT_FALSE(waited.get());  // the deadline, not the condition
}

TEST_F(WaitOnClockTest, EndsWhenTheConditionHoldsBeforeTheDeadline) {
  std::future<bool> waited = WaitFiveSeconds();
  {
    std::lock_guard<std::mutex> l(mu_);
    done_ = true;
    cv_.notify_all();
  }
  EXPECT_TRUE(waited.get());
}

}  // namespace
}  // namespace loom
