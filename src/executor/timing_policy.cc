#include "executor/timing_policy.h"

#include <algorithm>

namespace loom::executor {

using std::chrono::milliseconds;

namespace {

milliseconds Left(const RegistrationRetry& r, Clock::TimePoint now) {
  return r.limit - std::chrono::duration_cast<milliseconds>(now - r.start);
}

}  // namespace

milliseconds RegistrationCallLimit(const RegistrationRetry& r, Clock::TimePoint now) {
  // Long enough for a busy AM to answer; a call that waits for a server still starting
  // (wait_for_ready) returns as soon as it answers.
  constexpr milliseconds kCallLimit(10000);
  if (r.limit <= milliseconds(0)) return kCallLimit;
  return std::clamp(Left(r, now), milliseconds(1), kCallLimit);
}

RegistrationStep DecideRegistrationRetry(const RegistrationRetry& r, Clock::TimePoint now) {
  const bool forever = r.limit <= milliseconds(0);
  if (!forever && Left(r, now) <= milliseconds(0)) return {.give_up = true};
  // Quick at first (the AM's server is usually a moment from listening), then once a second.
  milliseconds backoff(50);
  for (int i = 1; i < r.failures && backoff < milliseconds(1000); ++i) backoff *= 2;
  backoff = std::min(backoff, milliseconds(1000));
  if (!forever) backoff = std::min(backoff, Left(r, now));
  return {.give_up = false, .wait = std::max(backoff, milliseconds(0))};
}

milliseconds HeartbeatInterval(milliseconds configured) { return std::max(configured, milliseconds(10)); }

milliseconds AmSilenceLimit(milliseconds interval, int max_missed) {
  return HeartbeatInterval(interval) * std::max(1, max_missed);
}

bool AmLost(milliseconds interval, int max_missed, Clock::TimePoint last_heard, Clock::TimePoint now) {
  return now - last_heard >= AmSilenceLimit(interval, max_missed);
}

SupervisionPacer::SupervisionPacer(Settings settings, Clock::TimePoint start)
    : settings_(settings), next_sample_(start), next_watch_(start), next_tb_probe_(start) {
  settings_.metrics_every = std::max(settings_.metrics_every, milliseconds(10));
  if (settings_.execution_timeout > milliseconds(0)) exec_deadline_ = start + settings_.execution_timeout;
}

milliseconds SupervisionPacer::Wait(State state, Clock::TimePoint now) const {
  Clock::TimePoint wake_at = next_sample_;
  if (settings_.watchdog) wake_at = std::min(wake_at, next_watch_);
  if (!state.terminating && state.tb_pending) wake_at = std::min(wake_at, next_tb_probe_);
  if (!state.terminating && exec_deadline_) wake_at = std::min(wake_at, *exec_deadline_);
  return std::clamp(std::chrono::duration_cast<milliseconds>(wake_at - now), milliseconds(0), kLongestWait);
}

SupervisionPacer::Due SupervisionPacer::DueAt(State state, Clock::TimePoint now) const {
  return {.sample = now >= next_sample_,
          .watch = settings_.watchdog && now >= next_watch_,
          .tb_probe = !state.terminating && state.tb_pending && now >= next_tb_probe_,
          .timed_out = exec_deadline_ && now >= *exec_deadline_};
}

}  // namespace loom::executor
