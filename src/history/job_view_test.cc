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
  EXPECT_EQ(view->tasks[0].state, TaskState::kFailed);
  EXPECT_EQ(view->tasks[0].exit_code, 3);
  EXPECT_EQ(view->tasks[0].address, "h:1");
  EXPECT_EQ(view->tasks[1].state, TaskState::kPending);
  EXPECT_FALSE(view->final);
}

// README: "a dead link is never shown". The TensorBoard goes with its task; the AM's dashboard
// and the TensorBoard go with the job's end.
TEST_F(JobViewTest, LinksAreShownOnlyWhileSomethingAnswersThere) {
  EventLog log(dir_.events());
  ASSERT_OK(log.Append("JOB_SUBMITTED", {{"job_id", "job_x"}, {"tasks", {"worker:0", "tensorboard:0"}}}));
  ASSERT_OK(log.Append("AM_STARTED", {{"pid", 1}, {"status_url", "http://127.0.0.1:5000/"}}));
  ASSERT_OK(log.Append("TASK_STATE", {{"task", "tensorboard:0"}, {"state", "RUNNING"}}));
  ASSERT_OK(log.Append("TENSORBOARD", {{"task", "tensorboard:0"}, {"url", "http://127.0.0.1:28305/"}}));
  auto running = LoadJobView(dir_);
  ASSERT_OK(running);
  EXPECT_EQ(running->dashboard_url, "http://127.0.0.1:5000/");
  EXPECT_EQ(running->tensorboard_url, "http://127.0.0.1:28305/");
  EXPECT_EQ(ToJson(*running)["dashboard_url"], "http://127.0.0.1:5000/");
  EXPECT_EQ(ToJson(*running)["tensorboard_url"], "http://127.0.0.1:28305/");

  ASSERT_OK(log.Append("TASK_STATE", {{"task", "tensorboard:0"}, {"state", "KILLED"}, {"exit_code", 143}}));
  auto tb_gone = LoadJobView(dir_);
  ASSERT_OK(tb_gone);
  EXPECT_EQ(tb_gone->tensorboard_url, "");
  EXPECT_FALSE(ToJson(*tb_gone).contains("tensorboard_url"));
  EXPECT_EQ(tb_gone->dashboard_url, "http://127.0.0.1:5000/");
  // A late answer of the task that ended is no link either.
  ASSERT_OK(log.Append("TENSORBOARD", {{"task", "tensorboard:0"}, {"url", "http://127.0.0.1:28305/"}}));
  EXPECT_EQ(LoadJobView(dir_)->tensorboard_url, "");

  // The chief serving it itself: the link lives until the job's end, with the dashboard.
  ASSERT_OK(log.Append("TASK_STATE", {{"task", "worker:0"}, {"state", "RUNNING"}}));
  ASSERT_OK(log.Append("TENSORBOARD", {{"task", "worker:0"}, {"url", "http://127.0.0.1:28306/"}}));
  EXPECT_EQ(LoadJobView(dir_)->tensorboard_url, "http://127.0.0.1:28306/");
  ASSERT_OK(EndJob(dir_, "SUCCEEDED", ""));
  auto ended = LoadJobView(dir_);
  ASSERT_OK(ended);
  EXPECT_EQ(ended->tensorboard_url, "");
  EXPECT_EQ(ended->dashboard_url, "");
  EXPECT_FALSE(ToJson(*ended).contains("dashboard_url"));
  // A follower folding the events alone sees the end in JOB_FINISHED.
  JobView follower;
  for (const auto& e : ReadEvents(dir_.events())) follower.Apply(e);
  EXPECT_EQ(follower.dashboard_url, "http://127.0.0.1:5000/");
  follower.Apply({{"ts", 2}, {"event", "JOB_FINISHED"}, {"state", "SUCCEEDED"}});
  EXPECT_EQ(follower.dashboard_url, "");
  EXPECT_EQ(follower.tensorboard_url, "");
}

// Whoever ends the job first decides its state; a later writer learns it did not.
TEST_F(JobViewTest, EndJobIfFirstSaysWhoseEndStands) {
  EventLog log(dir_.events());
  ASSERT_OK(log.Append("JOB_SUBMITTED", {{"job_id", "job_x"}, {"tasks", {"worker:0"}}}));
  auto first = EndJobIfFirst(dir_, "FAILED", "the AM did not start in time");
  ASSERT_OK(first);
  EXPECT_TRUE(*first);
  auto second = EndJobIfFirst(dir_, "KILLED", "killed");
  ASSERT_OK(second);
  EXPECT_FALSE(*second);
  auto view = LoadJobView(dir_);
  EXPECT_EQ(view->state, "FAILED");
  EXPECT_EQ(view->diagnostics, "the AM did not start in time");
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

// The local backend's queue: QUEUED with its place and reason until admitted, then RUNNING.
TEST_F(JobViewTest, QueuedJobShowsItsPlaceUntilAdmitted) {
  JobView view;
  view.Apply(nlohmann::json::parse(R"({"ts": 1, "event": "JOB_SUBMITTED", "tasks": ["worker:0"]})"));
  view.Apply(nlohmann::json::parse(
      R"({"ts": 2, "event": "BACKEND_STATE", "state": "QUEUED", "reason": "waiting for 1 GPU held by job_a", "position": 2})"));
  EXPECT_EQ(view.state, "QUEUED");
  EXPECT_EQ(view.queue_position, 2);
  EXPECT_EQ(view.queue_reason, "waiting for 1 GPU held by job_a");
  nlohmann::json j = ToJson(view);
  EXPECT_EQ(j["queue_position"], 2);
  EXPECT_EQ(j["queue_reason"], "waiting for 1 GPU held by job_a");
  view.Apply(nlohmann::json::parse(R"({"ts": 3, "event": "BACKEND_STATE", "state": "QUEUED", "reason": "r", "position": 1})"));
  EXPECT_EQ(view.queue_position, 1);
  view.Apply(nlohmann::json::parse(R"({"ts": 4, "event": "BACKEND_STATE", "state": "ADMITTED", "waited_ms": 2})"));
  EXPECT_EQ(view.state, "SUBMITTED");
  EXPECT_EQ(view.queue_position, 0);
  EXPECT_FALSE(ToJson(view).contains("queue_position"));
  view.Apply(nlohmann::json::parse(R"({"ts": 5, "event": "AM_STARTED", "pid": 9})"));
  EXPECT_EQ(view.state, "RUNNING");
}

TEST_F(JobViewTest, FinalStatusFirstWriterWins) {
  ASSERT_OK(WriteFinalStatus(dir_, "FAILED", "first", {{"attempts", 2}}));
  EXPECT_STATUS(WriteFinalStatus(dir_, "KILLED", "second"), kAlreadyExists, ::testing::_);
  auto view = LoadJobView(dir_);
  EXPECT_TRUE(view->final);
  EXPECT_EQ(view->state, "FAILED");
  EXPECT_EQ(view->diagnostics, "first");
  EXPECT_GT(view->finished_ms, 0);
  // One shape, whoever writes it: the dir's job id, the end, and the writer's extra fields.
  auto written = nlohmann::json::parse(*ReadFile(dir_.status()));
  EXPECT_EQ(written["job_id"], dir_.job_id());
  EXPECT_EQ(written["attempts"], 2);
}

TEST_F(JobViewTest, RssIsTheLastSampleWhileATaskRunsThenItsPeak) {
  JobView view;
  auto apply = [&](const char* text) { view.Apply(nlohmann::json::parse(text)); };
  apply(R"({"ts": 1000, "event": "TASK_STATE", "task": "worker:0", "state": "RUNNING"})");
  apply(R"({"ts": 1500, "event": "TASK_METRICS", "tasks": [{"task": "worker:0", "rss_bytes": 734003200}]})");
  apply(R"({"ts": 2000, "event": "TASK_METRICS", "tasks": [{"task": "worker:0", "rss_bytes": 314572800}]})");
  EXPECT_EQ(view.tasks[0].rss_bytes, 314572800);
  EXPECT_EQ(view.tasks[0].peak_rss_bytes, 734003200);  // the highest sample so far
  std::string table = RenderTaskTable(view);
  EXPECT_THAT(table, ::testing::HasSubstr("RSS"));
  EXPECT_THAT(table, ::testing::HasSubstr(" 300M "));  // now, not the peak
  EXPECT_EQ(ToJson(view)["tasks"][0]["rss_bytes"], 314572800);
  apply(R"({"ts": 3000, "event": "TASK_STATE", "task": "worker:0", "state": "SUCCEEDED", "exit_code": 0,
            "peak_rss_bytes": 786432000})");
  apply(R"({"ts": 3100, "event": "TASK_METRICS", "tasks": [{"task": "worker:0", "rss_bytes": 1048576}]})");  // late
  EXPECT_THAT(RenderTaskTable(view), ::testing::HasSubstr(" 750M "));  // ended: the executor's peak
}

// A task restarted alone, then the whole gang: every container it ran in stays known, oldest
// first, with where its logs are; the current one is the task's own.
TEST_F(JobViewTest, ARestartedTaskKeepsItsEarlierContainers) {
  JobView view;
  auto apply = [&](const char* text) { view.Apply(nlohmann::json::parse(text)); };
  apply(R"({"ts": 1, "event": "TASK_STATE", "task": "worker:0", "state": "LAUNCHED", "container": "c2", "node_id": "n1:1", "node_http": "n1:2"})");
  apply(R"({"ts": 2, "event": "TASK_STATE", "task": "worker:0", "state": "FAILED"})");
  apply(R"({"ts": 3, "event": "TASK_STATE", "task": "worker:0", "state": "LAUNCHED", "container": "c3", "node_id": "n2:1", "node_http": "n2:2"})");
  apply(R"({"ts": 4, "event": "TASK_STATE", "task": "worker:0", "state": "RUNNING", "container": "c3"})");
  apply(R"({"ts": 5, "event": "JOB_RESTARTING", "attempt": 1, "reason": "x"})");
  EXPECT_EQ(view.tasks[0].state, TaskState::kPending);
  EXPECT_EQ(view.tasks[0].container, "");
  apply(R"({"ts": 6, "event": "TASK_STATE", "task": "worker:0", "state": "LAUNCHED", "container": "c5", "node_id": "n1:1", "node_http": "n1:2"})");
  ASSERT_EQ(view.tasks[0].earlier.size(), 2u);
  EXPECT_EQ(view.tasks[0].earlier[0].container, "c2");
  EXPECT_EQ(view.tasks[0].earlier[0].node_http, "n1:2");
  EXPECT_EQ(view.tasks[0].earlier[1].container, "c3");
  EXPECT_EQ(view.tasks[0].earlier[1].node_id, "n2:1");
  EXPECT_EQ(view.tasks[0].container, "c5");
}

// A job ended by its backend (killed on YARN, its AM gone): the tasks that ran were stopped
// with SIGTERM, 143 as the README promises; one that never started has no exit code.
TEST_F(JobViewTest, EndJobStopsRunningTasksWith143) {
  EventLog log(dir_.events());
  ASSERT_OK(log.Append("JOB_SUBMITTED", {{"job_id", "job_x"}, {"tasks", {"worker:0", "worker:1", "ps:0"}}}));
  ASSERT_OK(log.Append("TASK_STATE", {{"task", "worker:0"}, {"state", "RUNNING"}}));
  ASSERT_OK(log.Append("TASK_STATE", {{"task", "ps:0"}, {"state", "SUCCEEDED"}, {"exit_code", 0}}));
  ASSERT_OK(EndJob(dir_, "KILLED", "killed by loom kill", {}, TaskState::kKilled));
  auto view = LoadJobView(dir_);
  ASSERT_OK(view);
  EXPECT_EQ(view->state, "KILLED");
  const TaskView* running = view->FindTask("worker:0");
  const TaskView* pending = view->FindTask("worker:1");
  ASSERT_TRUE(running && pending);
  EXPECT_EQ(running->state, TaskState::kKilled);
  EXPECT_EQ(running->exit_code, 143);
  EXPECT_EQ(pending->state, TaskState::kKilled);
  EXPECT_EQ(pending->exit_code, 0);
  EXPECT_EQ(view->FindTask("ps:0")->state, TaskState::kSucceeded);  // an ended task keeps its end
}

// A state this Loom cannot read (a newer writer's, a damaged file) does not lose the view:
// the task keeps the last state it could read, which the view and EndJob go by, and shows the
// spelling as written, in the table and in --json, until a state it can read follows.
TEST_F(JobViewTest, AnUnknownTaskStateIsShownAsWrittenAndDecidesNothing) {
  EventLog log(dir_.events());
  ASSERT_OK(log.Append("JOB_SUBMITTED", {{"job_id", "job_x"}, {"tasks", {"worker:0", "worker:1"}}}));
  ASSERT_OK(log.Append("TASK_STATE", {{"task", "worker:0"}, {"state", "RUNNING"}, {"address", "h:1"}}));
  ASSERT_OK(log.Append("TASK_STATE", {{"task", "worker:0"}, {"state", "PREEMPTED"}, {"exit_code", 137}}));
  auto view = LoadJobView(dir_);
  ASSERT_OK(view);
  const TaskView* t = view->FindTask("worker:0");
  EXPECT_EQ(t->state, TaskState::kRunning);
  EXPECT_EQ(t->unknown_state, "PREEMPTED");
  EXPECT_EQ(t->StateText(), "PREEMPTED");
  EXPECT_EQ(t->exit_code, 137);  // the rest of the event still counts
  EXPECT_EQ(t->finished_ms, 0);  // not an end
  EXPECT_EQ(ToJson(*view)["tasks"][0]["state"], "PREEMPTED");
  EXPECT_THAT(RenderTaskTable(*view), ::testing::HasSubstr(" PREEMPTED "));
  EXPECT_EQ(view->FindTask("worker:1")->StateText(), "PENDING");

  // The job's end goes by the last readable state: a running task is stopped with 143.
  ASSERT_OK(EndJob(dir_, "KILLED", "killed"));
  auto ended = LoadJobView(dir_);
  ASSERT_OK(ended);
  t = ended->FindTask("worker:0");
  EXPECT_EQ(t->state, TaskState::kKilled);
  EXPECT_EQ(t->unknown_state, "");
  EXPECT_EQ(t->exit_code, 143);
  EXPECT_EQ(ToJson(*ended)["tasks"][0]["state"], "KILLED");
}

// `loom status --json` and the status page spell every state as the AM wrote it.
TEST_F(JobViewTest, JsonSpellsEveryStateAsWritten) {
  JobView view;
  for (const char* name : {"PENDING", "LAUNCHED", "REGISTERED", "RUNNING", "SUCCEEDED", "FAILED", "KILLED", "LOST"}) {
    view.Apply({{"ts", 1}, {"event", "TASK_STATE"}, {"task", "worker:0"}, {"state", name}});
    EXPECT_EQ(ToJson(view)["tasks"][0]["state"], name);
    EXPECT_EQ(TaskStateName(view.tasks[0].state), name);
  }
}

TEST_F(JobViewTest, KillCauseFirstWriterWins) {
  EXPECT_EQ(KillCause(dir_), "");
  ASSERT_OK(RecordKillCause(dir_, "killed: Ctrl-C (SIGINT) to loom submit"));
  EXPECT_STATUS(RecordKillCause(dir_, "killed by loom kill (user kim)"), kAlreadyExists, ::testing::_);
  EXPECT_EQ(KillCause(dir_), "killed: Ctrl-C (SIGINT) to loom submit");
}

}  // namespace
}  // namespace loom::history
