#pragma once
// The fixture of the AM's gRPC tests (application_master_test, exec_service_test): an
// ApplicationMaster of spec_ on a FakeContainerBroker, run on a thread of its own in a job
// directory of the test process's own, and a Control stub to it. Nothing runs: the tests play
// the executors.

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "am/application_master.h"
#include "cluster/fake_container_broker.h"
#include "control/auth.h"
#include "core/clock.h"
#include "core/eventually.h"
#include "core/testing.h"

namespace loom::am {

inline constexpr char kSecret[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

class AmFixture : public ::testing::Test {
 protected:
  // The job `job_id`, in <temp>/<prefix><pid>/<job_id>.
  AmFixture(const std::string& prefix, const std::string& job_id)
      : job_id_(job_id),
        root_(std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid())) / job_id) {}

  void SetUp() override { std::filesystem::create_directories(root_); }
  void TearDown() override {
    if (am_) {
      am_->RequestKill("test over");
      run_.wait_for(std::chrono::seconds(5));
    }
    std::filesystem::remove_all(root_.parent_path());
  }

  // Starts the AM of spec_ (with observer_secret_, on clock_) and connects stub_ once it listens.
  void StartAm() {
    AmOptions o;
    o.spec = spec_;
    o.job_dir = history::JobDir(root_.string());
    o.job_id = job_id_;
    o.secret = kSecret;
    o.observer_secret = observer_secret_;
    o.setup.secret_file = "/nonexistent/secret";  // handed to executors by path
    o.setup.bind_address = "127.0.0.1";
    o.clock = clock_;
    events_ = std::make_unique<history::EventLog>(o.job_dir.events());
    am_ = std::make_unique<ApplicationMaster>(o, broker_, *events_);
    run_ = std::async(std::launch::async, [this] { return am_->Run(); });
    ASSERT_TRUE(loom::testing::Eventually([&] { return am_->port() > 0; }));
    stub_ = control::Control::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(am_->port()), grpc::InsecureChannelCredentials()));
  }

  // The AM asks for its containers on its own thread: grants them once all `n` are asked for,
  // and waits until it launched them.
  void GrantAndLaunchAll(size_t n) {
    ASSERT_TRUE(loom::testing::Eventually([&] { return broker_.requested() == n; }));
    broker_.GrantAll();
    ASSERT_TRUE(loom::testing::Eventually([&] { return broker_.launched() == n; }));
  }

  // A call's context: `secret` in its metadata (none if empty), and a deadline.
  static std::unique_ptr<grpc::ClientContext> CallContext(const std::string& secret,
                                                          std::chrono::seconds deadline) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    if (!secret.empty()) ctx->AddMetadata(control::kSecretMetadataKey, secret);
    ctx->set_deadline(std::chrono::system_clock::now() + deadline);
    return ctx;
  }

  const std::string job_id_;
  std::filesystem::path root_;
  JobSpec spec_;
  std::string observer_secret_;
  FakeClock fake_clock_;  // outlives the AM (declared before it)
  Clock* clock_ = &Clock::Real();
  cluster::FakeContainerBroker broker_;
  std::unique_ptr<history::EventLog> events_;
  std::unique_ptr<ApplicationMaster> am_;
  std::future<Result<JobState>> run_;
  std::unique_ptr<control::Control::Stub> stub_;
};

}  // namespace loom::am
