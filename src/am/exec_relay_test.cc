#include "am/exec_relay.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "core/testing.h"

namespace loom::am {
namespace {

using ::testing::HasSubstr;

// Test double of a Guests stream: records what the AM sends.
class FakeGuestChannel : public GuestChannel {
 public:
  void Send(const control::GuestCommand& command) override { sent.push_back(command); }
  void Close(const Status& status) override { closed = status; }
  std::vector<control::GuestCommand> sent;
  std::optional<Status> closed;
};

// One Exec call's answer, once it came.
struct Answer {
  int count = 0;
  Status status;
  control::ExecResult result;
  ExecRelay::Done Done() {
    return [this](const Status& s, const control::ExecResult& r) {
      ++count;
      status = s;
      result = r;
    };
  }
};

control::GuestExit ExitOf(int64_t id, int code, int signal = 0) {
  control::GuestExit e;
  e.set_id(id);
  e.set_exit_code(code);
  e.set_signal(signal);
  return e;
}

const TaskId kWorker0{"worker", 0};
const TaskId kWorker1{"worker", 1};

// A relay; each test attaches the streams it needs.
class ExecRelayTest : public ::testing::Test {
 protected:
  // A new stream of `task`'s executor, attached.
  std::shared_ptr<FakeGuestChannel> Attach(const TaskId& task) {
    auto channel = std::make_shared<FakeGuestChannel>();
    relay_.Attach(task, channel);
    return channel;
  }
  // Asks `task` to run `command` as call `call`; `answer` is where its answer lands.
  void Exec(int64_t call, const TaskId& task, const std::string& command, Answer& answer) {
    relay_.Exec(call, task, command, answer.Done());
  }

  ExecRelay relay_;
};

TEST_F(ExecRelayTest, RunsTheCommandInItsTargetAndAnswersWithItsExit) {
  auto w0 = Attach(kWorker0);
  auto w1 = Attach(kWorker1);
  Answer a0, a1;
  Exec(7, kWorker0, "orted -mca ess env", a0);
  Exec(8, kWorker1, "orted -mca x", a1);
  ASSERT_EQ(w0->sent.size(), 1u);
  ASSERT_EQ(w1->sent.size(), 1u);
  EXPECT_EQ(w0->sent[0].command(), "orted -mca ess env");
  EXPECT_NE(w0->sent[0].id(), w1->sent[0].id());
  EXPECT_EQ(a0.count, 0);  // open until the guest ends

  ASSERT_OK(relay_.Exited(kWorker1, ExitOf(w1->sent[0].id(), 3)));
  EXPECT_EQ(a1.count, 1);
  EXPECT_OK(a1.status);
  EXPECT_EQ(a1.result.exit_code(), 3);
  ASSERT_OK(relay_.Exited(kWorker0, ExitOf(w0->sent[0].id(), 0, 9)));
  EXPECT_EQ(a0.result.signal(), 9);
  EXPECT_EQ(relay_.open_calls(), 0u);
}

TEST_F(ExecRelayTest, QueuesUntilTheTargetsStreamOpens) {
  Answer a;
  Exec(1, kWorker0, "orted", a);
  auto other = Attach(kWorker1);
  EXPECT_TRUE(other->sent.empty());
  auto w0 = Attach(kWorker0);
  ASSERT_EQ(w0->sent.size(), 1u);
  EXPECT_EQ(w0->sent[0].command(), "orted");
  // A stream that ends leaves the call open: the guest still runs and reports on its own.
  relay_.Detach(w0);
  EXPECT_EQ(a.count, 0);
  ASSERT_OK(relay_.Exited(kWorker0, ExitOf(w0->sent[0].id(), 0)));
  EXPECT_EQ(a.count, 1);
}

TEST_F(ExecRelayTest, AnExitFromTheWrongTaskOrTwiceIsRefused) {
  auto w0 = Attach(kWorker0);
  Answer a;
  Exec(1, kWorker0, "orted", a);
  int64_t id = w0->sent[0].id();
  EXPECT_STATUS(relay_.Exited(kWorker1, ExitOf(id, 0)), kInvalidArgument, HasSubstr("worker:1 has no guest"));
  EXPECT_STATUS(relay_.Exited(kWorker0, ExitOf(id + 100, 0)), kInvalidArgument, HasSubstr("no guest"));
  EXPECT_EQ(a.count, 0);
  ASSERT_OK(relay_.Exited(kWorker0, ExitOf(id, 0)));
  EXPECT_STATUS(relay_.Exited(kWorker0, ExitOf(id, 0)), kInvalidArgument, HasSubstr("no guest"));
  EXPECT_EQ(a.count, 1);
}

TEST_F(ExecRelayTest, AGuestThatCouldNotStartFailsItsCall) {
  auto w0 = Attach(kWorker0);
  Answer a;
  Exec(1, kWorker0, "orted", a);
  control::GuestExit e = ExitOf(w0->sent[0].id(), 0);
  e.set_error("no such file");
  ASSERT_OK(relay_.Exited(kWorker0, e));
  EXPECT_STATUS(a.status, kFailedPrecondition, HasSubstr("worker:0 could not start the command: no such file"));
}

TEST_F(ExecRelayTest, ATargetThatEndsFailsItsCallsOnly) {
  Answer sent, queued, other;
  auto w0 = Attach(kWorker0);
  Exec(1, kWorker0, "orted", sent);
  Exec(2, kWorker1, "orted", other);
  relay_.Detach(w0);
  Exec(3, kWorker0, "orted again", queued);
  EXPECT_EQ(relay_.Targets().size(), 2u);
  relay_.FailCallsTo(kWorker0, Status::FailedPrecondition("worker:0 ended (FAILED)"));
  EXPECT_STATUS(sent.status, kFailedPrecondition, HasSubstr("worker:0 ended"));
  EXPECT_STATUS(queued.status, kFailedPrecondition, HasSubstr("worker:0 ended"));
  EXPECT_EQ(other.count, 0);
  EXPECT_EQ(relay_.Targets(), std::vector<TaskId>{kWorker1});
}

TEST_F(ExecRelayTest, ACancelledCallDropsItsQueuedCommandOrStopsItsGuest) {
  Answer queued;
  Exec(1, kWorker0, "orted", queued);
  relay_.Cancel(1);
  EXPECT_STATUS(queued.status, kCancelled, HasSubstr("caller went away"));
  auto w0 = Attach(kWorker0);
  EXPECT_TRUE(w0->sent.empty());  // never sent

  Answer running;
  Exec(2, kWorker0, "orted", running);
  relay_.Cancel(2);
  ASSERT_EQ(w0->sent.size(), 2u);
  EXPECT_TRUE(w0->sent[1].stop());
  EXPECT_EQ(w0->sent[1].id(), w0->sent[0].id());
  EXPECT_EQ(running.count, 0);  // its exit answers it
  ASSERT_OK(relay_.Exited(kWorker0, ExitOf(w0->sent[0].id(), 0, 15)));
  EXPECT_EQ(running.result.signal(), 15);
  relay_.Cancel(2);  // already answered: ignored
  relay_.Cancel(99);
}

TEST_F(ExecRelayTest, ShutdownFailsEveryCallAndEndsEveryStream) {
  auto w0 = Attach(kWorker0);
  Answer a, b;
  Exec(1, kWorker0, "orted", a);
  Exec(2, kWorker1, "orted", b);
  relay_.Shutdown(Status::Aborted("the job ended"));
  EXPECT_STATUS(a.status, kAborted, HasSubstr("the job ended"));
  EXPECT_STATUS(b.status, kAborted, HasSubstr("the job ended"));
  ASSERT_TRUE(w0->closed.has_value());
  EXPECT_OK(*w0->closed);
  EXPECT_EQ(relay_.open_calls(), 0u);
}

TEST_F(ExecRelayTest, CallsAreSentAgainDownTheNextStreamAfterOneBroke) {
  auto first = Attach(kWorker0);
  Answer a;
  Exec(1, kWorker0, "orted", a);
  ASSERT_EQ(first->sent.size(), 1u);
  int64_t id = first->sent[0].id();
  // The stream broke before the command was written: nothing tells the relay whether it arrived.
  relay_.Detach(first);
  auto second = Attach(kWorker0);
  ASSERT_EQ(second->sent.size(), 1u) << "the call was never sent again: mpirun would wait for ever";
  EXPECT_EQ(second->sent[0].id(), id);
  EXPECT_EQ(second->sent[0].command(), "orted");
  ASSERT_OK(relay_.Exited(kWorker0, ExitOf(id, 0)));
  EXPECT_EQ(a.count, 1);
}

TEST_F(ExecRelayTest, ANewerStreamReplacesTheOldOneAndGetsItsCalls) {
  auto first = Attach(kWorker0);
  Answer a;
  Exec(1, kWorker0, "orted", a);
  // The executor's new stream is opened before the AM saw the old one end.
  auto second = Attach(kWorker0);
  ASSERT_TRUE(first->closed.has_value());
  EXPECT_STATUS(*first->closed, kAborted, HasSubstr("replaced"));
  ASSERT_EQ(second->sent.size(), 1u);
  EXPECT_EQ(second->sent[0].id(), first->sent[0].id());
  relay_.Detach(first);  // its end, seen late, changes nothing
  Exec(2, kWorker0, "orted 2", a);
  EXPECT_EQ(second->sent.size(), 2u);
}

TEST_F(ExecRelayTest, AGuestSentBeforeItsStreamBrokeCanEndAndBeCancelledMeanwhile) {
  auto first = Attach(kWorker0);
  Answer ends, cancelled;
  Exec(1, kWorker0, "orted", ends);
  Exec(2, kWorker0, "orted", cancelled);
  int64_t ends_id = first->sent[0].id(), cancelled_id = first->sent[1].id();
  relay_.Detach(first);
  // Its guest ran: its end is taken while no stream is open.
  ASSERT_OK(relay_.Exited(kWorker0, ExitOf(ends_id, 0)));
  EXPECT_EQ(ends.count, 1);
  // Its guest may run: it is stopped down the next stream, never started again.
  relay_.Cancel(2);
  EXPECT_EQ(cancelled.count, 0);
  auto second = Attach(kWorker0);
  ASSERT_EQ(second->sent.size(), 1u);
  EXPECT_EQ(second->sent[0].id(), cancelled_id);
  EXPECT_TRUE(second->sent[0].stop());
  ASSERT_OK(relay_.Exited(kWorker0, ExitOf(cancelled_id, 0, 15)));
  EXPECT_EQ(cancelled.count, 1);
}

}  // namespace
}  // namespace loom::am
