// The executor's decisions in time from tables: a row per rule, each with the case on either
// side of it. Times are offsets from a fixed point on a clock; nothing here waits.

#include "executor/timing_policy.h"

#include <initializer_list>
#include <vector>

#include "core/testing.h"

namespace loom::executor {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

const Clock::TimePoint t0{std::chrono::hours(1000)};

TEST(RegistrationRetry, BacksOffAndGivesUpFromTheTable) {
  struct Row {
    const char* what;
    milliseconds elapsed;  // since the first call
    int failures;
    RegistrationStep want;  // give up, wait
  };
  // A table per limit: the backoff alone, then where the limit cuts it short.
  auto check = [](milliseconds limit, std::initializer_list<Row> rows) {
    for (const Row& r : rows) {
      RegistrationStep got = DecideRegistrationRetry({limit, t0, r.failures}, t0 + r.elapsed);
      EXPECT_EQ(got.give_up, r.want.give_up) << r.what;
      EXPECT_EQ(got.wait, r.want.wait) << r.what;
    }
  };
  check(0ms /* forever */, {
                               {"the first failure waits 50 ms", 10ms, 1, {false, 50ms}},
                               {"then 100 ms", 100ms, 2, {false, 100ms}},
                               {"doubling", 300ms, 4, {false, 400ms}},
                               {"the fifth waits 800 ms", 1s, 5, {false, 800ms}},
                               {"the sixth is held at 1 s", 2s, 6, {false, 1000ms}},
                               {"and stays at 1 s", 1h, 1000, {false, 1000ms}},
                               {"forever never gives up", 24h, 9, {false, 1000ms}},
                           });
  check(10s, {
                 {"with a limit, the backoff as without", 100ms, 2, {false, 100ms}},
                 {"the wait never runs past the limit", 9970ms, 3, {false, 30ms}},
                 {"1 ms left is waited", 9999ms, 8, {false, 1ms}},
                 {"the limit reached: give up", 10s, 8, {true, 0ms}},
                 {"past the limit: give up", 12s, 1, {true, 0ms}},
             });
}

TEST(RegistrationRetry, EachCallIsLimitedFromTheTable) {
  struct Row {
    const char* what;
    milliseconds limit, elapsed, want;
  } rows[] = {
      {"forever: 10 s a call", 0ms, 1h, 10s},
      {"a long limit: 10 s a call", 60s, 1s, 10s},
      {"what is left of the limit", 60s, 55s, 5s},
      {"a short limit", 2s, 0ms, 2s},
      {"at the limit still 1 ms", 2s, 2s, 1ms},
      {"past it still 1 ms", 2s, 5s, 1ms},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(RegistrationCallLimit({r.limit, t0, 0}, t0 + r.elapsed), r.want) << r.what;
  }
}

// The whole schedule a registration goes through against an AM that never answers, on a
// FakeClock: each call takes its full limit, then the executor waits what it was told.
TEST(RegistrationRetry, TheScheduleOnAFakeClock) {
  FakeClock clock;
  RegistrationRetry retry{.limit = 3s, .start = clock.Now()};
  std::vector<milliseconds> calls, waits;
  while (true) {
    milliseconds call = RegistrationCallLimit(retry, clock.Now());
    calls.push_back(call);
    clock.Advance(call > 200ms ? 200ms : call);  // the call fails after 200 ms (refused)
    ++retry.failures;
    RegistrationStep step = DecideRegistrationRetry(retry, clock.Now());
    if (step.give_up) break;
    waits.push_back(step.wait);
    clock.Advance(step.wait);
  }
  // Calls end at 200, 450, 750, 1150, 1750 and 2750 ms; the last wait is what is left of the
  // limit (not 1 s); at the limit one more call of 1 ms goes out, then it gives up.
  EXPECT_EQ(waits, (std::vector<milliseconds>{50ms, 100ms, 200ms, 400ms, 800ms, 250ms}));
  EXPECT_EQ(calls.front(), 3s);
  EXPECT_EQ(calls[5], 450ms);  // a call gets only what is left of the limit
  EXPECT_EQ(calls.back(), 1ms);
  EXPECT_EQ(clock.Now() - retry.start, 3001ms);
}

TEST(AmLost, FromTheTable) {
  struct Row {
    milliseconds interval;
    int max_missed;
    milliseconds silent;
    bool lost;
  } rows[] = {
      {1000ms, 3, 0ms, false},    {1000ms, 3, 2999ms, false}, {1000ms, 3, 3000ms, true},
      {1000ms, 3, 1h, true},      {200ms, 5, 999ms, false},   {200ms, 5, 1000ms, true},
      // max-missed below 1 counts as 1; an interval below 10 ms as 10 ms.
      {1000ms, 0, 999ms, false},  {1000ms, 0, 1000ms, true},  {1ms, 2, 19ms, false},
      {1ms, 2, 20ms, true},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(AmLost(r.interval, r.max_missed, t0, t0 + r.silent), r.lost)
        << r.interval.count() << " ms x " << r.max_missed << ", silent " << r.silent.count() << " ms";
  }
  EXPECT_EQ(AmSilenceLimit(1000ms, 25), 25s);
  EXPECT_EQ(HeartbeatInterval(0ms), 10ms);
}

using Pacer = SupervisionPacer;

TEST(SupervisionPacer, EveryBeatIsDueAtTheStart) {
  Pacer pacer({.metrics_every = 5s, .watchdog = true, .execution_timeout = 0ms}, t0);
  EXPECT_EQ(pacer.Wait({.tb_pending = true}, t0), 0ms);
  EXPECT_EQ(pacer.DueAt({.tb_pending = true}, t0), (Pacer::Due{.sample = true, .watch = true, .tb_probe = true}));
}

// After every beat was done at t0: how long the loop waits at t0 + `at`, and what is due then.
TEST(SupervisionPacer, WaitsAndBeatsFromTheTable) {
  struct Row {
    const char* what;
    Pacer::Settings settings;  // metrics every, watchdog, execution timeout
    Pacer::State state;        // terminating, TensorBoard pending
    milliseconds at;
    milliseconds wait;
    Pacer::Due due;  // sample, watch, TensorBoard probe, timed out
  } rows[] = {
      {"only metrics: until the next sample", {5s, false, 0ms}, {}, 0ms, 5s, {}},
      {"part of the way", {5s, false, 0ms}, {}, 2s, 3s, {}},
      {"the sample is due", {5s, false, 0ms}, {}, 5s, 0ms, {.sample = true}},
      {"late: no negative wait", {5s, false, 0ms}, {}, 7s, 0ms, {.sample = true}},
      {"metrics below 10 ms count as 10 ms", {1ms, false, 0ms}, {}, 0ms, 10ms, {}},
      {"at most a minute", {10min, false, 0ms}, {}, 0ms, 60s, {}},
      {"the watchdog's beat is faster", {5s, true, 0ms}, {}, 0ms, 500ms, {}},
      {"the watchdog is due", {5s, true, 0ms}, {}, 500ms, 0ms, {.watch = true}},
      {"no watchdog: its beat is ignored", {5s, false, 0ms}, {}, 500ms, 4500ms, {}},
      {"the TensorBoard probe", {5s, false, 0ms}, {false, true}, 0ms, 250ms, {}},
      {"the probe is due", {5s, false, 0ms}, {false, true}, 250ms, 0ms, {.tb_probe = true}},
      {"no probe once announced", {5s, false, 0ms}, {false, false}, 250ms, 4750ms, {}},
      {"no probe while terminating", {5s, false, 0ms}, {true, true}, 250ms, 4750ms, {}},
      {"the execution timeout wakes the loop", {5s, false, 2s}, {}, 0ms, 2s, {}},
      {"before the timeout", {5s, false, 2s}, {}, 1999ms, 1ms, {}},
      {"the timeout", {5s, false, 2s}, {}, 2s, 0ms, {.timed_out = true}},
      {"terminating: not woken for the timeout", {5s, false, 2s}, {true, false}, 0ms, 5s, {}},
      {"terminating: the timeout still reads as passed", {5s, false, 2s}, {true, false}, 3s, 2s,
       {.timed_out = true}},
  };
  for (const Row& r : rows) {
    Pacer pacer(r.settings, t0);
    pacer.Sampled(t0);
    pacer.Watched(t0);
    pacer.Probed(t0);
    EXPECT_EQ(pacer.Wait(r.state, t0 + r.at), r.wait) << r.what;
    EXPECT_EQ(pacer.DueAt(r.state, t0 + r.at), r.due) << r.what;
  }
}

// A supervision's beats on a FakeClock: a 1 s metrics interval with the watchdog, the loop
// doing whatever is due each time it wakes.
TEST(SupervisionPacer, TheBeatsOnAFakeClock) {
  FakeClock clock;
  const Clock::TimePoint start = clock.Now();
  Pacer pacer({.metrics_every = 1s, .watchdog = true, .execution_timeout = 2200ms}, start);
  int samples = 0, watches = 0;
  bool timed_out = false;
  while (!timed_out) {
    clock.Advance(pacer.Wait({}, clock.Now()));
    Pacer::Due due = pacer.DueAt({}, clock.Now());
    if (due.sample) {
      ++samples;
      pacer.Sampled(clock.Now());
    }
    if (due.watch) {
      ++watches;
      pacer.Watched(clock.Now());
    }
    timed_out = due.timed_out;
  }
  EXPECT_EQ(clock.Now() - start, 2200ms);
  EXPECT_EQ(samples, 3);  // at 0, 1 s and 2 s
  EXPECT_EQ(watches, 5);  // at 0, 0.5, 1, 1.5 and 2 s
}

}  // namespace
}  // namespace loom::executor
