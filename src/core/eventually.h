#pragma once
// How tests wait for what another thread or a real process does: one helper, polling, since
// such a test has nothing to be woken by. Logic with time in it is tested with an injected
// clock instead.

#include <chrono>
#include <thread>

namespace loom::testing {

// Whether `done` held within `timeout`: asked every `poll`, and once more at the deadline.
template <typename Pred>
bool Eventually(Pred&& done, std::chrono::milliseconds timeout = std::chrono::seconds(10),
                std::chrono::milliseconds poll = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(poll);
  }
  return done();
}

}  // namespace loom::testing
