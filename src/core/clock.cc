#include "core/clock.h"

namespace loom {

namespace {
class RealClock : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
};
}  // namespace

Clock& Clock::Real() {
  static RealClock* clock = new RealClock();  // never destroyed: used by threads until exit
  return *clock;
}

int FakeClock::Watch(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(mu_);
  watchers_[next_id_] = std::move(wake);
  return next_id_++;
}

void FakeClock::Unwatch(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  watchers_.erase(id);
}

void FakeClock::Advance(Duration d) {
  now_ += d.count();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, wake] : watchers_) wake();
}

}  // namespace loom
