#include "hadoop/conf/hadoop_conf.h"

#include <cstdlib>
#include <filesystem>

#include "core/files.h"
#include "core/test_dir.h"
#include "core/testing.h"
#include "hadoop/hdfs/tls_test_util.h"
#include "hadoop/testing/captures.h"

namespace loom::hadoop {
namespace {

using ::testing::HasSubstr;

const std::string kCapturedConf =
    testing::CaptureDir() + "cluster-conf";

std::string Site(const std::string& properties) {
  return "<?xml version=\"1.0\"?>\n<configuration>\n" + properties + "</configuration>\n";
}

std::string Prop(const std::string& name, const std::string& value) {
  return "  <property><name>" + name + "</name><value>" + value + "</value></property>\n";
}

// The RM's client, scheduler and web addresses when only its host is known: Hadoop's default ports.
void ExpectDefaultRmPorts(const HadoopConf& conf, const std::string& host) {
  EXPECT_EQ(conf.rm.ToString(), host + ":8032");
  EXPECT_EQ(conf.scheduler.ToString(), host + ":8030");
  EXPECT_EQ(conf.rm_webapp, host + ":8088");
}

class HadoopConfTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = loom::testing::MakeTestDir("hadoop_conf_test");
  }
  void TearDown() override { (void)RemoveTree(dir_); }
  void Write(const std::string& file, const std::string& text) {
    ASSERT_OK(WriteFileAtomic(dir_ + "/" + file, text));
  }
  std::string dir_;
};

TEST(HadoopConfCaptured, ReadsTheRealClusterFiles) {
  Result<HadoopConf> conf = HadoopConf::Load(kCapturedConf);
  ASSERT_OK(conf);
  EXPECT_EQ(conf->conf_dir, kCapturedConf);
  EXPECT_EQ(conf->default_fs, "hdfs://127.0.0.1:9000");
  EXPECT_EQ(conf->fs_scheme, "hdfs");
  EXPECT_EQ(conf->fs_host, "127.0.0.1");
  EXPECT_EQ(conf->fs_port, 9000);
  ExpectDefaultRmPorts(*conf, "127.0.0.1");
  EXPECT_EQ(conf->namenode_http.ToString(), "127.0.0.1:9870");
  EXPECT_EQ(conf->security, "simple");
  EXPECT_EQ(conf->rpc_protection, "authentication");
}

TEST_F(HadoopConfTest, AddressesDefaultToTheResourceManagerHostname) {
  Write("core-site.xml", Site(Prop("fs.defaultFS", "hdfs://nn.example.com:8020/")));
  Write("yarn-site.xml", Site(Prop("yarn.resourcemanager.hostname", "rm.example.com")));
  Result<HadoopConf> conf = HadoopConf::Load(dir_);
  ASSERT_OK(conf);
  ExpectDefaultRmPorts(*conf, "rm.example.com");
  // No hdfs-site.xml: the NameNode's HTTP server is on the fs.defaultFS host.
  EXPECT_EQ(conf->namenode_http.ToString(), "nn.example.com:9870");
  EXPECT_EQ(conf->fs_host, "nn.example.com");
  EXPECT_EQ(conf->fs_port, 8020);
}

TEST_F(HadoopConfTest, NoYarnSiteMeansTheWildcardDefaults) {
  Write("core-site.xml", Site(Prop("fs.defaultFS", "hdfs://nn:9000")));
  Result<HadoopConf> conf = HadoopConf::Load(dir_);
  ASSERT_OK(conf);
  ExpectDefaultRmPorts(*conf, "0.0.0.0");
}

TEST_F(HadoopConfTest, ExpandsReferencesToKeysAndEnvironment) {
  setenv("LOOM_HADOOP_CONF_TEST_HOST", "envhost", 1);
  Write("core-site.xml", Site(Prop("my.nn", "nn.example.com") +
                              Prop("fs.defaultFS", "hdfs://${my.nn}:9000")));
  Write("hdfs-site.xml", Site(Prop("dfs.namenode.http-address", "${my.nn}:50070")));
  Write("yarn-site.xml",
        Site(Prop("yarn.resourcemanager.hostname", "${env.LOOM_HADOOP_CONF_TEST_HOST}") +
             Prop("yarn.resourcemanager.scheduler.address", "${yarn.resourcemanager.hostname}:18030")));
  Result<HadoopConf> conf = HadoopConf::Load(dir_);
  unsetenv("LOOM_HADOOP_CONF_TEST_HOST");
  ASSERT_OK(conf);
  EXPECT_EQ(conf->default_fs, "hdfs://nn.example.com:9000");
  EXPECT_EQ(conf->namenode_http.ToString(), "nn.example.com:50070");
  EXPECT_EQ(conf->rm.ToString(), "envhost:8032");
  EXPECT_EQ(conf->scheduler.ToString(), "envhost:18030");
}

TEST_F(HadoopConfTest, ReferenceCycleIsAnError) {
  Write("core-site.xml", Site(Prop("fs.defaultFS", "hdfs://nn:9000")));
  Write("yarn-site.xml", Site(Prop("a", "${b}") + Prop("b", "${a}") +
                              Prop("yarn.resourcemanager.hostname", "${a}")));
  EXPECT_STATUS(HadoopConf::Load(dir_), kInvalidArgument,
                HasSubstr("yarn.resourcemanager.address"));
}

TEST_F(HadoopConfTest, HaNameserviceUsesTheFirstNameNodesHttpAddress) {
  Write("core-site.xml", Site(Prop("fs.defaultFS", "hdfs://mycluster")));
  Write("hdfs-site.xml", Site(Prop("dfs.nameservices", "mycluster") +
                              Prop("dfs.ha.namenodes.mycluster", "nn1,nn2") +
                              Prop("dfs.namenode.http-address.mycluster.nn1", "host1:9870") +
                              Prop("dfs.namenode.http-address.mycluster.nn2", "host2:9870")));
  Result<HadoopConf> conf = HadoopConf::Load(dir_);
  ASSERT_OK(conf);
  EXPECT_EQ(conf->fs_host, "mycluster");
  EXPECT_EQ(conf->fs_port, -1);
  EXPECT_EQ(conf->namenode_http.ToString(), "host1:9870");
}

TEST_F(HadoopConfTest, LocalDefaultFsIsAnErrorNamingKeyAndFile) {
  Write("core-site.xml", Site(Prop("fs.defaultFS", "file:///")));
  EXPECT_STATUS(HadoopConf::Load(dir_), kFailedPrecondition,
                ::testing::AllOf(HasSubstr("hdfs://"), HasSubstr("fs.defaultFS"),
                                 HasSubstr(dir_ + "/core-site.xml")));
}

TEST_F(HadoopConfTest, MissingCoreSiteMeansTheLocalDefaultFs) {
  EXPECT_STATUS(HadoopConf::Load(dir_), kFailedPrecondition,
                ::testing::AllOf(HasSubstr("file:///"), HasSubstr("core-site.xml")));
}

TEST_F(HadoopConfTest, MalformedXmlNamesTheFile) {
  Write("core-site.xml", Site(Prop("fs.defaultFS", "hdfs://nn:9000")));
  Write("yarn-site.xml", "<configuration><property><name>x</name><value>1</property>");
  EXPECT_STATUS(HadoopConf::Load(dir_), kInvalidArgument,
                ::testing::AllOf(HasSubstr(dir_ + "/yarn-site.xml"), HasSubstr("malformed XML")));
}

TEST_F(HadoopConfTest, BadAddressNamesKeyAndFile) {
  Write("core-site.xml", Site(Prop("fs.defaultFS", "hdfs://nn:9000")));
  Write("yarn-site.xml", Site(Prop("yarn.resourcemanager.address", "rm-without-port")));
  EXPECT_STATUS(HadoopConf::Load(dir_), kInvalidArgument,
                ::testing::AllOf(HasSubstr("yarn.resourcemanager.address"),
                                 HasSubstr(dir_ + "/yarn-site.xml"), HasSubstr("host:port")));
}

TEST_F(HadoopConfTest, MissingDirectoryIsAnError) {
  EXPECT_STATUS(HadoopConf::Load(dir_ + "/nope"), kFailedPrecondition, HasSubstr("/nope"));
}

// loom.application.hdfs-conf-path / yarn-conf-path: each explicit file lands on top of the
// directory's file of its kind; what it does not set still comes from the directory.
TEST_F(HadoopConfTest, ExplicitSiteFilesWinOverTheDirectorys) {
  Write("core-site.xml", Site(Prop("fs.defaultFS", "hdfs://nn:9000")));
  Write("hdfs-site.xml", Site(Prop("dfs.namenode.http-address", "old-nn:9870")));
  Write("yarn-site.xml", Site(Prop("yarn.resourcemanager.address", "old-rm:8032") +
                              Prop("yarn.resourcemanager.scheduler.address", "old-rm:8030") +
                              Prop("yarn.scheduler.minimum-allocation-mb", "512")));
  ASSERT_OK(MakeDirs(dir_ + "/explicit"));
  Write("explicit/my-hdfs.xml", Site(Prop("dfs.namenode.http-address", "new-nn:50070")));
  Write("explicit/my-yarn.xml", Site(Prop("yarn.resourcemanager.address", "new-rm:8032") +
                                     Prop("yarn.resourcemanager.connect.retry-interval.ms", "250")));
  Result<HadoopConf> plain = HadoopConf::Load(dir_);
  ASSERT_OK(plain);
  EXPECT_EQ(plain->rm.ToString(), "old-rm:8032");
  EXPECT_EQ(plain->rm_connect_retry_interval_ms, 30000);  // yarn-default
  Result<HadoopConf> conf =
      HadoopConf::Load(dir_, {dir_ + "/explicit/my-hdfs.xml", dir_ + "/explicit/my-yarn.xml"});
  ASSERT_OK(conf);
  EXPECT_EQ(conf->namenode_http.ToString(), "new-nn:50070");
  EXPECT_EQ(conf->rm.ToString(), "new-rm:8032");
  EXPECT_EQ(conf->rm_connect_retry_interval_ms, 250);
  EXPECT_EQ(conf->scheduler.ToString(), "old-rm:8030");  // not in the explicit file
  EXPECT_EQ(conf->min_allocation_mb, 512);
  EXPECT_EQ(conf->default_fs, "hdfs://nn:9000");
  // Only the yarn one.
  Result<HadoopConf> yarn_only = HadoopConf::Load(dir_, {"", dir_ + "/explicit/my-yarn.xml"});
  ASSERT_OK(yarn_only);
  EXPECT_EQ(yarn_only->namenode_http.ToString(), "old-nn:9870");
  EXPECT_EQ(yarn_only->rm.ToString(), "new-rm:8032");
}

TEST_F(HadoopConfTest, ExplicitSiteFileMustExistAndParse) {
  Write("core-site.xml", Site(Prop("fs.defaultFS", "hdfs://nn:9000")));
  EXPECT_STATUS(HadoopConf::Load(dir_, {"", dir_ + "/nosuch-yarn.xml"}), kFailedPrecondition,
                HasSubstr(dir_ + "/nosuch-yarn.xml does not exist"));
  Write("bad-hdfs.xml", "<configuration><property>");
  EXPECT_STATUS(HadoopConf::Load(dir_, {dir_ + "/bad-hdfs.xml", ""}), kInvalidArgument,
                HasSubstr(dir_ + "/bad-hdfs.xml"));
}

// The recorded Kerberized cluster (kerberos/ K1): dfs.http.policy=HTTPS_ONLY, WebHDFS on
// https://127.0.0.1:19871 only, ssl-client.xml naming /hadoop/ssl/truststore.jks ("loomtest").
const std::string kKerberosConf = testing::CaptureDir() + "kerberos/cluster-conf";

TEST(HadoopConfKerberosCaptured, TheRecordedTruststoreIsNotHereAndSaysSo) {
  EXPECT_STATUS(HadoopConf::Load(kKerberosConf), kFailedPrecondition,
                ::testing::AllOf(HasSubstr("/hadoop/ssl/truststore.jks"), HasSubstr("ssl.client.truststore.location"),
                                 HasSubstr(kKerberosConf + "/ssl-client.xml")));
}

TEST_F(HadoopConfTest, HttpsOnlyClusterGetsHttpsUrlsAndItsTruststore) {
  // The recorded files, with the truststore rebuilt here from the recorded certificate and
  // the recorded password.
  for (const char* f : {"core-site.xml", "hdfs-site.xml", "yarn-site.xml"}) {
    Result<std::string> text = ReadFile(kKerberosConf + "/" + f);
    ASSERT_OK(text);
    Write(f, *text);
  }
  Result<std::string> der = testing::PemFileToDer(kKerberosConf + "/localhost-cert.pem", dir_ + "/cert.der");
  ASSERT_OK(der);
  Write("truststore.jks", testing::JksTrustStore({*der}, "loomtest"));
  Result<std::string> ssl = ReadFile(kKerberosConf + "/ssl-client.xml");
  ASSERT_OK(ssl);
  std::string text = *ssl;
  text.replace(text.find("/hadoop/ssl/truststore.jks"), 26, dir_ + "/truststore.jks");
  Write("ssl-client.xml", text);

  Result<HadoopConf> conf = HadoopConf::Load(dir_);
  ASSERT_OK(conf);
  EXPECT_EQ(conf->dfs_http_policy, HttpPolicy::kHttpsOnly);
  EXPECT_THAT(conf->namenode_web_urls, ::testing::ElementsAre("https://127.0.0.1:19871"));
  EXPECT_EQ(conf->namenode_http.ToString(), "127.0.0.1:19871");
  // yarn.http.policy=HTTP_ONLY there: the NodeManager and RM webs stay http.
  EXPECT_EQ(conf->yarn_http_policy, HttpPolicy::kHttpOnly);
  EXPECT_EQ(conf->nm_web_scheme, "http");
  EXPECT_EQ(conf->nm_webapp.ToString(), "127.0.0.1:18042");
  EXPECT_THAT(conf->rm_web_urls, ::testing::ElementsAre("http://127.0.0.1:18088"));
  EXPECT_EQ(conf->truststore.location, dir_ + "/truststore.jks");
  // The PEM is the recorded certificate (the same base64, whatever the line breaks).
  Result<std::string> pem = ReadFile(kKerberosConf + "/localhost-cert.pem");
  ASSERT_OK(pem);
  auto base64 = [](std::string s) {
    s = s.substr(s.find("-----", 5) + 5);
    s = s.substr(0, s.find("-----"));
    std::string out;
    for (char c : s) if (c != '\n' && c != '\r') out += c;
    return out;
  };
  EXPECT_EQ(base64(conf->https_trust_pem), base64(*pem));

  // The recorded password is what the digest was keyed with.
  text = *ssl;
  text.replace(text.find("/hadoop/ssl/truststore.jks"), 26, dir_ + "/truststore.jks");
  text.replace(text.find("loomtest"), 8, "loomtes");
  Write("ssl-client.xml", text);
  EXPECT_STATUS(HadoopConf::Load(dir_), kFailedPrecondition, HasSubstr("ssl.client.truststore.password"));
}

TEST_F(HadoopConfTest, YarnHttpsOnlyMovesTheNodeManagerAndRmWebs) {
  Write("core-site.xml", Site(Prop("fs.defaultFS", "hdfs://nn:9000")));
  Write("yarn-site.xml", Site(Prop("yarn.http.policy", "https_only") +  // any case, as HttpConfig.Policy.fromString
                              Prop("yarn.resourcemanager.hostname", "rm.example.com") +
                              Prop("yarn.nodemanager.webapp.address", "0.0.0.0:18042")));
  Result<HadoopConf> conf = HadoopConf::Load(dir_);
  ASSERT_OK(conf);
  EXPECT_EQ(conf->nm_web_scheme, "https");
  EXPECT_EQ(conf->nm_webapp.ToString(), "0.0.0.0:8044");  // yarn.nodemanager.webapp.https.address's default
  EXPECT_THAT(conf->rm_web_urls, ::testing::ElementsAre("https://rm.example.com:8090"));
  // HDFS stays http: dfs.http.policy is its own.
  EXPECT_THAT(conf->namenode_web_urls, ::testing::ElementsAre("http://nn:9870"));
  // HTTP_AND_HTTPS serves both; clients use http (DFSUtil.getHttpClientScheme).
  Write("hdfs-site.xml", Site(Prop("dfs.http.policy", "HTTP_AND_HTTPS")));
  conf = HadoopConf::Load(dir_);
  ASSERT_OK(conf);
  EXPECT_THAT(conf->namenode_web_urls, ::testing::ElementsAre("http://nn:9870"));
  // The https default port on the fs host, like the http one.
  Write("hdfs-site.xml", Site(Prop("dfs.http.policy", "HTTPS_ONLY")));
  conf = HadoopConf::Load(dir_);
  ASSERT_OK(conf);
  EXPECT_THAT(conf->namenode_web_urls, ::testing::ElementsAre("https://nn:9871"));
}

TEST_F(HadoopConfTest, ABadHttpPolicyNamesTheKeyAndFile) {
  Write("core-site.xml", Site(Prop("fs.defaultFS", "hdfs://nn:9000")));
  Write("hdfs-site.xml", Site(Prop("dfs.http.policy", "HTTPS")));
  EXPECT_STATUS(HadoopConf::Load(dir_), kInvalidArgument,
                ::testing::AllOf(HasSubstr("dfs.http.policy = 'HTTPS'"), HasSubstr(dir_ + "/hdfs-site.xml"),
                                 HasSubstr("HTTPS_ONLY")));
  Write("hdfs-site.xml", Site(""));
  Write("yarn-site.xml", Site(Prop("yarn.http.policy", "SSL")));
  EXPECT_STATUS(HadoopConf::Load(dir_), kInvalidArgument, HasSubstr("yarn.http.policy = 'SSL'"));
}

TEST(HadoopConfEnvironment, UnsetHadoopConfDirSaysWhatToDo) {
  const char* saved = std::getenv("HADOOP_CONF_DIR");
  std::string saved_value = saved ? saved : "";
  unsetenv("HADOOP_CONF_DIR");
  EXPECT_STATUS(HadoopConf::FromEnvironment(), kFailedPrecondition,
                HasSubstr("HADOOP_CONF_DIR is not set"));
  setenv("HADOOP_CONF_DIR", kCapturedConf.c_str(), 1);
  Result<HadoopConf> conf = HadoopConf::FromEnvironment();
  EXPECT_OK(conf);
  if (saved) {
    setenv("HADOOP_CONF_DIR", saved_value.c_str(), 1);
  } else {
    unsetenv("HADOOP_CONF_DIR");
  }
}

}  // namespace
}  // namespace loom::hadoop
