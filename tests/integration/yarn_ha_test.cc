// HA clusters through the real `loom` binary on the YARN test double: two ResourceManagers of
// which one answers StandbyException (the client and the AM skip it and follow a failover),
// an HA nameservice whose first NameNode is standby (WebHDFS staging skips it), and bad HA
// configuration refused with exit 2.

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>

#include "core/testing.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
namespace ypb = ::hadoop::yarn;

std::vector<std::string> JobArgs(const std::string& script, std::vector<std::string> extra) {
  std::vector<std::string> args = {"--src_dir",  MiniLoom::Source(kScripts), "--executes", script,
                                   "--python_binary_path", "/usr/bin/python3", "--conf", "loom.am.memory=512m",
                                   "--conf",     "loom.worker.memory=512m"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The calls a server of the double answered: (method, ok) in order.
std::vector<std::pair<std::string, bool>> Calls(yarn_double::YarnTestDouble& yarn, const std::string& server) {
  std::vector<std::pair<std::string, bool>> out;
  for (const auto& c : yarn.ServedCalls()) {
    if (c.server == server) out.emplace_back(c.method, c.ok);
  }
  return out;
}
// The double's own report (the harness's Report() asks rm1, which may be the standby).
ypb::ApplicationReportProto Report(YarnDoubleCluster& cluster, const std::string& job_id) {
  auto report = cluster.yarn().ApplicationReport(cluster.ApplicationId(job_id));
  EXPECT_OK(report);
  return report.ok() ? *report : ypb::ApplicationReportProto{};
}
bool AnyOk(const std::vector<std::pair<std::string, bool>>& calls, const std::string& method) {
  return std::any_of(calls.begin(), calls.end(), [&](const auto& c) { return c.first == method && c.second; });
}

TEST(YarnHa, SubmitStatusKillSkipTheStandbyResourceManager) {
  LOOM_REQUIRE_YARN_DOUBLE("two ResourceManagers, rm1 standby");
  YarnDoubleCluster cluster([](auto& o) {
    o.rm_ha = true;
    o.active_rm = 1;
  });
  std::vector<std::string> args = {"submit", "--cluster", "yarn"};
  for (auto& a : JobArgs("sleep_forever.py", {"--conf", "loom.worker.instances=1", "--conf",
                                              "loom.task.stop-grace-ms=1000"})) {
    args.push_back(a);
  }
  Subprocess submit = cluster.loom().Start(args, "submit", cluster.Env());
  std::string id = cluster.loom().WaitUntilRunning(1, 30s);
  ASSERT_FALSE(id.empty()) << cluster.ContainerLogs("am.log");
  // rm1 was asked and refused every call; rm2 took the application, and its scheduler the AM.
  auto rm1 = Calls(cluster.yarn(), "rm");
  ASSERT_FALSE(rm1.empty());
  for (const auto& [method, ok] : rm1) EXPECT_FALSE(ok) << method << " succeeded on the standby";
  EXPECT_TRUE(AnyOk(Calls(cluster.yarn(), "rm2"), "submitApplication"));
  EXPECT_TRUE(AnyOk(Calls(cluster.yarn(), "scheduler2"), "registerApplicationMaster"));
  EXPECT_TRUE(Calls(cluster.yarn(), "scheduler").size() <= 1u);  // the AM skipped rm1 once at most
  RunResult status = cluster.loom().Run({"status", id}, cluster.Env());
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_THAT(status.out, HasSubstr("RUNNING"));
  RunResult kill = cluster.loom().Run({"kill", id}, cluster.Env());
  EXPECT_EQ(kill.exit_code, 0) << kill.out << kill.err;
  RunResult r = cluster.loom().Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(cluster.loom().View(id).state, "KILLED");
  EXPECT_EQ(Report(cluster, id).yarn_application_state(), ypb::KILLED);
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s));
}

TEST(YarnHa, FailoverDuringARunningJobIsFollowedByTheClientAndTheAm) {
  LOOM_REQUIRE_YARN_DOUBLE("a ResourceManager failover");
  YarnDoubleCluster cluster([](auto& o) {
    o.rm_ha = true;
    o.active_rm = 0;
  });
  std::string release = cluster.root() + "/release";
  std::vector<std::string> args = {"submit", "--cluster", "yarn"};
  for (auto& a : JobArgs("wait_for_file.py", {"--task_params", release, "--conf", "loom.worker.instances=2"})) {
    args.push_back(a);
  }
  Subprocess submit = cluster.loom().Start(args, "submit", cluster.Env());
  std::string id = cluster.loom().WaitUntilRunning(2, 30s);
  ASSERT_FALSE(id.empty()) << cluster.ContainerLogs("am.log");
  EXPECT_TRUE(Calls(cluster.yarn(), "scheduler2").empty());
  // rm1 goes standby, rm2 active: the AM's next heartbeat fails over, registers again there.
  ASSERT_OK(cluster.yarn().FailoverForTest(1));
  EXPECT_TRUE(loom::testing::Eventually([&] { return AnyOk(Calls(cluster.yarn(), "scheduler2"), "allocate"); }, 15s))
      << cluster.ContainerLogs("am.log");
  EXPECT_TRUE(AnyOk(Calls(cluster.yarn(), "scheduler2"), "registerApplicationMaster"));
  std::ofstream(release) << "go\n";
  RunResult r = cluster.loom().Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  EXPECT_THAT(r.out, HasSubstr("SUCCEEDED"));
  EXPECT_EQ(cluster.loom().View(id).state, "SUCCEEDED");
  EXPECT_THAT(cluster.ContainerLogs("am.log"), HasSubstr("failing over to"));
  // finishApplicationMaster reached the new active RM; `loom status` still answers.
  EXPECT_TRUE(AnyOk(Calls(cluster.yarn(), "scheduler2"), "finishApplicationMaster"));
  RunResult status = cluster.loom().Run({"status", id}, cluster.Env());
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_THAT(status.out, HasSubstr("SUCCEEDED"));
  EXPECT_EQ(Report(cluster, id).final_application_status(), ypb::APP_SUCCEEDED);
}

TEST(YarnHa, StagingSkipsTheStandbyNameNode) {
  LOOM_REQUIRE_YARN_DOUBLE("a standby NameNode");
  YarnDoubleCluster cluster([](auto& o) { o.standby_namenode = true; });
  RunResult r = cluster.Submit(
      JobArgs("fail_with.py", {"--task_params", "--task worker:9", "--conf", "loom.worker.instances=1"}));
  std::string id = cluster.loom().OnlyJobId();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  EXPECT_EQ(cluster.loom().View(id).state, "SUCCEEDED");
  auto conf = hadoop::HadoopConf::Load(cluster.root() + "/conf");
  ASSERT_OK(conf);
  EXPECT_EQ(conf->default_fs, "hdfs://loomns");
  ASSERT_EQ(conf->namenode_https.size(), 2u);
  EXPECT_EQ(conf->namenode_https[0].port, cluster.hdfs().standby_namenode_http_port());
  // The history was uploaded through the active NameNode.
  bool history = false;
  for (const std::string& f : cluster.StagingFiles()) history |= f.find("/history/") != std::string::npos;
  EXPECT_TRUE(history);
}

// A conf dir like the cluster's with yarn-site.xml's HA part replaced.
void WriteHaConf(YarnDoubleCluster& cluster, const std::string& dir, const std::string& ha) {
  std::filesystem::create_directories(dir);
  for (const char* f : {"core-site.xml", "hdfs-site.xml"}) {
    std::filesystem::copy_file(cluster.ConfDir() + "/" + f, dir + "/" + f);
  }
  std::ofstream(dir + "/yarn-site.xml") << "<?xml version=\"1.0\"?>\n<configuration>\n"
                                        << "<property><name>yarn.resourcemanager.ha.enabled</name><value>true</value>"
                                           "</property>\n"
                                        << ha << "</configuration>\n";
}

TEST(YarnHa, BadHaConfigurationIsAUsageError) {
  YarnDoubleCluster cluster;
  struct Case {
    std::string ha;
    std::string says;
  } cases[] = {
      {"", "yarn.resourcemanager.ha.rm-ids is not set"},
      {"<property><name>yarn.resourcemanager.ha.rm-ids</name><value>rm1,rm2</value></property>\n"
       "<property><name>yarn.resourcemanager.hostname.rm1</name><value>127.0.0.1</value></property>\n",
       "neither yarn.resourcemanager.hostname.rm2 nor yarn.resourcemanager.address.rm2 is set"},
  };
  int n = 0;
  for (const Case& c : cases) {
    std::string dir = cluster.root() + "/bad-conf-" + std::to_string(n++);
    WriteHaConf(cluster, dir, c.ha);
    RunResult r = cluster.loom().Run(
        [&] {
          std::vector<std::string> a = {"submit", "--cluster", "yarn"};
          for (auto& x : JobArgs("fail_with.py", {"--conf", "loom.worker.instances=1"})) a.push_back(x);
          return a;
        }(),
        cluster.EnvWithConfDir(dir));
    EXPECT_EQ(r.exit_code, 2) << c.says << "\n" << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.says));
    EXPECT_TRUE(cluster.loom().JobIds().empty());
  }
}

}  // namespace
}  // namespace loom::testing
