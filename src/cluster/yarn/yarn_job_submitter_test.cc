// The submitter's delegation-token pieces: which file systems a Kerberized job gets tokens for
// (and the keys refused elsewhere), and the AM's credentials with the RM asked to cancel them.

#include "cluster/yarn/yarn_job_submitter.h"

#include "core/testing.h"

namespace loom::cluster::yarn {
namespace {

using ::testing::HasSubstr;
namespace ypb = ::hadoop::yarn;

HadoopConf Kerberized() {
  HadoopConf c;
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
  HadoopConf simple = Kerberized();
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
  Token hdfs{"id", "pw", kHdfsDelegationKind, "127.0.0.1:19000"};
  Token ha{"id2", "pw2", kHdfsDelegationKind, "ha-hdfs:ns2"};
  ypb::ApplicationSubmissionContextProto asc;
  SetAmCredentials(&asc, AmCredentials("s3cret", {{"MLFLOW_TRACKING_TOKEN", "m"}}, {hdfs, ha}));
  ASSERT_TRUE(asc.has_cancel_tokens_when_complete());  // explicitly on the wire (field 6)
  EXPECT_TRUE(asc.cancel_tokens_when_complete());
  Result<Credentials> creds = ParseCredentials(asc.am_container_spec().tokens());
  ASSERT_OK(creds);
  ASSERT_EQ(creds->tokens.size(), 2u);
  EXPECT_EQ(creds->tokens[0], std::make_pair(std::string("127.0.0.1:19000"), hdfs));
  EXPECT_EQ(creds->tokens[1], std::make_pair(std::string("ha-hdfs:ns2"), ha));
  EXPECT_EQ(creds->FindSecret(kSecretCredentialAlias), std::optional<std::string>("s3cret"));
  EXPECT_EQ(creds->FindSecret("loom.env.MLFLOW_TRACKING_TOKEN"), std::optional<std::string>("m"));
}

}  // namespace
}  // namespace loom::cluster::yarn
