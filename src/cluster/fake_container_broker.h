#pragma once
// FakeContainerBroker: a test double of ContainerBroker. Nothing runs: the test decides when
// containers are granted and when they complete, so the AM's logic can be driven step by step.
// Thread-safe.

#include <mutex>
#include <set>

#include "cluster/container_broker.h"

namespace loom::cluster {

class FakeContainerBroker : public ContainerBroker {
 public:
  Status Start(ContainerEvents* events) override {
    events_ = events;
    return Status::Ok();
  }
  Status Request(const ContainerRequest& request) override { return RequestAll({request}); }
  Status RequestAll(const std::vector<ContainerRequest>& requests) override {
    std::lock_guard<std::mutex> l(mu_);
    requests_.insert(requests_.end(), requests.begin(), requests.end());
    ++request_calls_;
    return Status::Ok();
  }
  // How many Request/RequestAll calls asked for containers: a gang is asked for in one.
  int request_calls() const {
    std::lock_guard<std::mutex> l(mu_);
    return request_calls_;
  }
  Status Launch(const Container& container, const LaunchSpec& spec) override {
    std::lock_guard<std::mutex> l(mu_);
    launched_[container.task] = spec;
    return Status::Ok();
  }
  // Completes the container at once with 143, as a well-behaved executor would after SIGTERM.
  Status Stop(const std::string& container_id, std::chrono::milliseconds) override {
    TaskId task;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!live_.count(container_id)) return Status::Ok();
      stopped_.insert(container_id);
      task = live_[container_id];
      live_.erase(container_id);
    }
    events_->OnCompleted({container_id, task, 143, "stopped"});
    return Status::Ok();
  }
  void Shutdown(std::chrono::milliseconds grace) override {
    std::vector<std::string> ids;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (auto& [id, t] : live_) ids.push_back(id);
    }
    for (auto& id : ids) (void)Stop(id, grace);
  }
  std::string Describe() const override { return "fake broker (test double)"; }

  // Grants every request made so far.
  void GrantAll() {
    std::vector<Container> grants;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (const auto& r : requests_) {
        Container c{"c_" + r.task.DirName(), r.task, "127.0.0.1", {}};
        live_[c.id] = r.task;
        grants.push_back(c);
      }
      requests_.clear();
    }
    for (const auto& c : grants) events_->OnAllocated(c);
  }
  // The container of `task` exits with `exit_code`.
  void Complete(const TaskId& task, int exit_code) {
    std::string id = "c_" + task.DirName();
    {
      std::lock_guard<std::mutex> l(mu_);
      live_.erase(id);
    }
    events_->OnCompleted({id, task, exit_code, ""});
  }
  size_t requested() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_.size();
  }
  size_t launched() {
    std::lock_guard<std::mutex> l(mu_);
    return launched_.size();
  }
  LaunchSpec launch_spec(const TaskId& t) {
    std::lock_guard<std::mutex> l(mu_);
    return launched_.at(t);
  }
  bool stopped(const TaskId& t) {
    std::lock_guard<std::mutex> l(mu_);
    return stopped_.count("c_" + t.DirName()) > 0;
  }

 private:
  mutable std::mutex mu_;
  int request_calls_ = 0;
  ContainerEvents* events_ = nullptr;
  std::vector<ContainerRequest> requests_;
  std::map<TaskId, LaunchSpec> launched_;
  std::map<std::string, TaskId> live_;
  std::set<std::string> stopped_;
};

}  // namespace loom::cluster
