#pragma once
// AmProbe: the client's check that a job's AM is still alive *and answering*. A crashed AM is
// seen through its pidfd; a hung one (SIGSTOPped, deadlocked) only by asking it. A background
// thread calls JobState every `interval`; Lost() turns true once no answer came for `limit`.
// Thread-safe.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "history/job_dir.h"

namespace loom::cli {

class AmProbe {
 public:
  AmProbe(history::JobDir dir, std::chrono::milliseconds interval, std::chrono::milliseconds limit);
  ~AmProbe();
  bool Lost() const { return lost_; }

 private:
  void Loop();
  const history::JobDir dir_;
  const std::chrono::milliseconds interval_, limit_;
  std::atomic<bool> lost_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace loom::cli
