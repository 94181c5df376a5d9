// The submitter's delegation-token pieces: which file systems a Kerberized job gets tokens for
// (and the keys refused elsewhere), and the AM's credentials with the RM asked to cancel them.

#include "cluster/yarn/yarn_job_submitter.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/inet_address.h"
#include "core/testing.h"

namespace loom::cluster::yarn {
namespace {

using ::testing::HasSubstr;
namespace ypb = ::hadoop::yarn;

hadoop::HadoopConf Kerberized() {
  hadoop::HadoopConf c;
  c.conf_dir = "/etc/hadoop/conf";
  c.security = "kerberos";
  c.default_fs = "hdfs://127.0.0.1:19000";
  return c;
}

TEST(TokenFileSystems, DefaultFsFirstThenBothKeysOnce) {
  config::Config job;
  job.Set("loom.application.file-systems", "hdfs://ns2, hdfs://127.0.0.1:19000", "--conf");
  job.Set("tony.other.namenodes", "hdfs://nn3:8020", "tony.xml");
  Result<std::vector<TokenFileSystem>> fs = TokenFileSystems(Kerberized(), job);
  ASSERT_OK(fs);
  EXPECT_EQ(*fs, (std::vector<TokenFileSystem>{{"hdfs://127.0.0.1:19000", "fs.defaultFS"},
                                               {"hdfs://ns2", "loom.application.file-systems"},
                                               {"hdfs://nn3:8020", "tony.other.namenodes"}}));
}

TEST(TokenFileSystems, NonHdfsUriIsRefusedNamingTheKeyAsWritten) {
  config::Config job;
  job.Set("tony.other.namenodes", "s3a://bucket", "tony.xml");
  Status s = TokenFileSystems(Kerberized(), job).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("tony.other.namenodes=s3a://bucket: not an hdfs:// URI"));
}

TEST(TokenFileSystems, KeysAreRefusedWithoutKerberosAndNothingIsAskedFor) {
  hadoop::HadoopConf simple = Kerberized();
  simple.security = "simple";
  config::Config none;
  Result<std::vector<TokenFileSystem>> fs = TokenFileSystems(simple, none);
  ASSERT_OK(fs);
  EXPECT_TRUE(fs->empty());  // not even fs.defaultFS: SIMPLE clusters issue no tokens
  config::Config job;
  job.Set("loom.application.file-systems", "hdfs://ns2", "--conf");
  Status s = TokenFileSystems(simple, job).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("loom.application.file-systems=hdfs://ns2: HDFS delegation tokens are for a "
                                     "Kerberized cluster"));
  EXPECT_THAT(s.message(), HasSubstr("hadoop.security.authentication=simple"));
}

TEST(AmCredentials, TokensUnderTheirServiceBesideTheSecretsAndTheRmCancelsThem) {
  hadoop::Token hdfs{"id", "pw", hadoop::kHdfsDelegationKind, "127.0.0.1:19000"};
  hadoop::Token ha{"id2", "pw2", hadoop::kHdfsDelegationKind, "ha-hdfs:ns2"};
  ypb::ApplicationSubmissionContextProto asc;
  SetAmCredentials(&asc, AmCredentials("s3cret", {{"MLFLOW_TRACKING_TOKEN", "m"}}, {hdfs, ha}));
  ASSERT_TRUE(asc.has_cancel_tokens_when_complete());  // explicitly on the wire (field 6)
  EXPECT_TRUE(asc.cancel_tokens_when_complete());
  Result<hadoop::Credentials> creds = hadoop::ParseCredentials(asc.am_container_spec().tokens());
  ASSERT_OK(creds);
  ASSERT_EQ(creds->tokens.size(), 2u);
  EXPECT_EQ(creds->tokens[0], std::make_pair(std::string("127.0.0.1:19000"), hdfs));
  EXPECT_EQ(creds->tokens[1], std::make_pair(std::string("ha-hdfs:ns2"), ha));
  EXPECT_EQ(creds->FindSecret(kSecretCredentialAlias), std::optional<std::string>("s3cret"));
  EXPECT_EQ(creds->FindSecret("loom.env.MLFLOW_TRACKING_TOKEN"), std::optional<std::string>("m"));
}

// Hadoop's DEFAULT auth_to_local: what the NameNode and the RM call a Kerberos user.
TEST(KerberosShortName, FirstComponentOfThePrincipal) {
  EXPECT_EQ(KerberosShortName("alice@LOOM.TEST"), "alice");
  EXPECT_EQ(KerberosShortName("alice/host.example.com@LOOM.TEST"), "alice");
  EXPECT_EQ(KerberosShortName("root@LOOM.TEST"), "root");
  EXPECT_EQ(KerberosShortName("bob"), "bob");
}

// A port on this machine where nothing listens (bound, then closed).
int ClosedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = Ipv4Address(INADDR_LOOPBACK, 0);
  socklen_t len = sizeof(a);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A NameNode that does not answer is the cluster's state (Unavailable: exit 1, try again), not
// a mistake in the job (InvalidArgument: exit 2); the message still names the file system.
TEST(FetchHdfsDelegationTokens, UnreachableNameNodeStaysUnavailable) {
  const std::string uri = "hdfs://127.0.0.1:" + std::to_string(ClosedPort());
  hadoop::IpcOptions base;
  base.user = "alice";
  base.connect_timeout = std::chrono::milliseconds(2000);
  auto tokens = FetchHdfsDelegationTokens({{uri, "fs.defaultFS"}}, {}, base, "rm/localhost@LOOM.TEST");
  ASSERT_FALSE(tokens.ok());
  EXPECT_EQ(tokens.status().code(), StatusCode::kUnavailable) << tokens.status().ToString();
  EXPECT_THAT(tokens.status().message(), HasSubstr(uri + " (fs.defaultFS"));
}

// A URI that names no NameNode is the user's to fix.
TEST(FetchHdfsDelegationTokens, UnresolvableFileSystemIsInvalidArgumentNamingTheKey) {
  auto tokens = FetchHdfsDelegationTokens({{"hdfs://", "loom.application.file-systems"}}, {}, hadoop::IpcOptions{},
                                          "rm/localhost@LOOM.TEST");
  ASSERT_FALSE(tokens.ok());
  EXPECT_EQ(tokens.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(tokens.status().message(), HasSubstr("loom.application.file-systems=hdfs://"));
}

// Nothing to cancel is nothing asked; a NameNode that is gone is logged, not fatal.
TEST(CancelDelegationTokens, BestEffortCountsWhatWasCancelled) {
  EXPECT_EQ(CancelDelegationTokens({}, hadoop::IpcOptions{}), 0);
  const int port = ClosedPort();
  const std::string service = "127.0.0.1:" + std::to_string(port);
  FetchedToken gone{hadoop::Token{"id", "pw", hadoop::kHdfsDelegationKind, service},
                    hadoop::HdfsFileSystem{"hdfs://" + service, {hadoop::HostPort{"127.0.0.1", port}}, service}};
  hadoop::IpcOptions base;
  base.connect_timeout = std::chrono::milliseconds(2000);
  EXPECT_EQ(CancelDelegationTokens({gone}, base), 0);
}

}  // namespace
}  // namespace loom::cluster::yarn
