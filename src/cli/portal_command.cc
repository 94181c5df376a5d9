// `loom portal`: the history server. Serves the page and JSON API of web/ over every job record
// in $LOOM_HOME/jobs (and --jobs_dir), read-only, on 127.0.0.1 unless told otherwise. The
// first line it prints is its address ("Portal: http://127.0.0.1:8765/"), once it answers.

#include <signal.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "cli/follow.h"
#include "core/host_resolver.h"
#include "history/job_dir.h"
#include "portal/job_index.h"
#include "web/http_server.h"
#include "web/job_api.h"

namespace loom::cli {

namespace {

// Calls `fn` every `interval` on a thread of its own until destroyed.
class Ticker {
 public:
  Ticker(std::chrono::milliseconds interval, std::function<void()> fn)
      : thread_([this, interval, fn = std::move(fn)] {
          std::unique_lock lock(mu_);
          while (!cv_.wait_for(lock, interval, [this] { return stop_; })) {
            lock.unlock();
            fn();
            lock.lock();
          }
        }) {}
  ~Ticker() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

int PortalCommand(std::vector<std::string> args) {
  CLI::App app("Serve every job's record: the job list, each job's page, the JSON API and /metrics", "portal");
  std::string bind = "127.0.0.1";
  int port = 8765;
  int refresh_ms = 2000;
  std::vector<std::string> jobs_dirs;
  app.add_option("--bind", bind, "Address to listen on (default 127.0.0.1: this machine only)");
  app.add_option("--port", port, "Port (default 8765; 0: any free port)")->check(CLI::Range(0, 65535));
  app.add_option("--jobs_dir", jobs_dirs, "Further directories of job records, after $LOOM_HOME/jobs");
  app.add_option("--refresh_ms", refresh_ms, "How often the job list is brought up to date (default 2000)")
      ->check(CLI::Range(100, 3600000));
  if (int rc = ParseCommandLine(app, args); rc >= 0) return rc;

  auto ip = ResolveHostToIp(bind);
  if (!ip.ok()) return UsageError("--bind " + bind + ": " + ip.status().message());
  std::vector<std::string> roots = {history::LoomHome() + "/jobs"};
  roots.insert(roots.end(), jobs_dirs.begin(), jobs_dirs.end());

  sigset_t mask = BlockStopSignals();  // before any thread: they all inherit it
  portal::JobIndex index(roots);
  index.Refresh();
  web::WebApp web_app(index);
  web::HttpServer server([&web_app](const web::HttpRequest& r) { return web_app.Handle(r); });
  auto bound = server.Start(*ip, port);
  if (!bound.ok()) {
    std::fprintf(stderr, "loom: portal: %s\n", bound.status().message().c_str());
    return kExitUsage;
  }
  const std::string host = ip->find(':') == std::string::npos ? *ip : "[" + *ip + "]";
  std::printf("Portal: http://%s:%d/ (%zu jobs)\n", host.c_str(), *bound, index.size());
  std::fflush(stdout);
  {
    Ticker refresher(std::chrono::milliseconds(refresh_ms), [&index] { index.Refresh(); });
    int sig = 0;
    ::sigwait(&mask, &sig);
  }
  server.Stop();
  return kExitOk;
}

}  // namespace loom::cli
