// IpcClient against a scripted in-test server: concurrent calls answered out of order,
// reconnection after the server closed the connection, remote errors, FATALs, timeouts,
// garbage, and both auth methods.

#include "hadoop/ipc/ipc_client.h"

#include <atomic>
#include <thread>
#include <vector>

#include "core/eventually.h"
#include "core/testing.h"
#include "hadoop/ipc/fake_ipc_test_helpers.h"
#include "hadoop/proto/yarn.pb.h"
#include "hadoop/wire/ipc_frame.h"

namespace loom::hadoop {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace fake_ipc_test;
namespace ypb = ::hadoop::yarn;

const Token kToken{std::string("\x0a\x05token\x10\x01", 9), "s3cret-password", "YARN_AM_RM_TOKEN", ""};
const std::string kContext = std::string("@") + kClientProtocol;

IpcOptions Options(const FakeIpcServer& server) {
  IpcOptions o = LoopbackOptions(server.port(), kClientProtocol, "alice");
  o.call_timeout = std::chrono::seconds(10);
  return o;
}

IpcOptions TokenOptions(const FakeIpcServer& server) {
  IpcOptions o = Options(server);
  o.token = kToken;
  return o;
}

ypb::GetApplicationReportRequestProto ReportRequest(int n) {
  ypb::GetApplicationReportRequestProto req;
  req.mutable_application_id()->set_id(n);
  req.mutable_application_id()->set_cluster_timestamp(42);
  return req;
}

// Answers getApplicationReport with the asked id as the report's name, after a delay that
// depends on the id so that later calls often overtake earlier ones.
FakeReply EchoReport(const FakeCall& call) {
  ypb::GetApplicationReportRequestProto req;
  req.ParseFromString(call.request);
  ypb::GetApplicationReportResponseProto resp;
  *resp.mutable_application_report()->mutable_applicationid() = req.application_id();
  resp.mutable_application_report()->set_name("app-" + std::to_string(req.application_id().id()));
  FakeReply reply = FakeReply::Ok(resp);
  reply.delay = std::chrono::milliseconds((req.application_id().id() * 7) % 5);
  return reply;
}

Status CallReport(IpcClient& client, int n) {
  ypb::GetApplicationReportResponseProto resp;
  LOOM_RETURN_IF_ERROR(client.Call("getApplicationReport", ReportRequest(n), &resp));
  if (resp.application_report().name() != "app-" + std::to_string(n)) {
    return Status::Internal("call " + std::to_string(n) + " got " + resp.application_report().name());
  }
  return Status::Ok();
}

// Answers calls of `method` with `reply`, and every other call as EchoReport does.
FakeIpcServer::Handler EchoExcept(std::string method, FakeReply reply) {
  return [method, reply](const FakeCall& call) { return call.method == method ? reply : EchoReport(call); };
}

// One call of `method`, for its status only.
Status CallMethod(IpcClient& client, const std::string& method) {
  ypb::GetApplicationReportResponseProto resp;
  return client.Call(method, ReportRequest(1), &resp);
}

TEST(IpcClient, ConcurrentCallsGetTheirOwnResponses) {
  FakeIpcServer server({}, EchoReport);
  IpcClient client(Options(server));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        Status s = CallReport(client, t * 1000 + i);
        if (!s.ok()) {
          ADD_FAILURE() << s.ToString();
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(server.connections(), 1);
  EXPECT_THAT(server.contexts(), ElementsAre("alice" + kContext));
}

TEST(IpcClient, ReconnectsAfterTheServerClosedTheConnection) {
  FakeIpcServer server({}, [](const FakeCall& call) {
    FakeReply reply = EchoReport(call);
    reply.close_after = ReportRequest(7).SerializeAsString() == call.request;
    return reply;
  });
  IpcClient client(Options(server));
  ASSERT_OK(CallReport(client, 7));  // answered, then the server hangs up
  ASSERT_TRUE(server.WaitForCloses(1));
  ASSERT_OK(CallReport(client, 8));
  EXPECT_EQ(server.connections(), 2);

  // The server's idle close, with no call in flight.
  server.CloseConnections();
  ASSERT_OK(CallReport(client, 9));
  EXPECT_EQ(server.connections(), 3);
  EXPECT_THAT(server.contexts(), ElementsAre("alice" + kContext, "alice" + kContext, "alice" + kContext));
}

TEST(IpcClient, EndOfStreamFailsThePendingCall) {
  FakeIpcServer server({}, EchoExcept("hangUp", {.kind = FakeReply::Kind::kNoReply, .close_after = true}));
  IpcClient client(Options(server));
  EXPECT_STATUS(CallMethod(client, "hangUp"), kUnavailable, HasSubstr("127.0.0.1:" + std::to_string(server.port())));
  EXPECT_OK(CallReport(client, 2));
}

TEST(IpcClient, RemoteErrorKeepsTheConnection) {
  FakeReply not_found =
      FakeReply::Error("org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException",
                       "Application with id 'application_42_0001' doesn't exist in RM.\n\tat org.apache.X");
  FakeIpcServer server({}, EchoExcept("fail", not_found));
  IpcClient client(Options(server));
  Status st = CallMethod(client, "fail");
  EXPECT_STATUS(st, kAborted,
                "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException: Application with id "
                "'application_42_0001' doesn't exist in RM.");
  EXPECT_EQ(RemoteExceptionClass(st), "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException");
  EXPECT_OK(CallReport(client, 2));
  EXPECT_EQ(server.connections(), 1);
}

TEST(IpcClient, FatalClosesTheConnectionAndTheNextCallReconnects) {
  FakeIpcServer server({}, EchoExcept("fatal", {.kind = FakeReply::Kind::kFatal,
                                                .exception_class = "org.apache.hadoop.ipc.RpcServerException",
                                                .message = "something broke"}));
  IpcClient client(Options(server));
  Status st = CallMethod(client, "fatal");
  EXPECT_STATUS(st, kUnavailable,
                ::testing::StartsWith("org.apache.hadoop.ipc.RpcServerException: something broke"));
  EXPECT_THAT(st.message(), HasSubstr("127.0.0.1:" + std::to_string(server.port())));
  EXPECT_OK(CallReport(client, 2));
  EXPECT_EQ(server.connections(), 2);
}

TEST(IpcClient, CallTimeoutLeavesTheConnectionUsable) {
  FakeIpcServer server({}, EchoExcept("silent", {.kind = FakeReply::Kind::kNoReply}));
  IpcOptions o = Options(server);
  o.call_timeout = std::chrono::milliseconds(200);
  IpcClient client(o);
  EXPECT_STATUS(CallMethod(client, "silent"), kDeadlineExceeded, HasSubstr("silent"));
  EXPECT_OK(CallReport(client, 2));
  EXPECT_EQ(server.connections(), 1);
}

TEST(IpcClient, LateResponseToATimedOutCallIsIgnored) {
  FakeIpcServer server({}, [](const FakeCall& call) {
    FakeReply reply = EchoReport(call);
    if (call.method == "slow") reply.delay = std::chrono::milliseconds(300);
    return reply;
  });
  IpcOptions o = Options(server);
  o.call_timeout = std::chrono::milliseconds(100);
  IpcClient client(o);
  EXPECT_STATUS(CallMethod(client, "slow"), kDeadlineExceeded, HasSubstr("slow"));
  // The late reply is on its way to the client before the next call.
  ASSERT_TRUE(loom::testing::Eventually([&] { return server.delayed_replies() == 1; }));
  EXPECT_OK(CallReport(client, 2));
}

TEST(IpcClient, OversizedFrameIsAnErrorNotACrash) {
  FakeIpcServer server(
      {}, EchoExcept("garbage", {.kind = FakeReply::Kind::kRaw, .body = std::string("\x7f\xff\xff\xff", 4) + "junk"}));
  IpcClient client(Options(server));
  EXPECT_STATUS(CallMethod(client, "garbage"), kUnavailable, HasSubstr("exceeds"));
  EXPECT_OK(CallReport(client, 2));
}

TEST(IpcClient, MalformedFramesAreErrors) {
  for (std::string junk : {std::string("\x00\x00\x00\x03\x7f\x01\x02", 7),       // message overruns the frame
                           std::string("\x00\x00\x00\x02\x01\xff", 6),           // not a response header
                           std::string("\x00\x00\x00\x00", 4)}) {                // empty frame
    SCOPED_TRACE("frame of " + std::to_string(junk.size()) + " bytes");
    FakeIpcServer server({}, EchoExcept("garbage", {.kind = FakeReply::Kind::kRaw, .body = junk}));
    IpcClient client(Options(server));
    Status st = CallMethod(client, "garbage");
    EXPECT_FALSE(st.ok());
    EXPECT_THAT(st.message(), HasSubstr("127.0.0.1:"));
    EXPECT_OK(CallReport(client, 2));
  }
}

TEST(IpcClient, UnparsableResponseBodyIsDataLoss) {
  // The body is not a GetApplicationReportResponseProto.
  FakeIpcServer server({}, [](const FakeCall&) { return FakeReply{.body = "\xff\xff"}; });
  IpcClient client(Options(server));
  EXPECT_STATUS(CallMethod(client, "getApplicationReport"), kDataLoss, HasSubstr("GetApplicationReportResponseProto"));
}

TEST(IpcClient, TokenAuthSendsAnEmptyUserInContext) {
  FakeIpcServer server({kToken}, EchoReport);
  IpcClient client(TokenOptions(server));
  ASSERT_OK(CallReport(client, 1));
  EXPECT_THAT(server.contexts(), ElementsAre(kContext));
}

TEST(IpcClient, TokenAuthWithASeparateChallengeRound) {
  testing::FakeServerOptions options{kToken};
  options.separate_challenge = true;
  FakeIpcServer server(options, EchoReport);
  IpcClient client(TokenOptions(server));
  ASSERT_OK(CallReport(client, 1));
  EXPECT_THAT(server.contexts(), ElementsAre(kContext));
}

TEST(IpcClient, WrongPasswordIsUnauthenticated) {
  FakeIpcServer server({kToken}, EchoReport);
  IpcOptions o = TokenOptions(server);
  o.token->password = "not-the-password";
  IpcClient client(o);
  Status st = CallMethod(client, "getApplicationReport");
  EXPECT_STATUS(st, kUnauthenticated, ::testing::StartsWith("javax.security.sasl.SaslException: "));
  EXPECT_THAT(st.message(), HasSubstr("127.0.0.1:" + std::to_string(server.port())));
}

TEST(IpcClient, SimpleClientOnATokenOnlyServer) {
  FakeIpcServer server({kToken}, EchoReport);
  IpcClient client(Options(server));
  EXPECT_STATUS(CallMethod(client, "getApplicationReport"), kUnauthenticated,
                HasSubstr("SIMPLE authentication is not enabled.  Available:[TOKEN]"));
}

TEST(IpcClient, TokenClientFallsBackToSimpleWhenTheServerSaysSo) {
  FakeIpcServer server({}, EchoReport);  // answers NEGOTIATE with SUCCESS
  IpcClient client(TokenOptions(server));
  ASSERT_OK(CallReport(client, 1));
  EXPECT_THAT(server.contexts(), ElementsAre("alice" + kContext));
}

TEST(IpcClient, UpdatedTokenIsUsedOnTheNextConnection) {
  FakeIpcServer server({kToken}, EchoReport);
  IpcClient client(TokenOptions(server));
  ASSERT_OK(CallReport(client, 1));

  Token rolled = kToken;
  rolled.identifier += "2";
  rolled.password = "rolled-password";
  server.SetToken(rolled);
  client.UpdateToken(rolled);
  ASSERT_OK(CallReport(client, 2));  // the open connection goes on
  server.CloseConnections();
  ASSERT_OK(CallReport(client, 3));  // a new handshake, with the new token
  EXPECT_EQ(server.connections(), 2);
}

TEST(IpcClient, OneCallPerConnection) {
  FakeIpcServer server({kToken}, EchoReport);
  IpcOptions o = TokenOptions(server);
  o.one_call_per_connection = true;
  IpcClient client(o);
  for (int i = 0; i < 3; ++i) ASSERT_OK(CallReport(client, i));
  EXPECT_EQ(server.connections(), 3);
}

TEST(IpcClient, OneCallPerConnectionReportsRemoteErrors) {
  FakeIpcServer server({}, [](const FakeCall&) { return FakeReply::Error("java.io.IOException", "nope"); });
  IpcOptions o = Options(server);
  o.one_call_per_connection = true;
  IpcClient client(o);
  EXPECT_STATUS(CallMethod(client, "getApplicationReport"), kAborted, "java.io.IOException: nope");
}

TEST(IpcClient, CallAfterCloseReconnects) {
  FakeIpcServer server({}, EchoReport);
  IpcClient client(Options(server));
  ASSERT_OK(CallReport(client, 1));
  client.Close();
  ASSERT_OK(CallReport(client, 2));
  EXPECT_EQ(server.connections(), 2);
}

TEST(IpcClient, ConnectionRefusedNamesTheServer) {
  int port;
  {
    FakeIpcServer gone({}, EchoReport);
    port = gone.port();
  }
  IpcClient client(LoopbackOptions(port, kAmProtocol, ""));
  EXPECT_EQ(client.Describe(), "127.0.0.1:" + std::to_string(port) + " (ApplicationMasterProtocolPB)");
  EXPECT_STATUS(CallMethod(client, "x"), kUnavailable,
                HasSubstr("cannot connect to 127.0.0.1:" + std::to_string(port)));
}

TEST(IpcClient, CallIdsArePerProcess) {
  std::vector<int32_t> ids;
  std::mutex mu;
  FakeIpcServer server({}, [&](const FakeCall& call) {
    std::lock_guard lock(mu);
    ids.push_back(call.call_id);
    return EchoReport(call);
  });
  IpcClient a(Options(server));
  IpcClient b(Options(server));
  SetNextCallIdForTest(100);
  ASSERT_OK(CallReport(a, 1));
  ASSERT_OK(CallReport(b, 2));
  ASSERT_OK(CallReport(a, 3));
  EXPECT_THAT(ids, ElementsAre(100, 101, 102));
  SetNextCallIdForTest(0x7fffffff);
  EXPECT_EQ(NextCallId(), 0x7fffffff);
  EXPECT_EQ(NextCallId(), 0);  // wraps to 0 like Java's counter & 0x7fffffff
}

}  // namespace
}  // namespace loom::hadoop
