#include "am/dashboard.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/testing.h"
#include "core/version.h"
#include "history/event_log.h"
#include "history/job_view.h"

namespace loom::am {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class DashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // As on YARN: the AM's job dir is named after its container, not the job.
    root_ = std::filesystem::temp_directory_path() / ("loom_dash_" + std::to_string(::getpid()) + "/container_1");
    std::filesystem::create_directories(root_);
    dir_ = history::JobDir(root_.string());
    history::EventLog log(dir_.events());
    ASSERT_OK(log.Append("JOB_SUBMITTED", {{"job_id", "job_y"}, {"name", "<digits>"}, {"tasks", {"worker:0", "worker:1"}}}));
    ASSERT_OK(log.Append("AM_STARTED", {{"pid", 1}}));
    ASSERT_OK(log.Append("TASK_STATE", {{"task", "worker:0"}, {"state", "RUNNING"}, {"address", "h:1"}}));
    ASSERT_OK(log.Append("TASK_STATE", {{"task", "worker:1"}, {"state", "FAILED"}, {"exit_code", 3}}));
  }
  void TearDown() override { std::filesystem::remove_all(root_.parent_path()); }
  web::HttpResponse Get(const std::string& path, std::map<std::string, std::string> params = {}) {
    return app_.Handle({"GET", path, std::move(params)});
  }
  json GetJson(const std::string& path, std::map<std::string, std::string> params = {}) {
    web::HttpResponse r = Get(path, std::move(params));
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    return json::parse(r.body);
  }

  std::filesystem::path root_;
  history::JobDir dir_;
  OwnJobCatalog catalog_{history::JobDir(
      (std::filesystem::temp_directory_path() / ("loom_dash_" + std::to_string(::getpid())) / "container_1").string()),
      "job_y"};
  web::WebApp app_{catalog_};
};

TEST_F(DashboardTest, ServesItsOwnJobUnderItsIdAndNoOther) {
  EXPECT_EQ(GetJson("/api/info"), json({{"server", "am"}, {"version", loom::kVersion}, {"job_id", "job_y"}}));
  json job = GetJson("/api/jobs/job_y");
  EXPECT_EQ(job["job_id"], "job_y");
  EXPECT_EQ(job["live"], true);
  ASSERT_EQ(job["tasks"].size(), 2u);
  EXPECT_EQ(job["tasks"][1]["exit_code"], 3);
  json list = GetJson("/api/jobs");
  EXPECT_EQ(list["total"], 1);
  EXPECT_EQ(list["jobs"][0]["job_id"], "job_y");
  EXPECT_EQ(GetJson("/api/jobs", {{"state", "RUNNING"}})["total"], 1);
  EXPECT_EQ(GetJson("/api/jobs", {{"state", "FAILED"}})["total"], 0);
  // Every filter of the portal's list, the same JobQuery: name in any case, backend, dates.
  EXPECT_EQ(GetJson("/api/jobs", {{"name", "DIGITS"}})["total"], 1);
  EXPECT_EQ(GetJson("/api/jobs", {{"name", "cifar"}})["total"], 0);
  EXPECT_EQ(GetJson("/api/jobs", {{"backend", "yarn"}})["total"], 0);
  EXPECT_EQ(GetJson("/api/jobs", {{"until", "1"}})["total"], 0);
  EXPECT_EQ(Get("/api/jobs/container_1").status, 404);
  EXPECT_EQ(Get("/api/jobs/job_other").status, 404);
}

TEST_F(DashboardTest, StatusJsonKeepsTheShapeOfLoomStatus) {
  json j = GetJson("/status.json");
  history::JobView view = *history::LoadJobView(dir_);
  view.id = "job_y";
  json expected = history::ToJson(view);
  expected["live"] = true;
  EXPECT_EQ(j, expected);
}

TEST_F(DashboardTest, TheTensorBoardLinkWhileItsTaskRuns) {
  history::EventLog log(dir_.events());
  ASSERT_OK(log.Append("TASK_STATE", {{"task", "tensorboard:0"}, {"state", "RUNNING"}, {"address", "h:21000"}}));
  EXPECT_FALSE(GetJson("/api/jobs/job_y").contains("tensorboard_url"));
  ASSERT_OK(log.Append("TENSORBOARD", {{"task", "tensorboard:0"}, {"url", "http://h:6006/"}}));
  EXPECT_EQ(GetJson("/api/jobs/job_y")["tensorboard_url"], "http://h:6006/");
  ASSERT_OK(log.Append("TASK_STATE", {{"task", "tensorboard:0"}, {"state", "KILLED"}}));
  EXPECT_FALSE(GetJson("/api/jobs/job_y").contains("tensorboard_url"));  // gone with its task
}

TEST_F(DashboardTest, PrometheusShowsEachTasksState) {
  web::HttpResponse r = Get("/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.body, HasSubstr("loom_task_state{job=\"job_y\",task=\"worker:1\",state=\"FAILED\"} 1\n"));
  EXPECT_THAT(r.body, HasSubstr("# TYPE loom_task_restarts_total counter\n"));
}

TEST_F(DashboardTest, LingersOnlyForAWatcherAndUntilItAsksAgain) {
  Dashboard dashboard(dir_, "job_y");
  auto port = dashboard.Start("127.0.0.1");
  ASSERT_OK(port);
  // Nobody watched: no wait, even with a long limit.
  auto t0 = std::chrono::steady_clock::now();
  dashboard.LingerForWatchers(std::chrono::seconds(10), std::chrono::minutes(5));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));

  // Watched: until the page asks for the job again, then at once.
  httplib::Client page("127.0.0.1", *port);
  ASSERT_TRUE(page.Get("/api/jobs/job_y"));
  std::thread next_poll([&] { page.Get("/api/jobs/job_y"); });
  t0 = std::chrono::steady_clock::now();
  dashboard.LingerForWatchers(std::chrono::seconds(10), std::chrono::minutes(5));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  next_poll.join();
  // Watched, and the page went away: the limit.
  t0 = std::chrono::steady_clock::now();
  dashboard.LingerForWatchers(std::chrono::seconds(10), std::chrono::milliseconds(200));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(200));
  dashboard.Stop();
}

// A node that serves container logs as a NodeManager does: a file's first or last N bytes.
class NodeServedLogs : public cluster::AmSide {
 public:
  Result<cluster::AmSetup> Prepare(const history::JobDir&, const std::map<std::string, std::string>&) override {
    return cluster::AmSetup{};
  }
  Result<std::unique_ptr<cluster::ContainerBroker>> MakeBroker(const history::JobDir&, const config::Config&,
                                                               std::function<int()>, const std::string&) override {
    return Status::Unimplemented("not here");
  }
  Result<cluster::TaskLogPiece> ReadTaskLog(const std::string& container, const std::string& node_http,
                                            const std::string& file, std::optional<int64_t> size) const override {
    auto it = files.find(container + "@" + node_http + "/" + file);
    if (it == files.end()) return Status::NotFound("no such log");
    ++reads;
    const std::string& f = it->second;
    std::string bytes = !size ? f : *size >= 0 ? f.substr(0, *size) : f.substr(f.size() - std::min<size_t>(f.size(), -*size));
    return cluster::TaskLogPiece{bytes, static_cast<int64_t>(f.size())};
  }
  std::map<std::string, std::string> files;
  mutable int reads = 0;
};

TEST_F(DashboardTest, LogsNotInTheJobDirComeFromTheNode) {
  history::EventLog log(dir_.events());
  ASSERT_OK(log.Append("TASK_STATE", {{"task", "worker:0"}, {"state", "RUNNING"}, {"container", "c_1"}, {"node_http", "nm:8042"}}));
  ASSERT_OK(log.Append("AM_STARTED", {{"pid", 1}, {"container", "c_am"}, {"node_http", "nm:8042"}}));
  NodeServedLogs node;
  node.files["c_1@nm:8042/stdout"] = "0123456789";
  node.files["c_am@nm:8042/am.log"] = "the AM's log\n";
  OwnJobCatalog catalog(dir_, "job_y", &node);
  web::WebApp app(catalog);
  auto get = [&](const std::string& path, std::map<std::string, std::string> params) {
    web::HttpResponse r = app.Handle({"GET", path, std::move(params)});
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    return json::parse(r.body);
  };
  json tail = get("/api/jobs/job_y/logs/worker:0/stdout", {{"offset", "-4"}});
  EXPECT_EQ(tail["data"], "6789");
  EXPECT_EQ(tail["offset"], 6);
  EXPECT_EQ(tail["eof"], true);
  json head = get("/api/jobs/job_y/logs/worker:0/stdout", {{"offset", "2"}, {"limit", "3"}});
  EXPECT_EQ(head["data"], "234");
  EXPECT_EQ(head["size"], 10);
  EXPECT_EQ(head["next"], 5);
  EXPECT_EQ(head["eof"], false);
  json near_end = get("/api/jobs/job_y/logs/worker:0/stdout", {{"offset", "8"}});
  EXPECT_EQ(near_end["data"], "89");
  // It grew: the next window starts where the last one ended.
  node.files["c_1@nm:8042/stdout"] += "abc";
  json more = get("/api/jobs/job_y/logs/worker:0/stdout", {{"offset", "10"}});
  EXPECT_EQ(more["data"], "abc");
  EXPECT_EQ(get("/api/jobs/job_y/logs/worker:0/stdout", {{"offset", "13"}})["data"], "");
  EXPECT_EQ(get("/api/jobs/job_y/logs/am/am.log", {})["data"], "the AM's log\n");
  EXPECT_EQ(app.Handle({"GET", "/api/jobs/job_y/logs/worker:0/stderr", {}}).status, 404);
  // A log in the job dir (the local backend's) is read there, not from the node.
  const int before = node.reads;
  std::filesystem::create_directories(root_ / "tasks" / "worker-0");
  std::ofstream(root_ / "tasks" / "worker-0" / "stderr") << "local\n";
  EXPECT_EQ(get("/api/jobs/job_y/logs/worker:0/stderr", {})["data"], "local\n");
  EXPECT_EQ(node.reads, before);
}

TEST_F(DashboardTest, ListensOnAnEphemeralPort) {
  Dashboard dashboard(dir_, "job_y");
  auto port = dashboard.Start("127.0.0.1");
  ASSERT_OK(port);
  EXPECT_GT(*port, 0);
  dashboard.Stop();
}

}  // namespace
}  // namespace loom::am
