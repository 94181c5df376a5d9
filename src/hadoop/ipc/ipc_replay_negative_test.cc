// Our client against the refusals of real Hadoop 3.3.6 servers (tests/data/yarn-captures): a
// SIMPLE client on a token-only port, a wrong password, a made-up token identifier, a second
// registration; and the replay server's own check that it reports the first difference.

#include "hadoop/ipc/ipc_replay_test_helpers.h"

namespace loom::hadoop {
namespace {

using namespace replay_test;

TEST(ReplayServerSelfCheck, ReportsTheFirstDifference) {
  Capture cap = Load("dshell/01-client-rm-8032");
  ReplayServer server(ReplaySteps(cap));
  IpcOptions o = RecordedOptions(cap, server.port(), kClientProtocol);
  o.user = "mallory";  // not the recorded root
  {
    IpcClient client(o);
    SetNextCallIdForTest(0);
    RawMessage request, response;
    EXPECT_STATUS(client.Call("getResourceTypeInfo", request, &response), kUnavailable, HasSubstr("lost"));
  }
  EXPECT_STATUS(server.Wait(), kInvalidArgument, HasSubstr("differ from the recording at stream offset 7"));
}

// ---- Refusals by the real RM scheduler port ----

TEST(NegativeReplay, SimpleClientOnTheTokenOnlyPort) {
  Capture cap = Load("negative/01-none-auth-register-8030");
  ReplayOptions options;
  options.close_after_last_reply = true;  // the RM sends FIN after the FATAL
  ReplayServer server(ReplaySteps(cap), options);
  IpcOptions o = RecordedOptions(cap, server.port(), kAmProtocol);
  o.user = "root";
  {
    IpcClient client(o);
    SetNextCallIdForTest(0);
    RawMessage request = RecordedMessage<RawMessage>(RecordedRequest(cap, 0));
    RawMessage response;
    Status st = client.Call("registerApplicationMaster", request, &response);
    EXPECT_STATUS(st, kUnauthenticated,
                  StartsWith("org.apache.hadoop.security.AccessControlException: SIMPLE authentication is not "
                             "enabled.  Available:[TOKEN]"));
    EXPECT_THAT(st.message(), HasSubstr("127.0.0.1:" + std::to_string(server.port())));
  }
  EXPECT_OK(server.Wait());
}

TEST(NegativeReplay, WrongPasswordIsRefused) {
  Capture cap = Load("negative/03-sasl-real-identifier-wrong-password-8030");
  ReplayOptions options;
  options.close_after_last_reply = true;
  ReplayServer server(ReplaySteps(cap), options);
  IpcOptions o = RecordedOptions(cap, server.port(), kAmProtocol);
  o.token = AmRmTokenFromFile("negative/app2-am-container_tokens.bin");
  o.token->password.back() = static_cast<char>(0xd7);  // as the recorded client: last byte 0xd6 -> 0xd7
  {
    IpcClient client(o);
    RawMessage request, response;
    Status st = client.Call("registerApplicationMaster", request, &response);
    EXPECT_STATUS(st, kUnauthenticated,
                  StartsWith("javax.security.sasl.SaslException: DIGEST-MD5: digest response format violation. "
                             "Mismatched response."));
    EXPECT_THAT(st.message(), HasSubstr("127.0.0.1:" + std::to_string(server.port())));
  }
  EXPECT_OK(server.Wait());
}

TEST(NegativeReplay, MadeUpIdentifierIsRefused) {
  Capture cap = Load("negative/02-sasl-madeup-identifier-8030");
  ReplayOptions options;
  options.close_after_last_reply = true;
  options.compare = false;  // we cannot rebuild the made-up identifier's token
  ReplayServer server(ReplaySteps(cap), options);
  IpcOptions o = RecordedOptions(cap, server.port(), kAmProtocol);
  o.token = Token{"made-up", "wrong-password-1234!", "YARN_AM_RM_TOKEN", ""};
  {
    IpcClient client(o);
    RawMessage request, response;
    EXPECT_STATUS(client.Call("registerApplicationMaster", request, &response), kUnauthenticated,
                  StartsWith("org.apache.hadoop.security.token.SecretManager$InvalidToken: "
                             "appattempt_1795263045862_4242_000001 not found in AMRMTokenSecretManager."));
  }
  EXPECT_OK(server.Wait());
}

TEST(NegativeReplay, AlreadyRegisteredIsANonFatalError) {
  Capture cap = Load("negative/04-sasl-ok-then-register-again-8030");
  ReplayServer server(ReplaySteps(cap));
  IpcOptions o = RecordedOptions(cap, server.port(), kAmProtocol);
  o.token = AmRmTokenFromFile("negative/app2-am-container_tokens.bin");
  {
    IpcClient client(o);
    SetNextCallIdForTest(0);
    RawMessage request = RecordedMessage<RawMessage>(RecordedRequest(cap, 0));
    RawMessage response;
    EXPECT_STATUS(client.Call("registerApplicationMaster", request, &response), kAborted,
                  "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException: Application Master "
                  "is already registered : application_1795263045862_0002");
  }
  EXPECT_OK(server.Wait());
}

}  // namespace
}  // namespace loom::hadoop
