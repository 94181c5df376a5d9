// The Kerberized ResourceManager of the test double against a real MIT KDC, driven by Loom's
// own clients: delegation tokens renewed at submission, passed on to containers, cancelled at
// the end (K5.5-K5.6), and the client port offering Kerberos, not SIMPLE.

#include "kerberos_double_fixture.h"

using ::loom::testing::Eventually;

namespace loom::yarn_double {
namespace {

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
    hadoop::SetProcessKerberos(Client("privacy"));
    rm_ = std::make_unique<hadoop::ApplicationClient>("127.0.0.1", double_->rm_port(), "root");
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
  ypb::ApplicationIdProto Submit(const hadoop::Token& token, const std::string& command, bool cancel = true,
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
    hadoop::Credentials creds;
    if (!token.kind.empty()) creds.tokens.emplace_back(token.service, token);
    asc.mutable_am_container_spec()->set_tokens(hadoop::SerializeCredentials(creds));
    if (!cancel) asc.set_cancel_tokens_when_complete(false);
    EXPECT_OK(rm_->SubmitApplication(asc));
    return fresh->application_id();
  }

  hadoop::Token HdfsToken(const std::string& renewer) {
    hadoop::Token t = hdfs_->tokens().Mint("root@LOOM.TEST", renewer);
    t.service = "127.0.0.1:" + std::to_string(double_->namenode_rpc_port());
    return t;
  }

  std::filesystem::path work_;
  std::unique_ptr<FakeHdfs> hdfs_;
  std::unique_ptr<YarnTestDouble> double_;
  std::unique_ptr<hadoop::ApplicationClient> rm_;
};

TEST_F(SecureRmTest, RenewsAtSubmitPassesTokensAndCancelsAtTheEnd) {
  ASSERT_GT(double_->namenode_rpc_port(), 0);
  EXPECT_THAT(hdfs_->default_fs(), HasSubstr(":" + std::to_string(double_->namenode_rpc_port())));
  hadoop::Token token = HdfsToken(kRm);
  std::string copy = work_.string() + "/am-tokens.bin";
  ypb::ApplicationIdProto app = Submit(token, "cp \"$HADOOP_TOKEN_FILE_LOCATION\" " + copy + "; exit 0");
  EXPECT_EQ(hdfs_->tokens().RenewCount(token), 1);
  ASSERT_OK(double_->WaitForAppEnd(hadoop::ApplicationIdString(app), 20s));
  auto report = double_->ApplicationReport(hadoop::ApplicationIdString(app));
  ASSERT_OK(report);
  EXPECT_EQ(report->user(), "root");  // the principal's short name
  EXPECT_TRUE(hdfs_->tokens().Cancelled(token));
  // K5.6: the AM's container_tokens = the CLC's tokens + the AMRMToken.
  auto bytes = ReadFile(copy);
  ASSERT_OK(bytes);
  auto creds = hadoop::ParseCredentials(*bytes);
  ASSERT_OK(creds);
  ASSERT_EQ(creds->tokens.size(), 2u);
  EXPECT_EQ(creds->tokens[0].second, token);
  EXPECT_EQ(creds->tokens[0].first, token.service);
  EXPECT_EQ(creds->tokens[1].second.kind, "YARN_AM_RM_TOKEN");
}

TEST_F(SecureRmTest, KeepsTokensWhenAsked) {
  hadoop::Token token = HdfsToken("rm");
  ypb::ApplicationIdProto app = Submit(token, "exit 0", /*cancel=*/false);
  ASSERT_OK(double_->WaitForAppEnd(hadoop::ApplicationIdString(app), 20s));
  EXPECT_EQ(hdfs_->tokens().RenewCount(token), 1);
  EXPECT_FALSE(hdfs_->tokens().Cancelled(token));
}

TEST_F(SecureRmTest, TokenWithAnotherRenewerFailsTheApplication) {
  hadoop::Token token = HdfsToken("root");  // what a client gets with the wrong renewer
  ypb::ApplicationIdProto app = Submit(token, "exec sleep 300");
  auto report = double_->ApplicationReport(hadoop::ApplicationIdString(app));
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
    hadoop::Token token = HdfsToken(kRm);  // the right renewer: only the service is wrong
    token.service = c.service;
    ypb::ApplicationIdProto app = Submit(token, "exec sleep 300");
    auto report = double_->ApplicationReport(hadoop::ApplicationIdString(app));
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
  ASSERT_OK(double_->WaitForAppEnd(hadoop::ApplicationIdString(good), 20s));
  auto read = ReadFile(out);
  ASSERT_OK(read);
  EXPECT_EQ(*read, "hello");

  // Without an HDFS token, or with one for another service the localizer cannot select.
  hadoop::Token none;
  ypb::ApplicationIdProto bad = Submit(none, "exit 0", true, "/user/root/app/hello.txt");
  ASSERT_TRUE(Eventually([&] {
    for (const auto& c : double_->Containers()) {
      if (c.app_id == hadoop::ApplicationIdString(bad) && c.state == ypb::C_COMPLETE) return true;
    }
    return false;
  }, 20s));
  for (const auto& c : double_->Containers()) {
    if (c.app_id != hadoop::ApplicationIdString(bad)) continue;
    EXPECT_EQ(c.exit_status, -1000);
    EXPECT_THAT(c.diagnostics, HasSubstr("Client cannot authenticate via:[TOKEN, KERBEROS]"));
    EXPECT_EQ(c.pid, -1);  // never started
  }
}

TEST_F(SecureRmTest, ClientPortOffersKerberosNotSimple) {
  hadoop::SetProcessKerberos(nullptr);
  hadoop::ApplicationClient simple("127.0.0.1", double_->rm_port(), "root");
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
