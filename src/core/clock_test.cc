// The event loop's timers on a FakeClock: they run when the test moves time, in time order, and
// never before.

#include "core/clock.h"

#include <future>
#include <thread>
#include <vector>

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

}  // namespace
}  // namespace loom
