#include "cluster/yarn/staging.h"

#include <sys/stat.h>
#include <unistd.h>

#include "core/files.h"
#include "core/testing.h"

namespace loom::cluster::yarn {
namespace {

namespace ypb = ::hadoop::yarn;

StagingManifest Sample() {
  StagingManifest m;
  m.fs_scheme = "hdfs";
  m.fs_host = "nn";
  m.fs_port = 9000;
  m.webhdfs = "http://nn:9870";
  m.user = "alice";
  m.dir = "/user/alice/.loom/application_1_0001";
  m.scheduler = "rm:8030";
  m.application_id = "application_1_0001";
  StagedFile binary{"/user/alice/.loom/cache/loom-0123456789abcdef", 100, 7, false};
  binary.visibility = ypb::PUBLIC;
  m.files[kLoomBinaryResource] = binary;
  m.files[kSrcResource] = {m.dir + "/src.tar.gz", 33, 8, true};
  m.files[kVenvResource] = {m.dir + "/venv.tar.gz", 300, 9, true};
  m.files[kManifestResource] = {m.dir + "/loom-staging.json", 10, 10, false};
  return m;
}

// The AM hands executors what the client staged, visibility included: a binary the AM
// localized from the NM's cache must reach executors the same way.
// Loom's layout in HDFS belongs to the backend, not to the Hadoop client's configuration.
TEST(StagingRoot, IsUnderTheUsersHome) { EXPECT_EQ(StagingRoot("alice"), "/user/alice/.loom"); }

TEST(StagedFiles, VisibilitySurvivesTheAmsEnvironment) {
  auto files = DecodeStagedFiles(EncodeStagedFiles(Sample().files));
  ASSERT_OK(files);
  StagingManifest back = Sample();
  back.files = *files;
  EXPECT_EQ(back.files.at(kLoomBinaryResource).visibility, ypb::PUBLIC);
  EXPECT_EQ(back.files.at(kSrcResource).visibility, ypb::APPLICATION);
  std::map<std::string, ypb::LocalResourceProto> executor = back.ExecutorResources();
  ASSERT_EQ(executor.count(kLoomBinaryResource), 1u);
  EXPECT_EQ(executor[kLoomBinaryResource].visibility(), ypb::PUBLIC);
  EXPECT_EQ(executor[kLoomBinaryResource].resource().file(), "/user/alice/.loom/cache/loom-0123456789abcdef");
  EXPECT_EQ(executor[kSrcResource].visibility(), ypb::APPLICATION);  // the job's own files stay the app's
  EXPECT_EQ(executor[kVenvResource].type(), ypb::ARCHIVE);
  EXPECT_EQ(executor.count(kManifestResource), 0u);
}

// The NodeManager writes `export NAME="value"` into launch_container.sh without escaping: the
// value must hold nothing a shell treats specially between double quotes.
TEST(StagedFiles, TheEnvironmentValueIsSafeInsideDoubleQuotes) {
  std::string value = EncodeStagedFiles(Sample().files);
  EXPECT_EQ(value.find_first_of("\"$`\\! \n"), std::string::npos) << value;
}

TEST(StagedFiles, GarbageIsRefusedWithWhatIsWrong) {
  EXPECT_STATUS(DecodeStagedFiles("not base64!"), kInvalidArgument, ::testing::_);
  EXPECT_STATUS(DecodeStagedFiles(hadoop::Base64Encode("[1,2")), kInvalidArgument, ::testing::HasSubstr("not JSON"));
  nlohmann::json j = nlohmann::json::parse(*hadoop::Base64Decode(EncodeStagedFiles(Sample().files)));
  j[kSrcResource].erase("visibility");
  auto back = DecodeStagedFiles(hadoop::Base64Encode(j.dump()));
  ASSERT_OK(back);
  EXPECT_EQ(back->at(kSrcResource).visibility, ypb::APPLICATION);  // absent: the job's own
  j[kSrcResource]["visibility"] = "EVERYONE";
  EXPECT_STATUS(DecodeStagedFiles(hadoop::Base64Encode(j.dump())), kInvalidArgument, ::testing::HasSubstr("EVERYONE"));
  j[kSrcResource].erase("size");
  EXPECT_STATUS(DecodeStagedFiles(hadoop::Base64Encode(j.dump())), kInvalidArgument, ::testing::HasSubstr("size"));
}

// The AM's container gets what the AM reads, not the job's src dir or venv.
TEST(StagingManifest, TheAmIsGivenOnlyWhatItReads) {
  StagingManifest m = Sample();
  m.files[kConfigResource] = {m.dir + "/config.xml", 5, 11, false};
  m.files[kJobJsonResource] = {m.dir + "/job.json", 6, 12, false};
  std::map<std::string, ypb::LocalResourceProto> am = m.AmResources();
  std::vector<std::string> names;
  for (const auto& [name, r] : am) names.push_back(name);
  EXPECT_THAT(names, ::testing::UnorderedElementsAre(kLoomBinaryResource, kManifestResource, kJobJsonResource,
                                                     kConfigResource));
  EXPECT_EQ(am[kLoomBinaryResource].visibility(), ypb::PUBLIC);
}

// The client decides each type's image; the AM, reading the manifest, asks for it on exactly
// that type's containers.
TEST(StagingManifest, DockerImagesSurviveTheManifestPerType) {
  StagingManifest m = Sample();
  m.docker_images = {{"worker", "repo/train:1"}, {"ps", "repo/ps:2"}};
  m.docker_mounts = "/data:/data:ro";
  Result<StagingManifest> back = StagingManifest::FromJson(m.ToJson().dump());
  ASSERT_OK(back);
  EXPECT_EQ(back->DockerEnvFor("worker"),
            (std::map<std::string, std::string>{{"YARN_CONTAINER_RUNTIME_TYPE", "docker"},
                                                {"YARN_CONTAINER_RUNTIME_DOCKER_IMAGE", "repo/train:1"},
                                                {"YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS", "/data:/data:ro"},
                                                {"YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK", "host"}}));
  EXPECT_EQ(back->DockerEnvFor("ps").at("YARN_CONTAINER_RUNTIME_DOCKER_IMAGE"), "repo/ps:2");
  EXPECT_TRUE(back->DockerEnvFor("evaluator").empty());
  // A manifest without Docker (every job before it, and every job that does not ask).
  Result<StagingManifest> plain = StagingManifest::FromJson(Sample().ToJson().dump());
  ASSERT_OK(plain);
  EXPECT_TRUE(plain->DockerEnvFor("worker").empty());
}

}  // namespace
}  // namespace loom::cluster::yarn

namespace loom::cluster::yarn {
namespace {

// The executor's file for user code: the container's tokens, none of its secret keys, 0600,
// and HADOOP_TOKEN_FILE_LOCATION pointing at it.
TEST(HandTokensToUserCode, WritesOnlyTheTokensPrivatelyAndPointsTheEnvAtThem) {
  hadoop::Credentials container;
  hadoop::Token hdfs{"id", "pw", hadoop::kHdfsDelegationKind, "127.0.0.1:19000"};
  container.tokens.emplace_back("127.0.0.1:19000", hdfs);
  container.secrets.push_back({kSecretCredentialAlias, "job-secret"});
  container.secrets.push_back({"loom.env.MLFLOW_TRACKING_TOKEN", "mlflow"});
  std::string path = ::testing::TempDir() + "/hdfs-tokens-" + std::to_string(::getpid());
  std::map<std::string, std::string> env = {{"HADOOP_TOKEN_FILE_LOCATION", "/nm/container_tokens"}};
  ASSERT_OK(HandTokensToUserCode(container, path, &env));
  EXPECT_EQ(env["HADOOP_TOKEN_FILE_LOCATION"], path);
  Result<hadoop::Credentials> written = hadoop::ReadCredentialsFile(path);
  ASSERT_OK(written);
  EXPECT_EQ(written->tokens, container.tokens);
  EXPECT_TRUE(written->secrets.empty());
  Result<std::string> bytes = ReadFile(path);
  ASSERT_OK(bytes);
  EXPECT_EQ(bytes->find("job-secret"), std::string::npos);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ::unlink(path.c_str());
}

TEST(HandTokensToUserCode, WritesAnEmptyCredentialsFileWithoutTokens) {
  hadoop::Credentials container;
  container.secrets.push_back({kSecretCredentialAlias, "job-secret"});
  std::string path = ::testing::TempDir() + "/hdfs-tokens-empty-" + std::to_string(::getpid());
  std::map<std::string, std::string> env;
  ASSERT_OK(HandTokensToUserCode(container, path, &env));
  EXPECT_EQ(env["HADOOP_TOKEN_FILE_LOCATION"], path);
  Result<hadoop::Credentials> written = hadoop::ReadCredentialsFile(path);
  ASSERT_OK(written);
  EXPECT_EQ(*written, hadoop::Credentials{});
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace loom::cluster::yarn
