#include "cluster/yarn/yarn_container_broker.h"

#include <gmock/gmock.h>

#include "hadoop/testing/captures.h"
#include "hadoop/wire/credentials.h"

namespace loom::cluster::yarn {
namespace {

// The shape of a Hadoop 3.3 NodeManager's diagnostics for a container that exited non-zero:
// the exit block is appended twice, with different timestamps.
TEST(WithoutRepeatedBlocks, KeepsEachBlockOnce) {
  std::string exit_block =
      "Container exited with a non-zero exit code 3. Error file: prelaunch.err.\n"
      "Last 4096 bytes of prelaunch.err :\nLast 4096 bytes of stderr :\nfatal: simulated failure";
  std::string diag = "Exception from container-launch.\nContainer id: container_1_0001_01_000002\nExit code: 3\n\n"
                     "[2026-11-22 18:46:25.123]" + exit_block + "\n\n\n[2026-11-22 18:46:25.124]" + exit_block + "\n";
  std::string once = WithoutRepeatedBlocks(diag);
  EXPECT_THAT(once, ::testing::HasSubstr("Exit code: 3"));
  size_t first = once.find("fatal: simulated failure");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(once.find("fatal: simulated failure", first + 1), std::string::npos) << once;
}

TEST(WithoutRepeatedBlocks, LeavesDistinctTextAlone) {
  EXPECT_EQ(WithoutRepeatedBlocks("Container released on a *lost* node"), "Container released on a *lost* node");
  EXPECT_EQ(WithoutRepeatedBlocks("a\n\nb"), "a\nb");
  EXPECT_EQ(WithoutRepeatedBlocks(""), "");
}

}  // namespace
}  // namespace loom::cluster::yarn

namespace loom::cluster::yarn {
namespace {

const std::string kAmTokens =
    hadoop::testing::CaptureDir() + "kerberos/container/am-container_tokens.bin";

// The real AM's credentials (an HDFS delegation token and the AMRMToken): tasks get the HDFS
// token, never the AMRMToken, beside the job secret.
TEST(PassedOnTokens, TasksGetTheHdfsTokenButNotTheAmRmToken) {
  Result<hadoop::Credentials> am = hadoop::ReadCredentialsFile(kAmTokens);
  ASSERT_TRUE(am.ok()) << am.status().ToString();
  auto passed = PassedOnTokens(*am);
  ASSERT_EQ(passed.size(), 1u);
  EXPECT_EQ(passed[0].first, "127.0.0.1:19000");
  EXPECT_EQ(passed[0].second.kind, hadoop::kHdfsDelegationKind);

  hadoop::Credentials task = TaskContainerCredentials("s3cret", {{"loom.env.TOKEN", "v"}}, passed);
  Result<hadoop::Credentials> parsed = hadoop::ParseCredentials(hadoop::SerializeCredentials(task));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->tokens, passed);
  EXPECT_EQ(parsed->FindSecret(kSecretCredentialAlias), std::optional<std::string>("s3cret"));
  EXPECT_EQ(parsed->FindSecret("loom.env.TOKEN"), std::optional<std::string>("v"));
  EXPECT_FALSE(parsed->FindKind("YARN_AM_RM_TOKEN"));
}

TEST(DefaultFsToken, PicksTheDefaultFileSystemsTokenByService) {
  hadoop::Token other{"a", "p", hadoop::kHdfsDelegationKind, "ha-hdfs:other"};
  hadoop::Token mine{"b", "p", hadoop::kHdfsDelegationKind, "127.0.0.1:19000"};
  StagingManifest m;
  m.fs_host = "127.0.0.1";
  m.fs_port = 19000;
  std::vector<std::pair<std::string, hadoop::Token>> tokens = {{other.service, other}, {mine.service, mine}};
  EXPECT_EQ(DefaultFsToken(m, tokens), std::optional<hadoop::Token>(mine));
  m.fs_host = "other";
  m.fs_port = -1;  // an HA nameservice
  EXPECT_EQ(DefaultFsToken(m, tokens), std::optional<hadoop::Token>(other));
  EXPECT_EQ(DefaultFsToken(m, {}), std::nullopt);
}

}  // namespace
}  // namespace loom::cluster::yarn
