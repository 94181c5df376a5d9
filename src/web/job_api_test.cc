#include "web/job_api.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "history/event_log.h"
#include "history/events.h"
#include "history/job_record.h"
#include "history/metrics_log.h"

namespace loom::web {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

// The portal's shape of catalog over one root holding job_1.
class FakeCatalog : public JobCatalog {
 public:
  explicit FakeCatalog(std::string root) : root_(std::move(root)) {}
  std::string ServerKind() const override { return "portal"; }
  Result<Location> Find(const std::string& job_id) const override {
    if (job_id != "job_1" && job_id != "job_linked") return Status::NotFound("no job " + job_id);
    return Location{root_, job_id};
  }
  JobPage List(const JobQuery& q) const override {
    last_query = q;
    return {1, {json{{"job_id", "job_1"}}}};
  }
  bool Live(const history::JobView&) const override { return false; }
  std::string PrometheusMetrics() const override { return "loom_jobs{state=\"RUNNING\"} 1\n"; }
  mutable JobQuery last_query;

 private:
  std::string root_;
};

class WebAppTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("job_api_test." + std::to_string(::getpid()));
    fs::remove_all(root_);
    job_ = root_ / "job_1";
    fs::create_directories(job_ / "tasks" / "worker-0");
    history::JobDir dir(job_.string());
    history::JobRecord rec;
    rec.job_id = "job_1";
    rec.name = "<script>alert(1)</script>";
    rec.user = "alice";
    rec.backend = "local";
    rec.submitted_ms = 1000;
    ASSERT_TRUE(rec.Write(dir).ok());
    history::EventLog log(dir.events());
    ASSERT_TRUE(log.Append(history::events::kJobSubmitted, {{"job_id", "job_1"}, {"tasks", {"worker:0"}}}).ok());
    ASSERT_TRUE(log.Append(history::events::kTaskState, {{"task", "worker:0"}, {"state", "RUNNING"}}).ok());
    history::MetricsLog metrics(dir.metrics());
    for (int64_t ms : {2000, 3000, 4000}) {
      history::TaskSample s;
      s.ms = ms;
      s.task = "worker:0";
      s.cpu_cores = ms / 1000.0;
      s.rss_bytes = ms * 1000;
      ASSERT_TRUE(metrics.Append(s).ok());
    }
    std::ofstream(dir.config()) << "<configuration><property><name>loom.secret.x</name><value>hunter2</value>"
                                   "<source>--conf</source></property></configuration>";
    std::ofstream(job_ / "tasks" / "worker-0" / "stdout") << "line one\nline two\n";
    std::ofstream(job_ / "am.log") << "am says hi\n";
  }
  void TearDown() override { fs::remove_all(root_); }

  HttpResponse Get(const std::string& path, std::map<std::string, std::string> params = {}) {
    return app_.Handle({"GET", path, std::move(params)});
  }
  json GetJson(const std::string& path, std::map<std::string, std::string> params = {}) {
    HttpResponse r = Get(path, std::move(params));
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    return json::parse(r.body);
  }

  fs::path root_, job_;
  FakeCatalog catalog_{(fs::temp_directory_path() / ("job_api_test." + std::to_string(::getpid()))).string()};
  WebApp app_{catalog_};
};

TEST_F(WebAppTest, InfoAndTheJobAsStatusShowsItWithItsUser) {
  EXPECT_EQ(GetJson("/api/info")["server"], "portal");
  json job = GetJson("/api/jobs/job_1");
  EXPECT_EQ(job["job_id"], "job_1");
  EXPECT_EQ(job["name"], "<script>alert(1)</script>");  // JSON carries it as it is: the page escapes
  EXPECT_EQ(job["user"], "alice");
  EXPECT_EQ(job["live"], false);
  EXPECT_EQ(job["tasks"][0]["state"], "RUNNING");
}

TEST_F(WebAppTest, TheListPassesItsFiltersAndRefusesBadNumbers) {
  json list = GetJson("/api/jobs", {{"state", "FAILED,KILLED"}, {"user", "bob"}, {"offset", "50"}, {"limit", "10"}});
  EXPECT_EQ(list["total"], 1);
  EXPECT_EQ(list["offset"], 50);
  EXPECT_EQ(catalog_.last_query.states, (std::set<std::string>{"FAILED", "KILLED"}));
  EXPECT_EQ(catalog_.last_query.user, "bob");
  EXPECT_EQ(catalog_.last_query.limit, 10);
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"limit", "0"}, {"limit", "501"}, {"offset", "-1"}, {"since", "yesterday"}, {"offset", "1e3"}}) {
    HttpResponse r = Get("/api/jobs", {{k, v}});
    EXPECT_EQ(r.status, 400) << k << "=" << v;
    EXPECT_THAT(json::parse(r.body)["error"].get<std::string>(), HasSubstr(k));
  }
}

TEST_F(WebAppTest, EventsFromACursor) {
  json first = GetJson("/api/jobs/job_1/events");
  ASSERT_EQ(first["events"].size(), 2u);
  EXPECT_EQ(first["events"][0]["event"], "JOB_SUBMITTED");
  history::EventLog log(history::JobDir(job_.string()).events());
  ASSERT_TRUE(log.Append(history::events::kJobWarning, {{"message", "m"}}).ok());
  json next = GetJson("/api/jobs/job_1/events", {{"after", std::to_string(first["next"].get<int64_t>())}});
  ASSERT_EQ(next["events"].size(), 1u);
  EXPECT_EQ(next["events"][0]["event"], "JOB_WARNING");
}

TEST_F(WebAppTest, MetricsNewerThanAskedFor) {
  json all = GetJson("/api/jobs/job_1/metrics");
  ASSERT_EQ(all["samples"].size(), 3u);
  EXPECT_EQ(all["samples"][0]["ms"], 2000);
  EXPECT_EQ(all["samples"][2]["cpu"], 4.0);
  EXPECT_EQ(all["samples"][2]["rss"], 4000000);
  json newer = GetJson("/api/jobs/job_1/metrics", {{"after", "3000"}});
  ASSERT_EQ(newer["samples"].size(), 1u);
  EXPECT_EQ(newer["samples"][0]["ms"], 4000);
}

TEST_F(WebAppTest, ConfigHidesSecrets) {
  HttpResponse r = Get("/api/jobs/job_1/config");
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.body, HasSubstr("<redacted>"));
  EXPECT_EQ(r.body.find("hunter2"), std::string::npos);
}

TEST_F(WebAppTest, LogsOfKnownTasksAndNamesOnly) {
  json list = GetJson("/api/jobs/job_1/logs");
  EXPECT_EQ(list["logs"].size(), 4u);  // stdout, stderr, executor.log, am.log
  json tail = GetJson("/api/jobs/job_1/logs/worker:0/stdout", {{"offset", "-9"}});
  EXPECT_EQ(tail["data"], "line two\n");
  EXPECT_EQ(tail["offset"], 9);
  EXPECT_EQ(tail["next"], 18);
  EXPECT_EQ(tail["eof"], true);
  EXPECT_EQ(GetJson("/api/jobs/job_1/logs/am/am.log")["data"], "am says hi\n");
  EXPECT_EQ(Get("/api/jobs/job_1/logs/worker:1/stdout").status, 404);
  EXPECT_EQ(Get("/api/jobs/job_1/logs/worker:0/..").status, 404);
  EXPECT_EQ(Get("/api/jobs/job_1/logs/worker:0/config.xml").status, 404);
  EXPECT_EQ(Get("/api/jobs/job_1/logs/worker:0/stderr").status, 404);  // not written: no file
  EXPECT_EQ(Get("/api/jobs/job_1/logs/worker:0/stdout", {{"limit", "2000000"}}).status, 400);
}

TEST_F(WebAppTest, UnknownJobsAndTraversalAre404AndLinksAre403) {
  EXPECT_EQ(Get("/api/jobs/job_2").status, 404);
  EXPECT_EQ(Get("/api/jobs/..").status, 404);
  EXPECT_EQ(Get("/api/jobs/../../etc/passwd").status, 404);
  EXPECT_EQ(Get("/api/nothing").status, 404);
  EXPECT_EQ(Get("/etc/passwd").status, 404);
  EXPECT_EQ(Get("/assets/../../etc/passwd").status, 404);
  fs::create_directory_symlink(job_, root_ / "job_linked");
  EXPECT_EQ(Get("/api/jobs/job_linked").status, 403);
  fs::remove(job_ / "tasks" / "worker-0" / "stdout");
  fs::create_symlink(job_ / "config.xml", job_ / "tasks" / "worker-0" / "stdout");
  HttpResponse r = Get("/api/jobs/job_1/logs/worker:0/stdout");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body.find("hunter2"), std::string::npos);
}

TEST_F(WebAppTest, ThePageAndPrometheus) {
  HttpResponse page = Get("/");
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.content_type, HasSubstr("text/html"));
  HttpResponse metrics = Get("/metrics");
  EXPECT_THAT(metrics.content_type, HasSubstr("version=0.0.4"));
  EXPECT_EQ(metrics.body, "loom_jobs{state=\"RUNNING\"} 1\n");
  EXPECT_EQ(Get("/status.json").status, 404);  // the AM's alone
}

TEST(TaskMetricsText, GaugesOfTheLatestSampleAndEachTasksState) {
  history::JobView view;
  view.id = "job_1";
  history::TaskView t;
  t.id = "worker:0";
  t.state = TaskState::kRunning;
  t.restarts = 2;
  history::TaskSample s;
  s.cpu_cores = 1.5;
  s.rss_bytes = 1024;
  s.gpus = {{0, 87, 2048}};
  t.latest = s;
  view.tasks.push_back(t);
  std::string text = TaskMetricsText(view);
  EXPECT_THAT(text, HasSubstr("loom_task_cpu_cores{job=\"job_1\",task=\"worker:0\"} 1.5\n"));
  EXPECT_THAT(text, HasSubstr("loom_task_rss_bytes{job=\"job_1\",task=\"worker:0\"} 1024\n"));
  EXPECT_THAT(text, HasSubstr("loom_task_gpu_utilization_percent{job=\"job_1\",task=\"worker:0\",gpu=\"0\"} 87\n"));
  EXPECT_THAT(text, HasSubstr("loom_task_gpu_memory_bytes{job=\"job_1\",task=\"worker:0\",gpu=\"0\"} 2048\n"));
  EXPECT_THAT(text, HasSubstr("loom_task_restarts_total{job=\"job_1\",task=\"worker:0\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("loom_task_state{job=\"job_1\",task=\"worker:0\",state=\"RUNNING\"} 1\n"));
}

}  // namespace
}  // namespace loom::web
