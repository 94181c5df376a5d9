// SASL GSSAPI message building and parsing against RFC 4752 and the recorded Kerberos
// handshake of `yarn application -list` (yarn-captures kerberos/rpc/01, K4). The GSS tokens
// themselves come from MIT's library; the real exchange with a KDC is in
// tests/integration/kerberos_test.cc.

#include "hadoop/wire/sasl_gssapi.h"

#include "hadoop/wire/test_hex.h"

#include <gtest/gtest.h>

#include "core/files.h"
#include "core/testing.h"
#include "hadoop/testing/captures.h"
#include "hadoop/wire/ipc_frame.h"

namespace loom::hadoop {
namespace {

const std::string kRpc01 = testing::CaptureDir() + "kerberos/rpc/01-client-rm-18032-app-list";

// The RpcSaslProto bodies of the SASL frames of one direction, in order (stops at the first
// frame that is not SASL-shaped: after SUCCESS every frame is a WRAP, still callId -33).
std::vector<std::string> SaslBodies(const std::string& file, size_t skip_preamble) {
  auto bytes = ReadFile(file);
  EXPECT_TRUE(bytes.ok()) << file;
  if (!bytes.ok()) return {};
  FrameReader reader;
  reader.Feed(std::string_view(*bytes).substr(skip_preamble));
  std::vector<std::string> out;
  for (;;) {
    auto body = reader.Next();
    if (!body.ok() || !*body) break;
    auto parts = SplitDelimited(**body);
    if (!parts.ok() || parts->size() != 2) break;
    out.emplace_back((*parts)[1]);
  }
  return out;
}

RpcSaslProto Parse(const std::string& body) {
  RpcSaslProto m;
  EXPECT_TRUE(m.ParseFromString(body));
  return m;
}

class RecordedHandshake : public ::testing::Test {
 protected:
  void SetUp() override {
    c2s_ = SaslBodies(kRpc01 + ".c2s.bin", 7);
    s2c_ = SaslBodies(kRpc01 + ".s2c.bin", 0);
    // C: NEGOTIATE, INITIATE, RESPONSE(empty), RESPONSE(layer), then WRAPs.
    // S: NEGOTIATE, CHALLENGE(AP-REP), CHALLENGE(layer), SUCCESS, then WRAPs.
    ASSERT_GE(c2s_.size(), 4u);
    ASSERT_GE(s2c_.size(), 4u);
  }
  std::vector<std::string> c2s_, s2c_;
};

TEST_F(RecordedHandshake, InitiateEchoesTheKerberosOfferByteForByte) {
  RpcSaslProto negotiate = Parse(s2c_[0]);
  ASSERT_EQ(negotiate.state(), RpcSaslProto::NEGOTIATE);
  const RpcSaslProto::SaslAuth* offer = FindKerberosOffer(negotiate);
  ASSERT_NE(offer, nullptr);
  EXPECT_EQ(offer->protocol(), "rm");
  EXPECT_EQ(offer->serverid(), "localhost");
  RpcSaslProto recorded = Parse(c2s_[1]);
  ASSERT_EQ(recorded.state(), RpcSaslProto::INITIATE);
  // The GSS initial context token: 0x60, the krb5 mechanism OID, TOK_ID 01 00 (AP-REQ).
  const std::string& token = recorded.token();
  ASSERT_GT(token.size(), 17u);
  EXPECT_EQ(Hex(token.substr(4, 11)), "06092a864886f712010202");
  EXPECT_EQ(Hex(token.substr(15, 2)), "0100");
  EXPECT_EQ(Hex(GssapiInitiate(*offer, token).SerializeAsString()), Hex(c2s_[1]));
}

TEST_F(RecordedHandshake, EmptyResponseKeepsTheTokenField) {
  RpcSaslProto challenge = Parse(s2c_[1]);
  ASSERT_EQ(challenge.state(), RpcSaslProto::CHALLENGE);
  // The GSS token: the krb5 OID, then TOK_ID 02 00 (AP-REP).
  const std::string oid = "\x06\x09\x2a\x86\x48\x86\xf7\x12\x01\x02\x02";
  size_t at = challenge.token().find(oid);
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(Hex(challenge.token().substr(at + oid.size(), 2)), "0200");
  EXPECT_EQ(Hex(c2s_[2]), "10041a00");
  EXPECT_EQ(Hex(GssapiResponse("").SerializeAsString()), "10041a00");
}

// RFC 4121 section 4.2.6.2: a Wrap token without confidentiality is the 16-byte header, the
// plaintext, then the checksum (EC bytes). The layer offer and the answer travel that way.
std::string UnsealedPayload(const std::string& token, uint8_t expected_flags) {
  EXPECT_EQ(Hex(token.substr(0, 2)), "0504");
  EXPECT_EQ(static_cast<uint8_t>(token[2]), expected_flags);
  EXPECT_EQ(Hex(token.substr(3, 5)), "ff000c0000");  // filler, EC=12, RRC=0
  return token.substr(16, token.size() - 16 - 12);
}

TEST_F(RecordedHandshake, SecurityLayerOfferAndChoice) {
  RpcSaslProto offer_msg = Parse(s2c_[2]);
  ASSERT_EQ(offer_msg.state(), RpcSaslProto::CHALLENGE);
  auto offer = ParseGssapiLayerMessage(UnsealedPayload(offer_msg.token(), 0x01));  // SentByAcceptor
  ASSERT_OK(offer);
  EXPECT_EQ(offer->layers, kGssapiLayerPrivacy);
  EXPECT_EQ(offer->max_buffer, 65536u);
  EXPECT_EQ(offer->authzid, "");

  auto chosen = ChooseGssapiLayer(offer->layers, "privacy");
  ASSERT_OK(chosen);
  RpcSaslProto answer = Parse(c2s_[3]);
  ASSERT_EQ(answer.state(), RpcSaslProto::RESPONSE);
  EXPECT_EQ(Hex(UnsealedPayload(answer.token(), 0x00)), Hex(BuildGssapiLayerMessage(*chosen, kGssapiMaxBuffer)));
  EXPECT_EQ(Hex(BuildGssapiLayerMessage(*chosen, kGssapiMaxBuffer)), "04010000");

  EXPECT_EQ(Parse(s2c_[3]).state(), RpcSaslProto::SUCCESS);
  EXPECT_FALSE(Parse(s2c_[3]).has_token());
  EXPECT_EQ(Parse(s2c_[4]).state(), RpcSaslProto::WRAP);
}

TEST(GssapiLayer, ChoosesTheFirstConfiguredQopTheServerOffers) {
  EXPECT_EQ(*ChooseGssapiLayer(kGssapiLayerNone | kGssapiLayerIntegrity | kGssapiLayerPrivacy, "privacy,integrity"),
            kGssapiLayerPrivacy);
  EXPECT_EQ(*ChooseGssapiLayer(kGssapiLayerIntegrity | kGssapiLayerPrivacy, "authentication, integrity"),
            kGssapiLayerIntegrity);
  EXPECT_EQ(*ChooseGssapiLayer(kGssapiLayerNone, ""), kGssapiLayerNone);  // Hadoop's default
  EXPECT_STATUS(ChooseGssapiLayer(kGssapiLayerPrivacy, "authentication"), kInvalidArgument,
                ::testing::HasSubstr("protects RPC with privacy but hadoop.rpc.protection=authentication"));
  EXPECT_STATUS(ChooseGssapiLayer(kGssapiLayerPrivacy, "secret"), kInvalidArgument,
                ::testing::HasSubstr("'secret' is not authentication, integrity or privacy"));
}

TEST(GssapiLayer, MessageParsing) {
  EXPECT_STATUS(ParseGssapiLayerMessage(std::string("\x04\x01\x00", 3)), kDataLoss, ::testing::HasSubstr("3 bytes"));
  auto m = ParseGssapiLayerMessage(std::string("\x02\x00\x10\x00" "alice", 9));
  ASSERT_OK(m);
  EXPECT_EQ(m->layers, kGssapiLayerIntegrity);
  EXPECT_EQ(m->max_buffer, 4096u);
  EXPECT_EQ(m->authzid, "alice");
  EXPECT_EQ(Hex(BuildGssapiLayerMessage(kGssapiLayerNone, 0xabcdef)), "01abcdef");
}

TEST(ServerPrincipal, HostExpansion) {
  EXPECT_EQ(ExpandHostInPrincipal("rm/_HOST@LOOM.TEST", "LocalHost"), "rm/localhost@LOOM.TEST");
  EXPECT_EQ(ExpandHostInPrincipal("nn/_HOST", "nn1.example.com"), "nn/nn1.example.com");
  EXPECT_EQ(ExpandHostInPrincipal("rm/localhost@LOOM.TEST", "other"), "rm/localhost@LOOM.TEST");
  EXPECT_EQ(ExpandHostInPrincipal("rm@LOOM.TEST", "other"), "rm@LOOM.TEST");
  EXPECT_EQ(CanonicalHostName("127.0.0.1"), "localhost");  // as K1: 127.0.0.1 reverse-resolves to localhost
}

}  // namespace
}  // namespace loom::hadoop
