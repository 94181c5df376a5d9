#include "portal/job_index.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/testing.h"
#include "history/event_log.h"
#include "history/job_record.h"
#include "history/job_view.h"

namespace loom::portal {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class JobIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("job_index_test." + std::to_string(::getpid()));
    fs::remove_all(base_);
    fs::create_directories(base_ / "a");
    fs::create_directories(base_ / "b");
  }
  void TearDown() override { fs::remove_all(base_); }

  // A job record: submitted at `ms`, ended in `state` unless "RUNNING".
  void AddJob(const std::string& root, const std::string& id, int64_t ms, const std::string& state,
              const std::string& user = "alice", const std::string& name = "train") {
    history::JobDir dir((base_ / root / id).string());
    fs::create_directories(dir.root());
    const history::JobRecord rec{.job_id = id, .name = name, .user = user, .backend = "local", .submitted_ms = ms};
    ASSERT_OK(rec.Write(dir));
    // Written here rather than through EventLog, which stamps "now": the list orders by these.
    std::ofstream(dir.events()) << json{{"ts", ms}, {"event", "JOB_SUBMITTED"}, {"job_id", id}, {"name", name},
                                        {"tasks", {"worker:0"}}}.dump()
                                << "\n"
                                << json{{"ts", ms + 1}, {"event", "TASK_STATE"}, {"task", "worker:0"}, {"state", "RUNNING"}}.dump()
                                << "\n";
    if (state != "RUNNING") ASSERT_OK(history::EndJob(dir, state, "ended " + state));
  }
  std::vector<std::string> Ids(const web::JobPage& page) {
    std::vector<std::string> ids;
    for (const json& j : page.jobs) ids.push_back(j["job_id"]);
    return ids;
  }
  std::string Root(const std::string& r) { return (base_ / r).string(); }
  fs::path base_;
};

TEST_F(JobIndexTest, NewestFirstWithFiltersAndPages) {
  AddJob("a", "job_1", 1000, "SUCCEEDED");
  AddJob("a", "job_2", 2000, "FAILED", "bob", "Resnet <b>");
  AddJob("a", "job_3", 3000, "KILLED");
  AddJob("b", "job_4", 4000, "RUNNING", "bob");
  JobIndex index({Root("a"), Root("b")});
  EXPECT_EQ(index.Refresh(), 4);
  web::JobQuery all;
  web::JobPage page = index.List(all);
  EXPECT_EQ(page.total, 4);
  EXPECT_EQ(Ids(page), (std::vector<std::string>{"job_4", "job_3", "job_2", "job_1"}));
  EXPECT_EQ(page.jobs[2]["user"], "bob");
  EXPECT_EQ(page.jobs[2]["state"], "FAILED");
  EXPECT_EQ(page.jobs[2]["tasks"], 1);

  web::JobQuery q;
  q.states = {"FAILED", "KILLED"};
  EXPECT_EQ(Ids(index.List(q)), (std::vector<std::string>{"job_3", "job_2"}));
  q = {};
  q.user = "bob";
  EXPECT_EQ(Ids(index.List(q)), (std::vector<std::string>{"job_4", "job_2"}));
  q = {};
  q.name = "resnet";
  EXPECT_EQ(Ids(index.List(q)), (std::vector<std::string>{"job_2"}));
  q = {};
  q.since_ms = 2000;
  q.until_ms = 3000;
  EXPECT_EQ(Ids(index.List(q)), (std::vector<std::string>{"job_3", "job_2"}));
  q = {};
  q.offset = 1;
  q.limit = 2;
  page = index.List(q);
  EXPECT_EQ(page.total, 4);
  EXPECT_EQ(Ids(page), (std::vector<std::string>{"job_3", "job_2"}));
  ASSERT_OK(index.Find("job_4"));
  EXPECT_EQ(index.Find("job_4")->root, Root("b"));
  EXPECT_FALSE(index.Find("job_9").ok());
  EXPECT_FALSE(index.Find("..").ok());
}

TEST_F(JobIndexTest, RereadsOnlyWhatChangedAndForgetsWhatWentAway) {
  AddJob("a", "job_1", 1000, "SUCCEEDED");
  AddJob("a", "job_2", 2000, "RUNNING");
  JobIndex index({Root("a")});
  EXPECT_EQ(index.Refresh(), 2);
  EXPECT_EQ(index.Refresh(), 0);  // nothing changed: nothing read
  ASSERT_OK(history::EndJob(history::JobDir(Root("a") + "/job_2"), "SUCCEEDED", "done"));
  EXPECT_EQ(index.Refresh(), 1);
  web::JobQuery q;
  q.states = {"SUCCEEDED"};
  EXPECT_EQ(index.List(q).total, 2);
  fs::remove_all(base_ / "a" / "job_1");
  EXPECT_EQ(index.Refresh(), 0);
  EXPECT_EQ(index.size(), 1u);
}

TEST_F(JobIndexTest, TheFirstRootWinsAndLinkedJobsAreLeftOut) {
  AddJob("a", "job_1", 1000, "SUCCEEDED");
  AddJob("b", "job_1", 1000, "FAILED");
  AddJob("b", "job_2", 2000, "FAILED");
  fs::create_directory_symlink(base_ / "b" / "job_2", base_ / "a" / "job_3");
  AddJob("a", "job_4", 4000, "FAILED");
  fs::remove(base_ / "a" / "job_4" / "job.json");
  fs::create_symlink("/etc/hostname", base_ / "a" / "job_4" / "job.json");
  JobIndex index({Root("a"), Root("b")});
  index.Refresh();
  web::JobPage page = index.List({});
  EXPECT_EQ(Ids(page), (std::vector<std::string>{"job_2", "job_1"}));
  EXPECT_EQ(page.jobs[1]["state"], "SUCCEEDED");
}

TEST_F(JobIndexTest, PrometheusCountsJobsByState) {
  AddJob("a", "job_1", 1000, "SUCCEEDED");
  AddJob("a", "job_2", 2000, "FAILED");
  AddJob("a", "job_3", 3000, "FAILED");
  JobIndex index({Root("a")});
  index.Refresh();
  EXPECT_EQ(index.PrometheusMetrics(),
            "# HELP loom_jobs Jobs in the portal's history, by state.\n# TYPE loom_jobs gauge\n"
            "loom_jobs{state=\"FAILED\"} 2\nloom_jobs{state=\"SUCCEEDED\"} 1\n"
            "# HELP loom_portal_jobs_indexed Jobs the portal indexes.\n# TYPE loom_portal_jobs_indexed gauge\n"
            "loom_portal_jobs_indexed 3\n");
}

}  // namespace
}  // namespace loom::portal
