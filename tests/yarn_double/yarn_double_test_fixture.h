#pragma once
// The fixture of the YARN test double's own tests (yarn_test_double_test.cc: behaviour,
// yarn_test_double_replay_test.cc: the recorded exchanges, scheduler_test.cc: through Loom's
// YARN clients): a work dir of the test's own, the double (and a FakeHdfs) on it, the
// recordings of tests/data/yarn-captures/, and the steps these tests take. Tests only.

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/eventually.h"
#include "core/test_dir.h"
#include "core/testing.h"
#include "fake_hdfs.h"
#include "hadoop/proto/hadoop_rpc.pb.h"
#include "hadoop/proto/yarn.pb.h"
#include "hadoop/testing/captures.h"
#include "hadoop/wire/credentials.h"
#include "hadoop/wire/ipc_frame.h"
#include "ipc_test_client.h"
#include "yarn_test_double.h"

namespace loom::yarn_double {

namespace yp = ::hadoop::yarn;

constexpr int64_t kTs = 1795263045862;
constexpr char kAmProtocol[] = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB";
constexpr char kClientProtocol[] = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB";
constexpr char kNmProtocol[] = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB";

// tests/data/yarn-captures/ of the source tree.
using hadoop::testing::CaptureDir;
// The file's bytes; a file that cannot be read fails the test (and gives "").
std::string MustRead(const std::string& path);

struct Capture {
  std::string preamble;
  std::vector<std::string> c2s, s2c;
};

// The recording `stem` (under CaptureDir()): the client's preamble and frames, the server's frames.
Capture LoadCapture(const std::string& stem);

// `got` and `want` in hex, for a failure message.
std::string HexDiff(const std::string& got, const std::string& want);

// Submits an application whose AM runs `command`; returns its id.
std::string Submit(TestIpc& rm, const std::string& command, int64_t memory_mb = 512,
                   const yp::ContainerLaunchContextProto& base = {});
// The RM's report of `app_id`.
yp::ApplicationReportProto Report(TestIpc& rm, const std::string& app_id);

// ---- fixture ----------------------------------------------------------------------------------

class YarnDoubleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = loom::testing::MakeTestDir("yarn-double");
  }
  void TearDown() override {
    if (double_) {
      double_->Stop();
      EXPECT_TRUE(double_->LiveContainerProcesses().empty());
    }
    double_.reset();
    if (hdfs_) hdfs_->Stop();
    std::filesystem::remove_all(work_);
  }

  YarnTestDouble::Options RecordedOptions() {
    YarnTestDouble::Options o;
    o.work_dir = work_.string() + "/yarn";
    o.node_memory_mb = 8192;
    o.node_vcores = 4;  // the recorded NM
    o.cluster_timestamp = kTs;
    o.max_containers_per_allocate = 1;  // the recorded RM handed out one container per heartbeat
    o.nm_heartbeat_ms = 0;  // placed during each allocate call, so the replay is deterministic
    return o;
  }

  void StartDouble(YarnTestDouble::Options o) {
    double_ = std::make_unique<YarnTestDouble>(std::move(o));
    ASSERT_OK(double_->Start());
  }

  void StartHdfs() {
    hdfs_ = std::make_unique<FakeHdfs>(work_.string() + "/hdfs");
    ASSERT_OK(hdfs_->Start());
  }

  // The double's options to run in the work dir over the FakeHdfs that StartHdfs started.
  YarnTestDouble::Options OverHdfs() {
    YarnTestDouble::Options o;
    o.work_dir = work_.string() + "/yarn";
    o.hdfs = hdfs_.get();
    return o;
  }

  // Replays a whole capture whose server bytes must come back identical.
  void ExpectIdenticalReplay(const std::string& stem, int port) {
    Capture cap = LoadCapture(stem);
    Socket s(port);
    size_t next_reply = 0;
    for (size_t i = 0; i < cap.c2s.size(); ++i) {
      s.Send((i == 0 ? cap.preamble : "") + cap.c2s[i]);
      ::hadoop::common::RpcRequestHeaderProto sent;
      auto parts = hadoop::SplitDelimited(std::string_view(cap.c2s[i]).substr(4));
      ASSERT_TRUE(parts.ok());
      sent.ParseFromArray((*parts)[0].data(), static_cast<int>((*parts)[0].size()));
      if (sent.callid() == hadoop::kConnectionContextCallId) continue;  // no reply
      if (next_reply >= cap.s2c.size()) break;
      std::optional<std::string> got = s.ReadFrame();
      ASSERT_TRUE(got.has_value()) << stem << " frame " << next_reply;
      EXPECT_EQ(*got, cap.s2c[next_reply]) << stem << " frame " << next_reply << HexDiff(*got, cap.s2c[next_reply]);
      ++next_reply;
    }
    EXPECT_EQ(next_reply, cap.s2c.size());
  }

  std::optional<YarnTestDouble::ContainerInfo> FindContainer(const std::string& id) {
    for (auto& c : double_->Containers()) {
      if (c.id == id) return c;
    }
    return std::nullopt;
  }

  // Whether container `id`'s process has started (its pid is known) within 5 s.
  bool WaitStarted(const std::string& id) {
    return loom::testing::Eventually(
        [&] {
          auto c = FindContainer(id);
          return c && c->pid > 0;
        },
        std::chrono::seconds(5), std::chrono::milliseconds(20));
  }

  bool WaitComplete(const std::string& id, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return loom::testing::Eventually(
        [&] {
          auto c = FindContainer(id);
          return c && c->state == yp::C_COMPLETE;
        },
        timeout, std::chrono::milliseconds(20));
  }

  // startContainers through the NM with `nm_token`, running `command`.
  yp::StartContainersResponseProto StartOnNm(const hadoop::Token& nm_token, const yp::ContainerProto& c,
                                             const std::string& command,
                                             const yp::ContainerLaunchContextProto* base = nullptr) {
    TestIpc nm(double_->nm_port());
    EXPECT_OK(nm.Token(nm_token, kNmProtocol));
    yp::StartContainersRequestProto req;
    auto* r = req.add_start_container_request();
    if (base) *r->mutable_container_launch_context() = *base;
    r->mutable_container_launch_context()->add_command(command);
    *r->mutable_container_token() = c.container_token();
    return nm.CallOk<yp::StartContainersResponseProto>("startContainers", kNmProtocol, req);
  }

  std::filesystem::path work_;
  hadoop::Token nm_token_;
  std::unique_ptr<FakeHdfs> hdfs_;
  std::unique_ptr<YarnTestDouble> double_;
};

// The NMToken of an allocate response that carries one.
hadoop::Token NmTokenOf(const yp::AllocateResponseProto& r);

}  // namespace loom::yarn_double
