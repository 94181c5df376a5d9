// Kerberos login and the whole SASL GSSAPI exchange against a real MIT KDC
// (tests/kerberos/kdc_harness.h): the client (GssapiSaslClient) talks to an acceptor built on
// the same GSSAPI library with the service's keytab, following K4 step by step, in memory.

#include "hadoop/wire/kerberos_login.h"

#include <gtest/gtest.h>

#include "core/eventually.h"
#include "core/testing.h"
#include "hadoop/wire/gssapi_library.h"
#include "hadoop/wire/sasl_gssapi.h"
#include "kerberos/kdc_harness.h"

namespace loom::hadoop {
namespace {

using ::testing::HasSubstr;
using loom::testing::KdcHarness;

class KerberosTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(kdc_.Start({"alice", "rm/localhost"}, "10h"));
    kdc_.ExportToThisProcess();
  }
  KdcHarness kdc_;
};

TEST_F(KerberosTest, NoTicketCache) {
  EXPECT_STATUS(KerberosLogin::Acquire({}), kInvalidArgument,
                HasSubstr("no Kerberos ticket: run kinit <principal>, or set loom.kerberos.keytab and loom.kerberos.principal"));
}

TEST_F(KerberosTest, TicketCacheGivesThePrincipal) {
  ASSERT_OK(kdc_.Kinit("alice"));
  auto login = KerberosLogin::Acquire({});
  ASSERT_OK(login);
  EXPECT_EQ((*login)->principal(), "alice@LOOM.TEST");
  EXPECT_GT((*login)->lifetime_s(), 0u);
}

TEST_F(KerberosTest, ExpiredTicket) {
  ASSERT_OK(kdc_.Kinit("alice", "2s"));
  // The KDC's real clock ends the ticket: wait for that.
  ASSERT_TRUE(loom::testing::Eventually([&] { return !kdc_.TicketValid(); }, std::chrono::seconds(15),
                                        std::chrono::milliseconds(100)));
  EXPECT_STATUS(KerberosLogin::Acquire({}), kInvalidArgument, HasSubstr("expired"));
}

TEST_F(KerberosTest, Keytab) {
  KerberosLoginOptions o;
  o.keytab = kdc_.Keytab("alice");
  o.principal = "alice@LOOM.TEST";
  auto login = KerberosLogin::Acquire(o);
  ASSERT_OK(login);
  EXPECT_EQ((*login)->principal(), "alice@LOOM.TEST");
  EXPECT_FALSE(kdc_.TicketValid());  // a private memory cache: the user's cache is untouched

  o.keytab = kdc_.dir() + "/nope.keytab";
  o.keytab_key = "tony.keytab.location";
  EXPECT_STATUS(KerberosLogin::Acquire(o), kInvalidArgument,
                HasSubstr("tony.keytab.location=" + o.keytab + ": no such keytab file"));
  o.keytab = kdc_.Keytab("alice");
  o.principal = "";
  EXPECT_STATUS(KerberosLogin::Acquire(o), kInvalidArgument, HasSubstr("needs loom.kerberos.principal"));
}

// The server side of K4 with the service keytab.
class Acceptor {
 public:
  explicit Acceptor(const std::string& keytab) : gss_(*Gssapi()) {
    gss_key_value_element_desc e[] = {{"keytab", keytab.c_str()}};
    gss_key_value_set_desc store{1, e};
    OM_uint32 minor = 0;
    OM_uint32 major = gss_->acquire_cred_from(&minor, GSS_C_NO_NAME, GSS_C_INDEFINITE, GSS_C_NO_OID_SET, GSS_C_ACCEPT,
                                              &store, &cred_, nullptr, nullptr);
    EXPECT_FALSE(GSS_ERROR(major)) << GssapiError(*gss_, major, minor);
  }
  ~Acceptor() {
    OM_uint32 minor = 0;
    if (ctx_ != GSS_C_NO_CONTEXT) gss_->delete_sec_context(&minor, &ctx_, GSS_C_NO_BUFFER);
    gss_->release_cred(&minor, &cred_);
  }
  // The AP-REP for the client's initial token; `client` gets the initiator's name.
  std::string Accept(const std::string& token, std::string* client) {
    gss_buffer_desc in{token.size(), const_cast<char*>(token.data())};
    gss_buffer_desc out{0, nullptr};
    gss_name_t name = GSS_C_NO_NAME;
    OM_uint32 minor = 0;
    OM_uint32 major = gss_->accept_sec_context(&minor, &ctx_, cred_, &in, GSS_C_NO_CHANNEL_BINDINGS, &name, nullptr,
                                               &out, nullptr, nullptr, nullptr);
    EXPECT_EQ(major, GSS_S_COMPLETE) << GssapiError(*gss_, major, minor);
    gss_buffer_desc shown{0, nullptr};
    gss_->display_name(&minor, name, &shown, nullptr);
    client->assign(static_cast<const char*>(shown.value), shown.length);
    gss_->release_buffer(&minor, &shown);
    gss_->release_name(&minor, &name);
    std::string rep(static_cast<const char*>(out.value), out.length);
    gss_->release_buffer(&minor, &out);
    return rep;
  }
  // The security-layer offer after the handshake (K4.6): wrapped, not sealed.
  std::string Offer(uint8_t layer, uint32_t max_buffer) {
    std::string plain = BuildGssapiLayerMessage(layer, max_buffer);
    gss_buffer_desc in{plain.size(), plain.data()};
    gss_buffer_desc out{0, nullptr};
    OM_uint32 minor = 0;
    OM_uint32 major = gss_->wrap(&minor, ctx_, 0, GSS_C_QOP_DEFAULT, &in, nullptr, &out);
    EXPECT_FALSE(GSS_ERROR(major)) << GssapiError(*gss_, major, minor);
    std::string token(static_cast<const char*>(out.value), out.length);
    gss_->release_buffer(&minor, &out);
    return token;
  }
  // Hands the context to a layer (the acceptor's WRAPs after SUCCESS).
  std::unique_ptr<SaslSecurityLayer> Layer(bool privacy) {
    gss_ctx_id_t c = ctx_;
    ctx_ = GSS_C_NO_CONTEXT;
    return MakeGssapiSecurityLayer(c, privacy);
  }
  gss_ctx_id_t context() const { return ctx_; }

 private:
  const GssapiLibrary* gss_;
  gss_cred_id_t cred_ = GSS_C_NO_CREDENTIAL;
  gss_ctx_id_t ctx_ = GSS_C_NO_CONTEXT;
};

RpcSaslProto::SaslAuth RmOffer() {
  RpcSaslProto::SaslAuth a;
  a.set_method("KERBEROS");
  a.set_mechanism("GSSAPI");
  a.set_protocol("rm");
  a.set_serverid("localhost");
  return a;
}

GssapiSaslClient::Options ClientOptions(std::shared_ptr<const KerberosLogin> login, std::string protection) {
  GssapiSaslClient::Options o;
  o.login = std::move(login);
  o.principal_key = "yarn.resourcemanager.principal";
  o.principal_conf = "rm/_HOST@LOOM.TEST";
  o.server_host = "localhost";
  o.rpc_protection = std::move(protection);
  o.server = "ResourceManager 127.0.0.1:8032";
  return o;
}

TEST_F(KerberosTest, FullExchangeWithPrivacy) {
  ASSERT_OK(kdc_.Kinit("alice"));
  auto login = KerberosLogin::Acquire({});
  ASSERT_OK(login);
  auto client = GssapiSaslClient::Start(ClientOptions(*login, "privacy"), RmOffer());
  ASSERT_OK(client);
  EXPECT_EQ((*client)->server_principal(), "rm/localhost@LOOM.TEST");
  auto initiate = (*client)->Initiate();
  ASSERT_OK(initiate);
  ASSERT_EQ(initiate->auths_size(), 1);
  EXPECT_EQ(initiate->auths(0).SerializeAsString(), RmOffer().SerializeAsString());

  Acceptor server(kdc_.Keytab("rm/localhost"));
  std::string who;
  std::string ap_rep = server.Accept(initiate->token(), &who);
  EXPECT_EQ(who, "alice@LOOM.TEST");
  auto empty = (*client)->Respond(ap_rep);
  ASSERT_OK(empty);
  EXPECT_EQ(empty->SerializeAsString(), std::string("\x10\x04\x1a\x00", 4));  // K4.5

  // The server offers privacy only.
  auto choice = (*client)->Respond(server.Offer(kGssapiLayerPrivacy, kGssapiMaxBuffer));
  ASSERT_OK(choice);
  // Shaped as Java's (K4.7): RFC 4121 Wrap from the initiator, not sealed, EC=12, RRC=0. MIT's
  // acceptor (unlike Java's, K4.4) sends an acceptor subkey, so flag 0x04 may be set here.
  const std::string& t = choice->token();
  EXPECT_EQ(t.substr(0, 2), std::string("\x05\x04", 2));
  EXPECT_EQ(static_cast<uint8_t>(t[2]) & 0x03, 0x00);
  EXPECT_EQ(t.substr(3, 5), std::string("\xff\x00\x0c\x00\x00", 5));
  const GssapiLibrary* gss = *Gssapi();
  gss_buffer_desc cin{choice->token().size(), const_cast<char*>(choice->token().data())};
  gss_buffer_desc out{0, nullptr};
  OM_uint32 minor = 0;
  int conf = 1;
  ASSERT_FALSE(GSS_ERROR(gss->unwrap(&minor, server.context(), &cin, &out, &conf, nullptr)));
  EXPECT_EQ(std::string(static_cast<const char*>(out.value), out.length), std::string("\x04\x01\x00\x00", 4));
  EXPECT_EQ(conf, 0);
  gss->release_buffer(&minor, &out);

  auto layer = (*client)->Finish();
  ASSERT_OK(layer);
  ASSERT_NE(*layer, nullptr);
  EXPECT_EQ((*layer)->Qop(), "auth-conf");
  auto server_layer = server.Layer(true);
  auto sealed = (*layer)->Wrap("frame bytes");
  ASSERT_OK(sealed);
  EXPECT_EQ(static_cast<uint8_t>((*sealed)[2]) & 0x03, 0x02);  // Sealed, from the initiator (K4.9)
  EXPECT_EQ(sealed->find("frame bytes"), std::string::npos);
  EXPECT_EQ(*server_layer->Unwrap(*sealed), "frame bytes");
  auto reply = server_layer->Wrap("response");
  ASSERT_OK(reply);
  EXPECT_EQ(*(*layer)->Unwrap(*reply), "response");
  EXPECT_FALSE((*layer)->Unwrap(*reply).ok());  // a replay is refused
}

TEST_F(KerberosTest, AuthenticationOnlyHasNoLayerAndQopMismatchIsRefused) {
  ASSERT_OK(kdc_.Kinit("alice"));
  auto login = KerberosLogin::Acquire({});
  ASSERT_OK(login);
  for (const std::string protection : {"authentication", "privacy"}) {
    auto client = GssapiSaslClient::Start(ClientOptions(*login, protection), RmOffer());
    ASSERT_OK(client);
    Acceptor server(kdc_.Keytab("rm/localhost"));
    std::string who;
    ASSERT_OK((*client)->Respond(server.Accept((*client)->Initiate()->token(), &who)));
    std::string token = server.Offer(kGssapiLayerNone, 0);
    if (protection == "privacy") {
      EXPECT_STATUS((*client)->Respond(token), kInvalidArgument,
                    HasSubstr("protects RPC with authentication but hadoop.rpc.protection=privacy"));
      continue;
    }
    ASSERT_OK((*client)->Respond(token));
    auto layer = (*client)->Finish();
    ASSERT_OK(layer);
    EXPECT_EQ(*layer, nullptr);
  }
}

TEST_F(KerberosTest, WrongServicePrincipal) {
  ASSERT_OK(kdc_.Kinit("alice"));
  auto login = KerberosLogin::Acquire({});
  ASSERT_OK(login);
  auto o = ClientOptions(*login, "privacy");
  o.principal_conf = "yarn/_HOST@LOOM.TEST";
  EXPECT_STATUS(GssapiSaslClient::Start(o, RmOffer()), kInvalidArgument,
                HasSubstr("wrong Kerberos service principal: ResourceManager 127.0.0.1:8032 is rm/localhost@LOOM.TEST, "
                          "but yarn.resourcemanager.principal=yarn/_HOST@LOOM.TEST (yarn/localhost@LOOM.TEST for host "
                          "localhost) names another"));
  o.principal_conf = "";
  EXPECT_STATUS(GssapiSaslClient::Start(o, RmOffer()), kInvalidArgument,
                HasSubstr("yarn.resourcemanager.principal is not set"));
}

}  // namespace
}  // namespace loom::hadoop
