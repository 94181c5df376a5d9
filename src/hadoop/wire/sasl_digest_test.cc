#include "hadoop/wire/sasl_digest.h"

#include "hadoop/wire/test_hex.h"

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/testing.h"
#include "hadoop/testing/captures.h"

namespace loom::hadoop {
namespace {

using ::testing::HasSubstr;

const std::string kCaptures = testing::CaptureDir();
constexpr std::string_view kMismatch = "DIGEST-MD5: digest response format violation. Mismatched response.";

std::string Slice(const std::string& file, const nlohmann::json& range) {
  return file.substr(range["offset"].get<size_t>(), range["end"].get<size_t>() - range["offset"].get<size_t>());
}

// RFC 2831 section 4: the IMAP example (plain user name and password, not Hadoop's Base64).
TEST(DigestMd5, Rfc2831Example) {
  DigestHashes h = ComputeDigestMd5Sess("chris", "elwood.innosoft.com", "secret", "OA6MG9tEQGm2hh", "OA6MHXh6VqTrRk",
                                        "imap/elwood.innosoft.com");
  EXPECT_EQ(h.response_hex, "d388dad90d4bbd760a152321f2143af7");
  EXPECT_EQ(h.rspauth_hex, "ea40f60335c427b5527b84dbabcdfffd");
}

// README section 6's worked example (dshell/05-am-rm-8030).
TEST(DigestMd5, ReadmeWorkedExample) {
  DigestHashes h = ComputeDigestMd5Sess("Cg0KCQgBEObBkPCfNBABEO7B39L7/////wE=", "default",
                                        "E3H9Lkz74BZzCIMdYWKGUefdyBw=", "TEAHnyUm+eJaGNs5Ub7AQLaEyYNOngOaCkrFhuP6",
                                        "bgC8OB2ykQVRFKY/iSPqgPB7JMFcHywbUttzrJRK", "/default");
  EXPECT_EQ(h.response_hex, "57788625558574fc99b0b1947dde7716");
  EXPECT_EQ(h.rspauth_hex, "d3c277ecb15509970bc7cd59f440f831");
}

// Every DIGEST-MD5 exchange captured from Hadoop 3.3.6, both sides, against the recorded bytes.
TEST(DigestMd5, EveryCapturedExchange) {
  Result<std::string> text = ReadFile(kCaptures + "digest-vectors.json");
  ASSERT_OK(text);
  nlohmann::json vectors = nlohmann::json::parse(*text);
  int exchanges = 0, accepted = 0, rejected = 0;
  for (const auto& v : vectors) {
    SCOPED_TRACE(v["connection"].get<std::string>());
    Result<std::string> c2s = ReadFile(kCaptures + v["c2s_file"].get<std::string>());
    Result<std::string> s2c = ReadFile(kCaptures + v["s2c_file"].get<std::string>());
    ASSERT_OK(c2s);
    ASSERT_OK(s2c);
    // The challenge, from the bytes of the NEGOTIATE reply.
    std::string challenge_text = Slice(*s2c, v["challenge"]);
    EXPECT_EQ(challenge_text, v["challenge"]["text"].get<std::string>());
    std::string nonce = v["nonce"]["value"];
    EXPECT_EQ(Slice(*s2c, v["nonce"]), nonce);
    EXPECT_EQ(MakeDigestChallenge(nonce), challenge_text);  // what our server side sends
    Result<DigestChallenge> challenge = ParseDigestChallenge(challenge_text);
    ASSERT_OK(challenge);
    EXPECT_EQ(challenge->realm, "default");
    EXPECT_EQ(challenge->nonce, nonce);
    EXPECT_EQ(challenge->qops, std::vector<std::string>{"auth"});
    EXPECT_EQ(challenge->charset, "utf-8");
    EXPECT_EQ(challenge->algorithm, "md5-sess");
    if (!v.contains("response_token")) continue;  // 04: the client fell back to SIMPLE

    ++exchanges;
    Token token{FromHex(v["token_identifier_hex"].get<std::string>()),
                FromHex(v["token_password_hex"].get<std::string>()), "", ""};
    std::string cnonce = v["cnonce"]["value"];
    EXPECT_EQ(Slice(*c2s, v["cnonce"]), cnonce);
    std::string captured_token = Slice(*c2s, v["response_token"]);
    EXPECT_EQ(captured_token, v["response_token"]["text"].get<std::string>());

    // Client side: the INITIATE token byte for byte.
    Result<DigestResult> ours = DigestRespond(token, *challenge, cnonce, "/default");
    ASSERT_OK(ours);
    EXPECT_EQ(ours->response_token, captured_token);
    EXPECT_EQ(ours->response_hex, Slice(*c2s, v["response"]));
    EXPECT_EQ(ours->rspauth_hex, v["computed"]["rspauth"].get<std::string>());

    // Server side: Hadoop's verdict on the same token.
    Result<DigestVerified> verified = DigestVerifyWithPassword(captured_token, nonce, token.identifier, token.password);
    if (v["server_accepted"].get<bool>()) {
      ++accepted;
      ASSERT_OK(verified);
      std::string success = "rspauth=" + Slice(*s2c, v["rspauth"]);
      EXPECT_EQ(verified->success_token, success);
      EXPECT_EQ(verified->identifier, token.identifier);
      EXPECT_OK(VerifyRspAuth(*ours, success));
      // The SUCCESS token in the capture is the one right before the recorded hex.
      EXPECT_EQ(s2c->substr(v["rspauth"]["offset"].get<size_t>() - 8, 8), "rspauth=");
    } else {
      ++rejected;
      // A client token is only accepted with the password it was made with.
      EXPECT_OK(verified);
    }
  }
  EXPECT_EQ(exchanges, 12);
  EXPECT_EQ(accepted, 10);
  EXPECT_EQ(rejected, 2);  // negative/02 and 03: Hadoop rejected them for the server's password, not ours
}

// negative/03: the real identifier of application 0002 with its real password, against a token
// computed over the password with its last byte changed. Hadoop answered "Mismatched response".
TEST(DigestMd5, WrongPasswordIsRejectedAsHadoopDoes) {
  Result<std::string> c2s = ReadFile(kCaptures + "negative/03-sasl-real-identifier-wrong-password-8030.c2s.bin");
  ASSERT_OK(c2s);
  std::string client_token = c2s->substr(47, 316 - 47);
  std::string identifier = FromHex("0a0d0a09080210e6c190f09f34100110eec1dfd2fbffffffff01");
  std::string real_password = FromHex("c56d3e9c734348fd637924b2a4937543f21bd0d6");
  Result<DigestVerified> v = DigestVerifyWithPassword(client_token, "55Yc0VJQyFYGXd9djC2NhMeEurgcpQbAliMGUjwm",
                                                      identifier, real_password);
  EXPECT_STATUS(v, kUnauthenticated, ::testing::Eq(std::string(kMismatch)));
  // The same server check through the lookup form.
  auto lookup = [&](const std::string& id) -> Result<std::string> {
    if (id != identifier) return Status::NotFound("no such token");
    return real_password;
  };
  EXPECT_STATUS(DigestVerify(client_token, "55Yc0VJQyFYGXd9djC2NhMeEurgcpQbAliMGUjwm", lookup), kUnauthenticated,
                ::testing::Eq(std::string(kMismatch)));
}

TEST(DigestMd5, ServerRejectsTamperedTokens) {
  Token token{"ident", "pass", "YARN_AM_RM_TOKEN", ""};
  std::string nonce = "n0nce";
  Result<DigestChallenge> challenge = ParseDigestChallenge(MakeDigestChallenge(nonce));
  ASSERT_OK(challenge);
  Result<DigestResult> r = DigestRespond(token, *challenge, NewCnonce(), "/default");
  ASSERT_OK(r);
  Result<DigestVerified> ok = DigestVerifyWithPassword(r->response_token, nonce, "ident", "pass");
  ASSERT_OK(ok);
  EXPECT_EQ(ok->success_token, "rspauth=" + r->rspauth_hex);
  EXPECT_OK(VerifyRspAuth(*r, ok->success_token));

  auto replace = [&](std::string_view from, std::string_view to) {
    std::string t = r->response_token;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  EXPECT_STATUS(DigestVerifyWithPassword(r->response_token, "other", "ident", "pass"), kUnauthenticated,
                HasSubstr("Mismatched nonce"));
  EXPECT_STATUS(DigestVerifyWithPassword(r->response_token, nonce, "ident", "wrong"), kUnauthenticated,
                ::testing::Eq(std::string(kMismatch)));
  EXPECT_STATUS(DigestVerifyWithPassword(r->response_token, nonce, "other-ident", "pass"), kUnauthenticated,
                HasSubstr("user name"));
  EXPECT_STATUS(DigestVerifyWithPassword(replace("nc=00000001", "nc=00000002"), nonce, "ident", "pass"),
                kUnauthenticated, HasSubstr("Nonce count"));
  EXPECT_STATUS(DigestVerifyWithPassword(replace("/default", "/other"), nonce, "ident", "pass"), kUnauthenticated,
                HasSubstr("Mismatched URI"));
  EXPECT_STATUS(DigestVerifyWithPassword(replace("qop=auth", "qop=auth-conf"), nonce, "ident", "pass"),
                kUnauthenticated, HasSubstr("Invalid QOP"));
  EXPECT_STATUS(DigestVerifyWithPassword(replace("realm=\"default\"", "realm=\"x\""), nonce, "ident", "pass"),
                kUnauthenticated, HasSubstr("realm"));
  EXPECT_STATUS(DigestVerifyWithPassword(replace("response=", "response=0"), nonce, "ident", "pass"),
                kUnauthenticated, ::testing::Eq(std::string(kMismatch)));
  EXPECT_STATUS(DigestVerifyWithPassword(r->response_token + ",nonce=\"n0nce\"", nonce, "ident", "pass"),
                kUnauthenticated, HasSubstr("duplicate directive nonce"));
  EXPECT_STATUS(DigestVerifyWithPassword("username=\"unterminated", nonce, "ident", "pass"), kUnauthenticated,
                HasSubstr("digest response format violation"));
  EXPECT_STATUS(VerifyRspAuth(*r, "rspauth=00000000000000000000000000000000"), kUnauthenticated,
                HasSubstr("does not match"));
  EXPECT_STATUS(VerifyRspAuth(*r, ""), kUnauthenticated, HasSubstr("no rspauth"));
}

// A client configured for authentication only (the default) refuses a privacy-only server, and
// says which setting to change.
TEST(DigestMd5, QopWithoutAuthFailsClearly) {
  Result<DigestChallenge> c =
      ParseDigestChallenge("realm=\"default\",nonce=\"abc\",qop=\"auth-conf\",charset=utf-8,algorithm=md5-sess");
  ASSERT_OK(c);
  EXPECT_EQ(c->qops, std::vector<std::string>{"auth-conf"});
  Result<DigestResult> r = DigestRespond(Token{"i", "p", "k", ""}, *c, "cnonce", "/default");
  EXPECT_STATUS(r, kFailedPrecondition, HasSubstr("hadoop.rpc.protection=privacy"));
  EXPECT_STATUS(r, kFailedPrecondition, HasSubstr("hadoop.rpc.protection=authentication"));
  EXPECT_STATUS(r, kFailedPrecondition, HasSubstr("auth-conf"));
}

TEST(DigestMd5, QopListOfferingAuthChoosesAuth) {
  Result<DigestChallenge> c = ParseDigestChallenge(
      "algorithm=md5-sess, qop=\"auth-conf, auth-int,auth\" ,nonce=abc,realm=\"default\",charset=utf-8");
  ASSERT_OK(c);
  EXPECT_EQ(c->qops, (std::vector<std::string>{"auth-conf", "auth-int", "auth"}));
  EXPECT_EQ(c->nonce, "abc");
  Result<DigestResult> r = DigestRespond(Token{"i", "p", "k", ""}, *c, "cnonce", "/default");
  ASSERT_OK(r);
  EXPECT_THAT(r->response_token, ::testing::EndsWith(",qop=auth"));
}

TEST(DigestMd5, ChallengeParsingErrors) {
  EXPECT_STATUS(ParseDigestChallenge("realm=\"default\",qop=\"auth\",algorithm=md5-sess"), kInvalidArgument,
                HasSubstr("no nonce"));
  EXPECT_STATUS(ParseDigestChallenge("nonce=\"a\",algorithm=md5"), kInvalidArgument, HasSubstr("md5-sess"));
  EXPECT_STATUS(ParseDigestChallenge("nonce=\"a\""), kInvalidArgument, HasSubstr("md5-sess"));
  EXPECT_STATUS(ParseDigestChallenge("nonce=\"a\",nonce=\"b\",algorithm=md5-sess"), kInvalidArgument,
                HasSubstr("duplicate"));
  EXPECT_STATUS(ParseDigestChallenge("nonce=\"a\",algorithm=md5-sess,charset=latin1"), kInvalidArgument,
                HasSubstr("charset"));
  // No qop means "auth" (RFC 2831 2.1.1).
  Result<DigestChallenge> c = ParseDigestChallenge("nonce=\"a\",algorithm=md5-sess");
  ASSERT_OK(c);
  EXPECT_EQ(c->qops, std::vector<std::string>{"auth"});
}

TEST(Directives, QuotingEscapesAndErrors) {
  Result<std::vector<std::pair<std::string, std::string>>> d =
      ParseDirectives(" Realm = \"a,b\\\"c\" ,, nc=00000001,x=\"\",rspauth=ff ");
  ASSERT_OK(d);
  EXPECT_EQ(*d, (std::vector<std::pair<std::string, std::string>>{
                    {"realm", "a,b\"c"}, {"nc", "00000001"}, {"x", ""}, {"rspauth", "ff"}}));
  EXPECT_TRUE(ParseDirectives("")->empty());
  EXPECT_STATUS(ParseDirectives("a"), kInvalidArgument, HasSubstr("expected '=' after a at offset 1"));
  EXPECT_STATUS(ParseDirectives("=b"), kInvalidArgument, HasSubstr("directive name at offset 0"));
  EXPECT_STATUS(ParseDirectives("a=\"b"), kInvalidArgument, HasSubstr("unterminated"));
  EXPECT_STATUS(ParseDirectives("a=\"b\\"), kInvalidArgument, HasSubstr("unterminated"));
  EXPECT_STATUS(ParseDirectives("a=b c=d"), kInvalidArgument, HasSubstr("expected ','"));
  EXPECT_STATUS(ParseDirectives("a=\"b\"c"), kInvalidArgument, HasSubstr("expected ','"));
}

TEST(DigestMd5, TokenQuotesWhatNeedsQuoting) {
  DigestChallenge c{"re\"alm", "no\\nce", {"auth"}, "", "md5-sess"};
  Result<DigestResult> r = DigestRespond(Token{"i", "p", "k", ""}, c, "cn", "/default");
  ASSERT_OK(r);
  EXPECT_THAT(r->response_token, ::testing::StartsWith("username=\"aQ==\",realm=\"re\\\"alm\",nonce=\"no\\\\nce\""));
  Result<std::vector<std::pair<std::string, std::string>>> d = ParseDirectives(r->response_token);
  ASSERT_OK(d);
  EXPECT_EQ((*d)[1].second, "re\"alm");
  EXPECT_EQ((*d)[2].second, "no\\nce");
}

TEST(DigestMd5, NewCnonceLooksLikeJavas) {
  std::string a = NewCnonce(), b = NewCnonce();
  EXPECT_EQ(a.size(), 40u);
  EXPECT_NE(a, b);
  EXPECT_OK(Base64Decode(a));
  EXPECT_EQ(Base64Decode(a)->size(), 30u);
}

}  // namespace
}  // namespace loom::hadoop
