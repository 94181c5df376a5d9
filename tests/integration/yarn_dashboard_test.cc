// The AM's live dashboard on YARN, reached only as a user reaches it: through the application's
// tracking URL, the ResourceManager's web proxy (http://RM/proxy/<application>/), with the real
// `loom` binary. On the YARN test double (its RM web proxy: tests/yarn_double/rm_web_server.h)
// or on a real cluster (LOOM_TEST_HADOOP_CONF_DIR; yarn_double_cluster.h). The workers wait for
// files this test writes, so on a real cluster the NodeManager must run on this machine.

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <gmock/gmock.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/testing.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

using ::testing::EndsWith;
using ::testing::StartsWith;
using nlohmann::json;
namespace fs = std::filesystem;
namespace ypb = ::hadoop::yarn;

// A client of "http://host:port/base/" and that URL's path ("/base/").
struct Site {
  std::unique_ptr<httplib::Client> client;
  std::string base;
};

Site SiteOf(const std::string& url) {
  static const std::regex kUrl(R"(http://([^/:]+):([0-9]+)(/.*)?)");
  std::smatch m;
  Site site;
  if (!std::regex_match(url, m, kUrl)) {
    ADD_FAILURE() << "not an http://host:port/ URL: " << url;
    site.client = std::make_unique<httplib::Client>("127.0.0.1", 1);
    return site;
  }
  site.client = std::make_unique<httplib::Client>(m[1].str(), std::stoi(m[2].str()));
  site.client->set_connection_timeout(5);
  site.client->set_read_timeout(10);
  site.base = m[3].matched ? m[3].str() : "/";
  if (!site.base.ends_with("/")) site.base += "/";
  return site;
}

// GET base + `path` as JSON; null unless 200 and JSON.
json GetJson(Site& site, const std::string& path) {
  auto r = site.client->Get((site.base + path).c_str());
  if (!r || r->status != 200) return nullptr;
  return json::parse(r->body, nullptr, false);
}

// The state of task `task` in a job as api/jobs/ID shows it; "" if it has no such task.
std::string StateOfTask(const json& job, const std::string& task) {
  if (!job.is_object() || !job.contains("tasks") || !job["tasks"].is_array()) return "";
  for (const json& t : job["tasks"]) {
    if (t.is_object() && t.value("task", "") == task) return t.value("state", "");
  }
  return "";
}

// Prometheus text format 0.0.4, line by line: every line a # HELP, a # TYPE or a sample of a
// family typed before it, with a valid name, well-formed labels and a number. The families'
// types by name; a failure says which line is wrong.
std::map<std::string, std::string> ParsePrometheus(const std::string& text) {
  static const std::regex kHelp(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .*)");
  static const std::regex kType(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped))");
  static const std::regex kSample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*",?)*\})? ([^ ]+)( -?[0-9]+)?)");
  std::map<std::string, std::string> types;
  EXPECT_TRUE(text.ends_with("\n")) << text;
  for (const std::string& line : Split(text, '\n')) {
    if (line.empty()) continue;
    std::smatch m;
    if (std::regex_match(line, m, kType)) {
      EXPECT_EQ(types.count(m[1].str()), 0u) << "a family typed twice: " << line;
      types[m[1].str()] = m[2].str();
    } else if (std::regex_match(line, m, kHelp)) {
      continue;
    } else if (std::regex_match(line, m, kSample)) {
      EXPECT_EQ(types.count(m[1].str()), 1u) << "a sample before its # TYPE: " << line;
      const std::string value = m[5].str();
      bool number = value == "NaN" || value == "+Inf" || value == "-Inf";
      if (!number) {
        size_t used = 0;
        try {
          (void)std::stod(value, &used);
          number = used == value.size();
        } catch (const std::exception&) {
        }
      }
      EXPECT_TRUE(number) << "not a value: " << line;
    } else {
      ADD_FAILURE() << "not a Prometheus line: " << line;
    }
  }
  return types;
}

TEST(YarnDashboard, ThePageAndItsLiveApiAnswerThroughTheResourceManagersProxy) {
  YarnDoubleCluster cluster;
  MiniLoom& loom = cluster.loom();
  const fs::path dir = fs::path(loom.home()) / "shared";
  fs::create_directories(dir);
  // Two workers, worker:i running until DIR/go-i exists.
  Subprocess submit = loom.Start(
      {"submit", "--cluster", "yarn", "--conf", "loom.worker.instances=2", "--conf", "loom.am.memory=512m", "--conf",
       "loom.worker.memory=256m", "--conf", "loom.task.metrics-interval-ms=200", "--conf",
       "loom.worker.command=/bin/sh -c 'echo worker $TASK_INDEX says hi; while [ ! -e " + (dir / "go-").string() +
           "$TASK_INDEX ]; do sleep 0.05; done'"},
      "submit", cluster.Env());
  std::string id = loom.WaitUntilRunning(2, 60s);
  ASSERT_FALSE(id.empty()) << cluster.ContainerLogs("am.log");
  const std::string app = cluster.ApplicationId(id);

  // The report's tracking URL is the RM's proxy; the AM's own URL is the original one.
  ypb::ApplicationReportProto report = cluster.Report(id);
  ASSERT_EQ(report.yarn_application_state(), ypb::RUNNING);
  const std::string tracking = report.trackingurl();
  EXPECT_THAT(tracking, EndsWith("/proxy/" + app + "/"));
  if (!cluster.real()) {
    EXPECT_EQ(tracking, "http://localhost:" + std::to_string(cluster.yarn().rm_web_port()) + "/proxy/" + app + "/");
  }
  EXPECT_THAT(report.originaltrackingurl(), StartsWith("http://"));
  EXPECT_THAT(report.originaltrackingurl(), ::testing::Not(HasSubstr("/proxy/")));
  Site proxy = SiteOf(tracking);

  // The page, and the assets it names relative to itself, through the proxy.
  auto page = proxy.client->Get(proxy.base.c_str());
  ASSERT_TRUE(page) << httplib::to_string(page.error());
  ASSERT_EQ(page->status, 200) << page->body;
  EXPECT_THAT(page->get_header_value("Content-Type"), StartsWith("text/html"));
  std::set<std::string> assets;
  static const std::regex kAsset(R"re((?:src|href)="(assets/[^"]+)")re");
  for (std::sregex_iterator it(page->body.begin(), page->body.end(), kAsset), end; it != end; ++it) {
    assets.insert((*it)[1].str());
  }
  EXPECT_TRUE(assets.count("assets/app.js")) << page->body;
  EXPECT_THAT(page->body, ::testing::Not(HasSubstr("=\"/"))) << "a link that leaves the proxy's path";
  for (const std::string& asset : assets) {
    auto got = proxy.client->Get((proxy.base + asset).c_str());
    ASSERT_TRUE(got) << asset;
    EXPECT_EQ(got->status, 200) << asset;
    EXPECT_FALSE(got->body.empty()) << asset;
    if (asset.ends_with(".js")) {
      EXPECT_THAT(got->get_header_value("Content-Type"), HasSubstr("javascript")) << asset;
    }
  }

  // The API: the AM's own job, live, its tasks running.
  json info = GetJson(proxy, "api/info");
  ASSERT_TRUE(info.is_object()) << info.dump();
  EXPECT_EQ(info.value("server", ""), "am") << info.dump();
  EXPECT_EQ(info.value("job_id", ""), id) << info.dump();
  json job = GetJson(proxy, "api/jobs/" + id);
  EXPECT_EQ(StateOfTask(job, "worker:0"), "RUNNING") << job.dump();
  EXPECT_EQ(StateOfTask(job, "worker:1"), "RUNNING") << job.dump();
  ASSERT_TRUE(job.is_object()) << job.dump();
  EXPECT_EQ(job.value("live", false), true) << job.dump();

  // The events grow while the job runs: worker:1 ends, worker:0 goes on.
  json events = GetJson(proxy, "api/jobs/" + id + "/events");
  ASSERT_TRUE(events.is_object()) << events.dump();
  const int64_t cursor = events.value("next", int64_t{0});
  EXPECT_GT(cursor, 0) << events.dump();
  std::ofstream(dir / "go-1") << "go\n";
  json more;
  EXPECT_TRUE(Eventually(
      [&] {
        more = GetJson(proxy, "api/jobs/" + id + "/events?after=" + std::to_string(cursor));
        if (!more.is_object()) return false;
        for (const json& e : more.value("events", json::array())) {
          if (e.is_object() && e.value("event", "") == "TASK_STATE" && e.value("task", "") == "worker:1" &&
              e.value("state", "") == "SUCCEEDED") {
            return true;
          }
        }
        return false;
      },
      30s))
      << more.dump();
  if (more.is_object()) {
    EXPECT_GT(more.value("next", int64_t{0}), cursor);
  }
  job = GetJson(proxy, "api/jobs/" + id);
  EXPECT_EQ(StateOfTask(job, "worker:0"), "RUNNING") << job.dump();
  EXPECT_EQ(StateOfTask(job, "worker:1"), "SUCCEEDED") << job.dump();

  // A task's log, which the AM reads from the task's NodeManager (its job dir has none): the
  // tail, then a window from an offset.
  json tail = GetJson(proxy, "api/jobs/" + id + "/logs/worker%3A0/stdout?offset=-4096");
  EXPECT_EQ(tail.value("data", ""), "worker 0 says hi\n") << tail.dump();
  json window = GetJson(proxy, "api/jobs/" + id + "/logs/worker%3A0/stdout?offset=7&limit=4");
  EXPECT_EQ(window.value("data", ""), "0 sa") << window.dump();
  EXPECT_EQ(window.value("next", 0), 11) << window.dump();

  // /metrics through the proxy: Prometheus text, with worker:0's samples once it has one.
  std::string metrics;
  EXPECT_TRUE(Eventually(
      [&] {
        auto got = proxy.client->Get((proxy.base + "metrics").c_str());
        if (!got || got->status != 200) return false;
        metrics = got->body;
        EXPECT_THAT(got->get_header_value("Content-Type"), StartsWith("text/plain; version=0.0.4"));
        return metrics.find("loom_task_rss_bytes{job=\"" + id + "\",task=\"worker:0\"}") != std::string::npos;
      },
      30s))
      << metrics;
  std::map<std::string, std::string> types = ParsePrometheus(metrics);
  EXPECT_EQ(types["loom_task_rss_bytes"], "gauge");
  EXPECT_EQ(types["loom_task_restarts_total"], "counter");
  EXPECT_THAT(metrics, HasSubstr("loom_task_state{job=\"" + id + "\",task=\"worker:0\",state=\"RUNNING\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("loom_task_state{job=\"" + id + "\",task=\"worker:1\",state=\"SUCCEEDED\"} 1\n"));

  // The job ends: the AM unregisters without a final tracking URL, so the proxy sends users to
  // the RM's application page (yarn-captures rm-rest/04, 05), as a real RM does.
  std::ofstream(dir / "go-0") << "go\n";
  if (Status ended = cluster.WaitForAppEnd(id, 60s); !ended.ok()) {
    // A worker that never saw its file (a real cluster's node without this machine's files)
    // must not leave `loom submit` waiting.
    ADD_FAILURE() << ended.ToString() << "; killing the job";
    (void)loom.Run({"kill", id}, cluster.Env());
  }
  RunResult r = loom.Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  report = cluster.Report(id);
  EXPECT_EQ(report.yarn_application_state(), ypb::FINISHED);
  EXPECT_EQ(report.trackingurl(), tracking);
  EXPECT_EQ(report.originaltrackingurl(), "N/A");
  auto after = proxy.client->Get(proxy.base.c_str());
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 302) << after->body;
  EXPECT_THAT(after->get_header_value("Location"), EndsWith("/cluster/app/" + app));
  EXPECT_THAT(after->body, HasSubstr("Content has moved"));
}

}  // namespace
}  // namespace loom::testing
