// Loom on a Kerberized YARN cluster (issue 11), end to end: a real MIT KDC (tests/kerberos/
// kdc_harness.h) in a throwaway realm, and the YARN test double in its Kerberos mode, shaped as
// the recorded secure cluster (yarn-captures kerberos/): the RM client port and the NameNode
// speak SASL GSSAPI only to the principals yarn.resourcemanager.principal and
// dfs.namenode.kerberos.principal name, WebHDFS wants SPNEGO, hadoop.rpc.protection=privacy,
// and the RM renews the submitted HDFS delegation tokens as the RM principal and cancels them
// when the application ends. Containers get no ticket: the tasks read HDFS with the delegation
// token Loom passes them. The `loom` binary is the real one; only its environment has the
// user's ticket cache.

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include <gmock/gmock.h>

#include "core/files.h"
#include "core/strings.h"
#include "core/testing.h"
#include "hadoop/wire/credentials.h"
#include "kerberized_cluster.h"

namespace loom::testing {
namespace {

namespace ypb = ::hadoop::yarn;

const std::string kUser = "root@LOOM.TEST";

// The user root, with a ticket from kinit.
class Realm : public KerberosRealm {
 public:
  Realm() : KerberosRealm("root", /*kinit=*/true) {}
};

std::vector<std::string> DdpJob(const std::string& extra_params) {
  return {"--src_dir", MiniLoom::Source("examples/pytorch"), "--executes", "train_ddp.py",
          "--python_binary_path", "/usr/bin/python3", "--task_params", "--epochs 2 " + extra_params,
          "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=2",
          "--conf", "tony.am.memory=512m", "--conf", "tony.worker.memory=1g"};
}

// A job of one worker that prints and succeeds, then `settings` (key=value).
std::vector<std::string> QuickJob(const std::vector<std::string>& settings = {}) {
  std::vector<std::string> args = {"--src_dir", MiniLoom::Source(kScripts), "--executes", "fail_with.py",
                                   "--python_binary_path", "/usr/bin/python3", "--task_params", "--task none:9 --lines 2",
                                   "--conf", "tony.worker.instances=1", "--conf", "tony.am.memory=512m", "--conf",
                                   "tony.worker.memory=512m"};
  for (std::string& arg : Confs(settings)) args.push_back(std::move(arg));
  return args;
}

RunResult Submit(YarnDoubleCluster& cluster, const Realm& realm, std::vector<std::string> args,
                 const std::map<std::string, std::string>& env_changes = {}) {
  args.insert(args.begin(), {"submit", "--cluster", "yarn"});
  auto env = realm.Env(cluster);
  for (const auto& [k, v] : env_changes) env[k] = v;
  return cluster.loom().Run(args, env);
}

// A refused submission `r`: exit 2, its error saying each of `says`, and nothing of it reached the
// cluster: no application, no byte in HDFS.
void ExpectRefusedBeforeStaging(YarnDoubleCluster& cluster, const RunResult& r, const std::vector<std::string>& says) {
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  for (const std::string& s : says) EXPECT_THAT(r.err, HasSubstr(s));
  EXPECT_THAT(cluster.hdfs().CreatedFiles(), ::testing::IsEmpty());
  for (const auto& c : cluster.yarn().ServedCalls()) EXPECT_NE(c.method, "submitApplication");
}

// Replaces the first `from` in the cluster's configuration file `name` with `to`.
void EditClusterConf(YarnDoubleCluster& cluster, const std::string& name, const std::string& from,
                     const std::string& to) {
  const std::string conf = cluster.root() + "/conf/" + name;
  Result<std::string> site = ReadFile(conf);
  ASSERT_OK(site);
  std::string changed = *site;
  size_t at = changed.find(from);
  ASSERT_NE(at, std::string::npos) << changed;
  changed.replace(at, from.size(), to);
  ASSERT_OK(WriteFileAtomic(conf, changed));
}

// The acceptance of issue 11 on the double: the DDP example reads its data from HDFS in every
// task with the delegation token, under privacy.
TEST(YarnKerberos, DdpExampleReadsHdfsWithTheDelegationToken) {
  LOOM_REQUIRE_YARN_DOUBLE("runs the double in Kerberos mode");
  Realm realm;
  ASSERT_TRUE(realm.ok());
  YarnDoubleCluster cluster([&](yarn_double::YarnTestDouble::Options& o) { realm.Configure(o); });
  KerberosContainerEnvironment(cluster);
  // 1797 samples as the example's --export-digits writes them.
  const std::string csv = cluster.root() + "/digits.csv";
  ASSERT_EQ(std::system(("/usr/bin/python3 " + MiniLoom::Source("examples/pytorch/train_ddp.py") +
                         " --export-digits " + csv + " >/dev/null").c_str()),
            0);
  Result<std::string> bytes = ReadFile(csv);
  ASSERT_OK(bytes);
  const std::string data = *bytes;
  ASSERT_OK(cluster.hdfs().PutFile("/user/root/digits.csv", data, "root", "600"));

  RunResult r = Submit(cluster, realm, DdpJob("--data hdfs:///user/root/digits.csv"));
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log") << cluster.ContainerLogs("stderr");
  std::string stdout_all = cluster.ContainerLogs("stdout");
  for (int rank : {0, 1}) {
    EXPECT_THAT(stdout_all, HasSubstr("[rank " + std::to_string(rank) + "] read " + std::to_string(data.size()) +
                                      " bytes (1797 samples) from hdfs:///user/root/digits.csv"))
        << stdout_all;
  }
  EXPECT_THAT(stdout_all, HasSubstr("parameters agree across 2 ranks"));

  // One token for the job: the user's, renewable by the RM only, renewed at submission by the
  // RM and cancelled when the application ended.
  yarn_double::DelegationTokenStore& store = cluster.hdfs().tokens();
  std::vector<hadoop::Token> tokens = TokensOwnedBy(store, kUser);
  ASSERT_EQ(tokens.size(), 1u) << store.Minted().size() << " minted";
  auto id_fields = hadoop::ParseDelegationTokenIdentifier(tokens[0].identifier);
  ASSERT_OK(id_fields);
  EXPECT_EQ(id_fields->renewer, "rm");
  EXPECT_EQ(store.RenewCount(tokens[0]), 1);
  ASSERT_TRUE(loom::testing::Eventually([&] { return CancelledCount(store, kUser) == 1; }, 20s))
      << "the RM did not cancel the job's token when the application ended";

  // The tasks' token file holds the delegation token and none of Loom's secrets.
  std::vector<std::string> token_files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(cluster.nm_local())) {
    if (entry.path().filename() == ".loom.hdfs-tokens") token_files.push_back(entry.path().string());
  }
  ASSERT_FALSE(token_files.empty());
  for (const std::string& file : token_files) {
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
    auto creds = hadoop::ReadCredentialsFile(file);
    ASSERT_OK(creds);
    EXPECT_TRUE(creds->secrets.empty()) << file;
    ASSERT_TRUE(creds->FindKind(hadoop::kHdfsDelegationKind).has_value()) << file;
  }

  // status and logs work over Kerberos too.
  RunResult status = cluster.loom().Run({"status", id}, realm.Env(cluster));
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_THAT(status.out, HasSubstr("SUCCEEDED"));
  RunResult logs = cluster.loom().Run({"logs", id, "--task", "worker:1"}, realm.Env(cluster));
  EXPECT_EQ(logs.exit_code, 0) << logs.out << logs.err;
  EXPECT_THAT(logs.out, HasSubstr("[rank 1] read"));
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s));
}

TEST(YarnKerberos, KillOverKerberosEndsTheJobAndCancelsItsToken) {
  LOOM_REQUIRE_YARN_DOUBLE("runs the double in Kerberos mode");
  Realm realm;
  ASSERT_TRUE(realm.ok());
  YarnDoubleCluster cluster([&](yarn_double::YarnTestDouble::Options& o) { realm.Configure(o, "integrity"); });
  KerberosContainerEnvironment(cluster);
  std::vector<std::string> args = {"submit", "--cluster", "yarn", "--src_dir", MiniLoom::Source(kScripts),
                                   "--executes", "sleep_forever.py", "--python_binary_path", "/usr/bin/python3",
                                   "--conf", "tony.worker.instances=1", "--conf", "tony.am.memory=512m",
                                   "--conf", "tony.worker.memory=512m", "--conf", "loom.task.stop-grace-ms=1000"};
  Subprocess submit = cluster.loom().Start(args, "submit", realm.Env(cluster));
  std::string id = cluster.loom().WaitUntilRunning(1, 60s);
  ASSERT_FALSE(id.empty()) << cluster.ContainerLogs("am.log");
  // Another session (its own $LOOM_HOME, the same ticket) finds the job by its application id
  // through the Kerberized RM and WebHDFS, and kills it.
  const std::string app = cluster.ApplicationId(id);
  MiniLoom elsewhere;
  RunResult status;
  ASSERT_TRUE(loom::testing::Eventually(
      [&] {
        status = elsewhere.Run({"status", app}, realm.Env(cluster));
        return status.out.find("RUNNING") != std::string::npos;
      },
      15s))
      << status.out << status.err;
  EXPECT_THAT(status.out, HasSubstr(id));
  RunResult kill = elsewhere.Run({"kill", app}, realm.Env(cluster));
  EXPECT_EQ(kill.exit_code, 0) << kill.out << kill.err;
  EXPECT_OK(cluster.WaitForAppEnd(id, 30s));
  auto report = cluster.yarn().ApplicationReport(cluster.ApplicationId(id));
  ASSERT_OK(report);
  EXPECT_EQ(report->yarn_application_state(), ypb::KILLED);
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 15s));
  EXPECT_TRUE(loom::testing::Eventually([&] { return CancelledCount(cluster.hdfs().tokens(), kUser) == 1; }, 20s));
}

// Kerberos on an HA cluster: rm1 is standby (the client and the AM skip it), the NameNodes are a
// nameservice: one token with service ha-hdfs:<nameservice>, renewed and cancelled by the RM.
TEST(YarnKerberos, HaClusterGetsOneTokenForItsNameservice) {
  LOOM_REQUIRE_YARN_DOUBLE("runs the double in Kerberos and HA mode");
  Realm realm;
  ASSERT_TRUE(realm.ok());
  YarnDoubleCluster cluster([&](yarn_double::YarnTestDouble::Options& o) {
    realm.Configure(o);
    o.rm_ha = true;
    o.active_rm = 1;
    o.standby_namenode = true;
  });
  KerberosContainerEnvironment(cluster);
  RunResult r = Submit(cluster, realm, QuickJob());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  std::vector<hadoop::Token> tokens = TokensOwnedBy(cluster.hdfs().tokens(), kUser);
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(cluster.hdfs().tokens().RenewCount(tokens[0]), 1);
  EXPECT_TRUE(loom::testing::Eventually([&] { return CancelledCount(cluster.hdfs().tokens(), kUser) == 1; }, 20s));
  // The service the client set, as the AM's container received it.
  bool ha_service = false;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(cluster.nm_local())) {
    if (entry.path().filename() != ".loom.hdfs-tokens") continue;
    auto creds = hadoop::ReadCredentialsFile(entry.path().string());
    ASSERT_OK(creds);
    auto token = creds->FindKind(hadoop::kHdfsDelegationKind);
    ASSERT_TRUE(token.has_value());
    EXPECT_EQ(token->service, "ha-hdfs:loomns");
    ha_service = true;
  }
  EXPECT_TRUE(ha_service);
}

// A keytab instead of the ticket cache: the user's own cache is never needed nor touched.
TEST(YarnKerberos, KeytabLoginSubmits) {
  LOOM_REQUIRE_YARN_DOUBLE("runs the double in Kerberos mode");
  Realm realm;
  ASSERT_TRUE(realm.ok());
  YarnDoubleCluster cluster([&](yarn_double::YarnTestDouble::Options& o) { realm.Configure(o); });
  KerberosContainerEnvironment(cluster);
  std::vector<std::string> args =
      QuickJob({"tony.keytab.location=" + realm.kdc().Keytab("root"), "tony.keytab.user=root@LOOM.TEST"});
  RunResult r = Submit(cluster, realm, args, {{"KRB5CCNAME", "FILE:" + cluster.root() + "/no-such-cache"}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  EXPECT_FALSE(std::filesystem::exists(cluster.root() + "/no-such-cache"));
}

// ---- refusals: each a clear error (exit 2), nothing staged, no application ----

TEST(YarnKerberos, NoTicketIsRefusedBeforeStaging) {
  LOOM_REQUIRE_YARN_DOUBLE("runs the double in Kerberos mode");
  Realm realm;
  ASSERT_TRUE(realm.ok());
  YarnDoubleCluster cluster([&](yarn_double::YarnTestDouble::Options& o) { realm.Configure(o); });
  ExpectRefusedBeforeStaging(
      cluster, Submit(cluster, realm, QuickJob(), {{"KRB5CCNAME", "FILE:" + cluster.root() + "/empty-cache"}}), {"kinit"});
}

TEST(YarnKerberos, ExpiredTicketIsRefusedBeforeStaging) {
  LOOM_REQUIRE_YARN_DOUBLE("runs the double in Kerberos mode");
  Realm realm;
  ASSERT_TRUE(realm.ok());
  ASSERT_OK(realm.kdc().Kinit("root", "2s"));
  YarnDoubleCluster cluster([&](yarn_double::YarnTestDouble::Options& o) { realm.Configure(o); });
  ASSERT_TRUE(loom::testing::Eventually([&] { return !realm.kdc().TicketValid(); }, 10s));
  ExpectRefusedBeforeStaging(cluster, Submit(cluster, realm, QuickJob()), {"expired", "kinit"});
}

TEST(YarnKerberos, MissingKeytabIsRefusedBeforeStaging) {
  LOOM_REQUIRE_YARN_DOUBLE("runs the double in Kerberos mode");
  Realm realm;
  ASSERT_TRUE(realm.ok());
  YarnDoubleCluster cluster([&](yarn_double::YarnTestDouble::Options& o) { realm.Configure(o); });
  std::vector<std::string> args =
      QuickJob({"loom.kerberos.keytab=/nonexistent/user.keytab", "loom.kerberos.principal=root@LOOM.TEST"});
  ExpectRefusedBeforeStaging(cluster, Submit(cluster, realm, args), {"/nonexistent/user.keytab"});
}

// TonY's security switch off on a Kerberized cluster: nothing could authenticate.
TEST(YarnKerberos, SecurityDisabledIsRefusedBeforeStaging) {
  LOOM_REQUIRE_YARN_DOUBLE("runs the double in Kerberos mode");
  Realm realm;
  ASSERT_TRUE(realm.ok());
  YarnDoubleCluster cluster([&](yarn_double::YarnTestDouble::Options& o) { realm.Configure(o); });
  ExpectRefusedBeforeStaging(cluster, Submit(cluster, realm, QuickJob({"tony.application.security.enabled=false"})),
                             {"tony.application.security.enabled=false, but the cluster uses Kerberos"});
}

// The cluster's configuration names a principal the RM does not have: the client refuses to
// authenticate to whoever answers (it could be anyone), before anything is staged.
TEST(YarnKerberos, WrongServicePrincipalIsRefusedBeforeStaging) {
  LOOM_REQUIRE_YARN_DOUBLE("runs the double in Kerberos mode");
  Realm realm;
  ASSERT_TRUE(realm.ok());
  YarnDoubleCluster cluster([&](yarn_double::YarnTestDouble::Options& o) { realm.Configure(o); });
  ASSERT_NO_FATAL_FAILURE(EditClusterConf(cluster, "yarn-site.xml", "rm/localhost@LOOM.TEST", "rm/elsewhere@LOOM.TEST"));
  ExpectRefusedBeforeStaging(cluster, Submit(cluster, realm, QuickJob()), {"rm/elsewhere@LOOM.TEST"});
}

// The cluster demands privacy; a client configured for authentication only must not talk.
TEST(YarnKerberos, ClientOfferingLessProtectionIsRefusedBeforeStaging) {
  LOOM_REQUIRE_YARN_DOUBLE("runs the double in Kerberos mode");
  Realm realm;
  ASSERT_TRUE(realm.ok());
  YarnDoubleCluster cluster([&](yarn_double::YarnTestDouble::Options& o) { realm.Configure(o, "privacy"); });
  ASSERT_NO_FATAL_FAILURE(
      EditClusterConf(cluster, "core-site.xml", "<value>privacy</value>", "<value>authentication</value>"));
  ExpectRefusedBeforeStaging(cluster, Submit(cluster, realm, QuickJob()), {"hadoop.rpc.protection"});
}

}  // namespace
}  // namespace loom::testing
