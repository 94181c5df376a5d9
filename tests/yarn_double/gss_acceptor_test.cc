// The test servers' GSSAPI acceptor (src/hadoop/testing/gss_acceptor.h) against a real MIT KDC (tests/kerberos/kdc_harness.h): a raw
// Kerberos initial token (SASL GSSAPI) and a SPNEGO one (HTTP Negotiate) from the user's
// ticket cache are accepted and name the user; a ticket for another service is refused; wrap
// and unwrap work both ways.

#include "core/testing.h"
#include "gss_test_initiator.h"
#include "hadoop/testing/gss_acceptor.h"
#include "hadoop/wire/gssapi_library.h"
#include "kerberos/kdc_harness.h"

namespace loom::yarn_double {
namespace {

using loom::testing::KdcHarness;
using ::testing::HasSubstr;

using Initiator = GssTestInitiator;
using hadoop::testing::GssAcceptor;

class GssAcceptorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(kdc_.StartLoggedIn({"root", "rm/localhost", "nn/localhost", "HTTP/localhost"}));
  }

  // rm/localhost's acceptor (from rm's keytab), a client that asks for `service`, and the client's
  // first token, not yet accepted.
  struct RmExchange {
    std::unique_ptr<GssAcceptor> acceptor;
    std::unique_ptr<Initiator> client;
    std::string ap_req;
  };
  void BeginWithRm(const std::string& service, RmExchange* x) {
    auto acceptor = GssAcceptor::Create(kdc_.Keytab("rm/localhost"), "rm/localhost@LOOM.TEST");
    ASSERT_OK(acceptor);
    x->acceptor = std::move(*acceptor);
    x->client = std::make_unique<Initiator>(service);
    auto ap_req = FirstToken(*x->client);
    ASSERT_OK(ap_req);
    x->ap_req = *ap_req;
  }

  // The first token `client` sends: a Kerberos AP-REQ (or SPNEGO's wrapping of one).
  static Result<std::string> FirstToken(Initiator& client) {
    bool done = false;
    return client.Step("", &done);
  }

  // Runs the whole exchange; the acceptor once complete.
  void Establish(GssAcceptor* acceptor, Initiator* client) {
    bool client_done = false;
    auto token = FirstToken(*client);
    ASSERT_OK(token);
    for (int round = 0; round < 4; ++round) {
      auto step = acceptor->Accept(*token);
      ASSERT_OK(step);
      if (!step->output.empty()) {
        token = client->Step(step->output, &client_done);
        ASSERT_OK(token);
      }
      if (step->complete) break;
    }
    EXPECT_TRUE(client_done);
  }

  KdcHarness kdc_;
};

TEST_F(GssAcceptorTest, RawKerberosNamesTheUserAndWrapsBothWays) {
  RmExchange x;
  ASSERT_NO_FATAL_FAILURE(BeginWithRm("rm/localhost@LOOM.TEST", &x));
  // RFC 2743 InitialContextToken with the krb5 OID and TOK_ID 01 00 (K4.3).
  EXPECT_EQ(static_cast<uint8_t>(x.ap_req[0]), 0x60);
  auto step = x.acceptor->Accept(x.ap_req);
  ASSERT_OK(step);
  EXPECT_TRUE(step->complete);
  EXPECT_FALSE(step->output.empty());  // the AP-REP: mutual authentication (K4.4)
  bool done = false;
  ASSERT_OK(x.client->Step(step->output, &done));
  EXPECT_TRUE(done);
  EXPECT_EQ(x.acceptor->client_principal(), "root@LOOM.TEST");

  // Layer offer, not sealed (K4.6), then sealed traffic both ways.
  auto offer = x.acceptor->Wrap(std::string("\x04\x01\x00\x00", 4), false);
  ASSERT_OK(offer);
  int conf = -1;
  auto plain = x.client->Unwrap(*offer, &conf);
  ASSERT_OK(plain);
  EXPECT_EQ(*plain, std::string("\x04\x01\x00\x00", 4));
  EXPECT_EQ(conf, 0);
  auto sealed = x.client->Wrap("call bytes", true);
  ASSERT_OK(sealed);
  bool conf_used = false;
  auto opened = x.acceptor->Unwrap(*sealed, &conf_used);
  ASSERT_OK(opened);
  EXPECT_EQ(*opened, "call bytes");
  EXPECT_TRUE(conf_used);
  auto reply = x.acceptor->Wrap("reply bytes", true);
  ASSERT_OK(reply);
  EXPECT_EQ(reply->find("reply bytes"), std::string::npos);  // sealed
  plain = x.client->Unwrap(*reply, &conf);
  ASSERT_OK(plain);
  EXPECT_EQ(*plain, "reply bytes");
  EXPECT_EQ(conf, 1);
  // A tampered token is refused.
  std::string bad = *x.client->Wrap("x", true);
  bad.back() ^= 1;
  EXPECT_STATUS(x.acceptor->Unwrap(bad, &conf_used), kUnauthenticated, HasSubstr("GSSAPI unwrap"));
}

TEST_F(GssAcceptorTest, SpnegoInitialToken) {
  auto acceptor = GssAcceptor::Create(kdc_.Keytab("HTTP/localhost"), "HTTP/localhost@LOOM.TEST");
  ASSERT_OK(acceptor);
  Initiator client("HTTP/localhost@LOOM.TEST", GssTestInitiator::SpnegoOid());
  Establish(acceptor->get(), &client);
  EXPECT_EQ((*acceptor)->client_principal(), "root@LOOM.TEST");
}

TEST_F(GssAcceptorTest, TicketForAnotherServiceIsRefused) {
  // The client asks for nn/localhost, the server is rm/localhost with rm's keytab only.
  RmExchange x;
  ASSERT_NO_FATAL_FAILURE(BeginWithRm("nn/localhost@LOOM.TEST", &x));
  EXPECT_STATUS(x.acceptor->Accept(x.ap_req), kUnauthenticated, HasSubstr("GSSAPI accept for rm/localhost@LOOM.TEST failed"));
  EXPECT_TRUE(x.acceptor->client_principal().empty());
  EXPECT_FALSE(x.acceptor->Wrap("x", true).ok());
}

TEST_F(GssAcceptorTest, MissingKeytabOrKeyIsFailedPrecondition) {
  EXPECT_STATUS(GssAcceptor::Create(kdc_.dir() + "/no-such.keytab", "rm/localhost@LOOM.TEST"), kFailedPrecondition,
                HasSubstr("no acceptor credentials for rm/localhost@LOOM.TEST"));
  // nn's keytab holds no key for rm.
  EXPECT_STATUS(GssAcceptor::Create(kdc_.Keytab("nn/localhost"), "rm/localhost@LOOM.TEST"), kFailedPrecondition,
                HasSubstr("no acceptor credentials"));
}

}  // namespace
}  // namespace loom::yarn_double
