#pragma once
// StatusPage: the AM's own web page, what YARN shows as the application's tracking URL (the
// RM proxies it). GET / is the job's state and task table, GET /status.json the job in the
// one JSON shape of `loom status --json` (history::ToJson); both read from the AM's job dir.
// Plain HTTP/1.0 on one thread of its own, one short request per connection; nothing else
// is served. (Not cpp-httplib: Debian builds it as a library that links OpenSSL, zlib and
// brotli, which every `loom executor` would then map at start.)

#include <atomic>
#include <string>
#include <thread>

#include "core/status.h"
#include "history/job_dir.h"

namespace loom::am {

class StatusPage {
 public:
  // `job_id` is the job's own id: on YARN the AM's job dir is named after the container's
  // working dir, not the job.
  StatusPage(history::JobDir dir, std::string job_id);
  ~StatusPage();
  StatusPage(const StatusPage&) = delete;
  StatusPage& operator=(const StatusPage&) = delete;

  // Listens on `bind_address`, an ephemeral port; returns the port.
  Result<int> Start(const std::string& bind_address);
  void Stop();

  struct Page {
    int code = 200;
    std::string content_type;
    std::string body;
  };
  // What GET `path` answers.
  Page Render(const std::string& path) const;
  // The whole response to one request line ("GET / HTTP/1.1").
  std::string Respond(const std::string& request_line) const;

 private:
  void Serve();
  history::JobDir dir_;
  std::string job_id_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: Stop() ends the poll at once (the AM's exit waits for it)
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace loom::am
