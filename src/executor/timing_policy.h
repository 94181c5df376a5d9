#pragma once
// The executor's decisions in time, as pure functions of what it knows and the time (a Clock's
// TimePoint, core/clock.h), so that each is tested from a table (timing_policy_test.cc) as the
// AM's end_policy.h is: how registration backs off and when it gives up, when the heartbeat
// stream's silence means the AM is lost, and what Supervise's loop does on each turn and how
// long it may then wait.

#include <chrono>
#include <optional>

#include "core/clock.h"

namespace loom::executor {

// Registration with the AM (TaskExecutor::Register), retried while the AM cannot be reached.
struct RegistrationRetry {
  std::chrono::milliseconds limit{0};  // loom.task.executor.registry-timeout-sec; 0: forever
  Clock::TimePoint start;              // when the first call went out
  int failures = 0;                    // calls that found the AM unreachable, the last included
};
// How long one Register call may wait for the AM at `now`: 10 s, and never past the limit
// (at least 1 ms, so that a call still goes out at the edge).
std::chrono::milliseconds RegistrationCallLimit(const RegistrationRetry& r, Clock::TimePoint now);
struct RegistrationStep {
  bool give_up = false;
  std::chrono::milliseconds wait{0};  // before the next call, when not giving up
};
// After a call found the AM unreachable at `now`: give up once the limit has passed; else wait
// 50 ms, doubling with each failure up to 1 s, and never past the limit.
RegistrationStep DecideRegistrationRetry(const RegistrationRetry& r, Clock::TimePoint now);

// The heartbeat stream's interval: as configured, at least 10 ms (a 0 would spin).
std::chrono::milliseconds HeartbeatInterval(std::chrono::milliseconds configured);
// How long the AM may stay silent: max-missed-heartbeats intervals (at least one).
std::chrono::milliseconds AmSilenceLimit(std::chrono::milliseconds interval, int max_missed);
// Whether an AM last heard from at `last_heard` is lost at `now`: silent for the whole limit.
bool AmLost(std::chrono::milliseconds interval, int max_missed, Clock::TimePoint last_heard, Clock::TimePoint now);

// Supervise's beats: a metrics sample every loom.task.metrics-interval-ms, the memory
// watchdog's RSS reading (where it enforces the limit), the probe of an announced TensorBoard
// port until it answers, and the execution timeout. Every beat is due at `start`.
class SupervisionPacer {
 public:
  struct Settings {
    std::chrono::milliseconds metrics_every{1000};  // loom.task.metrics-interval-ms (at least 10)
    bool watchdog = false;                          // the executor enforces the memory limit
    std::chrono::milliseconds execution_timeout{0};  // 0: none
  };
  // What the loop knows besides the time.
  struct State {
    bool terminating = false;  // the task is being stopped: no more probes, no timeout
    bool tb_pending = false;   // a TB_PORT is held and not yet announced
  };
  struct Due {
    bool sample = false, watch = false, tb_probe = false, timed_out = false;
    bool operator==(const Due&) const = default;
  };
  static constexpr std::chrono::milliseconds kWatchdogEvery{500};
  static constexpr std::chrono::milliseconds kTensorBoardProbeEvery{250};
  static constexpr std::chrono::milliseconds kLongestWait{60000};

  SupervisionPacer(Settings settings, Clock::TimePoint start);
  // How long the loop may wait for an event at `now`: until the earliest beat due, 0 to 60 s.
  std::chrono::milliseconds Wait(State state, Clock::TimePoint now) const;
  // The beats due at `now`. The timeout is reported while terminating too (stopping twice is
  // harmless), but the loop does not wake for it then.
  Due DueAt(State state, Clock::TimePoint now) const;
  // A beat done at `now`: the next is one period later.
  void Sampled(Clock::TimePoint now) { next_sample_ = now + settings_.metrics_every; }
  void Watched(Clock::TimePoint now) { next_watch_ = now + kWatchdogEvery; }
  void Probed(Clock::TimePoint now) { next_tb_probe_ = now + kTensorBoardProbeEvery; }

 private:
  Settings settings_;
  Clock::TimePoint next_sample_, next_watch_, next_tb_probe_;
  std::optional<Clock::TimePoint> exec_deadline_;
};

}  // namespace loom::executor
