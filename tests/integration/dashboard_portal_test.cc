// The AM's live dashboard and `loom portal`, over HTTP with the real `loom`: the JSON API the
// page uses while a local job runs and after it ended, /metrics as promtool reads it, and bad
// requests refused while the server goes on. (The page itself, in a browser: tests/browser/.)

#include <signal.h>

#include <fstream>

#include <gmock/gmock.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "mini_loom.h"

namespace loom::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// host and port of "http://host:port/".
httplib::Client ClientOf(const std::string& url) {
  std::string rest = url.substr(url.find("//") + 2);
  std::string host = rest.substr(0, rest.find(':'));
  int port = std::stoi(rest.substr(rest.find(':') + 1));
  httplib::Client c(host, port);
  c.set_connection_timeout(5);
  c.set_read_timeout(10);
  return c;
}

json GetJson(httplib::Client& c, const std::string& path) {
  auto r = c.Get(path);
  if (!r || r->status != 200) return nullptr;
  return json::parse(r->body, nullptr, false);
}

// `promtool check metrics` on `text`: its output and exit status (0: the format is right).
std::pair<int, std::string> PromtoolCheck(const std::string& text, const std::string& dir) {
  const std::string in = dir + "/metrics.txt", out = dir + "/promtool.out";
  std::ofstream(in) << text;
  int rc = std::system((std::string(LOOM_PROMTOOL) + " check metrics < " + in + " > " + out + " 2>&1").c_str());
  return {WEXITSTATUS(rc), ReadFile(out).value_or("")};
}

TEST(Dashboard, TheAmServesItsJobLiveOverTheApi) {
  MiniLoom loom;
  const std::string go = loom.home() + "/go";
  Subprocess submit = loom.Start({"submit", "--conf", "loom.worker.instances=1", "--conf",
                                  "loom.task.metrics-interval-ms=200", "--conf",
                                  "loom.worker.command=/bin/sh -c 'echo hello from the worker; while [ ! -e " + go +
                                      " ]; do sleep 0.05; done'"},
                                 "submit");
  std::string id, url;
  ASSERT_TRUE(Eventually(
      [&] {
        auto ids = loom.JobIds();
        if (ids.empty()) return false;
        id = ids[0];
        url = loom.View(id).dashboard_url;
        return !url.empty();
      },
      30s));
  httplib::Client c = ClientOf(url);
  EXPECT_EQ(GetJson(c, "/api/info"), json({{"server", "am"}, {"version", "0.1.0"}, {"job_id", id}}));
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_THAT(page->get_header_value("Content-Type"), HasSubstr("text/html"));
  EXPECT_THAT(page->body, HasSubstr("assets/"));                      // relative: works under a proxy
  EXPECT_THAT(page->body, ::testing::Not(HasSubstr("\"/assets/")));

  // Live: the task runs, its samples keep coming, its output is there.
  json job;
  ASSERT_TRUE(Eventually([&] {
    job = GetJson(c, "/api/jobs/" + id);
    return job.is_object() && job["tasks"][0]["state"] == "RUNNING";
  }, 30s)) << job.dump();
  EXPECT_EQ(job["live"], true);
  size_t first = 0;
  ASSERT_TRUE(Eventually([&] {
    json m = GetJson(c, "/api/jobs/" + id + "/metrics");
    first = m.is_object() ? m["samples"].size() : 0;
    return first >= 1;
  }, 20s));
  ASSERT_TRUE(Eventually([&] {
    json m = GetJson(c, "/api/jobs/" + id + "/metrics");
    return m.is_object() && m["samples"].size() > first;
  }, 20s));
  ASSERT_TRUE(Eventually([&] {
    json log = GetJson(c, "/api/jobs/" + id + "/logs/worker%3A0/stdout?offset=-4096");
    return log.is_object() && log["data"] == "hello from the worker\n";
  }, 20s));
  json events = GetJson(c, "/api/jobs/" + id + "/events");
  ASSERT_TRUE(events.is_object());
  EXPECT_EQ(events["events"][0]["event"], "JOB_SUBMITTED");

  // Prometheus, as promtool reads it.
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->get_header_value("Content-Type"), HasSubstr("version=0.0.4"));
  EXPECT_THAT(metrics->body, HasSubstr("loom_task_state{job=\"" + id + "\",task=\"worker:0\",state=\"RUNNING\"} 1"));
  auto [rc, said] = PromtoolCheck(metrics->body, loom.home());
  EXPECT_EQ(rc, 0) << said << metrics->body;

  // Read-only, and nothing but the record.
  auto del = c.Delete("/api/jobs/" + id);
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405);
  auto post = c.Post("/api/jobs/" + id, "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 413);  // a body, refused before any handler
  for (const char* bad : {"/api/jobs/%2e%2e", "/api/jobs/ID/logs/worker%3A0/..%2f..%2fsecret",
                          "/api/jobs/ID/logs/worker%3A0/secret", "/secret", "/assets/%2e%2e/secret"}) {
    std::string path = bad;
    if (size_t p = path.find("ID"); p != std::string::npos) path.replace(p, 2, id);
    auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path << ": " << r->body;
  }
  const std::string secret = ReadFile(loom.Dir(id).secret()).value_or("");
  ASSERT_FALSE(secret.empty());
  for (const std::string& path : {"/api/jobs/" + id, "/api/jobs/" + id + "/config", "/api/jobs/" + id + "/events",
                                  std::string("/status.json"), std::string("/metrics")}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body.find(secret), std::string::npos) << path;
  }

  std::ofstream(go) << "";
  RunResult done = loom.Collect(submit, "submit");
  EXPECT_EQ(done.exit_code, 0) << done.out << done.err;
  EXPECT_FALSE(c.Get("/api/info"));  // the dashboard ended with its AM
}

class PortalProcess {
 public:
  explicit PortalProcess(MiniLoom& loom, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"portal", "--port", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    child_ = std::make_unique<Subprocess>(loom.Start(args, "portal"));
    Eventually([&] {
      std::string out = ReadFile(loom.home() + "/portal.out").value_or("");
      size_t at = out.find("Portal: ");
      if (at == std::string::npos) return false;
      url_ = out.substr(at + 8, out.find(' ', at + 8) - at - 8);
      return true;
    }, 30s);
  }
  // Subprocess's destructor ends the portal's process group, if Stop did not.
  const std::string& url() const { return url_; }
  // SIGTERM: the portal stops and exits 0.
  int Stop() {
    ::kill(child_->pid(), SIGTERM);
    auto info = child_->Wait();
    return info.ok() ? info->ShellCode() : -1;
  }

 private:
  std::unique_ptr<Subprocess> child_;
  std::string url_;
};

TEST(Portal, ServesEveryEndedJobReadOnly) {
  MiniLoom loom;
  ASSERT_EQ(loom.Run({"submit", "--conf", "loom.worker.instances=1", "--conf", "loom.worker.command=true"}).exit_code, 0);
  ASSERT_EQ(loom.Run({"submit", "--conf", "loom.application.name=<script>alert(1)</script>", "--conf",
                      "loom.worker.instances=2", "--conf", "loom.worker.command=exit 3"})
                .exit_code,
            1);
  PortalProcess portal(loom);
  ASSERT_THAT(portal.url(), ::testing::StartsWith("http://127.0.0.1:"));
  httplib::Client c = ClientOf(portal.url());
  json list = GetJson(c, "/api/jobs");
  ASSERT_TRUE(list.is_object());
  EXPECT_EQ(list["total"], 2);
  ASSERT_EQ(list["jobs"].size(), 2u);
  EXPECT_EQ(list["jobs"][0]["state"], "FAILED");  // newest first
  EXPECT_EQ(list["jobs"][0]["name"], "<script>alert(1)</script>");
  EXPECT_EQ(list["jobs"][0]["tasks"], 2);
  EXPECT_EQ(list["jobs"][1]["state"], "SUCCEEDED");
  EXPECT_EQ(GetJson(c, "/api/jobs?state=SUCCEEDED")["total"], 1);
  EXPECT_EQ(GetJson(c, "/api/jobs?name=ALERT")["total"], 1);
  const std::string failed = list["jobs"][0]["job_id"];
  json job = GetJson(c, "/api/jobs/" + failed);
  EXPECT_EQ(job["live"], false);
  EXPECT_EQ(job["tasks"][0]["exit_code"], 3);
  EXPECT_EQ(GetJson(c, "/api/info")["server"], "portal");

  // A job submitted after the portal started appears on its own.
  ASSERT_EQ(loom.Run({"submit", "--conf", "loom.worker.instances=1", "--conf", "loom.worker.command=true"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return GetJson(c, "/api/jobs")["total"] == 3; }, 20s));

  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body, HasSubstr("loom_jobs{state=\"FAILED\"} 1\n"));
  auto [rc, said] = PromtoolCheck(metrics->body, loom.home());
  EXPECT_EQ(rc, 0) << said << metrics->body;

  // Bad requests are 4xx and the portal goes on serving.
  EXPECT_EQ(c.Get("/api/jobs?limit=100000")->status, 400);
  EXPECT_EQ(c.Get("/api/jobs/%2e%2e%2f%2e%2e%2fetc")->status, 404);
  EXPECT_EQ(c.Get("/" + std::string(10000, 'a'))->status, 414);
  EXPECT_EQ(c.Delete("/api/jobs/" + failed)->status, 405);
  EXPECT_TRUE(PathExists(loom.Dir(failed).root()));
  EXPECT_EQ(GetJson(c, "/api/jobs")["total"], 3);
  EXPECT_EQ(portal.Stop(), 0);
}

TEST(Portal, RefusesABadBindAddress) {
  MiniLoom loom;
  RunResult r = loom.Run({"portal", "--bind", "no.such.host.invalid", "--port", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--bind no.such.host.invalid"));
}

}  // namespace
}  // namespace loom::testing
