// `loom portal`: the history server. Serves the page and JSON API of web/ over every job record
// in $LOOM_HOME/jobs, --jobs_dir and the history location (loom.history.location: a local
// directory is read as it is; one in HDFS is mirrored into $LOOM_HOME/portal-mirror, see
// portal/history_mirror.h), read-only, on 127.0.0.1 unless told otherwise. The first line it
// prints is its address ("Portal: http://127.0.0.1:8765/"), once it answers.

#include <signal.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/follow.h"
#include "cluster/yarn/client_security.h"
#include "core/config/config.h"
#include "core/history_location.h"
#include "core/host_resolver.h"
#include "core/user_name.h"
#include "hadoop/conf/hadoop_conf.h"
#include "history/job_dir.h"
#include "portal/history_mirror.h"
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
  std::string history_location;
  int mirror_ms = 10000;
  app.add_option("--bind", bind, "Address to listen on (default 127.0.0.1: this machine only)");
  app.add_option("--port", port, "Port (default 8765; 0: any free port)")->check(CLI::Range(0, 65535));
  app.add_option("--jobs_dir", jobs_dirs, "Further directories of job records, after $LOOM_HOME/jobs");
  app.add_option("--history_location", history_location,
                 "Where jobs' records are kept after their end (loom.history.location): hdfs:///path (read "
                 "through HADOOP_CONF_DIR), file:///path, or /path (HDFS when HADOOP_CONF_DIR is set)");
  app.add_option("--refresh_ms", refresh_ms, "How often the job list is brought up to date (default 2000)")
      ->check(CLI::Range(100, 3600000));
  app.add_option("--mirror_ms", mirror_ms, "How often an HDFS history location is read again (default 10000)")
      ->check(CLI::Range(1000, 86400000));
  if (int rc = ParseCommandLine(app, args); rc >= 0) return rc;

  auto ip = ResolveHostToIp(bind);
  if (!ip.ok()) return UsageError("--bind " + bind + ": " + ip.status().message());
  std::vector<std::string> roots = {history::LoomHome() + "/jobs"};
  roots.insert(roots.end(), jobs_dirs.begin(), jobs_dirs.end());
  std::unique_ptr<portal::HistoryMirror> mirror;
  if (!history_location.empty()) {
    config::Config conf;
    conf.Set("loom.history.location", history_location, "--history_location");
    auto where = ParseHistoryLocation(conf);
    if (!where.ok()) return UsageError(where.status().message());
    const bool in_hdfs = where->scheme == HistoryLocation::Scheme::kHdfs ||
                         (where->scheme == HistoryLocation::Scheme::kPath && std::getenv("HADOOP_CONF_DIR"));
    if (!in_hdfs) {
      roots.push_back(where->path);
    } else {
      auto hadoop = hadoop::HadoopConf::FromEnvironment();
      if (!hadoop.ok()) return UsageError("--history_location " + history_location + ": " + hadoop.status().message());
      // A Kerberized cluster's WebHDFS wants SPNEGO: the portal logs in as a client does (the
      // ticket cache, or loom.kerberos.keytab's principal; `loom` runs as loom-kerberos then).
      if (hadoop->security == "kerberos") {
        if (auto login = cluster::yarn::LoginForCluster(*hadoop, config::Config{}); !login.ok()) {
          return UsageError("--history_location " + history_location + ": " + login.status().message());
        }
      }
      const std::string cache = history::LoomHome() + "/portal-mirror";
      auto made = portal::HistoryMirror::ForCluster(*hadoop, CurrentUserName(), history_location, cache);
      if (!made.ok()) return UsageError("--history_location " + history_location + ": " + made.status().message());
      mirror = std::move(*made);
      roots.push_back(cache);
    }
  }
  // A first copy of what the location holds before the first listing (bounded: the rest
  // follows every --mirror_ms); a location that cannot be read now is said and tried again.
  auto sync = [&mirror, &history_location] {
    if (auto report = mirror->SyncOnce(); !report.ok()) {
      std::fprintf(stderr, "loom: portal: %s: %s\n", history_location.c_str(), report.status().message().c_str());
    }
  };
  if (mirror) sync();

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
    std::optional<Ticker> mirroring;
    if (mirror) mirroring.emplace(std::chrono::milliseconds(mirror_ms), sync);
    int sig = 0;
    ::sigwait(&mask, &sig);
  }
  server.Stop();
  return kExitOk;
}

}  // namespace loom::cli
