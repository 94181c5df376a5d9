// HA clusters in HADOOP_CONF_DIR: ResourceManagers (yarn.resourcemanager.ha.*, per-id addresses
// with HAUtil's hostname defaults, the yarn.client.failover-* policy of RMProxy) and the
// NameNodes of an HA nameservice (dfs.nameservices, dfs.ha.namenodes.<ns>).

#include "core/files.h"
#include "core/test_dir.h"
#include "core/testing.h"
#include "hadoop/conf/hadoop_conf.h"

namespace loom::hadoop {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Site(const std::vector<std::pair<std::string, std::string>>& props) {
  std::string s = "<?xml version=\"1.0\"?>\n<configuration>\n";
  for (const auto& [k, v] : props) s += "  <property><name>" + k + "</name><value>" + v + "</value></property>\n";
  return s + "</configuration>\n";
}

std::vector<std::string> Strings(const std::vector<HostPort>& list) {
  std::vector<std::string> out;
  for (const HostPort& hp : list) out.push_back(hp.ToString());
  return out;
}

class HadoopConfHaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = loom::testing::MakeTestDir("hadoop_conf_ha_test");
    Write("core-site.xml", Site({{"fs.defaultFS", "hdfs://nn.example.com:8020"}}));
  }
  void TearDown() override { (void)RemoveTree(dir_); }
  void Write(const std::string& file, const std::string& text) { ASSERT_OK(WriteFileAtomic(dir_ + "/" + file, text)); }
  Result<HadoopConf> Load() { return HadoopConf::Load(dir_); }
  std::string dir_;
};

TEST_F(HadoopConfHaTest, WithoutHaOneResourceManager) {
  Write("yarn-site.xml", Site({{"yarn.resourcemanager.hostname", "rm.example.com"}}));
  auto conf = Load();
  ASSERT_OK(conf);
  EXPECT_FALSE(conf->rm_ha_enabled);
  EXPECT_THAT(Strings(conf->rms), ElementsAre("rm.example.com:8032"));
  EXPECT_THAT(Strings(conf->schedulers), ElementsAre("rm.example.com:8030"));
  EXPECT_THAT(Strings(conf->namenode_https), ElementsAre("nn.example.com:9870"));
  // RMProxy's defaults: max-wait 900000 / retry interval 30000.
  EXPECT_EQ(conf->rm_failover_max_attempts, 30);
  EXPECT_EQ(conf->rm_failover_sleep_base_ms, 30000);
  EXPECT_EQ(conf->rm_failover_sleep_max_ms, 30000);
}

TEST_F(HadoopConfHaTest, PerIdAddressesAndHostnameDefaults) {
  Write("yarn-site.xml", Site({{"yarn.resourcemanager.ha.enabled", "true"},
                               {"yarn.resourcemanager.ha.rm-ids", " rm1, rm2 ,"},
                               {"yarn.resourcemanager.hostname.rm1", "a.example.com"},
                               {"yarn.resourcemanager.hostname.rm2", "b.example.com"},
                               {"yarn.resourcemanager.address.rm2", "b.example.com:9032"},
                               {"yarn.resourcemanager.scheduler.address.rm1", "a.example.com:9030"},
                               {"yarn.resourcemanager.webapp.address.rm2", "b.example.com:9088"},
                               // ignored under HA, as by YarnConfiguration.getSocketAddr
                               {"yarn.resourcemanager.address", "old.example.com:8032"}}));
  auto conf = Load();
  ASSERT_OK(conf);
  EXPECT_TRUE(conf->rm_ha_enabled);
  EXPECT_THAT(conf->rm_ids, ElementsAre("rm1", "rm2"));
  EXPECT_THAT(Strings(conf->rms), ElementsAre("a.example.com:8032", "b.example.com:9032"));
  EXPECT_THAT(Strings(conf->schedulers), ElementsAre("a.example.com:9030", "b.example.com:8030"));
  EXPECT_THAT(conf->rm_webapps, ElementsAre("a.example.com:8088", "b.example.com:9088"));
  EXPECT_EQ(conf->rm.ToString(), "a.example.com:8032");
  EXPECT_EQ(conf->scheduler.ToString(), "a.example.com:9030");
  EXPECT_EQ(conf->rm_webapp, "a.example.com:8088");
}

TEST_F(HadoopConfHaTest, FailoverSettingsAsRmProxyDerivesThem) {
  Write("yarn-site.xml", Site({{"yarn.resourcemanager.connect.retry-interval.ms", "500"},
                               {"yarn.resourcemanager.connect.max-wait.ms", "10000"}}));
  auto conf = Load();
  ASSERT_OK(conf);
  EXPECT_EQ(conf->rm_failover_sleep_base_ms, 500);
  EXPECT_EQ(conf->rm_failover_sleep_max_ms, 500);
  EXPECT_EQ(conf->rm_failover_max_attempts, 20);  // 10000 / 500

  Write("yarn-site.xml", Site({{"yarn.client.failover-max-attempts", "3"},
                               {"yarn.client.failover-sleep-base-ms", "100"},
                               {"yarn.client.failover-sleep-max-ms", "2000"}}));
  conf = Load();
  ASSERT_OK(conf);
  EXPECT_EQ(conf->rm_failover_max_attempts, 3);
  EXPECT_EQ(conf->rm_failover_sleep_base_ms, 100);
  EXPECT_EQ(conf->rm_failover_sleep_max_ms, 2000);

  Write("yarn-site.xml", Site({{"yarn.resourcemanager.connect.max-wait.ms", "-1"}}));
  conf = Load();
  ASSERT_OK(conf);
  EXPECT_EQ(conf->rm_failover_max_attempts, INT32_MAX);  // wait forever

  Write("yarn-site.xml", Site({{"yarn.client.failover-max-attempts", "many"}}));
  EXPECT_STATUS(Load(), kInvalidArgument, HasSubstr("yarn.client.failover-max-attempts = 'many'"));
}

TEST_F(HadoopConfHaTest, BadHaConfigNamesTheKey) {
  Write("yarn-site.xml", Site({{"yarn.resourcemanager.ha.enabled", "true"}}));
  EXPECT_STATUS(Load(), kInvalidArgument, HasSubstr("yarn.resourcemanager.ha.rm-ids is not set"));

  Write("yarn-site.xml", Site({{"yarn.resourcemanager.ha.enabled", "true"}, {"yarn.resourcemanager.ha.rm-ids", " , "}}));
  EXPECT_STATUS(Load(), kInvalidArgument, HasSubstr("yarn.resourcemanager.ha.rm-ids is empty"));

  Write("yarn-site.xml", Site({{"yarn.resourcemanager.ha.enabled", "true"},
                               {"yarn.resourcemanager.ha.rm-ids", "rm1,rm2"},
                               {"yarn.resourcemanager.hostname.rm1", "a.example.com"}}));
  EXPECT_STATUS(Load(), kInvalidArgument,
                AllOf(HasSubstr("yarn.resourcemanager.hostname.rm2"), HasSubstr("yarn.resourcemanager.address.rm2")));

  Write("yarn-site.xml", Site({{"yarn.resourcemanager.ha.enabled", "true"},
                               {"yarn.resourcemanager.ha.rm-ids", "rm1"},
                               {"yarn.resourcemanager.address.rm1", "a.example.com"}}));
  EXPECT_STATUS(Load(), kInvalidArgument, HasSubstr("yarn.resourcemanager.address.rm1 = 'a.example.com' is not host:port"));
}

TEST_F(HadoopConfHaTest, NameNodesOfAnHaNameservice) {
  Write("core-site.xml", Site({{"fs.defaultFS", "hdfs://mycluster"}}));
  Write("hdfs-site.xml", Site({{"dfs.nameservices", "other,mycluster"},
                               {"dfs.ha.namenodes.mycluster", "nn1, nn2"},
                               {"dfs.namenode.http-address.mycluster.nn1", "nn1.example.com:9870"},
                               {"dfs.namenode.http-address.mycluster.nn2", "nn2.example.com:50070"}}));
  auto conf = Load();
  ASSERT_OK(conf);
  EXPECT_EQ(conf->fs_port, -1);
  EXPECT_THAT(Strings(conf->namenode_https), ElementsAre("nn1.example.com:9870", "nn2.example.com:50070"));
  EXPECT_EQ(conf->namenode_http.ToString(), "nn1.example.com:9870");

  Write("hdfs-site.xml", Site({{"dfs.nameservices", "mycluster"},
                               {"dfs.ha.namenodes.mycluster", "nn1,nn2"},
                               {"dfs.namenode.http-address.mycluster.nn1", "nn1.example.com:9870"}}));
  EXPECT_STATUS(Load(), kInvalidArgument, HasSubstr("dfs.namenode.http-address.mycluster.nn2 is not set"));
}

TEST_F(HadoopConfHaTest, HttpsOnlyUsesEachNameNodesAndRmsHttpsAddress) {
  Write("core-site.xml", Site({{"fs.defaultFS", "hdfs://mycluster"}}));
  Write("hdfs-site.xml", Site({{"dfs.http.policy", "HTTPS_ONLY"},
                               {"dfs.nameservices", "mycluster"},
                               {"dfs.ha.namenodes.mycluster", "nn1,nn2"},
                               {"dfs.namenode.http-address.mycluster.nn1", "nn1.example.com:9870"},
                               {"dfs.namenode.http-address.mycluster.nn2", "nn2.example.com:9870"},
                               {"dfs.namenode.https-address.mycluster.nn1", "nn1.example.com:9871"},
                               {"dfs.namenode.https-address.mycluster.nn2", "nn2.example.com:50470"}}));
  Write("yarn-site.xml", Site({{"yarn.http.policy", "HTTPS_ONLY"},
                               {"yarn.resourcemanager.ha.enabled", "true"},
                               {"yarn.resourcemanager.ha.rm-ids", "rm1,rm2"},
                               {"yarn.resourcemanager.hostname.rm1", "a.example.com"},
                               {"yarn.resourcemanager.hostname.rm2", "b.example.com"},
                               {"yarn.resourcemanager.webapp.https.address.rm2", "b.example.com:18090"}}));
  auto conf = Load();
  ASSERT_OK(conf);
  EXPECT_THAT(conf->namenode_web_urls, ElementsAre("https://nn1.example.com:9871", "https://nn2.example.com:50470"));
  EXPECT_THAT(Strings(conf->namenode_https), ElementsAre("nn1.example.com:9871", "nn2.example.com:50470"));
  EXPECT_THAT(conf->rm_web_urls, ElementsAre("https://a.example.com:8090", "https://b.example.com:18090"));

  // Under HTTPS_ONLY it is the https key of each NameNode that must be there.
  Write("hdfs-site.xml", Site({{"dfs.http.policy", "HTTPS_ONLY"},
                               {"dfs.nameservices", "mycluster"},
                               {"dfs.ha.namenodes.mycluster", "nn1,nn2"},
                               {"dfs.namenode.http-address.mycluster.nn1", "nn1.example.com:9870"},
                               {"dfs.namenode.http-address.mycluster.nn2", "nn2.example.com:9870"},
                               {"dfs.namenode.https-address.mycluster.nn1", "nn1.example.com:9871"}}));
  EXPECT_STATUS(Load(), kInvalidArgument, HasSubstr("dfs.namenode.https-address.mycluster.nn2 is not set"));
}

TEST(HostPortList, RoundTrips) {
  auto list = ParseHostPortList("a:1, b:2");
  ASSERT_OK(list);
  EXPECT_EQ(HostPortListString(*list), "a:1,b:2");
  EXPECT_FALSE(ParseHostPortList("").ok());
  EXPECT_FALSE(ParseHostPortList("a:1,b").ok());
}

}  // namespace
}  // namespace loom::hadoop
