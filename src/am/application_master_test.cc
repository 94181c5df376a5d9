#include "am/application_master.h"

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "am/am_test_fixture.h"
#include "core/eventually.h"
#include "core/files.h"
#include "core/testing.h"
#include "history/job_view.h"

using ::loom::testing::Eventually;

namespace loom::am {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

class AmTest : public AmFixture {
 protected:
  AmTest() : AmFixture("loom_am_", "job_amtest") {}
  void SetUp() override {
    AmFixture::SetUp();
    for (auto [name, n] : std::vector<std::pair<std::string, int>>{{"worker", 2}}) {
      TaskTypeSpec t;
      t.name = name;
      t.instances = n;
      t.command = "python3 train.py";
      t.resources = {512, 1, 0};
      spec_.types.push_back(t);
    }
    spec_.framework = Framework::kPyTorch;
    spec_.stop_grace_ms = 100;
  }

  static std::unique_ptr<grpc::ClientContext> Ctx(const std::string& secret = kSecret) {
    return CallContext(secret, std::chrono::seconds(5));
  }

  grpc::Status Register(const TaskId& t, int port, const std::string& secret = kSecret) {
    control::RegisterRequest req;
    req.mutable_task()->set_type(t.type);
    req.mutable_task()->set_index(t.index);
    req.set_host("127.0.0.1");
    req.set_port(port);
    control::RegisterResponse resp;
    return stub_->Register(Ctx(secret).get(), req, &resp);
  }

  // Asks the AM for task `t`'s cluster spec as that task's executor does.
  grpc::Status GetSpec(const TaskId& t, control::ClusterSpecResponse* spec) {
    control::ClusterSpecRequest req;
    req.mutable_task()->set_type(t.type);
    req.mutable_task()->set_index(t.index);
    return stub_->GetClusterSpec(Ctx().get(), req, spec);
  }
};

TEST_F(AmTest, TheGangIsAskedForInOneRequest) {
  StartAm();
  ASSERT_TRUE(Eventually([&] { return broker_.requested() == 2; }));
  EXPECT_EQ(broker_.request_calls(), 1);
}

TEST_F(AmTest, RefusesCallsWithoutTheSecret) {
  StartAm();
  GrantAndLaunchAll(2);
  EXPECT_EQ(Register({"worker", 0}, 20001, "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Register({"worker", 0}, 20001, std::string(64, 'x')).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Register({"worker", 0}, 20001).ok());
}

// The local backend's split (cluster::AmSetup::executor_secret): the secret file in the job
// dir, which tasks can read, holds the observer secret, which reads the job's state and does
// nothing else.
TEST_F(AmTest, TheObserverSecretOnlyReadsTheJobState) {
  observer_secret_ = std::string(64, 'b');
  StartAm();
  GrantAndLaunchAll(2);
  control::JobStateRequest state;
  state.set_events_offset(-1);
  control::JobStateResponse resp;
  EXPECT_TRUE(stub_->JobState(Ctx(observer_secret_).get(), state, &resp).ok());
  EXPECT_EQ(stub_->JobState(Ctx(std::string(64, 'x')).get(), state, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Register({"worker", 0}, 20001, observer_secret_).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  control::ExecRequest exec;
  control::ExecResult result;
  EXPECT_EQ(stub_->Exec(Ctx(observer_secret_).get(), exec, &result).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(stub_->JobState(Ctx().get(), state, &resp).ok());
  EXPECT_TRUE(Register({"worker", 0}, 20001).ok());
}

TEST_F(AmTest, RejectsMalformedRegistrations) {
  StartAm();
  GrantAndLaunchAll(2);
  EXPECT_EQ(Register({"worker", 7}, 20001).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Register({"ghost", 0}, 20001).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Register({"worker", 0}, 0).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Register({"worker", 0}, 70000).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(AmTest, ClusterSpecIsAnsweredWhenTheGangCompletes) {
  StartAm();
  GrantAndLaunchAll(2);
  // The executor learns where the AM is and how to reach its secret, never the secret itself.
  auto launch = broker_.launch_spec({"worker", 0});
  EXPECT_EQ(launch.env.count("LOOM_SECRET_FILE"), 1u);
  for (const auto& a : launch.argv) EXPECT_EQ(a.find(kSecret), std::string::npos);
  for (const auto& [k, v] : launch.env) EXPECT_EQ(v.find(kSecret), std::string::npos) << k;

  ASSERT_TRUE(Register({"worker", 0}, 21000).ok());
  auto waiting = std::async(std::launch::async, [&] {
    control::ClusterSpecRequest req;
    req.mutable_task()->set_type("worker");
    req.mutable_task()->set_index(0);
    control::ClusterSpecResponse resp;
    auto ctx = Ctx();
    grpc::Status s = stub_->GetClusterSpec(ctx.get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  });
  EXPECT_EQ(waiting.wait_for(200ms), std::future_status::timeout);  // worker:1 not registered yet
  ASSERT_TRUE(Register({"worker", 1}, 21001).ok());
  ASSERT_EQ(waiting.wait_for(2s), std::future_status::ready);
  control::ClusterSpecResponse resp = waiting.get();
  EXPECT_EQ(resp.command(), "python3 train.py");
  EXPECT_EQ(resp.env().at("MASTER_PORT"), "21000");
  EXPECT_EQ(resp.env().at("RANK"), "0");
  EXPECT_EQ(resp.env().at("WORLD_SIZE"), "2");
}

TEST_F(AmTest, WorkerFailureStopsTheRestAndRecordsTheCause) {
  StartAm();
  GrantAndLaunchAll(2);
  ASSERT_TRUE(Register({"worker", 0}, 21000).ok());
  ASSERT_TRUE(Register({"worker", 1}, 21001).ok());
  control::ExitReport report;
  report.mutable_task()->set_type("worker");
  report.mutable_task()->set_index(1);
  report.set_exit_code(3);
  report.add_stderr_tail("ValueError: boom");
  control::Ack ack;
  ASSERT_TRUE(stub_->ReportExit(Ctx().get(), report, &ack).ok());
  broker_.Complete({"worker", 1}, 3);
  ASSERT_EQ(run_.wait_for(5s), std::future_status::ready);
  auto state = run_.get();
  am_.reset();
  ASSERT_OK(state);
  EXPECT_EQ(*state, JobState::kFailed);
  EXPECT_TRUE(broker_.stopped({"worker", 0}));
  auto view = history::LoadJobView(history::JobDir(root_.string()));
  ASSERT_OK(view);
  EXPECT_TRUE(view->final);
  EXPECT_EQ(view->state, "FAILED");
  EXPECT_THAT(view->diagnostics, HasSubstr("task worker:1 failed: exit code 3; last stderr lines:\n    ValueError: boom"));
}

// The events the AM has written so far.
std::vector<nlohmann::json> Events(const std::filesystem::path& root) {
  std::vector<nlohmann::json> out;
  std::ifstream in(root / "events.jsonl");
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

class StagesTest : public AmTest {
 protected:
  void SetUp() override {
    AmTest::SetUp();
    TaskTypeSpec loader;
    loader.name = "dbloader";
    loader.instances = 1;
    loader.command = "python3 load.py";
    spec_.types.push_back(loader);
    spec_.prepare_stage = {"dbloader"};
    spec_.training_stage = {"worker"};
  }
  // Registers `t`, reports its exit and completes its container.
  void Finish(const TaskId& t, int code) {
    control::ExitReport report;
    report.mutable_task()->set_type(t.type);
    report.mutable_task()->set_index(t.index);
    report.set_exit_code(code);
    control::Ack ack;
    ASSERT_TRUE(stub_->ReportExit(Ctx().get(), report, &ack).ok());
    broker_.Complete(t, code);
  }
  bool Waiting(const std::string& task) {
    for (const auto& e : Events(root_)) {
      if (e.value("task", "") == task && e.value("waiting", "") == "for the prepare stage (dbloader)") return true;
    }
    return false;
  }
};

TEST_F(StagesTest, TrainingContainersAreAskedForOnlyAfterThePrepareStageSucceeded) {
  StartAm();
  // The AM asks for the prepare stage and marks the training tasks as waiting, in one step.
  ASSERT_TRUE(Eventually([&] { return Waiting("worker:1"); }));
  EXPECT_EQ(broker_.requested(), 1u);
  broker_.GrantAll();
  ASSERT_TRUE(Eventually([&] { return broker_.launched() == 1; }));
  EXPECT_EQ(broker_.launch_spec({"dbloader", 0}).env.count("LOOM_TASK_ID"), 1u);
  ASSERT_TRUE(Register({"dbloader", 0}, 21000).ok());
  // The prepare stage is a gang of its own: its spec does not wait for the workers.
  control::ClusterSpecResponse spec;
  ASSERT_TRUE(GetSpec({"dbloader", 0}, &spec).ok());
  EXPECT_EQ(spec.env().at("WORLD_SIZE"), "1");
  EXPECT_EQ(broker_.requested(), 0u);  // still nothing asked for the training stage

  const int calls_before = broker_.request_calls();
  Finish({"dbloader", 0}, 0);
  ASSERT_TRUE(Eventually([&] { return broker_.requested() == 2; }));
  EXPECT_EQ(broker_.request_calls(), calls_before + 1) << "the training stage's gang is asked for in one request";
  broker_.GrantAll();
  ASSERT_TRUE(Eventually([&] { return broker_.launched() == 3; }));
  ASSERT_TRUE(Register({"worker", 0}, 21001).ok());
  ASSERT_TRUE(Register({"worker", 1}, 21002).ok());
  ASSERT_TRUE(GetSpec({"worker", 1}, &spec).ok());
  EXPECT_EQ(spec.env().at("RANK"), "1");  // ranks of the training stage's own world
  EXPECT_EQ(spec.env().at("WORLD_SIZE"), "2");
  EXPECT_EQ(spec.env().at("MASTER_PORT"), "21001");

  // The history says so, in order: dbloader done, then the training stage.
  std::vector<std::string> order;
  for (const auto& e : Events(root_)) {
    if (e.value("event", "") == "STAGE_STARTED") order.push_back("stage");
    if (e.value("task", "") == "dbloader:0" && e.value("state", "") == "SUCCEEDED") order.push_back("dbloader done");
  }
  EXPECT_EQ(order, (std::vector<std::string>{"dbloader done", "stage"}));
  Finish({"worker", 0}, 0);
  Finish({"worker", 1}, 0);
  ASSERT_EQ(run_.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(*run_.get(), JobState::kSucceeded);
  am_.reset();
}

TEST_F(StagesTest, APrepareFailureFailsTheJobAndNothingOfTrainingIsAskedFor) {
  StartAm();
  ASSERT_TRUE(Eventually([&] { return broker_.requested() == 1 && Waiting("worker:0"); }));
  broker_.GrantAll();
  ASSERT_TRUE(Eventually([&] { return broker_.launched() == 1; }));
  ASSERT_TRUE(Register({"dbloader", 0}, 21000).ok());
  Finish({"dbloader", 0}, 3);
  ASSERT_EQ(run_.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(*run_.get(), JobState::kFailed);
  am_.reset();
  EXPECT_EQ(broker_.requested(), 0u);
  EXPECT_EQ(broker_.launched(), 1u);
  auto view = history::LoadJobView(history::JobDir(root_.string()));
  ASSERT_OK(view);
  EXPECT_THAT(view->diagnostics, HasSubstr("prepare stage failed: task dbloader:0 failed: exit code 3"));
  EXPECT_THAT(view->diagnostics, HasSubstr("the training stage (worker) was not started"));
  for (const auto& t : view->tasks) {
    if (t.id.rfind("worker:", 0) == 0) {
      EXPECT_EQ(t.state, TaskState::kKilled) << t.id;
      EXPECT_EQ(t.started_ms, 0) << t.id;
    }
  }
}

TEST_F(StagesTest, ARestartedGangBeginsAgainWithThePrepareStage) {
  spec_.am_retry_count = 1;
  StartAm();
  ASSERT_TRUE(Eventually([&] { return broker_.requested() == 1; }));
  broker_.GrantAll();
  ASSERT_TRUE(Eventually([&] { return broker_.launched() == 1; }));
  Finish({"dbloader", 0}, 3);  // attempt 0 fails in its prepare stage
  // Attempt 1 asks for the prepare stage again, and only for it (TonY rebuilds its session).
  ASSERT_TRUE(Eventually([&] { return broker_.requested() == 1; }));
  ASSERT_TRUE(Eventually([&] {
    int waiting = 0;
    for (const auto& e : Events(root_)) waiting += e.value("attempt", 0) == 1 && e.value("waiting", "") != "";
    return waiting == 2;
  }));
  EXPECT_EQ(broker_.requested(), 1u);
}

TEST_F(AmTest, TheTensorBoardTaskGetsItsPortAndLogDirAndItsUrlIsShown) {
  TaskTypeSpec tb;
  tb.name = "tensorboard";
  tb.instances = 1;
  tb.role = TaskRole::kSidecar;
  tb.command = "tensorboard --logdir $TB_LOG_DIR --port $TB_PORT";
  spec_.types.push_back(tb);
  spec_.tensorboard_log_dir = "/shared/tb";
  spec_.executor_registry_timeout_ms = 7000;
  spec_.metrics_interval_ms = 250;
  spec_.types[0].resources.gpus = 1;  // the workers: GPU metrics on
  StartAm();
  ASSERT_TRUE(Eventually([&] { return broker_.requested() == 3; }));
  broker_.GrantAll();
  ASSERT_TRUE(Eventually([&] { return broker_.launched() == 3; }));
  auto tb_env = broker_.launch_spec({"tensorboard", 0}).env;
  auto w_env = broker_.launch_spec({"worker", 0}).env;
  EXPECT_EQ(tb_env["LOOM_RESERVE_TB_PORT"], "1");
  EXPECT_EQ(w_env.count("LOOM_RESERVE_TB_PORT"), 0u);  // the sidecar has it, not the chief
  EXPECT_EQ(w_env["LOOM_REGISTRY_TIMEOUT_MS"], "7000");
  EXPECT_EQ(w_env["LOOM_METRICS_INTERVAL_MS"], "250");
  EXPECT_EQ(w_env["LOOM_GPU_METRICS"], "1");
  EXPECT_EQ(tb_env.count("LOOM_GPU_METRICS"), 0u);  // no GPUs, nothing to sample

  control::RegisterRequest reg;
  reg.mutable_task()->set_type("tensorboard");
  reg.set_host("127.0.0.1");
  reg.set_port(21005);
  reg.set_tb_port(24007);
  control::RegisterResponse resp;
  ASSERT_TRUE(stub_->Register(Ctx().get(), reg, &resp).ok());
  ASSERT_TRUE(Register({"worker", 0}, 21000).ok());
  ASSERT_TRUE(Register({"worker", 1}, 21001).ok());
  control::ClusterSpecResponse spec;
  ASSERT_TRUE(GetSpec({"tensorboard", 0}, &spec).ok());
  EXPECT_EQ(spec.env().at("TB_PORT"), "24007");
  EXPECT_EQ(spec.env().at("TB_LOG_DIR"), "/shared/tb");
  ASSERT_TRUE(GetSpec({"worker", 0}, &spec).ok());
  EXPECT_EQ(spec.env().count("TB_PORT"), 0u);

  control::TensorBoardRequest url;
  url.mutable_task()->set_type("tensorboard");
  url.set_url("http://127.0.0.1:24007/");
  control::Ack ack;
  ASSERT_TRUE(stub_->RegisterTensorBoard(Ctx().get(), url, &ack).ok());
  url.set_url("javascript:alert(1)");
  EXPECT_EQ(stub_->RegisterTensorBoard(Ctx().get(), url, &ack).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(Eventually([&] {
    auto view = history::LoadJobView(history::JobDir(root_.string()));
    return view.ok() && view->tensorboard_url == "http://127.0.0.1:24007/" && view->tensorboard_task == "tensorboard:0";
  }));
}

TEST_F(AmTest, KillEndsTheJobOnce) {
  StartAm();
  GrantAndLaunchAll(2);
  am_->RequestKill("killed by test");
  am_->RequestKill("second kill");
  ASSERT_EQ(run_.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(*run_.get(), JobState::kKilled);
  am_.reset();
  auto view = history::LoadJobView(history::JobDir(root_.string()));
  EXPECT_EQ(view->diagnostics, "killed by test");
}

// ---- Timeouts, on a clock the test drives ---------------------------------------------------

// One of the AM's timers: the job set up as `setup` says, then time advanced `step` at a time.
// After `quiet_steps` the job still runs; after one step more it has failed with `diagnostics`
// (nullptr: it still runs then too).
struct TimeoutCase {
  const char* name;
  std::function<void(JobSpec&)> configure;
  enum Setup { kAsked, kLaunched, kRegistered, kOneWorkerDone } setup;
  bool heartbeats;  // every task heartbeats before each step
  std::chrono::milliseconds step;
  int quiet_steps;
  const char* diagnostics;
};

void PrintTo(const TimeoutCase& c, std::ostream* os) { *os << c.name; }

class AmTimeoutTest : public AmTest, public ::testing::WithParamInterface<TimeoutCase> {
 protected:
  // Returns once the AM's loop has run everything due before the call: a JobState call is
  // answered on the loop, after the timers that were due.
  // A job that ended may be gone before it answers: then state_ is "".
  void Settle() {
    control::JobStateRequest req;
    req.set_events_offset(-1);
    control::JobStateResponse resp;
    state_ = stub_->JobState(Ctx().get(), req, &resp).ok() ? resp.state() : "";
  }
  void Heartbeat(const TaskId& t) {
    control::HeartbeatRequest req;
    req.mutable_task()->set_type(t.type);
    req.mutable_task()->set_index(t.index);
    control::HeartbeatResponse resp;
    ASSERT_OK(am_->HandleHeartbeat(req, &resp));
  }
  std::string state_;
};

TEST_P(AmTimeoutTest, FiresWhenItsTimeHasComeAndNotBefore) {
  const TimeoutCase& c = GetParam();
  spec_.max_missed_heartbeats = 1000000;  // no task is lost but where a row says so
  if (c.setup == TimeoutCase::kOneWorkerDone) {
    spec_.types[0].instances = 1;
    TaskTypeSpec evaluator = spec_.types[0];
    evaluator.name = "evaluator";
    spec_.types.push_back(evaluator);
  }
  c.configure(spec_);
  clock_ = &fake_clock_;
  StartAm();
  std::vector<TaskId> tasks = spec_.AllTasks();
  if (c.setup == TimeoutCase::kAsked) {
    ASSERT_TRUE(Eventually([&] { return broker_.requested() == 2; }));
  } else {
    GrantAndLaunchAll(2);
  }
  if (c.setup == TimeoutCase::kRegistered || c.setup == TimeoutCase::kOneWorkerDone) {
    for (size_t i = 0; i < tasks.size(); ++i) ASSERT_TRUE(Register(tasks[i], 21000 + static_cast<int>(i)).ok());
  }
  if (c.setup == TimeoutCase::kOneWorkerDone) {
    control::ExitReport report;
    report.mutable_task()->set_type("worker");
    report.set_exit_code(0);
    control::Ack ack;
    ASSERT_TRUE(stub_->ReportExit(Ctx().get(), report, &ack).ok());
    broker_.Complete({"worker", 0}, 0);
  }
  Settle();
  auto step = [&] {
    if (c.heartbeats) {
      for (const TaskId& t : tasks) Heartbeat(t);
    }
    fake_clock_.Advance(c.step);
    Settle();
  };
  for (int i = 0; i < c.quiet_steps; ++i) {
    step();
    ASSERT_EQ(state_, "RUNNING") << "after " << (i + 1) * c.step.count() << " ms";
  }
  step();
  if (!c.diagnostics) {
    EXPECT_EQ(state_, "RUNNING");
    return;
  }
  ASSERT_EQ(run_.wait_for(5s), std::future_status::ready) << "the job did not end";
  EXPECT_EQ(*run_.get(), JobState::kFailed);
  am_.reset();
  auto view = history::LoadJobView(history::JobDir(root_.string()));
  ASSERT_OK(view);
  EXPECT_THAT(view->diagnostics, HasSubstr(c.diagnostics));
}

INSTANTIATE_TEST_SUITE_P(
    Timers, AmTimeoutTest,
    ::testing::Values(
        TimeoutCase{"HeartbeatsStop", [](JobSpec& s) { s.max_missed_heartbeats = 3; }, TimeoutCase::kRegistered,
                    false, 1s, 3, "lost: no heartbeat for 3000 ms"},
        TimeoutCase{"HeartbeatsKeepTasksAlive", [](JobSpec& s) { s.max_missed_heartbeats = 3; },
                    TimeoutCase::kRegistered, true, 1s, 10, nullptr},
        TimeoutCase{"Registration", [](JobSpec& s) { s.registration_timeout_ms = 5000; }, TimeoutCase::kLaunched,
                    false, 1s, 4, "did not register within 5000 ms"},
        TimeoutCase{"AllocationNeverGranted", [](JobSpec& s) { s.allocation_timeout_ms = 2000; },
                    TimeoutCase::kAsked, false, 1s, 1,
                    "the gang was not complete after 2000 ms (loom.container.allocation.timeout); never got "
                    "resources: worker:0, worker:1"},
        TimeoutCase{"AllocationLaunchedNotRegistered", [](JobSpec& s) { s.allocation_timeout_ms = 2000; },
                    TimeoutCase::kLaunched, false, 1s, 1, "launched but not registered: worker:0, worker:1"},
        TimeoutCase{"AllocationMetByAGangThatRegistered", [](JobSpec& s) { s.allocation_timeout_ms = 2000; },
                    TimeoutCase::kRegistered, true, 1s, 5, nullptr},
        TimeoutCase{"Application", [](JobSpec& s) { s.application_timeout_ms = 10000; }, TimeoutCase::kRegistered,
                    true, 2s, 4, "application timeout: the job ran longer than"},
        TimeoutCase{"DependencyAfterItsGroupFinished",
                    [](JobSpec& s) { s.dependency_timeouts = {{"evaluator", "trainers", {"worker"}, 30, false}}; },
                    TimeoutCase::kOneWorkerDone, true, 10s, 2,
                    "group dependency timeout: evaluator still running 30 s after group trainers (worker) finished"}),
    [](const ::testing::TestParamInfo<TimeoutCase>& info) { return std::string(info.param.name); });

// metrics.jsonl: each executor's sample once, however many heartbeats repeat it between two.
TEST_F(AmTest, EachSampleIsRecordedOnceInMetricsJsonl) {
  StartAm();
  auto beat = [&](uint32_t seq, std::optional<float> cpu) {
    control::HeartbeatRequest req;
    req.mutable_task()->set_type("worker");
    req.mutable_task()->set_index(0);
    req.set_rss_bytes(1000 + seq);
    if (cpu) req.set_cpu_cores(*cpu);
    if (seq == 2) {
      control::GpuDevice* g = req.add_gpus();
      g->set_index(1);
      g->set_utilization_percent(50);
      g->set_memory_bytes(7);
    }
    req.set_sample_seq(seq);
    control::HeartbeatResponse resp;
    ASSERT_OK(am_->HandleHeartbeat(req, &resp));
  };
  beat(0, std::nullopt);  // before the executor's first sample: nothing to record
  beat(1, std::nullopt);  // the first: no CPU measured yet
  beat(1, std::nullopt);
  beat(2, 1.5f);
  beat(2, 1.5f);
  std::vector<history::TaskSample> samples = history::ReadSamples(history::JobDir(root_.string()).metrics());
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].task, "worker:0");
  EXPECT_EQ(samples[0].rss_bytes, 1001);
  EXPECT_FALSE(samples[0].cpu_cores);
  EXPECT_DOUBLE_EQ(*samples[1].cpu_cores, 1.5);
  EXPECT_THAT(samples[1].gpus, ::testing::ElementsAre(history::GpuValue{1, 50, 7}));
  EXPECT_GE(samples[1].ms, samples[0].ms);

  // JobState hands them to a client whose metrics.jsonl is not this one (YARN), only when asked,
  // only those after the time it names.
  control::JobStateRequest req;
  req.set_events_offset(-1);
  control::JobStateResponse resp;
  ASSERT_TRUE(stub_->JobState(Ctx().get(), req, &resp).ok());
  EXPECT_EQ(resp.samples(), "");
  req.set_send_samples(true);
  ASSERT_TRUE(stub_->JobState(Ctx().get(), req, &resp).ok());
  EXPECT_EQ(resp.samples(), history::SampleLine(samples[0]) + history::SampleLine(samples[1]));
  req.set_samples_after_ms(samples[1].ms);
  ASSERT_TRUE(stub_->JobState(Ctx().get(), req, &resp).ok());
  EXPECT_EQ(resp.samples(), "");
}

}  // namespace
}  // namespace loom::am
