#pragma once
// StatusPage: the AM's own web page, what YARN shows as the application's tracking URL (the
// RM proxies it). Plain HTTP/1.0 on its own thread: GET / is the job's state and task table,
// GET /status.json the same as JSON, both read from the AM's job dir. Nothing else is served.

#include <atomic>
#include <string>
#include <thread>

#include "core/status.h"
#include "history/job_dir.h"

namespace loom::am {

class StatusPage {
 public:
  explicit StatusPage(history::JobDir dir) : dir_(std::move(dir)) {}
  ~StatusPage();
  StatusPage(const StatusPage&) = delete;
  StatusPage& operator=(const StatusPage&) = delete;

  // Listens on `bind_address`, an ephemeral port; returns the port.
  Result<int> Start(const std::string& bind_address);
  void Stop();

  // The response to one request line ("GET / HTTP/1.1"), headers included. For tests.
  std::string Respond(const std::string& request_line) const;

 private:
  void Serve();
  history::JobDir dir_;
  int listen_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace loom::am
