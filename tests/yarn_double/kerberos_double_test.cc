// The Kerberized test double against a real MIT KDC (tests/kerberos/kdc_harness.h), driven by
// Loom's own clients: the IPC server's SASL GSSAPI under each hadoop.rpc.protection (K4) and
// the NameNode RPC's delegation tokens (K5.5, rpc/02, rpc/05). The ResourceManager's renewal at
// submission and cancellation at the end (K5.5-K5.6): secure_rm_double_test.cc.

#include "ipc_test_client.h"
#include "kerberos_double_fixture.h"

using ::loom::testing::Eventually;

namespace loom::yarn_double {
namespace {

// ---- IpcServer: SASL GSSAPI ---------------------------------------------------------------------

class GssapiServerTest : public KerberosDoubleTest {
 protected:
  void StartServer(const std::string& protection) {
    IpcServerOptions o;
    o.name = "rm";
    o.protocol = hadoop::kClientProtocol;
    o.allow_simple = true;  // ignored once Kerberos is on (K5.4)
    o.rpc_protection = protection;
    o.kerberos_principal = kRm;
    o.kerberos_keytab = kdc_.Keytab("rm/localhost");
    o.next_nonce = [] { return std::string(40, 'n'); };
    o.password_for = [](const std::string&) -> PasswordLookup {
      return RpcError{"org.apache.hadoop.security.token.SecretManager$InvalidToken", "no tokens here"};
    };
    o.handle = [this](const std::string& method, std::string_view, const ConnectionInfo& conn) -> CallResult {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.push_back(conn);
      ypb::GetClusterMetricsResponseProto resp;
      resp.mutable_cluster_metrics()->set_num_node_managers(7);
      return resp.SerializeAsString();
    };
    server_ = std::make_unique<IpcServer>(std::move(o));
    ASSERT_OK(server_->Start());
  }

  Status CallMetrics(std::shared_ptr<const hadoop::KerberosClientConf> kerberos, int* nodes = nullptr) {
    hadoop::IpcOptions o;
    o.host = "127.0.0.1";
    o.port = server_->port();
    o.protocol = hadoop::kClientProtocol;
    o.user = "root";
    o.kerberos = std::move(kerberos);
    o.call_timeout = 10s;
    hadoop::IpcClient client(o);
    ypb::GetClusterMetricsRequestProto req;
    ypb::GetClusterMetricsResponseProto resp;
    Status s = client.Call("getClusterMetrics", req, &resp);
    if (nodes) *nodes = resp.cluster_metrics().num_node_managers();
    return s;
  }

  std::vector<ConnectionInfo> Seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

  std::unique_ptr<IpcServer> server_;
  std::mutex mu_;
  std::vector<ConnectionInfo> seen_;
};

TEST_F(GssapiServerTest, EveryProtectionAuthenticatesThePrincipal) {
  for (const char* protection : {"authentication", "integrity", "privacy"}) {
    SCOPED_TRACE(protection);
    StartServer(protection);
    int nodes = 0;
    ASSERT_OK(CallMetrics(Client(protection), &nodes));
    EXPECT_EQ(nodes, 7);
    ASSERT_EQ(Seen().size(), 1u);
    EXPECT_EQ(Seen()[0].kerberos_principal, "root@LOOM.TEST");
    EXPECT_EQ(Seen()[0].user, "root@LOOM.TEST");  // K4.11: the full principal
    EXPECT_FALSE(Seen()[0].token_auth);
    server_->Stop();
    seen_.clear();
  }
}

TEST_F(GssapiServerTest, ClientListPicksWhatTheServerOffers) {
  StartServer("privacy");
  ASSERT_OK(CallMetrics(Client("integrity,privacy")));
  EXPECT_EQ(Seen().size(), 1u);
}

TEST_F(GssapiServerTest, TooWeakClientIsRefusedClearly) {
  StartServer("privacy");
  Status s = CallMetrics(Client("authentication"));
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("hadoop.rpc.protection"));
  EXPECT_THAT(s.message(), HasSubstr("privacy"));
  EXPECT_TRUE(Seen().empty());
}

TEST_F(GssapiServerTest, WrongServicePrincipalIsRefused) {
  StartServer("authentication");
  // The client expects nn/localhost; the server names rm/localhost (Java's check, K4.2).
  Status s = CallMetrics(Client("authentication", kNn));
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("rm/localhost@LOOM.TEST"));
  EXPECT_TRUE(Seen().empty());
}

TEST_F(GssapiServerTest, SimpleIsNotOfferedWithKerberos) {
  StartServer("authentication");
  Status s = CallMetrics(nullptr);  // no Kerberos in this process: SIMPLE as root
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("SIMPLE authentication is not enabled.  Available:[TOKEN, KERBEROS]"));
  EXPECT_TRUE(Seen().empty());
}

// ---- the server's side of K4, byte by byte, with a hand-driven client ---------------------------

using ::hadoop::common::IpcConnectionContextProto;
using ::hadoop::common::RpcResponseHeaderProto;
using ::hadoop::common::RpcSaslProto;

class RawGssapiTest : public GssapiServerTest {
 protected:
  // Preamble, NEGOTIATE, INITIATE (AP-REQ), CHALLENGE (AP-REP), empty RESPONSE: returns the
  // server's unwrapped layer offer.
  std::string UpToLayerOffer(Socket& c, GssTestInitiator& gss) {
    c.Send(hadoop::Preamble(hadoop::AuthProtocol::kSasl));
    RpcSaslProto negotiate;
    negotiate.set_state(RpcSaslProto::NEGOTIATE);
    c.SendSasl(negotiate);
    RpcResponseHeaderProto h;
    RpcSaslProto offer = c.ReadSasl(&h);
    const RpcSaslProto::SaslAuth* krb = hadoop::FindKerberosOffer(offer);
    EXPECT_NE(krb, nullptr);
    if (!krb) return "";
    bool done = false;
    auto ap_req = gss.Step("", &done);
    EXPECT_OK(ap_req);
    c.SendSasl(hadoop::GssapiInitiate(*krb, ap_req.value_or("")));
    RpcSaslProto challenge = c.ReadSasl(&h);
    EXPECT_EQ(challenge.state(), RpcSaslProto::CHALLENGE);
    EXPECT_OK(gss.Step(challenge.token(), &done));
    EXPECT_TRUE(done);
    c.SendSasl(hadoop::GssapiResponse(""));
    RpcSaslProto layers = c.ReadSasl(&h);
    EXPECT_EQ(layers.state(), RpcSaslProto::CHALLENGE);
    int sealed = -1;
    auto plain = gss.Unwrap(layers.token(), &sealed);
    EXPECT_OK(plain);
    EXPECT_EQ(sealed, 0);  // K4.6: signed, not sealed
    return plain.value_or("");
  }
  void SendChoice(Socket& c, GssTestInitiator& gss, uint8_t layer) {
    auto wrapped = gss.Wrap(hadoop::BuildGssapiLayerMessage(layer, hadoop::kGssapiMaxBuffer), false);
    ASSERT_OK(wrapped);
    c.SendSasl(hadoop::GssapiResponse(*wrapped));
  }
};

TEST_F(RawGssapiTest, NegotiateIsTheRecordedBytes) {
  std::string recorded;
  {
    std::ifstream in(std::string(LOOM_TEST_SOURCE_DIR) +
                         "/tests/data/yarn-captures/kerberos/rpc/01-client-rm-18032-app-list.s2c.bin",
                     std::ios::binary);
    recorded.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GE(recorded.size(), 243u);
  // The recorded nonce, so that the whole NEGOTIATE reply (K4.2) compares byte for byte.
  IpcServerOptions o;
  o.name = "rm";
  o.protocol = hadoop::kClientProtocol;
  o.rpc_protection = "privacy";
  o.kerberos_principal = kRm;
  o.kerberos_keytab = kdc_.Keytab("rm/localhost");
  o.next_nonce = [] { return std::string("F5EzpfMom1cun7xMtZar4kuLgfIJjBqtOsypytdU"); };
  o.handle = [](const std::string&, std::string_view, const ConnectionInfo&) -> CallResult { return std::string(); };
  IpcServer recorded_server(o);
  ASSERT_OK(recorded_server.Start());
  Socket r(recorded_server.port());
  ASSERT_TRUE(r.connected());
  r.Send(hadoop::Preamble(hadoop::AuthProtocol::kSasl));
  RpcSaslProto negotiate;
  negotiate.set_state(RpcSaslProto::NEGOTIATE);
  r.SendSasl(negotiate);
  RpcResponseHeaderProto h;
  r.ReadSasl(&h);
  EXPECT_EQ(r.received(), recorded.substr(0, 243));
}

TEST_F(RawGssapiTest, OfferFollowsProtectionAndAnUnofferedChoiceIsFatal) {
  StartServer("privacy,integrity");
  {
    Socket c(server_->port());
    GssTestInitiator gss(kRm);
    std::string offer = UpToLayerOffer(c, gss);
    EXPECT_EQ(offer, std::string("\x06\x01\x00\x00", 4));  // privacy | integrity, 65536
  }
  server_->Stop();
  StartServer("privacy");
  Socket c(server_->port());
  GssTestInitiator gss(kRm);
  EXPECT_EQ(UpToLayerOffer(c, gss), std::string("\x04\x01\x00\x00", 4));  // K4.6
  SendChoice(c, gss, hadoop::kGssapiLayerNone);  // not offered
  RpcResponseHeaderProto h;
  std::string body;
  ASSERT_TRUE(c.Read(&h, &body));
  EXPECT_EQ(h.status(), RpcResponseHeaderProto::FATAL);
  EXPECT_EQ(h.exceptionclassname(), "javax.security.sasl.SaslException");
  EXPECT_EQ(h.errormsg(), "Client selected unsupported protection: 1");
  EXPECT_FALSE(c.Read(&h, &body));  // closed
  EXPECT_TRUE(Seen().empty());
}

TEST_F(RawGssapiTest, ContextMustNameTheAuthenticatedPrincipal) {
  StartServer("authentication");
  Socket c(server_->port());
  GssTestInitiator gss(kRm);
  EXPECT_EQ(UpToLayerOffer(c, gss), std::string("\x01\x01\x00\x00", 4));
  SendChoice(c, gss, hadoop::kGssapiLayerNone);
  RpcResponseHeaderProto h;
  RpcSaslProto success = c.ReadSasl(&h);
  EXPECT_EQ(success.state(), RpcSaslProto::SUCCESS);
  EXPECT_FALSE(success.has_token());  // K4.8
  // The short name instead of the principal (K4.11 says the full one): impersonation, refused.
  IpcConnectionContextProto context;
  context.set_protocol(hadoop::kClientProtocol);
  context.mutable_userinfo()->set_effectiveuser("root");
  auto header = hadoop::MakeRequestHeader(hadoop::kConnectionContextCallId, "", -1);
  c.Send(hadoop::EncodeFrame({&header, &context}));
  std::string body;
  ASSERT_TRUE(c.Read(&h, &body));
  EXPECT_EQ(h.status(), RpcResponseHeaderProto::FATAL);
  EXPECT_EQ(h.exceptionclassname(), "org.apache.hadoop.security.authorize.AuthorizationException");
  EXPECT_EQ(h.errormsg(), "User: root@LOOM.TEST is not allowed to impersonate root");
}

// ---- NameNodeRpc: delegation tokens ------------------------------------------------------------

class NameNodeRpcTest : public KerberosDoubleTest {
 protected:
  void StartNameNode(const std::string& protection) {
    NameNodeRpcOptions o;
    o.kerberos_principal = kNn;
    o.kerberos_keytab = kdc_.Keytab("nn/localhost");
    o.rpc_protection = protection;
    o.tokens = &store_;
    nn_ = std::make_unique<NameNodeRpc>(std::move(o));
    ASSERT_OK(nn_->Start());
  }
  hadoop::NameNodeClient Client(std::shared_ptr<const hadoop::KerberosClientConf> kerberos) {
    hadoop::HdfsFileSystem fs;
    fs.uri = "hdfs://127.0.0.1:" + std::to_string(nn_->port());
    fs.namenodes = {hadoop::HostPort{"127.0.0.1", nn_->port()}};
    fs.token_service = "127.0.0.1:" + std::to_string(nn_->port());
    hadoop::IpcOptions base;
    base.user = "root";
    base.kerberos = std::move(kerberos);
    base.call_timeout = 10s;
    return hadoop::NameNodeClient(fs, base);
  }

  DelegationTokenStore store_;
  std::unique_ptr<NameNodeRpc> nn_;
};

TEST_F(NameNodeRpcTest, GetRenewCancelAsARealNameNode) {
  StartNameNode("privacy");
  hadoop::NameNodeClient root = Client(KerberosDoubleTest::Client("privacy"));
  auto token = root.GetDelegationToken(kRm);
  ASSERT_OK(token);
  EXPECT_EQ(token->kind, "HDFS_DELEGATION_TOKEN");
  EXPECT_EQ(token->service, "127.0.0.1:" + std::to_string(nn_->port()));  // set by the client
  ASSERT_EQ(store_.Minted().size(), 1u);
  EXPECT_EQ(store_.Minted()[0].owner, "root@LOOM.TEST");  // K5.5: full principal over RPC
  EXPECT_EQ(store_.Minted()[0].renewer, "rm");
  EXPECT_OK(store_.Verify(*token));

  // Only the renewer may renew (webhdfs/07's words, over RPC).
  EXPECT_STATUS(root.RenewDelegationToken(*token), kAborted, HasSubstr("root tries to renew a token"));
  EXPECT_EQ(store_.RenewCount(*token), 0);
  hadoop::NameNodeClient rm = Client(KerberosDoubleTest::Client("privacy", kRm, "rm/localhost"));
  auto expiry = rm.RenewDelegationToken(*token);
  ASSERT_OK(expiry);
  EXPECT_GT(*expiry, 0);
  EXPECT_EQ(store_.RenewCount(*token), 1);
  // The owner may cancel.
  ASSERT_OK(root.CancelDelegationToken(*token));
  EXPECT_TRUE(store_.Cancelled(*token));
}

TEST_F(NameNodeRpcTest, TokenAuthWorksButCannotIssueTokens) {
  StartNameNode("privacy");
  hadoop::NameNodeClient root = Client(KerberosDoubleTest::Client("privacy"));
  auto token = root.GetDelegationToken("rm");
  ASSERT_OK(token);
  // A container's view: the HDFS token over DIGEST-MD5 (auth-conf), no Kerberos.
  hadoop::IpcOptions o;
  o.host = "127.0.0.1";
  o.port = nn_->port();
  o.protocol = hadoop::kNameNodeProtocol;
  o.token = *token;
  o.rpc_protection = "privacy";
  o.call_timeout = 10s;
  hadoop::IpcClient with_token(o);
  ::hadoop::common::GetDelegationTokenRequestProto req;
  req.set_renewer("rm");
  ::hadoop::common::GetDelegationTokenResponseProto resp;
  EXPECT_STATUS(with_token.Call("getDelegationToken", req, &resp), kAborted,
                HasSubstr("Delegation Token can be issued only with kerberos or web authentication"));
  // A forged password fails SASL.
  hadoop::Token forged = *token;
  forged.password[0] ^= 1;
  o.token = forged;
  hadoop::IpcClient with_forged(o);
  EXPECT_FALSE(with_forged.Call("getDelegationToken", req, &resp).ok());
  EXPECT_EQ(store_.Minted().size(), 1u);
}

}  // namespace
}  // namespace loom::yarn_double
