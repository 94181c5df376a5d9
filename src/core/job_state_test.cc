#include "core/job_state.h"

#include <sstream>

#include "core/testing.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

JobSpec MakeSpec(std::vector<std::tuple<std::string, int, TaskRole, bool>> types,
                 SuccessPolicy policy = SuccessPolicy::kAll) {
  JobSpec spec;
  spec.success_policy = policy;
  for (auto& [name, n, role, sof] : types) {
    spec.types.push_back({.name = name, .instances = n, .role = role, .stop_on_failure = sof});
  }
  return spec;
}

TEST(JobTracker, GangCompletesOnLastRegistration) {
  JobSpec spec = MakeSpec({{"worker", 2, TaskRole::kTracked, false}, {"ps", 1, TaskRole::kUntracked, true}});
  JobTracker jt(spec);
  EXPECT_FALSE(jt.OnRegistered({"worker", 0}, "h", 1));
  EXPECT_FALSE(jt.OnRegistered({"ps", 0}, "h", 2));
  EXPECT_TRUE(jt.OnRegistered({"worker", 1}, "h", 3));
  EXPECT_FALSE(jt.OnRegistered({"worker", 1}, "h", 3));  // a duplicate does not re-complete
  EXPECT_TRUE(jt.GangComplete());
}

TEST(JobTracker, SuccessStopsUntrackedTasks) {
  JobSpec spec = MakeSpec({{"worker", 2, TaskRole::kTracked, false}, {"ps", 1, TaskRole::kUntracked, true}});
  JobTracker jt(spec);
  EXPECT_TRUE(jt.OnTaskFinished({"worker", 0}, 0, false, "").empty());
  auto stop = jt.OnTaskFinished({"worker", 1}, 0, false, "");
  EXPECT_EQ(jt.state(), JobState::kSucceeded);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_EQ(stop[0].ToString(), "ps:0");
  // The ps then dies from our SIGTERM: recorded as KILLED, the job stays SUCCEEDED.
  jt.OnTaskFinished({"ps", 0}, 143, true, "");
  EXPECT_EQ(jt.Find({"ps", 0})->state, TaskState::kKilled);
  EXPECT_EQ(jt.state(), JobState::kSucceeded);
}

TEST(JobTracker, TrackedTasksLoomStoppedAreNamedNotCountedAsSucceeded) {
  // A group dependency's `.ignored` timeout stopped the evaluators: the end says so.
  JobSpec spec = MakeSpec({{"chief", 1, TaskRole::kTracked, false},
                           {"worker", 1, TaskRole::kTracked, false},
                           {"evaluator", 2, TaskRole::kTracked, false}});
  JobTracker jt(spec);
  jt.OnTaskFinished({"chief", 0}, 0, false, "");
  jt.OnTaskFinished({"worker", 0}, 0, false, "");
  const std::string why = "stopped by the AM: still running 30 s after group 'training' (chief,worker) finished";
  jt.OnTaskFinished({"evaluator", 0}, 143, true, why);
  EXPECT_EQ(jt.state(), JobState::kRunning);
  jt.OnTaskFinished({"evaluator", 1}, 143, true, why);
  EXPECT_EQ(jt.state(), JobState::kSucceeded);
  EXPECT_EQ(jt.diagnostics(), "chief:0 and worker:0 succeeded; evaluator:0 and evaluator:1 " + why);
}

TEST(JobTracker, ALongListOfTasksIsShortened) {
  JobSpec spec = MakeSpec({{"worker", 8, TaskRole::kTracked, false}, {"evaluator", 1, TaskRole::kTracked, false}});
  JobTracker jt(spec);
  for (int i = 0; i < 8; ++i) jt.OnTaskFinished({"worker", i}, 0, false, "");
  jt.OnTaskFinished({"evaluator", 0}, 143, true, "");
  EXPECT_EQ(jt.diagnostics(), "worker:0, worker:1, worker:2, worker:3 and 4 more succeeded; evaluator:0 was stopped by Loom");
}

TEST(JobTracker, ChiefFailureFailsAtOnce) {
  JobSpec spec = MakeSpec({{"worker", 3, TaskRole::kTracked, false}}, SuccessPolicy::kAny);
  JobTracker jt(spec);
  auto stop = jt.OnTaskFinished({"worker", 0}, 1, false, "exit code 1");
  EXPECT_EQ(jt.state(), JobState::kFailed);
  EXPECT_THAT(jt.diagnostics(), HasSubstr("chief task worker:0 failed: exit code 1"));
  EXPECT_EQ(stop.size(), 2u);
}

// Tasks end in turn, each leaving the job in a state; at the end the diagnostics say why.
TEST(JobTracker, WhichEndsDecideTheJob) {
  struct End {
    TaskId task;
    int exit_code;
    std::string why;
    JobState then;
  };
  struct Case {
    const char* name;
    JobSpec spec;
    std::vector<End> ends;
    std::string says;
  };
  const Case cases[] = {
      {"AnyWorkerFailureFailsByDefault",
       MakeSpec({{"worker", 3, TaskRole::kTracked, false}}),
       {{{"worker", 2}, 3, "exit code 3", JobState::kFailed}},
       "task worker:2 failed: exit code 3"},
      {"TonyRuleToleratesSomeWorkerFailures",
       MakeSpec({{"worker", 3, TaskRole::kTracked, false}}, SuccessPolicy::kAny),
       {{{"worker", 2}, 3, "", JobState::kRunning},
        {{"worker", 1}, 0, "", JobState::kRunning},
        {{"worker", 0}, 0, "", JobState::kSucceeded}},
       "2 of 3"},
      {"StopOnFailureAndUntrackedFailures",
       MakeSpec({{"worker", 1, TaskRole::kTracked, false}, {"ps", 1, TaskRole::kUntracked, true}}),
       {{{"ps", 0}, 1, "", JobState::kFailed}},
       "stop-on-failure task ps:0"},
      {"SidecarFailureIsIgnored",
       MakeSpec({{"worker", 1, TaskRole::kTracked, false}, {"tensorboard", 1, TaskRole::kSidecar, false}}),
       {{{"tensorboard", 0}, 1, "", JobState::kRunning}, {{"worker", 0}, 0, "", JobState::kSucceeded}},
       ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    JobTracker jt(c.spec);
    for (const End& e : c.ends) {
      jt.OnTaskFinished(e.task, e.exit_code, false, e.why);
      EXPECT_EQ(jt.state(), e.then) << "after " << e.task.ToString();
    }
    EXPECT_THAT(jt.diagnostics(), HasSubstr(c.says));
  }
}

TEST(JobTracker, TonyRuleCountsStoppedTasksApartFromSuccesses) {
  // worker:2 failed and evaluator:0 was stopped by a group dependency: 2 of 4 succeeded, and
  // the end names both, the policy in the user's spelling.
  JobSpec spec = MakeSpec({{"worker", 3, TaskRole::kTracked, false}, {"evaluator", 1, TaskRole::kTracked, false}},
                          SuccessPolicy::kAny);
  spec.key_prefix = "tony.";
  JobTracker jt(spec);
  jt.OnTaskFinished({"worker", 2}, 3, false, "exit 3");
  jt.OnTaskFinished({"worker", 1}, 0, false, "");
  jt.OnTaskFinished({"worker", 0}, 0, false, "");
  jt.OnTaskFinished({"evaluator", 0}, 143, true, "stopped by the AM: still running 30 s after group 'training'");
  EXPECT_EQ(jt.state(), JobState::kSucceeded);
  EXPECT_THAT(jt.diagnostics(), HasSubstr("2 of 4 tracked tasks succeeded (tony.application.success-policy=any)"));
  EXPECT_THAT(jt.diagnostics(), HasSubstr("task worker:2 failed"));
  EXPECT_THAT(jt.diagnostics(), HasSubstr("evaluator:0 stopped by the AM"));
}

TEST(JobTracker, FirstFinalStateWins) {
  JobSpec spec = MakeSpec({{"worker", 2, TaskRole::kTracked, false}});
  JobTracker jt(spec);
  jt.OnTaskFinished({"worker", 1}, 3, false, "first");
  EXPECT_TRUE(jt.Finish(JobState::kKilled, "later kill").empty());
  EXPECT_EQ(jt.state(), JobState::kFailed);
  EXPECT_THAT(jt.diagnostics(), HasSubstr("first"));
}

TEST(JobTracker, RestartedTaskRejoinsTheGang) {
  JobSpec spec = MakeSpec({{"worker", 2, TaskRole::kTracked, false}});
  JobTracker jt(spec);
  jt.OnRegistered({"worker", 0}, "h", 1);
  EXPECT_TRUE(jt.OnRegistered({"worker", 1}, "h", 2));
  jt.OnRunning({"worker", 1});
  jt.RestartTask({"worker", 1});
  EXPECT_EQ(jt.Find({"worker", 1})->state, TaskState::kPending);
  EXPECT_FALSE(jt.GangComplete());
  EXPECT_EQ(jt.state(), JobState::kRunning);
  EXPECT_TRUE(jt.OnRegistered({"worker", 1}, "h", 3));  // complete again
  jt.OnTaskFinished({"worker", 0}, 0, false, "");
  jt.OnTaskFinished({"worker", 1}, 0, false, "");
  EXPECT_EQ(jt.state(), JobState::kSucceeded);
}

TEST(RestartPolicy, ExitCodePolicyRetriesOnlySignalsAndHighCodes) {
  TaskTypeSpec t;
  EXPECT_FALSE(t.Restartable(1));
  t.restart_policy = RestartPolicy::kOnFailure;
  EXPECT_TRUE(t.Restartable(1));
  EXPECT_FALSE(t.Restartable(0));
  t.restart_policy = RestartPolicy::kExitCode;
  EXPECT_FALSE(t.Restartable(3));
  EXPECT_FALSE(t.Restartable(127));
  EXPECT_TRUE(t.Restartable(137));
  EXPECT_TRUE(t.Restartable(255));
}

TEST(JobTracker, KillStopsEverything) {
  JobSpec spec = MakeSpec({{"worker", 2, TaskRole::kTracked, false}});
  JobTracker jt(spec);
  jt.OnTaskFinished({"worker", 1}, 0, false, "");
  auto stop = jt.Finish(JobState::kKilled, "killed by user");
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_EQ(stop[0].ToString(), "worker:0");
  EXPECT_EQ(jt.state(), JobState::kKilled);
}


// TonY's E2E shape: a db service and its loader first, then ps and workers.
JobSpec TwoStageSpec(SuccessPolicy policy = SuccessPolicy::kAll) {
  JobSpec spec = MakeSpec({{"worker", 2, TaskRole::kTracked, false},
                           {"db", 1, TaskRole::kUntracked, false},
                           {"dbloader", 1, TaskRole::kTracked, false},
                           {"ps", 1, TaskRole::kUntracked, true}},
                          policy);
  spec.prepare_stage = {"dbloader", "db"};
  spec.training_stage = {"ps", "worker"};
  return spec;
}

TEST(Stages, StageOfFollowsTonYsLists) {
  JobSpec spec = TwoStageSpec();
  EXPECT_EQ(StageOf(spec, "dbloader"), 0);
  EXPECT_EQ(StageOf(spec, "worker"), 1);
  EXPECT_EQ(StageOf(spec, "tensorboard"), 0);  // in neither list: no dependency, started at once
  spec.training_stage.clear();                 // only the prepare list: the rest is training
  EXPECT_EQ(StageOf(spec, "tensorboard"), 1);
  spec.prepare_stage.clear();
  EXPECT_EQ(StageOf(spec, "worker"), 0);
  EXPECT_FALSE(HasTrainingStage(spec));
  JobSpec training = StageSpec(TwoStageSpec(), 1);
  ASSERT_EQ(training.types.size(), 2u);
  EXPECT_EQ(training.types[0].name, "worker");
  EXPECT_EQ(training.types[1].name, "ps");
}

TEST(Stages, TrainingStartsOnlyAfterEveryTrackedPrepareTaskSucceeded) {
  JobSpec spec = TwoStageSpec();
  JobTracker jt(spec);
  EXPECT_FALSE(jt.Started({"worker", 0}));
  EXPECT_TRUE(jt.Started({"db", 0}));
  EXPECT_FALSE(jt.OnRegistered({"db", 0}, "h", 1));
  EXPECT_TRUE(jt.OnRegistered({"dbloader", 0}, "h", 2));  // the prepare stage is its own gang
  EXPECT_TRUE(jt.StartTrainingStageIfReady().empty());   // dbloader still running
  EXPECT_TRUE(jt.OnTaskFinished({"dbloader", 0}, 0, false, "").empty());
  auto started = jt.StartTrainingStageIfReady();
  ASSERT_EQ(started.size(), 3u);
  EXPECT_EQ(jt.stage(), 1);
  EXPECT_TRUE(jt.Started({"worker", 1}));
  EXPECT_TRUE(jt.StartTrainingStageIfReady().empty());  // once
  EXPECT_FALSE(jt.GangComplete());                       // the training gang is awaited now
  EXPECT_FALSE(jt.OnRegistered({"worker", 0}, "h", 3));
  EXPECT_FALSE(jt.OnRegistered({"ps", 0}, "h", 4));
  EXPECT_TRUE(jt.OnRegistered({"worker", 1}, "h", 5));
  jt.OnTaskFinished({"worker", 0}, 0, false, "");
  auto stop = jt.OnTaskFinished({"worker", 1}, 0, false, "");
  EXPECT_EQ(jt.state(), JobState::kSucceeded);
  EXPECT_EQ(stop.size(), 2u);  // db and ps, the untracked services
}

TEST(Stages, PrepareFailureFailsTheJobAndNamesIt) {
  for (SuccessPolicy policy : {SuccessPolicy::kAll, SuccessPolicy::kAny}) {
    JobSpec spec = TwoStageSpec(policy);
    JobTracker jt(spec);
    auto stop = jt.OnTaskFinished({"dbloader", 0}, 3, false, "exit code 3");
    EXPECT_EQ(jt.state(), JobState::kFailed);
    EXPECT_EQ(jt.diagnostics(),
              "prepare stage failed: task dbloader:0 failed: exit code 3; the training stage (worker, ps) was not started");
    EXPECT_TRUE(jt.StartTrainingStageIfReady().empty());
    EXPECT_EQ(jt.stage(), 0);
    EXPECT_EQ(stop.size(), 4u);  // db, and the training tasks that never started
  }
}

TEST(Stages, AJobWithoutStagesIsOneGang) {
  JobSpec spec = TwoStageSpec();
  spec.prepare_stage.clear();
  spec.training_stage.clear();
  JobTracker jt(spec);
  EXPECT_TRUE(jt.Started({"worker", 0}));
  EXPECT_TRUE(jt.StartTrainingStageIfReady().empty());
  jt.OnRegistered({"worker", 0}, "h", 1);
  jt.OnRegistered({"worker", 1}, "h", 2);
  jt.OnRegistered({"db", 0}, "h", 3);
  jt.OnRegistered({"ps", 0}, "h", 5);
  EXPECT_TRUE(jt.OnRegistered({"dbloader", 0}, "h", 4));
}

JobSpec MpiSpec() {
  JobSpec spec = MakeSpec({{"launcher", 1, TaskRole::kTracked, false}, {"worker", 2, TaskRole::kUntracked, false}});
  spec.framework = Framework::kMpi;
  return spec;
}

TEST(Mpi, TheJobsResultIsTheLaunchers) {
  JobSpec spec = MpiSpec();
  JobTracker ok(spec);
  auto stop = ok.OnTaskFinished({"launcher", 0}, 0, false, "");
  EXPECT_EQ(ok.state(), JobState::kSucceeded);
  EXPECT_EQ(stop.size(), 2u);  // the tasks that held the ranks, stopped by Loom
  ok.OnTaskFinished({"worker", 0}, 143, true, "stopped by the AM: tracked tasks finished");
  EXPECT_EQ(ok.state(), JobState::kSucceeded);

  JobTracker failed(spec);
  failed.OnTaskFinished({"launcher", 0}, 7, false, "exit code 7");
  EXPECT_EQ(failed.state(), JobState::kFailed);
  EXPECT_THAT(failed.diagnostics(), HasSubstr("task launcher:0 failed: exit code 7"));
}

TEST(Mpi, ATaskThatHoldsRanksEndingFirstFailsTheJobEvenWithExitCodeZero) {
  JobSpec spec = MpiSpec();
  JobTracker jt(spec);
  auto stop = jt.OnTaskFinished({"worker", 1}, 0, false, "");
  EXPECT_EQ(jt.state(), JobState::kFailed);
  EXPECT_EQ(jt.diagnostics(), "MPI task worker:1 ended before the launcher: the ranks it hosted are gone");
  EXPECT_EQ(stop.size(), 2u);  // launcher:0 and worker:0

  JobTracker lost(spec);
  lost.OnTaskFinished({"worker", 0}, 1, false, "lost: no heartbeat for 25000 ms");
  EXPECT_THAT(lost.diagnostics(),
              HasSubstr("MPI task worker:0 ended before the launcher (lost: no heartbeat for 25000 ms)"));
  // Outside MPI an untracked task that exits 0 is no failure.
  spec.framework = Framework::kTensorFlow;
  JobTracker tf(spec);
  tf.OnTaskFinished({"worker", 1}, 0, false, "");
  EXPECT_EQ(tf.state(), JobState::kRunning);
}

// What history reads back from events.jsonl and status.json is what the AM wrote with
// TaskStateName. The loop runs past the last state so that a state added to the enum (and so
// to TaskStateName's switch) but not to ParseTaskState fails here.
TEST(TaskStateText, ParseIsTheInverseOfTheName) {
  int named = 0;
  for (int i = 0; i < 64; ++i) {
    auto s = static_cast<TaskState>(i);
    std::string name = TaskStateName(s);
    if (name == "?") continue;
    ++named;
    EXPECT_EQ(ParseTaskState(name), s) << name;
  }
  EXPECT_EQ(named, 8);
  EXPECT_EQ(ParseTaskState("PENDING"), TaskState::kPending);
  EXPECT_EQ(ParseTaskState("LOST"), TaskState::kLost);
  std::ostringstream printed;
  printed << TaskState::kRegistered;
  EXPECT_EQ(printed.str(), "REGISTERED");
}

// A file is input: a spelling this Loom never writes is no state, never a guess.
TEST(TaskStateText, AnUnknownSpellingIsNoState) {
  EXPECT_EQ(ParseTaskState(""), std::nullopt);
  EXPECT_EQ(ParseTaskState("?"), std::nullopt);
  EXPECT_EQ(ParseTaskState("running"), std::nullopt);  // the spelling is exact
  EXPECT_EQ(ParseTaskState("RUNNING "), std::nullopt);
  EXPECT_EQ(ParseTaskState("PREEMPTED"), std::nullopt);
  EXPECT_EQ(ParseTaskState(std::string_view("RUNNING\0", 8)), std::nullopt);
}

}  // namespace
}  // namespace loom
