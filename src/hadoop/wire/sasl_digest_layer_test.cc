// The DIGEST-MD5 security layer (integrity and privacy) against the Kerberos cluster's
// recordings (tests/data/yarn-captures/kerberos, README K5.3): the AM's AMRMToken connection to
// the RM (rpc/08) and its NMToken connections to the NM (rpc/10, 11, 13), all auth-conf 3des.
#include <nlohmann/json.hpp>

#include "hadoop/wire/crypto_library.h"

#include "core/files.h"
#include "core/testing.h"
#include "hadoop/testing/captures.h"
#include "hadoop/wire/ipc_frame.h"
#include "hadoop/wire/sasl_digest.h"
#include "hadoop/wire/test_hex.h"
#include "hadoop/wire/test_sasl_frames.h"

namespace loom::hadoop {
namespace {

using ::testing::HasSubstr;

const std::string kKerberos = testing::CaptureDir() + "kerberos/";

// The SASL messages of one recorded direction, in order.
std::vector<RpcSaslProto> SaslMessages(const std::string& stream, bool client_to_server) {
  std::vector<RpcSaslProto> out;
  for (SaslFrame& f : RecordedSaslFrames(stream, client_to_server)) out.push_back(std::move(f.sasl));
  return out;
}

std::vector<std::string> WrapTokens(const std::vector<RpcSaslProto>& messages) {
  std::vector<std::string> tokens;
  for (const RpcSaslProto& m : messages) {
    if (m.state() == RpcSaslProto::WRAP) tokens.push_back(m.token());
  }
  return tokens;
}

std::string TokenOf(const std::vector<RpcSaslProto>& messages, RpcSaslProto::SaslState state) {
  for (const RpcSaslProto& m : messages) {
    if (m.state() == state) return m.token();
  }
  ADD_FAILURE() << "no " << RpcSaslProto::SaslState_Name(state);
  return "";
}

class RecordedPrivacy : public ::testing::TestWithParam<std::string> {};

// Authenticate as the Java AM did (its cnonce injected), derive its keys, then reproduce every
// WRAP token of the connection byte for byte, in both directions and from both sides.
TEST_P(RecordedPrivacy, ReproducesTheWireBytes) {
  const std::string stem = GetParam();
  Result<std::string> keys_text = ReadFile(kKerberos + "keys.json");
  ASSERT_OK(keys_text);
  const nlohmann::json all = nlohmann::json::parse(*keys_text);
  const nlohmann::json& k = all.at(stem);
  const nlohmann::json& d = k.at("digest");
  Result<std::string> c2s = ReadFile(kKerberos + stem + ".c2s.bin");
  Result<std::string> s2c = ReadFile(kKerberos + stem + ".s2c.bin");
  Result<std::string> plain_c2s = ReadFile(kKerberos + stem + ".plain.c2s.bin");
  Result<std::string> plain_s2c = ReadFile(kKerberos + stem + ".plain.s2c.bin");
  ASSERT_OK(c2s);
  ASSERT_OK(s2c);
  ASSERT_OK(plain_c2s);
  ASSERT_OK(plain_s2c);
  std::vector<RpcSaslProto> client_msgs = SaslMessages(*c2s, true);
  std::vector<RpcSaslProto> server_msgs = SaslMessages(*s2c, false);

  // The challenge as recorded, and as the test double's server writes it.
  ASSERT_FALSE(server_msgs.empty());
  ASSERT_EQ(server_msgs[0].auths_size(), 1);
  const std::string challenge_text = server_msgs[0].auths(0).challenge();
  EXPECT_EQ(challenge_text, d.at("challenge").get<std::string>());
  Result<DigestChallenge> challenge = ParseDigestChallenge(challenge_text);
  ASSERT_OK(challenge);
  EXPECT_EQ(challenge->qops, std::vector<std::string>{"auth-conf"});
  EXPECT_EQ(challenge->ciphers, (std::vector<std::string>{"3des", "rc4", "des", "rc4-56", "rc4-40"}));
  EXPECT_EQ(MakeDigestChallenge(challenge->nonce, {"auth-conf"}), challenge_text);

  // Client side: the INITIATE token, for hadoop.rpc.protection=privacy.
  const Token token{FromHex(k.at("token").at("identifier").get<std::string>()),
                    FromHex(k.at("token").at("password").get<std::string>()), "", ""};
  const std::string cnonce = d.at("client_response_fields").at("cnonce");
  Result<DigestResult> ours = DigestRespond(token, *challenge, cnonce, "/default", {"auth-conf"});
  ASSERT_OK(ours);
  EXPECT_EQ(ours->response_token, TokenOf(client_msgs, RpcSaslProto::INITIATE));
  EXPECT_EQ(ours->response_hex, d.at("response").get<std::string>());
  EXPECT_EQ(ours->qop, "auth-conf");
  EXPECT_EQ(ours->cipher, "3des");
  EXPECT_EQ(Hex(ours->ha1), d.at("HA1").get<std::string>());
  const std::string success = TokenOf(server_msgs, RpcSaslProto::SUCCESS);
  EXPECT_OK(VerifyRspAuth(*ours, success));

  DigestKeys keys = DeriveDigestKeys(ours->ha1, ours->cipher);
  EXPECT_EQ(Hex(keys.kic), d.at("Kic").get<std::string>());
  EXPECT_EQ(Hex(keys.kis), d.at("Kis").get<std::string>());
  EXPECT_EQ(Hex(keys.kcc), d.at("Kcc").get<std::string>());
  EXPECT_EQ(Hex(keys.kcs), d.at("Kcs").get<std::string>());

  // Server side: it accepts the recorded response and answers the recorded rspauth.
  Result<DigestVerified> verified = DigestVerifyWithPassword(ours->response_token, challenge->nonce, token.identifier,
                                                             token.password, {"auth-conf"});
  ASSERT_OK(verified);
  EXPECT_EQ(verified->success_token, success);
  EXPECT_EQ(verified->qop, "auth-conf");
  EXPECT_EQ(verified->cipher, "3des");
  EXPECT_EQ(verified->ha1, ours->ha1);

  // Both directions: the receiver's Unwrap yields the recorded plaintext, and the sender's
  // Wrap of that plaintext yields the recorded token, with the cipher state carried over.
  auto check_direction = [&](const std::vector<std::string>& tokens, const std::string& plain, DigestSide sender,
                             DigestSide receiver) {
    Result<std::unique_ptr<SaslSecurityLayer>> tx = NewDigestSecurityLayer("auth-conf", "3des", ours->ha1, sender);
    Result<std::unique_ptr<SaslSecurityLayer>> rx = NewDigestSecurityLayer("auth-conf", "3des", ours->ha1, receiver);
    ASSERT_OK(tx);
    ASSERT_OK(rx);
    ASSERT_NE(*tx, nullptr);
    EXPECT_EQ((*tx)->Qop(), "auth-conf");
    std::string opened;
    for (size_t i = 0; i < tokens.size(); ++i) {
      SCOPED_TRACE("token " + std::to_string(i));
      Result<std::string> p = (*rx)->Unwrap(tokens[i]);
      ASSERT_OK(p);
      opened += *p;
      Result<std::string> again = (*tx)->Wrap(*p);
      ASSERT_OK(again);
      EXPECT_EQ(Hex(*again), Hex(tokens[i]));
    }
    EXPECT_EQ(opened, plain);
  };
  std::vector<std::string> c2s_tokens = WrapTokens(client_msgs);
  std::vector<std::string> s2c_tokens = WrapTokens(server_msgs);
  EXPECT_EQ(static_cast<int>(c2s_tokens.size() + s2c_tokens.size()), k.at("wrap_frames").get<int>());
  ASSERT_FALSE(c2s_tokens.empty());
  ASSERT_FALSE(s2c_tokens.empty());
  {
    SCOPED_TRACE("client to server");
    check_direction(c2s_tokens, *plain_c2s, DigestSide::kClient, DigestSide::kServer);
  }
  {
    SCOPED_TRACE("server to client");
    check_direction(s2c_tokens, *plain_s2c, DigestSide::kServer, DigestSide::kClient);
  }
}

INSTANTIATE_TEST_SUITE_P(Kerberos, RecordedPrivacy,
                         ::testing::Values("rpc/08-am-rm-18030-amrmtoken", "rpc/10-am-nm-55454-startContainers-c02",
                                           "rpc/11-am-nm-55454-getContainerStatuses-c02",
                                           "rpc/13-am-nm-55454-stopContainers-c02"),
                         [](const auto& info) { return "rpc" + info.param.substr(4, 2); });

// A negotiated pair of layers for `server_qops` (the server's hadoop.rpc.protection) and
// `client_qops` (the client's).
struct Pair {
  std::unique_ptr<SaslSecurityLayer> client, server;
  std::string cipher;
};

Result<Pair> Negotiate(const std::vector<std::string>& server_qops, const std::vector<std::string>& client_qops,
                       std::string_view only_cipher = "") {
  std::string challenge_text = MakeDigestChallenge("n0nce", server_qops);
  if (!only_cipher.empty()) {
    size_t at = challenge_text.find("cipher=\"");
    size_t end = challenge_text.find('"', at + 8);
    challenge_text.replace(at + 8, end - at - 8, only_cipher);
  }
  LOOM_ASSIGN_OR_RETURN(DigestChallenge challenge, ParseDigestChallenge(challenge_text));
  const Token token{"ident", "secret", "", ""};
  LOOM_ASSIGN_OR_RETURN(DigestResult r, DigestRespond(token, challenge, "cn0nce", "/default", client_qops));
  LOOM_ASSIGN_OR_RETURN(DigestVerified v,
                        DigestVerifyWithPassword(r.response_token, "n0nce", "ident", "secret", server_qops));
  LOOM_RETURN_IF_ERROR(VerifyRspAuth(r, v.success_token));
  Pair p;
  LOOM_ASSIGN_OR_RETURN(p.client, NewDigestSecurityLayer(r.qop, r.cipher, r.ha1, DigestSide::kClient));
  LOOM_ASSIGN_OR_RETURN(p.server, NewDigestSecurityLayer(v.qop, v.cipher, v.ha1, DigestSide::kServer));
  p.cipher = r.cipher;
  return p;
}

void RoundTrips(Pair& p) {
  std::vector<std::string> messages = {"", "x", "1234567", "12345678", std::string(100, 'a'), std::string(5000, '\x7f')};
  for (int round = 0; round < 2; ++round) {
    for (const std::string& m : messages) {
      Result<std::string> t = p.client->Wrap(m);
      ASSERT_OK(t);
      if (p.client->Qop() == "auth-conf" && m.size() >= 8) {
        EXPECT_EQ(t->find(m), std::string::npos) << "plaintext visible in a sealed message";
      }
      Result<std::string> back = p.server->Unwrap(*t);
      ASSERT_OK(back);
      EXPECT_EQ(*back, m);
      Result<std::string> reply = p.server->Wrap(m + "!");
      ASSERT_OK(reply);
      Result<std::string> got = p.client->Unwrap(*reply);
      ASSERT_OK(got);
      EXPECT_EQ(*got, m + "!");
    }
  }
}

TEST(DigestLayer, IntegrityRoundTripsAndFormat) {
  Result<Pair> p = Negotiate({"auth-int"}, {"auth-int"});
  ASSERT_OK(p);
  ASSERT_NE(p->client, nullptr);
  EXPECT_EQ(p->client->Qop(), "auth-int");
  // msg | 10-byte MAC | 00 01 | seq: the message travels in clear.
  Result<std::string> t = p->client->Wrap("hello");
  ASSERT_OK(t);
  ASSERT_EQ(t->size(), 5u + 10 + 6);
  EXPECT_EQ(t->substr(0, 5), "hello");
  EXPECT_EQ(Hex(t->substr(15)), "000100000000");
  ASSERT_OK(p->server->Unwrap(*t));
  RoundTrips(*p);
}

TEST(DigestLayer, PrivacyRoundTripsWithEveryCipher) {
  for (std::string cipher : {"3des", "des", "rc4", "rc4-56", "rc4-40"}) {
    SCOPED_TRACE(cipher);
    Result<Pair> p = Negotiate({"auth-conf"}, {"auth-conf"}, cipher);
    ASSERT_OK(p);
    EXPECT_EQ(p->cipher, cipher);
    RoundTrips(*p);
  }
}

// Known answers for the ciphers the recordings do not use, computed with OpenSSL's command-line
// `enc -rc4` / `enc -des-cbc` (legacy provider) and Python's hmac over the RFC 2831 formulas:
// H(A1) = 00112233..ff, message "hello, wire protection", sequence number 0, client to server.
TEST(DigestLayer, KnownAnswersForDesAndRc4) {
  const std::string ha1 = FromHex("00112233445566778899aabbccddeeff");
  const std::map<std::string, std::string> expected = {
      {"rc4", "25341edd0affb2f6e17bae127054cfc2df34d24222284e753da0a10cb29d9678000100000000"},
      {"rc4-56", "69239f8b8711475adcb6f33cda4e33578b87fde3ffe996554eecaef635777ecb000100000000"},
      {"rc4-40", "376fa3fe0c71fdfd1cc41d8202562ca89fb269ec001b0991c278883bf9a3ff16000100000000"},
      {"des", "ff7a8229389a0cdca04bc2b073fd35c03b1437a3262842410e2df158f595e4e14a6c95ed5d20391b000100000000"},
  };
  for (const auto& [cipher, hex] : expected) {
    SCOPED_TRACE(cipher);
    Result<std::unique_ptr<SaslSecurityLayer>> layer =
        NewDigestSecurityLayer("auth-conf", cipher, ha1, DigestSide::kClient);
    ASSERT_OK(layer);
    Result<std::string> t = (*layer)->Wrap("hello, wire protection");
    ASSERT_OK(t);
    EXPECT_EQ(Hex(*t), hex);
  }
}

TEST(DigestLayer, ClientTakesItsFirstPreferenceTheServerOffers) {
  Result<DigestChallenge> c = ParseDigestChallenge(MakeDigestChallenge("n", {"auth", "auth-int"}));
  ASSERT_OK(c);
  Result<DigestResult> r = DigestRespond(Token{"i", "p", "", ""}, *c, "cn", "/default", {"auth-conf", "auth-int", "auth"});
  ASSERT_OK(r);
  EXPECT_EQ(r->qop, "auth-int");
  EXPECT_THAT(r->response_token, ::testing::EndsWith(",qop=auth-int"));
  r = DigestRespond(Token{"i", "p", "", ""}, *c, "cn", "/default", {"auth", "auth-int"});
  ASSERT_OK(r);
  EXPECT_EQ(r->qop, "auth");
}

TEST(DigestLayer, ClientAllowingLessThanTheServerRequiresIsRefusedClearly) {
  EXPECT_STATUS(Negotiate({"auth-conf"}, {"auth-int"}), kFailedPrecondition,
                HasSubstr("server requires qop \"auth-conf\" (its hadoop.rpc.protection=privacy)"));
  EXPECT_STATUS(Negotiate({"auth-int"}, {"auth"}), kFailedPrecondition,
                HasSubstr("client allows only \"auth\" (hadoop.rpc.protection=authentication)"));
  // A server offering only ciphers Loom lacks.
  EXPECT_STATUS(Negotiate({"auth-conf"}, {"auth-conf"}, "aes"), kFailedPrecondition, HasSubstr("ciphers \"aes\""));
}

TEST(DigestLayer, ServerRefusesAQopItDidNotOffer) {
  Result<DigestChallenge> c = ParseDigestChallenge(MakeDigestChallenge("n0nce", {"auth-int"}));
  ASSERT_OK(c);
  Result<DigestResult> r = DigestRespond(Token{"ident", "secret", "", ""}, *c, "cn", "/default", {"auth-int"});
  ASSERT_OK(r);
  EXPECT_STATUS(DigestVerifyWithPassword(r->response_token, "n0nce", "ident", "secret", {"auth-conf"}),
                kUnauthenticated, HasSubstr("Invalid QOP: auth-int"));
}

TEST(DigestLayer, TamperedMessageFailsItsMac) {
  for (std::string qop : {"auth-int", "auth-conf"}) {
    SCOPED_TRACE(qop);
    Result<Pair> p = Negotiate({qop}, {qop});
    ASSERT_OK(p);
    Result<std::string> t = p->client->Wrap("allocate: 3 containers");
    ASSERT_OK(t);
    std::string bad = *t;
    bad[2] = static_cast<char>(bad[2] ^ 0x01);
    EXPECT_STATUS(p->server->Unwrap(bad), kUnauthenticated, HasSubstr("fails its integrity check"));
  }
}

TEST(DigestLayer, ReplayedOrSkippedSequenceNumbersAreRefused) {
  for (std::string qop : {"auth-int", "auth-conf"}) {
    SCOPED_TRACE(qop);
    Result<Pair> p = Negotiate({qop}, {qop});
    ASSERT_OK(p);
    Result<std::string> first = p->client->Wrap("one");
    ASSERT_OK(first);
    ASSERT_OK(p->server->Unwrap(*first));
    EXPECT_STATUS(p->server->Unwrap(*first), kUnauthenticated,
                  HasSubstr("out of sequence: sequence number 0, expected 1"));
  }
  Result<Pair> p = Negotiate({"auth-int"}, {"auth-int"});
  ASSERT_OK(p);
  ASSERT_OK(p->client->Wrap("dropped"));
  Result<std::string> second = p->client->Wrap("two");
  ASSERT_OK(second);
  EXPECT_STATUS(p->server->Unwrap(*second), kUnauthenticated, HasSubstr("sequence number 1, expected 0"));
}

TEST(DigestLayer, MalformedTokens) {
  Result<Pair> p = Negotiate({"auth-conf"}, {"auth-conf"});
  ASSERT_OK(p);
  EXPECT_STATUS(p->server->Unwrap("short"), kDataLoss, HasSubstr("malformed"));
  EXPECT_STATUS(p->server->Unwrap(std::string(17, 'x') + std::string("\x00\x01\x00\x00\x00\x00", 6)), kDataLoss,
                HasSubstr("whole number of blocks"));
  EXPECT_STATUS(p->server->Unwrap(std::string(16, 'x') + std::string("\x00\x02\x00\x00\x00\x00", 6)), kDataLoss,
                HasSubstr("message type"));
}

TEST(DigestLayer, AuthHasNoLayer) {
  Result<std::unique_ptr<SaslSecurityLayer>> l = NewDigestSecurityLayer("auth", "", std::string(16, 'k'), DigestSide::kClient);
  ASSERT_OK(l);
  EXPECT_EQ(*l, nullptr);
  EXPECT_STATUS(NewDigestSecurityLayer("auth-conf", "aes", std::string(16, 'k'), DigestSide::kClient),
                kInvalidArgument, HasSubstr("cipher"));
}

TEST(RpcProtection, MapsToQops) {
  EXPECT_EQ(*QopsFromRpcProtection("privacy"), std::vector<std::string>{"auth-conf"});
  EXPECT_EQ(*QopsFromRpcProtection(" Integrity , privacy"), (std::vector<std::string>{"auth-int", "auth-conf"}));
  EXPECT_EQ(*QopsFromRpcProtection(""), std::vector<std::string>{"auth"});
  EXPECT_EQ(*QopsFromRpcProtection("authentication"), std::vector<std::string>{"auth"});
  EXPECT_STATUS(QopsFromRpcProtection("secret"), kInvalidArgument, HasSubstr("hadoop.rpc.protection: unknown value 'secret'"));
}

}  // namespace
}  // namespace loom::hadoop
