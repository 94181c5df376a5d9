// The AM's side of MPI without ssh through real gRPC: who may Exec where, the relay from the
// launcher's Exec call to a rank-holding task's Guests stream and back, a cancelled call, and a
// target that ends. Nothing runs: the test plays the executors (FakeContainerBroker).

#include <filesystem>
#include <future>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "am/am_test_fixture.h"
#include "core/eventually.h"
#include "core/testing.h"

using ::loom::testing::Eventually;

namespace loom::am {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

control::TaskRef Ref(const TaskId& id) {
  control::TaskRef r;
  r.set_type(id.type);
  r.set_index(id.index);
  return r;
}

class ExecServiceTest : public AmFixture {
 protected:
  ExecServiceTest() : AmFixture("loom_exec_", "job_exec") {}
  void SetUp() override {
    AmFixture::SetUp();
    spec_.framework = Framework::kMpi;
    spec_.stop_grace_ms = 100;
    TaskTypeSpec launcher;
    launcher.name = "launcher";
    launcher.instances = 1;
    launcher.command = "mpirun python3 ar.py";
    TaskTypeSpec worker;
    worker.name = "worker";
    worker.instances = 2;
    worker.processes = 2;
    worker.role = TaskRole::kUntracked;
    spec_.types = {launcher, worker};

    ASSERT_NO_FATAL_FAILURE(StartAm());
    ASSERT_NO_FATAL_FAILURE(GrantAndLaunchAll(3));
    int port = 21000;
    for (const TaskId& t : spec_.AllTasks()) {
      control::RegisterRequest req;
      *req.mutable_task() = Ref(t);
      req.set_host("127.0.0.1");
      req.set_port(port++);
      control::RegisterResponse resp;
      ASSERT_TRUE(stub_->Register(Ctx().get(), req, &resp).ok());
    }
  }
  static std::unique_ptr<grpc::ClientContext> Ctx(const std::string& secret = kSecret) {
    return CallContext(secret, std::chrono::seconds(10));
  }

  control::ExecRequest ExecOf(const TaskId& caller, const TaskId& target, const std::string& command) {
    control::ExecRequest req;
    *req.mutable_task() = Ref(caller);
    *req.mutable_target() = Ref(target);
    req.set_command(command);
    return req;
  }

  // An Exec call in flight on a thread of its own.
  struct Call {
    std::unique_ptr<grpc::ClientContext> ctx = Ctx();
    control::ExecResult result;
    std::future<grpc::Status> status;
  };
  std::unique_ptr<Call> StartExec(const control::ExecRequest& req) {
    auto call = std::make_unique<Call>();
    Call* c = call.get();
    c->status = std::async(std::launch::async, [this, c, req] { return stub_->Exec(c->ctx.get(), req, &c->result); });
    return call;
  }

  // A rank-holding executor's Guests stream, read on a thread of its own.
  struct Guests {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<control::GuestCommand>> reader;
    std::mutex mu;
    std::vector<control::GuestCommand> got;
    std::thread thread;
    ~Guests() {
      ctx.TryCancel();
      if (thread.joinable()) thread.join();
    }
    size_t count() {
      std::lock_guard<std::mutex> l(mu);
      return got.size();
    }
    control::GuestCommand at(size_t i) {
      std::lock_guard<std::mutex> l(mu);
      return got.at(i);
    }
  };
  std::unique_ptr<Guests> OpenGuests(const TaskId& task) {
    auto g = std::make_unique<Guests>();
    g->ctx.AddMetadata(control::kSecretMetadataKey, kSecret);
    control::GuestsRequest req;
    *req.mutable_task() = Ref(task);
    g->reader = stub_->Guests(&g->ctx, req);
    Guests* p = g.get();
    g->thread = std::thread([p] {
      control::GuestCommand cmd;
      while (p->reader->Read(&cmd)) {
        std::lock_guard<std::mutex> l(p->mu);
        p->got.push_back(cmd);
      }
      (void)p->reader->Finish();
    });
    return g;
  }

  grpc::Status Exited(const TaskId& task, int64_t id, int code) {
    control::GuestExit e;
    *e.mutable_task() = Ref(task);
    e.set_id(id);
    e.set_exit_code(code);
    control::Ack ack;
    return stub_->GuestExited(Ctx().get(), e, &ack);
  }

  const TaskId kLauncher{"launcher", 0}, kWorker0{"worker", 0}, kWorker1{"worker", 1};
};

TEST_F(ExecServiceTest, TheLaunchersCommandRunsInItsTargetAndItsExitComesBack) {
  auto guests = OpenGuests(kWorker1);
  auto call = StartExec(ExecOf(kLauncher, kWorker1, "orted -mca ess env"));
  ASSERT_TRUE(Eventually([&] { return guests->count() == 1; }));
  control::GuestCommand cmd = guests->at(0);
  EXPECT_EQ(cmd.command(), "orted -mca ess env");
  EXPECT_FALSE(cmd.stop());
  EXPECT_EQ(call->status.wait_for(100ms), std::future_status::timeout);  // open while it runs
  // Only the task that got it may report its end.
  EXPECT_EQ(Exited(kWorker0, cmd.id(), 0).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(Exited(kWorker1, cmd.id(), 5).ok());
  grpc::Status s = call->status.get();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(call->result.exit_code(), 5);
}

// The launcher may call before the target's executor has opened its stream (both start when
// the gang completes). Either order works here; exec_relay_test pins the queued one down.
TEST_F(ExecServiceTest, ACommandCalledBeforeItsTargetsStreamOpensIsDelivered) {
  auto call = StartExec(ExecOf(kLauncher, kWorker0, "orted"));
  auto guests = OpenGuests(kWorker0);
  ASSERT_TRUE(Eventually([&] { return guests->count() == 1; }));
  ASSERT_TRUE(Exited(kWorker0, guests->at(0).id(), 0).ok());
  EXPECT_TRUE(call->status.get().ok());
}

TEST_F(ExecServiceTest, OnlyTheLauncherMayExecAndOnlyInTasksThatHoldRanks) {
  control::ExecResult result;
  EXPECT_EQ(stub_->Exec(Ctx("").get(), ExecOf(kLauncher, kWorker0, "x"), &result).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  grpc::Status worker = stub_->Exec(Ctx().get(), ExecOf(kWorker0, kWorker1, "x"), &result);
  EXPECT_EQ(worker.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(worker.error_message(), HasSubstr("only the launcher"));
  for (const TaskId& t : {kLauncher, TaskId{"worker", 2}, TaskId{"ghost", 0}}) {
    grpc::Status s = stub_->Exec(Ctx().get(), ExecOf(kLauncher, t, "x"), &result);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << t.ToString();
    EXPECT_THAT(s.error_message(), HasSubstr("holds ranks in this job"));
  }
  // A Guests stream of a task that holds no ranks is refused.
  grpc::ClientContext ctx;
  ctx.AddMetadata(control::kSecretMetadataKey, kSecret);
  control::GuestsRequest req;
  *req.mutable_task() = Ref(kLauncher);
  auto reader = stub_->Guests(&ctx, req);
  control::GuestCommand cmd;
  EXPECT_FALSE(reader->Read(&cmd));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(ExecServiceTest, ACancelledCallStopsItsGuest) {
  auto guests = OpenGuests(kWorker0);
  auto call = StartExec(ExecOf(kLauncher, kWorker0, "orted"));
  ASSERT_TRUE(Eventually([&] { return guests->count() == 1; }));
  call->ctx->TryCancel();  // the agent went away
  EXPECT_EQ(call->status.get().error_code(), grpc::StatusCode::CANCELLED);
  ASSERT_TRUE(Eventually([&] { return guests->count() == 2; }));
  EXPECT_TRUE(guests->at(1).stop());
  EXPECT_EQ(guests->at(1).id(), guests->at(0).id());
  EXPECT_TRUE(Exited(kWorker0, guests->at(0).id(), 143).ok());  // its end is still taken
}

TEST_F(ExecServiceTest, ATargetThatEndsFailsItsCallsWithTheReason) {
  auto guests = OpenGuests(kWorker1);
  auto call = StartExec(ExecOf(kLauncher, kWorker1, "orted"));
  ASSERT_TRUE(Eventually([&] { return guests->count() == 1; }));
  broker_.Complete(kWorker1, 9);
  grpc::Status s = call->status.get();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("worker:1 ended (FAILED)"));
  // The job failed with it; a new call is refused: "the job is ending" (ABORTED), or, once the
  // ended AM shuts its server down, cancelled or unavailable; never started.
  control::ExecResult result;
  EXPECT_THAT(stub_->Exec(Ctx().get(), ExecOf(kLauncher, kWorker0, "x"), &result).error_code(),
              ::testing::AnyOf(grpc::StatusCode::ABORTED, grpc::StatusCode::CANCELLED, grpc::StatusCode::UNAVAILABLE));
}

}  // namespace
}  // namespace loom::am
