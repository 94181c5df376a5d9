// Id strings, and the semantics the YARN clients add over IpcClient (response ids, asks sent only
// when they change, NMToken cache, AMRMToken roll, resync, finish polling, per-container NM
// failures), against a scripted fake RM/NM that speaks TOKEN auth.

#include "hadoop/ipc/yarn_clients.h"

#include <atomic>
#include <functional>
#include <thread>

#include "core/testing.h"
#include "hadoop/ipc/fake_ipc_test_helpers.h"

namespace loom::hadoop {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace fake_ipc_test;

constexpr char kNotRegistered[] = "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException";
const Token kAmToken{"amrm-identifier", "amrm-password", "YARN_AM_RM_TOKEN", ""};
const Token kNmToken{"nm-identifier", "nm-password", "NMToken", "127.0.0.1:45454"};

// ---- Id strings ----

TEST(IdStrings, ApplicationAndAttempt) {
  auto app = ParseApplicationId("application_1795263045862_0001");
  ASSERT_OK(app);
  EXPECT_EQ(app->cluster_timestamp(), 1795263045862);
  EXPECT_EQ(app->id(), 1);
  EXPECT_EQ(ApplicationIdString(*app), "application_1795263045862_0001");

  ypb::ApplicationAttemptIdProto attempt;
  *attempt.mutable_application_id() = *app;
  attempt.set_attemptid(1);
  EXPECT_EQ(AttemptIdString(attempt), "appattempt_1795263045862_0001_000001");

  // More digits than the minimum are kept.
  auto big = ParseApplicationId("application_1795263045862_12345");
  ASSERT_OK(big);
  EXPECT_EQ(ApplicationIdString(*big), "application_1795263045862_12345");
}

TEST(IdStrings, ContainerRoundTrips) {
  for (const char* text :
       {"container_1795263045862_0001_01_000001", "container_1795263045862_0001_01_000003",
        "container_e17_1795263045862_0001_01_000003", "container_e01_1_0002_02_1234567",
        "container_1795263045862_10000_100_000004"}) {
    auto id = ParseContainerId(text);
    ASSERT_OK(id);
    EXPECT_EQ(ContainerIdString(*id), text);
  }
}

TEST(IdStrings, ContainerEpochIsTheHighBits) {
  auto id = ParseContainerId("container_e17_1795263045862_0001_01_000003");
  ASSERT_OK(id);
  EXPECT_EQ(id->id(), (int64_t{17} << 40) | 3);
  EXPECT_EQ(id->app_attempt_id().attemptid(), 1);
  EXPECT_EQ(id->app_attempt_id().application_id().id(), 1);
  EXPECT_EQ(id->app_attempt_id().application_id().cluster_timestamp(), 1795263045862);
  EXPECT_FALSE(id->has_app_id());  // as the RM sends them: app_attempt_id only
}

TEST(IdStrings, ContainerFromTheWire) {
  // The RM fills app_attempt_id; older records may only have the deprecated app_id.
  ypb::ContainerIdProto id;
  id.mutable_app_id()->set_id(7);
  id.mutable_app_id()->set_cluster_timestamp(99);
  id.set_id(5);
  EXPECT_EQ(ContainerIdString(id), "container_99_0007_00_000005");
}

TEST(IdStrings, RejectsMalformed) {
  for (const char* text : {"", "application", "application_1", "application_x_0001", "application_1_0001_",
                           "application_-1_0001", "application_1_+001", "application_1_99999999999",
                           "app_1795263045862_0001", " application_1_0001"}) {
    SCOPED_TRACE(text);
    EXPECT_STATUS(ParseApplicationId(text), kInvalidArgument, HasSubstr("'"));
  }
  for (const char* text :
       {"", "container", "container_1795263045862_0001_01", "container_1795263045862_0001_01_000003_",
        "container_e_1795263045862_0001_01_000003", "container_ex_1795263045862_0001_01_000003",
        "container_e17_1795263045862_0001_01", "container_1795263045862_0001_01_00000a",
        "container_1795263045862_0001_01_1099511627776",  // 2^40: does not fit the low bits
        "container_e9999999_1_0001_01_000001", "containers_1795263045862_0001_01_000003",
        "container__1795263045862_0001_01_000003"}) {
    SCOPED_TRACE(text);
    EXPECT_STATUS(ParseContainerId(text), kInvalidArgument, HasSubstr("'"));
  }
}

TEST(IdStrings, NodeAndTokens) {
  ypb::NodeIdProto node;
  node.set_host("localhost");
  node.set_port(45454);
  EXPECT_EQ(NodeIdString(node), "localhost:45454");
  EXPECT_EQ(FromProto(ToProto(kNmToken)), kNmToken);
}

// ---- AmRmClient against a scripted RM scheduler ----

ypb::ResourceRequestProto Ask(int priority, int n, const std::string& where = "*") {
  ypb::ResourceRequestProto ask;
  ask.mutable_priority()->set_priority(priority);
  ask.set_resource_name(where);
  ask.mutable_capability()->set_memory(1024);
  ask.mutable_capability()->set_virtual_cores(1);
  ask.set_num_containers(n);
  ask.set_allocation_request_id(priority);
  return ask;
}

ypb::ContainerIdProto Cid(int n) { return *ParseContainerId("container_42_0001_01_" + std::to_string(100000 + n)); }

// What a real RM does with register/allocate/finish, plus hooks to misbehave.
class FakeRm {
 public:
  FakeRm() : server_({kAmToken}, [this](const FakeCall& call) { return Handle(call); }) {}

  FakeIpcServer& server() { return server_; }
  int port() const { return server_.port(); }

  std::mutex mu;
  bool registered = false;
  int registrations = 0;
  int32_t last_response_id = 0;
  std::vector<ypb::AllocateRequestProto> allocates;
  std::vector<std::string> problems;
  // Adjusts the response to the n-th allocate (0-based), e.g. to add a command or tokens.
  std::function<void(size_t, ypb::AllocateResponseProto*)> script;
  int finish_calls = 0;
  int unregister_on_call = 1;
  int fail_allocates = 0;  // answer the next N allocates with an error

 private:
  FakeReply Handle(const FakeCall& call) {
    std::lock_guard lock(mu);
    if (call.method == "registerApplicationMaster") {
      registered = true;
      last_response_id = 0;
      ++registrations;
      ypb::RegisterApplicationMasterResponseProto resp;
      resp.mutable_maximumcapability()->set_memory(8192);
      resp.set_queue("default");
      return FakeReply::Ok(resp);
    }
    if (!registered) return FakeReply::Error(kNotRegistered, "Application doesn't exist in cache");
    if (call.method == "allocate") {
      ypb::AllocateRequestProto req;
      req.ParseFromString(call.request);
      size_t n = allocates.size();
      allocates.push_back(req);
      if (fail_allocates > 0) {
        --fail_allocates;
        return FakeReply::Error("java.io.IOException", "boom");
      }
      if (req.response_id() != last_response_id) {
        problems.push_back("allocate " + std::to_string(n) + " sent response id " + std::to_string(req.response_id()) +
                           ", expected " + std::to_string(last_response_id));
      }
      ypb::AllocateResponseProto resp;
      resp.set_response_id(++last_response_id);
      if (script) script(n, &resp);
      return FakeReply::Ok(resp);
    }
    if (call.method == "finishApplicationMaster") {
      ypb::FinishApplicationMasterResponseProto resp;
      resp.set_isunregistered(++finish_calls >= unregister_on_call);
      return FakeReply::Ok(resp);
    }
    return FakeReply::Error("org.apache.hadoop.ipc.RpcNoSuchMethodException", call.method);
  }

  FakeIpcServer server_;
};

class AmRmClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK(client_.Register("am-host", 4242, "http://am-host:8080").status()); }

  // The asks the n-th allocate carried, as "priority/resource_name=num".
  std::vector<std::string> AsksOf(size_t n) {
    std::lock_guard lock(rm_.mu);
    std::vector<std::string> out;
    for (const auto& a : rm_.allocates.at(n).ask()) {
      out.push_back(std::to_string(a.priority().priority()) + "/" + a.resource_name() + "=" +
                    std::to_string(a.num_containers()));
    }
    return out;
  }
  std::vector<std::string> ReleasesOf(size_t n) {
    std::lock_guard lock(rm_.mu);
    std::vector<std::string> out;
    for (const auto& r : rm_.allocates.at(n).release()) out.push_back(ContainerIdString(r));
    return out;
  }
  std::vector<std::string> Problems() {
    std::lock_guard lock(rm_.mu);
    return rm_.problems;
  }
  void Script(std::function<void(size_t, ypb::AllocateResponseProto*)> f) {
    std::lock_guard lock(rm_.mu);
    rm_.script = std::move(f);
  }

  FakeRm rm_;
  AmRmClient client_{"127.0.0.1", rm_.port(), kAmToken};
};

TEST_F(AmRmClientTest, EchoesTheLastReceivedResponseId) {
  for (int i = 1; i <= 4; ++i) {
    auto resp = client_.Allocate({}, {}, 0.1f * i);
    ASSERT_OK(resp);
    EXPECT_EQ(resp->response_id(), i);
  }
  EXPECT_THAT(Problems(), ElementsAre());
  std::lock_guard lock(rm_.mu);
  EXPECT_FLOAT_EQ(rm_.allocates[3].progress(), 0.4f);
  EXPECT_TRUE(rm_.allocates[0].has_blacklist_request());  // as Java, always present
}

TEST_F(AmRmClientTest, SendsAsksOnlyWhenTheyChange) {
  ASSERT_OK(client_.Allocate({Ask(1, 2), Ask(2, 1)}, {}, 0).status());
  ASSERT_OK(client_.Allocate({Ask(1, 2), Ask(2, 1)}, {}, 0).status());  // unchanged totals
  ASSERT_OK(client_.Allocate({Ask(1, 1), Ask(2, 1)}, {}, 0).status());  // one container of 1 arrived
  ASSERT_OK(client_.Allocate({Ask(1, 0)}, {}, 0).status());             // cancel
  ASSERT_OK(client_.Allocate({Ask(1, 0)}, {}, 0).status());             // nothing left to cancel
  ASSERT_OK(client_.Allocate({Ask(3, 0)}, {}, 0).status());             // never asked
  EXPECT_THAT(AsksOf(0), ElementsAre("1/*=2", "2/*=1"));
  EXPECT_THAT(AsksOf(1), ElementsAre());
  EXPECT_THAT(AsksOf(2), ElementsAre("1/*=1"));
  EXPECT_THAT(AsksOf(3), ElementsAre("1/*=0"));
  EXPECT_THAT(AsksOf(4), ElementsAre());
  EXPECT_THAT(AsksOf(5), ElementsAre());
}

TEST_F(AmRmClientTest, KeysIncludeTheResourceName) {
  ASSERT_OK(client_.Allocate({Ask(1, 1, "*"), Ask(1, 1, "node7"), Ask(1, 1, "/rack1")}, {}, 0).status());
  ASSERT_OK(client_.Allocate({Ask(1, 1, "*"), Ask(1, 0, "node7"), Ask(1, 1, "/rack1")}, {}, 0).status());
  EXPECT_THAT(AsksOf(0), ElementsAre("1/*=1", "1/node7=1", "1//rack1=1"));
  EXPECT_THAT(AsksOf(1), ElementsAre("1/node7=0"));
}

TEST_F(AmRmClientTest, CachesNmTokensByNode) {
  Script([](size_t n, ypb::AllocateResponseProto* resp) {
    if (n != 1) return;
    auto* t = resp->add_nm_tokens();
    t->mutable_nodeid()->set_host("node1");
    t->mutable_nodeid()->set_port(45454);
    *t->mutable_token() = ToProto(kNmToken);
  });
  ASSERT_OK(client_.Allocate({}, {}, 0).status());
  EXPECT_FALSE(client_.NmToken("node1:45454").has_value());
  ASSERT_OK(client_.Allocate({}, {}, 0).status());
  ASSERT_OK(client_.Allocate({}, {}, 0).status());  // later responses without tokens keep it
  EXPECT_EQ(client_.NmToken("node1:45454"), kNmToken);
  EXPECT_FALSE(client_.NmToken("node1:1").has_value());
}

TEST_F(AmRmClientTest, TakesTheRolledAmRmToken) {
  Token rolled{"amrm-identifier-2", "amrm-password-2", "YARN_AM_RM_TOKEN", ""};
  Script([&](size_t n, ypb::AllocateResponseProto* resp) {
    if (n == 0) *resp->mutable_am_rm_token() = ToProto(rolled);
  });
  ASSERT_OK(client_.Allocate({}, {}, 0).status());
  // The RM now knows only the new key; its next connection must use the new token.
  rm_.server().SetToken(rolled);
  rm_.server().CloseConnections();
  ASSERT_OK(client_.Allocate({}, {}, 0).status());
  EXPECT_EQ(rm_.server().connections(), 2);
  EXPECT_THAT(Problems(), ElementsAre());
}

TEST_F(AmRmClientTest, ResyncReRegistersAndResendsOutstandingAsks) {
  Script([](size_t n, ypb::AllocateResponseProto* resp) {
    if (n == 2) resp->set_a_m_command(ypb::AM_RESYNC);
  });
  ASSERT_OK(client_.Allocate({Ask(1, 2), Ask(2, 1)}, {}, 0).status());
  ASSERT_OK(client_.Allocate({Ask(1, 1), Ask(2, 0)}, {}, 0).status());
  // The RM restarted: it answers AM_RESYNC.
  auto resp = client_.Allocate({Ask(3, 4)}, {}, 0);
  ASSERT_OK(resp);
  EXPECT_EQ(resp->response_id(), 1);  // from the re-sent allocate
  EXPECT_THAT(AsksOf(2), ElementsAre("3/*=4"));
  EXPECT_THAT(AsksOf(3), ElementsAre("1/*=1", "3/*=4"));  // everything still wanted
  EXPECT_THAT(Problems(), ElementsAre());
  std::lock_guard lock(rm_.mu);
  EXPECT_EQ(rm_.registrations, 2);
  EXPECT_EQ(rm_.allocates[3].response_id(), 0);
}

TEST_F(AmRmClientTest, NotRegisteredExceptionAlsoResyncs) {
  ASSERT_OK(client_.Allocate({Ask(1, 2)}, {Cid(5)}, 0).status());
  {
    // A failed-over RM that never saw this attempt.
    std::lock_guard lock(rm_.mu);
    rm_.registered = false;
  }
  auto resp = client_.Allocate({}, {}, 0.5f);
  ASSERT_OK(resp);
  EXPECT_EQ(resp->response_id(), 1);
  // (The refused allocate is not recorded.) After registering again: all asks still wanted,
  // and the release not yet reported completed.
  EXPECT_THAT(AsksOf(1), ElementsAre("1/*=2"));
  EXPECT_THAT(ReleasesOf(1), ElementsAre("container_42_0001_01_100005"));
  EXPECT_THAT(Problems(), ElementsAre());
  std::lock_guard lock(rm_.mu);
  EXPECT_EQ(rm_.registrations, 2);
}

TEST_F(AmRmClientTest, CompletedReleasesAreNotResent) {
  Script([](size_t n, ypb::AllocateResponseProto* resp) {
    if (n == 1) *resp->add_completed_container_statuses()->mutable_container_id() = Cid(5);
    if (n == 2) resp->set_a_m_command(ypb::AM_RESYNC);
  });
  ASSERT_OK(client_.Allocate({}, {Cid(5), Cid(6)}, 0).status());
  ASSERT_OK(client_.Allocate({}, {}, 0).status());
  ASSERT_OK(client_.Allocate({}, {}, 0).status());
  EXPECT_THAT(Problems(), ElementsAre());
  EXPECT_THAT(ReleasesOf(0), ElementsAre("container_42_0001_01_100005", "container_42_0001_01_100006"));
  EXPECT_THAT(ReleasesOf(3), ElementsAre("container_42_0001_01_100006"));
}

TEST_F(AmRmClientTest, FailedAllocateSendsItsAsksAgain) {
  {
    std::lock_guard lock(rm_.mu);
    rm_.fail_allocates = 1;
  }
  EXPECT_STATUS(client_.Allocate({Ask(1, 2)}, {}, 0), kAborted, HasSubstr("java.io.IOException: boom"));
  ASSERT_OK(client_.Allocate({Ask(1, 2)}, {}, 0).status());  // same total, but not confirmed yet
  ASSERT_OK(client_.Allocate({Ask(1, 2)}, {}, 0).status());  // now it is
  EXPECT_THAT(AsksOf(0), ElementsAre("1/*=2"));
  EXPECT_THAT(AsksOf(1), ElementsAre("1/*=2"));
  EXPECT_THAT(AsksOf(2), ElementsAre());
  EXPECT_THAT(Problems(), ElementsAre());
}

TEST_F(AmRmClientTest, ShutdownIsAnError) {
  Script([](size_t, ypb::AllocateResponseProto* resp) { resp->set_a_m_command(ypb::AM_SHUTDOWN); });
  EXPECT_STATUS(client_.Allocate({}, {}, 0), kAborted, HasSubstr("shut down"));
}

TEST_F(AmRmClientTest, FinishPollsUntilUnregistered) {
  {
    std::lock_guard lock(rm_.mu);
    rm_.unregister_on_call = 3;
  }
  auto start = std::chrono::steady_clock::now();
  ASSERT_OK(client_.Finish(ypb::APP_SUCCEEDED, "done", "", std::chrono::seconds(5)));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
  std::lock_guard lock(rm_.mu);
  EXPECT_EQ(rm_.finish_calls, 3);
}

TEST_F(AmRmClientTest, FinishGivesUpAtTheTimeout) {
  {
    std::lock_guard lock(rm_.mu);
    rm_.unregister_on_call = 1000;
  }
  EXPECT_STATUS(client_.Finish(ypb::APP_FAILED, "", "", std::chrono::milliseconds(350)), kDeadlineExceeded,
                HasSubstr("did not unregister"));
}

TEST(AmRmClient, RegisterRefusedWithAWrongToken) {
  FakeRm rm;
  AmRmClient client("127.0.0.1", rm.port(), Token{"amrm-identifier", "wrong", "YARN_AM_RM_TOKEN", ""});
  EXPECT_STATUS(client.Register("h", -1, ""), kUnauthenticated, HasSubstr("SaslException"));
}

// ---- NmClient against a scripted NodeManager ----

class NmClientTest : public ::testing::Test {
 protected:
  NmClientTest()
      : nm_({kNmToken}, [this](const FakeCall& call) { return Handle(call); }) {
    container_.mutable_id()->CopyFrom(*ParseContainerId("container_e17_1795263045862_0001_01_000003"));
    container_.mutable_nodeid()->set_host("127.0.0.1");
    container_.mutable_nodeid()->set_port(nm_.port());
    *container_.mutable_container_token() = ToProto(Token{"ct-identifier", "ct-password", "ContainerToken", ""});
  }

  FakeReply Handle(const FakeCall& call) {
    std::lock_guard lock(mu_);
    methods_.push_back(call.method);
    if (call.method == "startContainers") {
      started_.ParseFromString(call.request);
      return Answer<ypb::StartContainersResponseProto>(container_.id(), [&](auto& resp) {
        *resp.add_succeeded_requests() = container_.id();
      });
    }
    if (call.method == "stopContainers") {
      ypb::StopContainersRequestProto req;
      req.ParseFromString(call.request);
      return Answer<ypb::StopContainersResponseProto>(req.container_id(0), [&](auto& resp) {
        *resp.add_succeeded_requests() = req.container_id(0);
      });
    }
    if (call.method == "getContainerStatuses") {
      ypb::GetContainerStatusesRequestProto req;
      req.ParseFromString(call.request);
      return Answer<ypb::GetContainerStatusesResponseProto>(req.container_id(0), [&](auto& resp) {
        auto* s = resp.add_status();
        *s->mutable_container_id() = req.container_id(0);
        s->set_state(ypb::C_RUNNING);
      });
    }
    return FakeReply::Error("org.apache.hadoop.ipc.RpcNoSuchMethodException", call.method);
  }

  // The NM's `Response` about container `id`: its failure when fail_, else what `succeed` adds.
  template <typename Response, typename Succeed>
  FakeReply Answer(const ypb::ContainerIdProto& id, Succeed succeed) {
    Response resp;
    if (fail_) {
      ypb::ContainerExceptionMapProto* f = resp.add_failed_requests();
      *f->mutable_container_id() = id;
      f->mutable_exception()->set_message("Container " + ContainerIdString(id) + " is not handled by this NodeManager");
      f->mutable_exception()->set_class_name("org.apache.hadoop.yarn.exceptions.YarnException");
    } else {
      succeed(resp);
    }
    return FakeReply::Ok(resp);
  }

  std::mutex mu_;
  bool fail_ = false;
  std::vector<std::string> methods_;
  ypb::StartContainersRequestProto started_;
  FakeIpcServer nm_;
  ypb::ContainerProto container_;
};

TEST_F(NmClientTest, StartStatusStopOneConnectionEach) {
  ypb::ContainerLaunchContextProto clc;
  clc.add_command("echo hello");
  ASSERT_OK(NmClient::StartContainer(container_, kNmToken, clc));
  auto status = NmClient::GetContainerStatus(container_, kNmToken);
  ASSERT_OK(status);
  EXPECT_EQ(status->state(), ypb::C_RUNNING);
  EXPECT_EQ(ContainerIdString(status->container_id()), "container_e17_1795263045862_0001_01_000003");
  ASSERT_OK(NmClient::StopContainer(container_, kNmToken));
  EXPECT_EQ(nm_.connections(), 3);
  std::lock_guard lock(mu_);
  EXPECT_THAT(methods_, ElementsAre("startContainers", "getContainerStatuses", "stopContainers"));
  // The container token travels unchanged, next to the launch context.
  const auto& start = started_.start_container_request(0);
  EXPECT_EQ(FromProto(start.container_token()), FromProto(container_.container_token()));
  EXPECT_THAT(start.container_launch_context().command(), ElementsAre("echo hello"));
}

TEST_F(NmClientTest, PerContainerFailuresNameTheContainer) {
  {
    std::lock_guard lock(mu_);
    fail_ = true;
  }
  const std::string id = "container_e17_1795263045862_0001_01_000003";
  EXPECT_STATUS(NmClient::StartContainer(container_, kNmToken, {}), kAborted,
                AllOf(HasSubstr("could not start " + id), HasSubstr("is not handled by this NodeManager"),
                      HasSubstr("127.0.0.1:")));
  EXPECT_STATUS(NmClient::StopContainer(container_, kNmToken), kAborted, HasSubstr(id));
  EXPECT_STATUS(NmClient::GetContainerStatus(container_, kNmToken), kAborted, HasSubstr(id));
}

TEST_F(NmClientTest, WrongNmTokenIsUnauthenticated) {
  Token wrong = kNmToken;
  wrong.password = "nope";
  EXPECT_STATUS(NmClient::StartContainer(container_, wrong, {}), kUnauthenticated, HasSubstr("SaslException"));
}

// ---- ApplicationClient ----

TEST(ApplicationClient, CallsAsTheGivenUser) {
  std::vector<std::string> methods;
  std::mutex mu;
  FakeIpcServer rm({}, [&](const FakeCall& call) {
    std::lock_guard lock(mu);
    methods.push_back(call.method);
    if (call.method == "getNewApplication") {
      ypb::GetNewApplicationResponseProto resp;
      resp.mutable_application_id()->set_id(3);
      resp.mutable_application_id()->set_cluster_timestamp(77);
      return FakeReply::Ok(resp);
    }
    if (call.method == "forceKillApplication") {
      ypb::KillApplicationRequestProto req;
      req.ParseFromString(call.request);
      ypb::KillApplicationResponseProto resp;
      resp.set_is_kill_completed(req.diagnostics() == "user asked");
      return FakeReply::Ok(resp);
    }
    if (call.method == "getApplicationReport") {
      return FakeReply::Error("org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException",
                              "Application with id 'application_77_0004' doesn't exist in RM.");
    }
    return FakeReply::Error("org.apache.hadoop.ipc.RpcNoSuchMethodException", call.method);
  });
  ApplicationClient client("127.0.0.1", rm.port(), "carol");
  auto app = client.GetNewApplication();
  ASSERT_OK(app);
  EXPECT_EQ(ApplicationIdString(app->application_id()), "application_77_0003");
  auto killed = client.KillApplication(app->application_id(), "user asked");
  ASSERT_OK(killed);
  EXPECT_TRUE(*killed);
  EXPECT_STATUS(client.GetApplicationReport(*ParseApplicationId("application_77_0004")), kAborted,
                HasSubstr("ApplicationNotFoundException"));
  EXPECT_THAT(rm.contexts(), ElementsAre(std::string("carol@") + kClientProtocol));
  std::lock_guard lock(mu);
  EXPECT_THAT(methods, ElementsAre("getNewApplication", "forceKillApplication", "getApplicationReport"));
}

// The queue list after "unknown YARN queue" comes from getQueueUserAcls: only queues open to
// submission, "root" (every queue's parent) left out; without the list if that call fails.
TEST(ApplicationClient, UnknownQueueNamesTheQueuesOpenToTheUser) {
  std::atomic<bool> acls_fail{false};
  FakeIpcServer rm({}, [&](const FakeCall& call) {
    if (call.method == "getQueueInfo") {
      ypb::GetQueueInfoRequestProto req;
      req.ParseFromString(call.request);
      ypb::GetQueueInfoResponseProto resp;
      if (req.queuename() == "gpu") resp.mutable_queueinfo()->set_queuename("gpu");
      return FakeReply::Ok(resp);  // anything else: SUCCESS, empty, as the RM does
    }
    if (call.method == "getQueueUserAcls" && !acls_fail) {
      ypb::GetQueueUserAclsInfoResponseProto resp;
      for (auto [name, submit] :
           {std::pair{"root", true}, {"root.gpu", true}, {"root.admin", false}, {"root.default", true}}) {
        auto* a = resp.add_queueuseracls();
        a->set_queuename(name);
        if (submit) a->add_useracls(ypb::QACL_SUBMIT_APPLICATIONS);
        a->add_useracls(ypb::QACL_ADMINISTER_QUEUE);
      }
      return FakeReply::Ok(resp);
    }
    return FakeReply::Error("org.apache.hadoop.security.AccessControlException", "no");
  });
  ApplicationClient client("127.0.0.1", rm.port(), "carol");
  auto gpu = client.GetQueueInfo("gpu");
  ASSERT_OK(gpu);
  EXPECT_EQ(gpu->queuename(), "gpu");
  EXPECT_STATUS(client.GetQueueInfo("gpus"), kNotFound, "unknown YARN queue 'gpus' (queues: root.gpu, root.default)");
  acls_fail = true;
  EXPECT_STATUS(client.GetQueueInfo("gpus"), kNotFound, "unknown YARN queue 'gpus'");
}

}  // namespace
}  // namespace loom::hadoop
