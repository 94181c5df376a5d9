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

// registerApplicationMaster through a client of `o`, closed again before the server is checked.
Status Register(const IpcOptions& o, const RawMessage& request) {
  IpcClient client(o);
  RawMessage response;
  return client.Call("registerApplicationMaster", request, &response);
}

// A registration that the RM refused in its handshake: the recording, who the client says it
// is, and how the refusal starts.
struct Refusal {
  const char* name;
  const char* stem;
  void (*identify)(IpcOptions&);
  bool compare;  // false where we cannot rebuild what the recorded client sent
  const char* refusal;
};

void PrintTo(const Refusal& refusal, std::ostream* os) { *os << refusal.name; }

class RefusedHandshake : public ::testing::TestWithParam<Refusal> {};

TEST_P(RefusedHandshake, IsUnauthenticatedAndNamesTheRm) {
  const Refusal& param = GetParam();
  Capture cap = Load(param.stem);
  // The RM sends FIN after its refusal.
  ReplayServer server(ReplaySteps(cap), {.compare = param.compare, .close_after_last_reply = true});
  IpcOptions o = RecordedOptions(cap, server.port(), kAmProtocol);
  param.identify(o);
  // A SIMPLE client sends its call at once, so it is the recorded one; a TOKEN client's is
  // never sent.
  SetNextCallIdForTest(0);
  Status st = Register(o, o.token ? RawMessage() : RecordedMessage<RawMessage>(RecordedRequest(cap, 0)));
  EXPECT_STATUS(st, kUnauthenticated, StartsWith(param.refusal));
  EXPECT_THAT(st.message(), HasSubstr("127.0.0.1:" + std::to_string(server.port())));  // names the RM
  EXPECT_OK(server.Wait());
}

INSTANTIATE_TEST_SUITE_P(
    NegativeReplay, RefusedHandshake,
    ::testing::Values(
        Refusal{"SimpleClientOnTheTokenOnlyPort", "negative/01-none-auth-register-8030",
                [](IpcOptions& o) { o.user = "root"; }, true,
                "org.apache.hadoop.security.AccessControlException: SIMPLE authentication is not enabled.  "
                "Available:[TOKEN]"},
        Refusal{"WrongPasswordIsRefused", "negative/03-sasl-real-identifier-wrong-password-8030",
                [](IpcOptions& o) {
                  o.token = AmRmTokenFromFile("negative/app2-am-container_tokens.bin");
                  o.token->password.back() = static_cast<char>(0xd7);  // as recorded: last byte 0xd6 -> 0xd7
                },
                true,
                "javax.security.sasl.SaslException: DIGEST-MD5: digest response format violation. Mismatched "
                "response."},
        Refusal{"MadeUpIdentifierIsRefused", "negative/02-sasl-madeup-identifier-8030",
                [](IpcOptions& o) { o.token = Token{"made-up", "wrong-password-1234!", "YARN_AM_RM_TOKEN", ""}; },
                false,  // we cannot rebuild the made-up identifier's token
                "org.apache.hadoop.security.token.SecretManager$InvalidToken: appattempt_1795263045862_4242_000001 "
                "not found in AMRMTokenSecretManager."}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(NegativeReplay, AlreadyRegisteredIsANonFatalError) {
  Capture cap = Load("negative/04-sasl-ok-then-register-again-8030");
  ReplayServer server(ReplaySteps(cap));
  IpcOptions o = RecordedOptions(cap, server.port(), kAmProtocol);
  o.token = AmRmTokenFromFile("negative/app2-am-container_tokens.bin");
  SetNextCallIdForTest(0);
  EXPECT_STATUS(Register(o, RecordedMessage<RawMessage>(RecordedRequest(cap, 0))), kAborted,
                "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException: Application Master "
                "is already registered : application_1795263045862_0002");
  EXPECT_OK(server.Wait());
}

}  // namespace
}  // namespace loom::hadoop
