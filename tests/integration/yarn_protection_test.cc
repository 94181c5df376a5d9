// Wire protection on YARN (hadoop.rpc.protection = integrity | privacy): the YARN test double's
// RM scheduler and NodeManager ports offer only DIGEST-MD5 auth-int or auth-conf, as a secure
// cluster's do (yarn-captures K5.3), so the AM's AMRMToken and NMToken connections must wrap
// every frame. The AM learns the setting from $HADOOP_CONF_DIR/core-site.xml, which a real
// NodeManager passes to containers (yarn.nodemanager.env-whitelist): here the double's
// NodeManager inherits HADOOP_CONF_DIR from this test process, so each test sets it first.

#include <cstdlib>
#include <filesystem>

#include <gmock/gmock.h>

#include "core/files.h"
#include "core/testing.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
namespace ypb = ::hadoop::yarn;

// One worker that prints and exits 0 (fail_with.py fails only the tasks it names).
std::vector<std::string> QuickJob() {
  return {"--src_dir", MiniLoom::Source(kScripts), "--executes", "fail_with.py", "--python_binary_path",
          "/usr/bin/python3", "--task_params", "--task none:9 --lines 2", "--conf", "tony.worker.instances=1",
          "--conf", "tony.am.memory=512m", "--conf", "tony.worker.memory=512m"};
}

// What the containers (the AM) see as HADOOP_CONF_DIR: the NodeManager's own.
void NodeManagerConfDir(const std::string& dir) { ::setenv("HADOOP_CONF_DIR", dir.c_str(), 1); }

void ExpectJobSucceedsWith(const std::string& protection) {
  LOOM_REQUIRE_YARN_DOUBLE("sets the double's hadoop.rpc.protection");
  YarnDoubleCluster cluster([&](yarn_double::YarnTestDouble::Options& o) { o.rpc_protection = protection; });
  NodeManagerConfDir(cluster.root() + "/conf");
  Result<std::string> core_site = ReadFile(cluster.root() + "/conf/core-site.xml");
  ASSERT_OK(core_site);
  ASSERT_THAT(*core_site, HasSubstr("<value>" + protection + "</value>"));

  RunResult r = cluster.Submit(QuickJob());
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  EXPECT_THAT(r.out, HasSubstr("SUCCEEDED"));
  ypb::ApplicationReportProto report = cluster.Report(id);
  EXPECT_EQ(report.final_application_status(), ypb::APP_SUCCEEDED);
  // Every AM call went through a wrapped connection: the double's DIGEST-MD5 accepts only the
  // qop of `protection`, so an unwrapped client could not have authenticated at all.
  std::vector<std::string> ok_calls;
  for (const auto& c : cluster.yarn().ServedCalls()) {
    if (c.ok && (c.server == "scheduler" || c.server == "nm")) ok_calls.push_back(c.server + "." + c.method);
  }
  EXPECT_THAT(ok_calls, ::testing::Contains("scheduler.registerApplicationMaster"));
  EXPECT_THAT(ok_calls, ::testing::Contains("scheduler.allocate"));
  EXPECT_THAT(ok_calls, ::testing::Contains("scheduler.finishApplicationMaster"));
  EXPECT_THAT(ok_calls, ::testing::Contains("nm.startContainers"));
  EXPECT_THAT(cluster.ContainerLogs("stdout"), HasSubstr("worker:0 done"));
}

TEST(YarnProtection, JobSucceedsWithPrivacy) { ExpectJobSucceedsWith("privacy"); }

TEST(YarnProtection, JobSucceedsWithIntegrity) { ExpectJobSucceedsWith("integrity"); }

// An AM whose configuration allows less than the cluster requires fails at registration, and
// the application's diagnostics say which setting to fix.
TEST(YarnProtection, AmAllowingLessThanTheClusterRequiresFailsClearly) {
  LOOM_REQUIRE_YARN_DOUBLE("sets the double's hadoop.rpc.protection");
  YarnDoubleCluster cluster([](yarn_double::YarnTestDouble::Options& o) { o.rpc_protection = "privacy"; });
  // The NodeManager's configuration (what the AM reads) says authentication.
  const std::string nm_conf = cluster.root() + "/nm-conf";
  std::filesystem::create_directories(nm_conf);
  for (const char* f : {"core-site.xml", "hdfs-site.xml", "yarn-site.xml"}) {
    std::filesystem::copy_file(cluster.root() + "/conf/" + f, nm_conf + "/" + f);
  }
  Result<std::string> core = ReadFile(nm_conf + "/core-site.xml");
  ASSERT_OK(core);
  std::string changed = *core;
  size_t at = changed.find("<value>privacy</value>");
  ASSERT_NE(at, std::string::npos) << changed;
  changed.replace(at, 22, "<value>authentication</value>");
  ASSERT_OK(WriteFileAtomic(nm_conf + "/core-site.xml", changed));
  NodeManagerConfDir(nm_conf);

  RunResult r = cluster.Submit(QuickJob());
  std::string id = cluster.loom().OnlyJobId();
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  std::string am_log = cluster.ContainerLogs("am.log");
  EXPECT_THAT(am_log, HasSubstr("hadoop.rpc.protection=privacy")) << am_log;
  EXPECT_THAT(am_log, HasSubstr("hadoop.rpc.protection=authentication")) << am_log;
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s));
}

}  // namespace
}  // namespace loom::testing
