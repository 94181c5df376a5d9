// The Kerberized test double against a real MIT KDC (tests/kerberos/kdc_harness.h), driven by
// Loom's own clients: the IPC server's SASL GSSAPI under each hadoop.rpc.protection (K4), the
// NameNode RPC's delegation tokens (K5.5, rpc/02, rpc/05), and the ResourceManager's renewal
// at submission and cancellation at the end (K5.5-K5.6).

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "cluster/yarn/rpc/ipc_client.h"
#include "cluster/yarn/rpc/namenode_client.h"
#include "cluster/yarn/rpc/yarn_clients.h"
#include "cluster/yarn/wire/credentials.h"
#include "cluster/yarn/wire/ipc_frame.h"
#include "cluster/yarn/wire/sasl_gssapi.h"
#include "cluster/yarn/wire/kerberos_login.h"
#include "core/files.h"
#include "core/testing.h"
#include "fake_hdfs.h"
#include "gss_test_initiator.h"
#include "ipc_server.h"
#include "kerberos/kdc_harness.h"
#include "namenode_rpc.h"
#include "yarn_test_double.h"
#include "core/eventually.h"

using ::loom::testing::Eventually;

namespace loom::yarn_double {
namespace {

namespace yc = loom::cluster::yarn;
namespace ypb = hadoop::yarn;
using loom::testing::KdcHarness;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr char kRm[] = "rm/localhost@LOOM.TEST";
constexpr char kNn[] = "nn/localhost@LOOM.TEST";

class KerberosDoubleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(kdc_.Start({"root", "rm/localhost", "nn/localhost", "HTTP/localhost"}));
    kdc_.ExportToThisProcess();
    ASSERT_OK(kdc_.Kinit("root"));
  }
  void TearDown() override { yc::SetProcessKerberos(nullptr); }

  // The client's Kerberos: the ticket cache (root), or a keytab's principal.
  std::shared_ptr<yc::KerberosClientConf> Client(const std::string& protection, const std::string& rm_principal = kRm,
                                                 const std::string& keytab_principal = "") {
    yc::KerberosLoginOptions lo;
    if (!keytab_principal.empty()) {
      lo.keytab = kdc_.Keytab(keytab_principal);
      lo.principal = KdcHarness::Principal(keytab_principal);
    }
    auto login = yc::KerberosLogin::Acquire(lo);
    EXPECT_OK(login);
    auto conf = std::make_shared<yc::KerberosClientConf>();
    if (login.ok()) conf->login = *login;
    conf->rpc_protection = protection;
    conf->rm_principal = rm_principal;
    conf->nn_principal = kNn;
    return conf;
  }

  KdcHarness kdc_;
};

// ---- IpcServer: SASL GSSAPI ---------------------------------------------------------------------

class GssapiServerTest : public KerberosDoubleTest {
 protected:
  void StartServer(const std::string& protection) {
    IpcServerOptions o;
    o.name = "rm";
    o.protocol = yc::kClientProtocol;
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

  Status CallMetrics(std::shared_ptr<const yc::KerberosClientConf> kerberos, int* nodes = nullptr) {
    yc::IpcOptions o;
    o.host = "127.0.0.1";
    o.port = server_->port();
    o.protocol = yc::kClientProtocol;
    o.user = "root";
    o.kerberos = std::move(kerberos);
    o.call_timeout = 10s;
    yc::IpcClient client(o);
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

using hadoop::common::IpcConnectionContextProto;
using hadoop::common::RpcResponseHeaderProto;
using hadoop::common::RpcSaslProto;

// One raw IPC connection: what it sent and received, frame by frame.
class RawIpc {
 public:
  explicit RawIpc(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawIpc() { ::close(fd_); }
  bool connected() const { return connected_; }
  void Send(const std::string& bytes) { ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size())); }
  void SendSasl(const RpcSaslProto& msg) {
    auto header = yc::MakeRequestHeader(yc::kSaslCallId, "", -1);
    Send(yc::EncodeFrame({&header, &msg}));
  }
  // The next reply: its header and, on SUCCESS, its body. False at EOF.
  bool Read(RpcResponseHeaderProto* header, std::string* body) {
    for (;;) {
      auto next = reader_.Next();
      if (!next.ok()) return false;
      if (next->has_value()) {
        auto parts = yc::SplitDelimited(**next);
        if (!parts.ok() || parts->empty()) return false;
        header->ParseFromArray((*parts)[0].data(), static_cast<int>((*parts)[0].size()));
        body->assign(parts->size() > 1 ? std::string((*parts)[1]) : std::string());
        return true;
      }
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return false;
      received_.append(buf, static_cast<size_t>(n));
      reader_.Feed(std::string_view(buf, static_cast<size_t>(n)));
    }
  }
  RpcSaslProto ReadSasl(RpcResponseHeaderProto* header) {
    std::string body;
    RpcSaslProto msg;
    if (Read(header, &body)) msg.ParseFromString(body);
    return msg;
  }
  const std::string& received() const { return received_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  yc::FrameReader reader_;
  std::string received_;
};

class RawGssapiTest : public GssapiServerTest {
 protected:
  // Preamble, NEGOTIATE, INITIATE (AP-REQ), CHALLENGE (AP-REP), empty RESPONSE: returns the
  // server's unwrapped layer offer.
  std::string UpToLayerOffer(RawIpc& c, GssTestInitiator& gss) {
    c.Send(yc::Preamble(yc::AuthProtocol::kSasl));
    RpcSaslProto negotiate;
    negotiate.set_state(RpcSaslProto::NEGOTIATE);
    c.SendSasl(negotiate);
    RpcResponseHeaderProto h;
    RpcSaslProto offer = c.ReadSasl(&h);
    const RpcSaslProto::SaslAuth* krb = yc::FindKerberosOffer(offer);
    EXPECT_NE(krb, nullptr);
    if (!krb) return "";
    bool done = false;
    auto ap_req = gss.Step("", &done);
    EXPECT_OK(ap_req);
    c.SendSasl(yc::GssapiInitiate(*krb, ap_req.value_or("")));
    RpcSaslProto challenge = c.ReadSasl(&h);
    EXPECT_EQ(challenge.state(), RpcSaslProto::CHALLENGE);
    EXPECT_OK(gss.Step(challenge.token(), &done));
    EXPECT_TRUE(done);
    c.SendSasl(yc::GssapiResponse(""));
    RpcSaslProto layers = c.ReadSasl(&h);
    EXPECT_EQ(layers.state(), RpcSaslProto::CHALLENGE);
    int sealed = -1;
    auto plain = gss.Unwrap(layers.token(), &sealed);
    EXPECT_OK(plain);
    EXPECT_EQ(sealed, 0);  // K4.6: signed, not sealed
    return plain.value_or("");
  }
  void SendChoice(RawIpc& c, GssTestInitiator& gss, uint8_t layer) {
    auto wrapped = gss.Wrap(yc::BuildGssapiLayerMessage(layer, yc::kGssapiMaxBuffer), false);
    ASSERT_OK(wrapped);
    c.SendSasl(yc::GssapiResponse(*wrapped));
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
  o.protocol = yc::kClientProtocol;
  o.rpc_protection = "privacy";
  o.kerberos_principal = kRm;
  o.kerberos_keytab = kdc_.Keytab("rm/localhost");
  o.next_nonce = [] { return std::string("F5EzpfMom1cun7xMtZar4kuLgfIJjBqtOsypytdU"); };
  o.handle = [](const std::string&, std::string_view, const ConnectionInfo&) -> CallResult { return std::string(); };
  IpcServer recorded_server(o);
  ASSERT_OK(recorded_server.Start());
  RawIpc r(recorded_server.port());
  ASSERT_TRUE(r.connected());
  r.Send(yc::Preamble(yc::AuthProtocol::kSasl));
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
    RawIpc c(server_->port());
    GssTestInitiator gss(kRm);
    std::string offer = UpToLayerOffer(c, gss);
    EXPECT_EQ(offer, std::string("\x06\x01\x00\x00", 4));  // privacy | integrity, 65536
  }
  server_->Stop();
  StartServer("privacy");
  RawIpc c(server_->port());
  GssTestInitiator gss(kRm);
  EXPECT_EQ(UpToLayerOffer(c, gss), std::string("\x04\x01\x00\x00", 4));  // K4.6
  SendChoice(c, gss, yc::kGssapiLayerNone);  // not offered
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
  RawIpc c(server_->port());
  GssTestInitiator gss(kRm);
  EXPECT_EQ(UpToLayerOffer(c, gss), std::string("\x01\x01\x00\x00", 4));
  SendChoice(c, gss, yc::kGssapiLayerNone);
  RpcResponseHeaderProto h;
  RpcSaslProto success = c.ReadSasl(&h);
  EXPECT_EQ(success.state(), RpcSaslProto::SUCCESS);
  EXPECT_FALSE(success.has_token());  // K4.8
  // The short name instead of the principal (K4.11 says the full one): impersonation, refused.
  IpcConnectionContextProto context;
  context.set_protocol(yc::kClientProtocol);
  context.mutable_userinfo()->set_effectiveuser("root");
  auto header = yc::MakeRequestHeader(yc::kConnectionContextCallId, "", -1);
  c.Send(yc::EncodeFrame({&header, &context}));
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
  yc::NameNodeClient Client(std::shared_ptr<const yc::KerberosClientConf> kerberos) {
    yc::HdfsFileSystem fs;
    fs.uri = "hdfs://127.0.0.1:" + std::to_string(nn_->port());
    fs.namenodes = {yc::HostPort{"127.0.0.1", nn_->port()}};
    fs.token_service = "127.0.0.1:" + std::to_string(nn_->port());
    yc::IpcOptions base;
    base.user = "root";
    base.kerberos = std::move(kerberos);
    base.call_timeout = 10s;
    return yc::NameNodeClient(fs, base);
  }

  DelegationTokenStore store_;
  std::unique_ptr<NameNodeRpc> nn_;
};

TEST_F(NameNodeRpcTest, GetRenewCancelAsARealNameNode) {
  StartNameNode("privacy");
  yc::NameNodeClient root = Client(KerberosDoubleTest::Client("privacy"));
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
  yc::NameNodeClient rm = Client(KerberosDoubleTest::Client("privacy", kRm, "rm/localhost"));
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
  yc::NameNodeClient root = Client(KerberosDoubleTest::Client("privacy"));
  auto token = root.GetDelegationToken("rm");
  ASSERT_OK(token);
  // A container's view: the HDFS token over DIGEST-MD5 (auth-conf), no Kerberos.
  yc::IpcOptions o;
  o.host = "127.0.0.1";
  o.port = nn_->port();
  o.protocol = yc::kNameNodeProtocol;
  o.token = *token;
  o.rpc_protection = "privacy";
  o.call_timeout = 10s;
  yc::IpcClient with_token(o);
  hadoop::common::GetDelegationTokenRequestProto req;
  req.set_renewer("rm");
  hadoop::common::GetDelegationTokenResponseProto resp;
  EXPECT_STATUS(with_token.Call("getDelegationToken", req, &resp), kAborted,
                HasSubstr("Delegation Token can be issued only with kerberos or web authentication"));
  // A forged password fails SASL.
  yc::Token forged = *token;
  forged.password[0] ^= 1;
  o.token = forged;
  yc::IpcClient with_forged(o);
  EXPECT_FALSE(with_forged.Call("getDelegationToken", req, &resp).ok());
  EXPECT_EQ(store_.Minted().size(), 1u);
}

// ---- the ResourceManager: renewal at submission, cancellation at the end ------------------------

class SecureRmTest : public KerberosDoubleTest {
 protected:
  void SetUp() override {
    KerberosDoubleTest::SetUp();
    if (HasFatalFailure()) return;
    work_ = std::filesystem::temp_directory_path() / ("loom-krb-double-" + std::to_string(::getpid()));
    std::filesystem::remove_all(work_);
    hdfs_ = std::make_unique<FakeHdfs>(work_.string() + "/hdfs");
    ASSERT_OK(hdfs_->Start());
    YarnTestDouble::Options o;
    o.work_dir = work_.string() + "/yarn";
    o.hdfs = hdfs_.get();
    o.nm_heartbeat_ms = 0;
    o.rpc_protection = "privacy";
    o.kerberos.enabled = true;  // the default principals: rm/, nn/, HTTP/localhost@LOOM.TEST
    o.kerberos.rm_keytab = kdc_.Keytab("rm/localhost");
    o.kerberos.nn_keytab = kdc_.Keytab("nn/localhost");
    o.kerberos.http_keytab = kdc_.Keytab("HTTP/localhost");
    double_ = std::make_unique<YarnTestDouble>(std::move(o));
    ASSERT_OK(double_->Start());
    yc::SetProcessKerberos(Client("privacy"));
    rm_ = std::make_unique<yc::ApplicationClient>("127.0.0.1", double_->rm_port(), "root");
  }
  void TearDown() override {
    rm_.reset();
    if (double_) double_->Stop();
    double_.reset();
    if (hdfs_) hdfs_->Stop();
    hdfs_.reset();
    std::filesystem::remove_all(work_);
    KerberosDoubleTest::TearDown();
  }

  // Submits an AM running `command` whose CLC carries `token` (HDTS, alias = its service; none
  // when its kind is empty) and the HDFS file `resource` ("": none) as a LocalResource.
  ypb::ApplicationIdProto Submit(const yc::Token& token, const std::string& command, bool cancel = true,
                                 const std::string& resource = "") {
    auto fresh = rm_->GetNewApplication();
    EXPECT_OK(fresh);
    ypb::ApplicationSubmissionContextProto asc;
    *asc.mutable_application_id() = fresh->application_id();
    asc.set_application_name("krb");
    asc.set_queue("default");
    asc.mutable_resource()->set_memory(128);
    asc.mutable_resource()->set_virtual_cores(1);
    asc.mutable_am_container_spec()->add_command(command);
    if (!resource.empty()) {
      Result<FakeHdfs::Entry> entry = hdfs_->Stat(resource);
      EXPECT_OK(entry);
      auto* lr = asc.mutable_am_container_spec()->add_localresources();
      lr->set_key(resource.substr(resource.rfind('/') + 1));
      ypb::LocalResourceProto& v = *lr->mutable_value();
      v.mutable_resource()->set_scheme("hdfs");
      v.mutable_resource()->set_host("127.0.0.1");
      v.mutable_resource()->set_port(double_->namenode_rpc_port());
      v.mutable_resource()->set_file(resource);
      v.set_size(entry.ok() ? entry->length : 0);
      v.set_timestamp(entry.ok() ? entry->mtime_ms : 0);
      v.set_type(ypb::FILE);
      v.set_visibility(ypb::APPLICATION);
    }
    yc::Credentials creds;
    if (!token.kind.empty()) creds.tokens.emplace_back(token.service, token);
    asc.mutable_am_container_spec()->set_tokens(yc::SerializeCredentials(creds));
    if (!cancel) asc.set_cancel_tokens_when_complete(false);
    EXPECT_OK(rm_->SubmitApplication(asc));
    return fresh->application_id();
  }

  yc::Token HdfsToken(const std::string& renewer) {
    yc::Token t = hdfs_->tokens().Mint("root@LOOM.TEST", renewer);
    t.service = "127.0.0.1:" + std::to_string(double_->namenode_rpc_port());
    return t;
  }

  std::filesystem::path work_;
  std::unique_ptr<FakeHdfs> hdfs_;
  std::unique_ptr<YarnTestDouble> double_;
  std::unique_ptr<yc::ApplicationClient> rm_;
};

TEST_F(SecureRmTest, RenewsAtSubmitPassesTokensAndCancelsAtTheEnd) {
  ASSERT_GT(double_->namenode_rpc_port(), 0);
  EXPECT_THAT(hdfs_->default_fs(), HasSubstr(":" + std::to_string(double_->namenode_rpc_port())));
  yc::Token token = HdfsToken(kRm);
  std::string copy = work_.string() + "/am-tokens.bin";
  ypb::ApplicationIdProto app = Submit(token, "cp \"$HADOOP_TOKEN_FILE_LOCATION\" " + copy + "; exit 0");
  EXPECT_EQ(hdfs_->tokens().RenewCount(token), 1);
  ASSERT_OK(double_->WaitForAppEnd(yc::ApplicationIdString(app), 20s));
  auto report = double_->ApplicationReport(yc::ApplicationIdString(app));
  ASSERT_OK(report);
  EXPECT_EQ(report->user(), "root");  // the principal's short name
  EXPECT_TRUE(hdfs_->tokens().Cancelled(token));
  // K5.6: the AM's container_tokens = the CLC's tokens + the AMRMToken.
  auto bytes = ReadFile(copy);
  ASSERT_OK(bytes);
  auto creds = yc::ParseCredentials(*bytes);
  ASSERT_OK(creds);
  ASSERT_EQ(creds->tokens.size(), 2u);
  EXPECT_EQ(creds->tokens[0].second, token);
  EXPECT_EQ(creds->tokens[0].first, token.service);
  EXPECT_EQ(creds->tokens[1].second.kind, "YARN_AM_RM_TOKEN");
}

TEST_F(SecureRmTest, KeepsTokensWhenAsked) {
  yc::Token token = HdfsToken("rm");
  ypb::ApplicationIdProto app = Submit(token, "exit 0", /*cancel=*/false);
  ASSERT_OK(double_->WaitForAppEnd(yc::ApplicationIdString(app), 20s));
  EXPECT_EQ(hdfs_->tokens().RenewCount(token), 1);
  EXPECT_FALSE(hdfs_->tokens().Cancelled(token));
}

TEST_F(SecureRmTest, TokenWithAnotherRenewerFailsTheApplication) {
  yc::Token token = HdfsToken("root");  // what a client gets with the wrong renewer
  ypb::ApplicationIdProto app = Submit(token, "exec sleep 300");
  auto report = double_->ApplicationReport(yc::ApplicationIdString(app));
  ASSERT_OK(report);
  EXPECT_EQ(report->yarn_application_state(), ypb::FAILED);
  EXPECT_THAT(report->diagnostics(), HasSubstr("Failed to renew token: Kind: HDFS_DELEGATION_TOKEN, Service: " +
                                               token.service + ", Ident: (token for root: "));
  EXPECT_THAT(report->diagnostics(), HasSubstr("rm tries to renew a token"));
  EXPECT_THAT(report->diagnostics(), HasSubstr("with non-matching renewer root"));
  EXPECT_EQ(hdfs_->tokens().RenewCount(token), 0);
  EXPECT_TRUE(double_->Containers().empty());  // no AM was started
}

// A real RM's renewer connects to the NameNode the token's service names (K5.5): one that names
// no NameNode of this cluster fails the application as Hadoop's DelegationTokenRenewer does.
TEST_F(SecureRmTest, TokenForAnotherNameNodeFailsTheApplication) {
  struct Case {
    std::string service;
    std::string why;
  };
  int closed = double_->namenode_rpc_port() == 1 ? 2 : 1;
  for (const Case& c : {Case{"127.0.0.1:" + std::to_string(closed), "Connection refused"},
                        Case{"ha-hdfs:otherns", "Unable to map logical nameservice URI 'hdfs://otherns'"},
                        Case{"ha-hdfs:loomns", "Unable to map logical nameservice URI"},  // no HA configured
                        Case{"", "Does not contain a valid host:port authority"}}) {
    yc::Token token = HdfsToken(kRm);  // the right renewer: only the service is wrong
    token.service = c.service;
    ypb::ApplicationIdProto app = Submit(token, "exec sleep 300");
    auto report = double_->ApplicationReport(yc::ApplicationIdString(app));
    ASSERT_OK(report);
    EXPECT_EQ(report->yarn_application_state(), ypb::FAILED) << c.service;
    EXPECT_THAT(report->diagnostics(), HasSubstr("Failed to renew token: Kind: HDFS_DELEGATION_TOKEN, Service: " +
                                                 c.service + ", Ident: "));
    EXPECT_THAT(report->diagnostics(), HasSubstr(c.why));
    EXPECT_EQ(hdfs_->tokens().RenewCount(token), 0) << c.service;
  }
  EXPECT_TRUE(double_->Containers().empty());  // no AM was started
}

// With Kerberos an NM's localizer reads HDFS with the HDFS_DELEGATION_TOKEN of the container's
// CLC (rpc/07): without one for this NameNode the container fails at localization.
TEST_F(SecureRmTest, LocalizationNeedsTheContainersHdfsToken) {
  ASSERT_OK(hdfs_->PutFile("/user/root/app/hello.txt", "hello", "root", "644"));
  std::string out = work_.string() + "/localized.txt";
  // With the token: localized, and the AM reads it.
  ypb::ApplicationIdProto good = Submit(HdfsToken(kRm), "cp hello.txt " + out + "; exit 0", true,
                                        "/user/root/app/hello.txt");
  ASSERT_OK(double_->WaitForAppEnd(yc::ApplicationIdString(good), 20s));
  auto read = ReadFile(out);
  ASSERT_OK(read);
  EXPECT_EQ(*read, "hello");

  // Without an HDFS token, or with one for another service the localizer cannot select.
  yc::Token none;
  ypb::ApplicationIdProto bad = Submit(none, "exit 0", true, "/user/root/app/hello.txt");
  ASSERT_TRUE(Eventually([&] {
    for (const auto& c : double_->Containers()) {
      if (c.app_id == yc::ApplicationIdString(bad) && c.state == ypb::C_COMPLETE) return true;
    }
    return false;
  }, 20s));
  for (const auto& c : double_->Containers()) {
    if (c.app_id != yc::ApplicationIdString(bad)) continue;
    EXPECT_EQ(c.exit_status, -1000);
    EXPECT_THAT(c.diagnostics, HasSubstr("Client cannot authenticate via:[TOKEN, KERBEROS]"));
    EXPECT_EQ(c.pid, -1);  // never started
  }
}

TEST_F(SecureRmTest, ClientPortOffersKerberosNotSimple) {
  yc::SetProcessKerberos(nullptr);
  yc::ApplicationClient simple("127.0.0.1", double_->rm_port(), "root");
  EXPECT_STATUS(simple.GetNewApplication(), kUnauthenticated,
                HasSubstr("SIMPLE authentication is not enabled.  Available:[TOKEN, KERBEROS]"));
  // The conf dir a client reads (cluster-conf/ of the recording).
  std::string conf = work_.string() + "/conf";
  ASSERT_OK(double_->WriteHadoopConfDir(conf));
  auto core = ReadFile(conf + "/core-site.xml");
  auto hdfs = ReadFile(conf + "/hdfs-site.xml");
  auto yarn = ReadFile(conf + "/yarn-site.xml");
  ASSERT_OK(core);
  ASSERT_OK(hdfs);
  ASSERT_OK(yarn);
  EXPECT_THAT(*core, HasSubstr("<name>hadoop.security.authentication</name><value>kerberos</value>"));
  EXPECT_THAT(*core, HasSubstr("<name>hadoop.http.authentication.type</name><value>kerberos</value>"));
  EXPECT_THAT(*core, HasSubstr("<name>hadoop.rpc.protection</name><value>privacy</value>"));
  EXPECT_THAT(*core, HasSubstr(":" + std::to_string(double_->namenode_rpc_port()) + "</value>"));
  EXPECT_THAT(*hdfs, HasSubstr("<name>dfs.namenode.kerberos.principal</name><value>nn/localhost@LOOM.TEST</value>"));
  EXPECT_THAT(*hdfs, HasSubstr("<name>dfs.web.authentication.kerberos.principal</name><value>HTTP/localhost@LOOM.TEST</value>"));
  EXPECT_THAT(*yarn, HasSubstr("<name>yarn.resourcemanager.principal</name><value>rm/localhost@LOOM.TEST</value>"));
}

}  // namespace
}  // namespace loom::yarn_double
