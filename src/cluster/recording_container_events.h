#pragma once
// RecordingContainerEvents: the ContainerEvents a broker's test hands the broker. It keeps what
// the broker reported, in order, and lets the test wait for it: brokers report from their own
// threads (the local broker's reapers, the YARN broker's heartbeat). Tests only.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/container_broker.h"

namespace loom::cluster {

class RecordingContainerEvents : public ContainerEvents {
 public:
  void OnAllocated(const Container& c) override {
    std::lock_guard<std::mutex> lock(mu_);
    allocated.push_back(c);
    cv_.notify_all();
  }
  void OnCompleted(const ContainerExit& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    completed.push_back(e);
    cv_.notify_all();
  }
  void OnContainerError(const TaskId& task, const Status& error) override {
    std::lock_guard<std::mutex> lock(mu_);
    errors.push_back(task.ToString() + ": " + error.ToString());
    cv_.notify_all();
  }

  // Whether `done` held within `timeout`; it runs with the lock held, so it may read the fields.
  bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, done);
  }
  // Waits until `n` containers arrived; what arrived by then.
  std::vector<Container> WaitAllocated(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return allocated.size() >= n; });
    return allocated;
  }
  // The errors so far ("worker:0: ..."), copied under the lock.
  std::vector<std::string> Errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return errors;
  }

  // What the broker reported. Read them in WaitFor's `done`, or once the broker has nothing
  // more to report.
  std::vector<Container> allocated;
  std::vector<ContainerExit> completed;
  std::vector<std::string> errors;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace loom::cluster
