#include "history/job_view.h"

#include <filesystem>

#include "core/files.h"
#include "core/testing.h"
#include "history/event_log.h"

namespace loom::history {
namespace {

class JobViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() / ("loom_jv_" + std::to_string(::getpid()) + "/job_x");
    std::filesystem::create_directories(root_);
    dir_ = JobDir(root_.string());
  }
  void TearDown() override { std::filesystem::remove_all(root_.parent_path()); }
  std::filesystem::path root_;
  JobDir dir_;
};

TEST_F(JobViewTest, FoldsEventsInOrder) {
  EventLog log(dir_.events());
  ASSERT_OK(log.Append("JOB_SUBMITTED", {{"job_id", "job_x"}, {"name", "n"}, {"tasks", {"worker:0", "worker:1"}}}));
  ASSERT_OK(log.Append("TASK_STATE", {{"task", "worker:0"}, {"state", "RUNNING"}, {"address", "h:1"}}));
  ASSERT_OK(log.Append("TASK_STATE", {{"task", "worker:0"}, {"state", "FAILED"}, {"exit_code", 3}}));
  // Events of the wrong shape are skipped, not fatal.
  ASSERT_OK(log.Append("TASK_STATE", {{"task", 7}, {"state", {1, 2}}}));
  ASSERT_OK(log.Append("JOB_SUBMITTED", {{"tasks", {1, 2}}}));
  // A torn line (a writer killed mid-write) is skipped, not fatal.
  std::FILE* f = std::fopen(dir_.events().c_str(), "a");
  std::fputs("{\"ts\": 1, \"event\": \"TASK_ST", f);
  std::fclose(f);
  auto view = LoadJobView(dir_);
  ASSERT_OK(view);
  ASSERT_EQ(view->tasks.size(), 2u);
  EXPECT_EQ(view->tasks[0].state, "FAILED");
  EXPECT_EQ(view->tasks[0].exit_code, 3);
  EXPECT_EQ(view->tasks[0].address, "h:1");
  EXPECT_EQ(view->tasks[1].state, "PENDING");
  EXPECT_FALSE(view->final);
}

// Found by events_fuzzer: a float or out-of-range number where an integer belongs must be
// ignored, not converted (undefined behaviour) or subtracted (overflow).
TEST_F(JobViewTest, NumbersOutOfRangeAreIgnored) {
  JobView view;
  view.Apply(nlohmann::json::parse(R"({"ts": 4.9e79, "event": "TASK_STATE", "task": "w:0", "state": "RUNNING"})"));
  view.Apply(nlohmann::json::parse(
      R"({"ts": -9223372036854775807, "event": "TASK_STATE", "task": "w:0", "state": "FAILED", "exit_code": 1e300})"));
  view.Apply(nlohmann::json::parse(R"({"ts": 18446744073709551615, "event": "TASK_RESTARTING", "task": "w:0", "restart": 2})"));
  ASSERT_EQ(view.tasks.size(), 1u);
  EXPECT_EQ(view.tasks[0].started_ms, 0);
  EXPECT_EQ(view.tasks[0].finished_ms, 0);
  EXPECT_EQ(view.tasks[0].exit_code, 0);
  EXPECT_EQ(view.tasks[0].restarts, 2);
  EXPECT_EQ(EventInt(nlohmann::json::parse(R"({"n": 18446744073709551615})"), "n", -1, 0, 100), -1);
  EXPECT_EQ(EventInt(nlohmann::json::parse(R"({"n": 42})"), "n", -1, 0, 100), 42);
  (void)RenderTaskTable(view);
}

TEST_F(JobViewTest, FinalStatusFirstWriterWins) {
  ASSERT_OK(WriteFinalStatus(dir_, {{"state", "FAILED"}, {"diagnostics", "first"}}));
  EXPECT_STATUS(WriteFinalStatus(dir_, {{"state", "KILLED"}, {"diagnostics", "second"}}), kAlreadyExists,
                ::testing::_);
  auto view = LoadJobView(dir_);
  EXPECT_TRUE(view->final);
  EXPECT_EQ(view->state, "FAILED");
  EXPECT_EQ(view->diagnostics, "first");
}

}  // namespace
}  // namespace loom::history
