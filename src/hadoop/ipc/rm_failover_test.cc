// ResourceManager HA: Hadoop's FailoverOnNetworkExceptionRetry decisions (table-driven, time
// injected), and FailoverIpcClient / ApplicationClient / AmRmClient against scripted RMs of
// which one answers StandbyException, as a standby ResourceManager does.

#include "hadoop/ipc/rm_failover.h"

#include <mutex>

#include "core/testing.h"
#include "hadoop/ipc/fake_ipc_test_helpers.h"
#include "hadoop/ipc/yarn_clients.h"
#include "hadoop/testing/test_socket.h"
#include "hadoop/wire/ipc_frame.h"

namespace loom::hadoop {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace fake_ipc_test;
using Ms = std::chrono::milliseconds;

constexpr char kStandbyMessage[] = "Operation category READ is not supported in state standby";
constexpr char kNotRegistered[] = "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException";

Status Standby() { return Status::Aborted(std::string(kStandbyException) + ": " + kStandbyMessage); }

// ---- the policy ----

struct PolicyCase {
  const char* name;
  Status failed;
  int failovers;
  double random01;
  FailoverPolicy::Kind kind;
  int64_t sleep_ms;
};

TEST(FailoverPolicy, AsHadoopsFailoverOnNetworkExceptionRetry) {
  FailoverPolicy policy(FailoverSettings{/*max_failovers=*/4, /*sleep_base_ms=*/100, /*sleep_max_ms=*/1000});
  const auto kFailover = FailoverPolicy::Kind::kFailover;
  const auto kFail = FailoverPolicy::Kind::kFail;
  const PolicyCase cases[] = {
      {"standby, first failover: at once", Standby(), 0, 0.9, kFailover, 0},
      {"standby, second: base*2 at random 1.0", Standby(), 1, 0.5, kFailover, 200},
      {"standby, third: base*4 * 0.5", Standby(), 2, 0.0, kFailover, 200},
      {"standby, capped at max * 1.5", Standby(), 3, 1.0, kFailover, 1200},
      {"refused connect backs off too", Status::Unavailable("cannot connect to h:1 (ApplicationClientProtocolPB): refused"),
       1, 0.5, kFailover, 200},
      {"lost mid-call: at once", Status::Unavailable("connection to h:1 lost: reset"), 3, 0.5, kFailover, 0},
      {"max failovers reached", Standby(), 4, 0.5, kFail, 0},
      {"an application error is not retried",
       Status::Aborted("org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException: no app"), 0, 0.5, kFail, 0},
      {"a timeout is not a failover", Status::DeadlineExceeded("no response"), 0, 0.5, kFail, 0},
  };
  for (const PolicyCase& c : cases) {
    FailoverPolicy::Action a = policy.Decide(c.failed, c.failovers, c.random01);
    EXPECT_EQ(a.kind, c.kind) << c.name;
    EXPECT_EQ(a.sleep.count(), c.sleep_ms) << c.name;
  }
  EXPECT_THAT(policy.Decide(Standby(), 4, 0).reason, HasSubstr("failovers (4) exceeded maximum allowed (4"));
}

// ---- clients against two scripted RMs ----

// A scripted ResourceManager that is active or standby.
struct ScriptedRm {
  explicit ScriptedRm(std::optional<Token> token = std::nullopt)
      : server({token}, [this](const FakeCall& call) { return Handle(call); }) {}
  FakeReply Handle(const FakeCall& call) {
    std::lock_guard lock(mu);
    methods.push_back(call.method);
    if (standby) return FakeReply::Error(kStandbyException, kStandbyMessage);
    if (call.method == "getNewApplication") {
      ypb::GetNewApplicationResponseProto resp;
      resp.mutable_application_id()->set_id(id);
      return FakeReply::Ok(resp);
    }
    if (call.method == "registerApplicationMaster") {
      registered = true;
      return FakeReply::Ok(ypb::RegisterApplicationMasterResponseProto());
    }
    if (call.method == "allocate") {
      if (!registered) return FakeReply::Error(kNotRegistered, "AM is not registered for known application attempt");
      ypb::AllocateRequestProto req;
      req.ParseFromString(call.request);
      last_asks = req.ask_size();
      ypb::AllocateResponseProto resp;
      resp.set_response_id(req.response_id() + 1);
      return FakeReply::Ok(resp);
    }
    return FakeReply::Error("java.lang.UnsupportedOperationException", call.method);
  }
  void SetStandby(bool s) {
    std::lock_guard lock(mu);
    standby = s;
  }
  std::vector<std::string> Methods() {
    std::lock_guard lock(mu);
    return methods;
  }
  std::mutex mu;
  bool standby = false;
  bool registered = false;
  int id = 0;
  int last_asks = -1;
  std::vector<std::string> methods;
  FakeIpcServer server;
};

class FailoverClientTest : public ::testing::Test {
 protected:
  FailoverIpcClient Client(std::vector<int> ports, FailoverSettings s = {3, 100, 1000}) {
    std::vector<IpcOptions> servers;
    for (int p : ports) servers.push_back(LoopbackOptions(p, kClientProtocol, "alice"));
    return FailoverIpcClient(std::move(servers), s, [this](Ms d) { sleeps_.push_back(d.count()); },
                             [] { return 0.5; });
  }
  std::vector<int64_t> sleeps_;
};

TEST_F(FailoverClientTest, SkipsTheStandbyAndRemembersTheActive) {
  ScriptedRm rm1, rm2;
  rm1.SetStandby(true);
  rm2.id = 42;
  auto client = Client({rm1.server.port(), rm2.server.port()});
  ypb::GetNewApplicationResponseProto resp;
  ASSERT_OK(client.Call("getNewApplication", ypb::GetNewApplicationRequestProto(), &resp));
  EXPECT_EQ(resp.application_id().id(), 42);
  EXPECT_EQ(client.active(), 1u);
  EXPECT_THAT(sleeps_, ElementsAre());  // the first failover is immediate
  ASSERT_OK(client.Call("getNewApplication", ypb::GetNewApplicationRequestProto(), &resp));
  EXPECT_THAT(rm1.Methods(), ElementsAre("getNewApplication"));  // not asked again
  EXPECT_THAT(rm2.Methods(), ElementsAre("getNewApplication", "getNewApplication"));
  // Another client of this process for the same RMs starts at the active one.
  auto again = Client({rm1.server.port(), rm2.server.port()});
  EXPECT_EQ(again.active(), 1u);
  ASSERT_OK(again.Call("getNewApplication", ypb::GetNewApplicationRequestProto(), &resp));
  EXPECT_EQ(rm1.Methods().size(), 1u);
}

TEST_F(FailoverClientTest, FollowsAFailoverRoundRobin) {
  ScriptedRm rm1, rm2;
  rm1.id = 1;
  rm2.id = 2;
  rm2.SetStandby(true);
  auto client = Client({rm1.server.port(), rm2.server.port(), testing::ClosedLoopbackPort()});
  ypb::GetNewApplicationResponseProto resp;
  ASSERT_OK(client.Call("getNewApplication", ypb::GetNewApplicationRequestProto(), &resp));
  EXPECT_EQ(resp.application_id().id(), 1);
  // rm1 becomes standby, rm2 active: rm1 -> rm2.
  rm1.SetStandby(true);
  rm2.SetStandby(false);
  ASSERT_OK(client.Call("getNewApplication", ypb::GetNewApplicationRequestProto(), &resp));
  EXPECT_EQ(resp.application_id().id(), 2);
  // And back: rm2 -> the third (refused) -> rm1, the second failover after a backoff.
  rm2.SetStandby(true);
  rm1.SetStandby(false);
  ASSERT_OK(client.Call("getNewApplication", ypb::GetNewApplicationRequestProto(), &resp));
  EXPECT_EQ(resp.application_id().id(), 1);
  EXPECT_EQ(client.active(), 0u);
  EXPECT_THAT(sleeps_, ElementsAre(200));
}

TEST_F(FailoverClientTest, GivesUpAfterMaxFailoversWithExponentialSleeps) {
  ScriptedRm rm1, rm2;
  rm1.SetStandby(true);
  rm2.SetStandby(true);
  auto client = Client({rm1.server.port(), rm2.server.port()}, FailoverSettings{4, 100, 300});
  ypb::GetNewApplicationResponseProto resp;
  Status st = client.Call("getNewApplication", ypb::GetNewApplicationRequestProto(), &resp);
  EXPECT_EQ(RemoteExceptionClass(st), kStandbyException) << st.ToString();
  EXPECT_THAT(st.ToString(), HasSubstr("after 4 failover(s): failovers (4) exceeded maximum allowed (4"));
  EXPECT_THAT(sleeps_, ElementsAre(200, 300, 300));  // min(100 * 2^n, 300) at random 0.5
  EXPECT_EQ(rm1.Methods().size() + rm2.Methods().size(), 5u);
}

TEST_F(FailoverClientTest, OneServerIsNotRetried) {
  ScriptedRm rm1;
  rm1.SetStandby(true);
  auto client = Client({rm1.server.port()});
  ypb::GetNewApplicationResponseProto resp;
  EXPECT_EQ(RemoteExceptionClass(client.Call("getNewApplication", ypb::GetNewApplicationRequestProto(), &resp)),
            kStandbyException);
  EXPECT_EQ(rm1.Methods().size(), 1u);
}

TEST(RmHaClients, ApplicationClientSkipsARefusingRm) {
  ScriptedRm rm2;
  rm2.id = 7;
  ApplicationClient client(RmAddresses{{"127.0.0.1", testing::ClosedLoopbackPort()}, {"127.0.0.1", rm2.server.port()}}, "alice",
                           FailoverSettings{3, 1, 1});
  auto fresh = client.GetNewApplication();
  ASSERT_OK(fresh);
  EXPECT_EQ(fresh->application_id().id(), 7);
}

// After a failover the new RM does not know the AM's registration: AMRMClientImpl registers
// again with the same AMRMToken and re-sends its asks.
TEST(RmHaClients, AmRmClientRegistersAgainOnTheNewActiveRm) {
  const Token token{"amrm-identifier", "amrm-password", "YARN_AM_RM_TOKEN", ""};
  ScriptedRm rm1(token), rm2(token);
  rm2.SetStandby(true);
  AmRmClient client(RmAddresses{{"127.0.0.1", rm1.server.port()}, {"127.0.0.1", rm2.server.port()}}, token,
                    FailoverSettings{3, 1, 1});
  ASSERT_OK(client.Register("am-host", 1234, ""));
  ypb::ResourceRequestProto ask;
  ask.mutable_priority()->set_priority(1);
  ask.set_resource_name("*");
  ask.set_num_containers(2);
  ASSERT_OK(client.Allocate({ask}, {}, 0.1f));
  rm1.SetStandby(true);
  rm2.SetStandby(false);
  ASSERT_OK(client.Allocate({ask}, {}, 0.2f));  // unchanged asks, but rm2 must hear them
  EXPECT_THAT(rm2.Methods(), ElementsAre("allocate", "registerApplicationMaster", "allocate"));
  EXPECT_EQ(rm2.last_asks, 1);
}

}  // namespace
}  // namespace loom::hadoop
