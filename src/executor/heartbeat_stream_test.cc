#include "executor/heartbeat_stream.h"

#include <atomic>
#include <mutex>
#include <vector>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>

#include "control/auth.h"
#include "core/clock.h"
#include "core/eventually.h"
#include "core/testing.h"

namespace loom::executor {
namespace {

using namespace std::chrono_literals;
using loom::testing::Eventually;

// An AM that answers only Heartbeats: it records what arrives and asks the task to stop once
// told to. Refuses a stream without the job secret, as the AM does.
class HeartbeatsOnlyAm final : public control::Control::Service {
 public:
  grpc::Status Heartbeats(grpc::ServerContext* ctx,
                          grpc::ServerReaderWriter<control::HeartbeatResponse, control::HeartbeatRequest>* stream) override {
    auto secret = ctx->client_metadata().find(control::kSecretMetadataKey);
    if (secret == ctx->client_metadata().end() || secret->second != "s3cret") {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no secret");
    }
    control::HeartbeatRequest req;
    while (stream->Read(&req)) {
      {
        std::lock_guard<std::mutex> l(mu_);
        received_.push_back(req);
      }
      control::HeartbeatResponse resp;
      resp.set_stop(ask_stop_);
      if (!stream->Write(resp)) break;
    }
    return grpc::Status::OK;
  }
  std::vector<control::HeartbeatRequest> received() {
    std::lock_guard<std::mutex> l(mu_);
    return received_;
  }
  std::atomic<bool> ask_stop_{false};

 private:
  std::mutex mu_;
  std::vector<control::HeartbeatRequest> received_;
};

class HeartbeatStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(&am_);
    server_ = b.BuildAndStart();
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + 1s);
  }
  std::unique_ptr<control::ControlClient> Client(int port) {
    auto c = control::ControlClient::Connect("127.0.0.1:" + std::to_string(port), "s3cret");
    EXPECT_OK(c);
    return c.ok() ? std::move(*c) : nullptr;
  }
  HeartbeatStream::Options Options(const control::ControlClient* am, std::chrono::milliseconds interval) {
    control::TaskRef task;
    task.set_type("worker");
    task.set_index(1);
    return {am, task, interval, 3, [this] { ++wakes_; }};
  }

  HeartbeatsOnlyAm am_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::atomic<int> wakes_{0};
};

// A new sample goes out at once, not a heartbeat interval later.
TEST_F(HeartbeatStreamTest, ASampleIsSentAtOnceWithTheTask) {
  auto client = Client(port_);
  HeartbeatStream beats(Options(client.get(), 60s));
  beats.Start();
  ASSERT_TRUE(Eventually([&] { return am_.received().size() == 1; }));  // the first, at once
  beats.Offer({123456, 40, 2048});
  ASSERT_TRUE(Eventually([&] { return am_.received().size() == 2; }, 5s));
  control::HeartbeatRequest last = am_.received().back();
  EXPECT_EQ(last.task().type(), "worker");
  EXPECT_EQ(last.task().index(), 1);
  EXPECT_EQ(last.rss_bytes(), 123456);
  EXPECT_EQ(last.gpu_utilization_percent(), 40);
  EXPECT_EQ(last.gpu_memory_bytes(), 2048);
  EXPECT_FALSE(last.has_cpu_cores());  // not measured yet: absent, not 0
  EXPECT_EQ(last.sample_seq(), 0u);
  beats.Offer({7, 50, 3, 1.5, {{4, 50, 3}}, 2});
  ASSERT_TRUE(Eventually([&] { return am_.received().size() == 3; }, 5s));
  last = am_.received().back();
  EXPECT_FLOAT_EQ(last.cpu_cores(), 1.5f);
  ASSERT_EQ(last.gpus_size(), 1);
  EXPECT_EQ(last.gpus(0).index(), 4);
  EXPECT_EQ(last.gpus(0).utilization_percent(), 50);
  EXPECT_EQ(last.gpus(0).memory_bytes(), 3);
  EXPECT_EQ(last.sample_seq(), 2u);
  EXPECT_FALSE(beats.am_wants_stop());
  EXPECT_FALSE(beats.am_lost());
  beats.Stop();
}

TEST_F(HeartbeatStreamTest, TheAmsStopIsHeardAndWakesTheExecutor) {
  auto client = Client(port_);
  am_.ask_stop_ = true;
  HeartbeatStream beats(Options(client.get(), 50ms));
  beats.Start();
  ASSERT_TRUE(Eventually([&] { return beats.am_wants_stop(); }));
  EXPECT_EQ(wakes_.load(), 1);  // once, however many answers say stop
  EXPECT_FALSE(beats.am_lost());
}

// Nobody answers: once max_missed intervals have passed on the clock the AM is lost, said once.
// A minute's interval on a fake clock: the stream gives up when the clock says so, not sooner.
TEST_F(HeartbeatStreamTest, AnAmThatNeverAnswersIsLost) {
  server_->Shutdown(std::chrono::system_clock::now());
  server_.reset();
  auto client = Client(port_);
  FakeClock clock;
  HeartbeatStream::Options options = Options(client.get(), 60s);
  options.clock = &clock;
  HeartbeatStream beats(options);
  beats.Start();
  clock.Advance(3min);  // 3 missed
  ASSERT_TRUE(Eventually([&] { return beats.am_lost(); }));
  EXPECT_EQ(wakes_.load(), 1);
  EXPECT_FALSE(beats.am_wants_stop());
  beats.Stop();  // after the thread ended on its own
}

}  // namespace
}  // namespace loom::executor
