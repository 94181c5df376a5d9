#include "cli/event_lines.h"

#include "core/testing.h"
#include "history/events.h"

namespace loom::cli {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;

json Event(const char* kind, json fields) {
  fields["event"] = kind;
  fields["ts"] = 1700000000123;
  return fields;
}

// TASK_METRICS was shown as its bare name: the values are what the line is for.
TEST(DescribeEvent, TaskMetricsShowEachTasksMemory) {
  std::string line = DescribeEvent(Event(history::events::kTaskMetrics,
                                         {{"tasks", {{{"task", "worker:0"}, {"rss_bytes", int64_t{512} << 20}},
                                                     {{"task", "worker:1"}, {"rss_bytes", 3 << 19}}}}}));
  EXPECT_THAT(line, HasSubstr("memory (RSS): worker:0 512M, worker:1 1.5M"));
  EXPECT_THAT(line, Not(HasSubstr("TASK_METRICS")));
}

TEST(DescribeEvent, AmStartedNamesItsDashboard) {
  std::string line = DescribeEvent(Event(history::events::kAmStarted, {{"pid", 42},
                                                                       {"address", "127.0.0.1:4000"},
                                                                       {"status_url", "http://127.0.0.1:4001/"}}));
  EXPECT_THAT(line, HasSubstr("AM started (pid 42, 127.0.0.1:4000); dashboard: http://127.0.0.1:4001/"));
  EXPECT_THAT(DescribeEvent(Event(history::events::kAmStarted, {{"pid", 42}, {"address", "a:1"}})),
              Not(HasSubstr("dashboard")));
}

// Every kind the AM and the backends write says something beyond its name.
TEST(DescribeEvent, NoKindIsShownBare) {
  const char* kinds[] = {history::events::kJobSubmitted,     history::events::kBackendSubmitted,
                         history::events::kBackendState,     history::events::kAmStarted,
                         history::events::kTaskState,        history::events::kTasksPending,
                         history::events::kContainerReleased, history::events::kGangComplete,
                         history::events::kTaskRestarting,   history::events::kJobRestarting,
                         history::events::kTaskMetrics,      history::events::kDependencyTimeout,
                         history::events::kStageStarted,     history::events::kTensorBoard,
                         history::events::kJobWarning,       history::events::kJobFinished};
  for (const char* kind : kinds) {
    std::string line = DescribeEvent(Event(kind, json::object()));
    EXPECT_THAT(line, Not(EndsWith(std::string("  ") + kind))) << kind;
  }
  EXPECT_THAT(DescribeEvent(Event(history::events::kContainerReleased,
                                  {{"container", "container_1_0001_01_000003"}, {"host", "nm1"}, {"reason", "no task"}})),
              HasSubstr("container container_1_0001_01_000003 on nm1 given back unused: no task"));
  EXPECT_THAT(DescribeEvent(Event(history::events::kDependencyTimeout,
                                  {{"type", "evaluator"}, {"group", "training"}, {"ignored", true}})),
              HasSubstr("evaluator still running after group 'training' finished: stopping it (.ignored=true)"));
  // A kind from a newer AM: its fields.
  EXPECT_THAT(DescribeEvent(Event("SOMETHING_NEW", {{"x", 1}})), HasSubstr("SOMETHING_NEW {\"x\":1}"));
}

}  // namespace
}  // namespace loom::cli
