// A Kerberos user whose principal is not $USER (issue 11): a real MIT KDC (tests/kerberos/
// kdc_harness.h) and the YARN test double in its Kerberos mode, as yarn_kerberos_test.cc sets
// them up. The NameNode refuses a WebHDFS user.name other than the authenticated principal's
// short name, and the RM names the application's user after the principal, so Loom's user is
// that short name (Hadoop's DEFAULT auth_to_local: "alice@LOOM.TEST" -> "alice") while
// $USER=root: the staging dir, every WebHDFS call, the job's record and the later `loom status`.

#include <filesystem>

#include <gmock/gmock.h>

#include "cluster/yarn/yarn_job_submitter.h"
#include "core/files.h"
#include "core/strings.h"
#include "core/testing.h"
#include "hadoop/wire/credentials.h"
#include "kerberized_cluster.h"

namespace loom::testing {
namespace {

namespace ypb = ::hadoop::yarn;

const std::string kAlice = "alice@LOOM.TEST";

// alice logs in with her keytab only: the client's environment has no ticket cache, and
// $USER=root (cluster.Env()).
class Realm : public KerberosRealm {
 public:
  Realm() : KerberosRealm("alice", /*kinit=*/false) {}
  std::map<std::string, std::string> Env(YarnDoubleCluster& cluster) const {
    std::map<std::string, std::string> env = KerberosRealm::Env(cluster);
    env["KRB5CCNAME"] = "FILE:" + cluster.root() + "/no-such-cache";
    return env;
  }
};

std::vector<std::string> AliceJob(Realm& realm) {
  return {"submit", "--cluster", "yarn", "--src_dir", MiniLoom::Source(kScripts),
          "--executes", "fail_with.py", "--python_binary_path", "/usr/bin/python3", "--task_params",
          "--task none:9 --lines 2", "--conf", "tony.worker.instances=1", "--conf", "tony.am.memory=512m",
          "--conf", "tony.worker.memory=512m", "--conf", "tony.keytab.location=" + realm.kdc().Keytab("alice"),
          "--conf", "tony.keytab.user=" + kAlice};
}

TEST(YarnKerberosUser, PrincipalsShortNameIsTheUserNotDollarUser) {
  LOOM_REQUIRE_YARN_DOUBLE("runs the double in Kerberos mode");
  Realm realm;
  ASSERT_TRUE(realm.ok());
  YarnDoubleCluster cluster([&](yarn_double::YarnTestDouble::Options& o) { realm.Configure(o); });
  KerberosContainerEnvironment(cluster);
  RunResult r = cluster.loom().Run(AliceJob(realm), realm.Env(cluster));
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  EXPECT_THAT(r.err, HasSubstr("running as alice, the short name of the Kerberos principal alice@LOOM.TEST"));
  // Staged under alice's home, nothing under root's.
  EXPECT_FALSE(cluster.hdfs().ListRecursive("/user/alice/.loom").empty());
  for (const std::string& f : cluster.hdfs().CreatedFiles()) {
    EXPECT_TRUE(f.starts_with("/user/alice/.loom/")) << f;
  }
  auto report = cluster.yarn().ApplicationReport(cluster.ApplicationId(id));
  ASSERT_OK(report);
  EXPECT_EQ(report->user(), "alice");
  EXPECT_EQ(report->final_application_status(), ypb::APP_SUCCEEDED);
  auto record = cluster::yarn::YarnJobRecord::Read(cluster.loom().Dir(id));
  ASSERT_OK(record);
  EXPECT_EQ(record->user, "alice");
  EXPECT_EQ(record->staging_dir, "/user/alice/.loom/" + record->application_id);
  // A later client, still $USER=root, follows the job as alice (its record, the job's keytab).
  RunResult status = cluster.loom().Run({"status", id}, realm.Env(cluster));
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_THAT(status.out, HasSubstr("SUCCEEDED"));
  RunResult logs = cluster.loom().Run({"logs", id, "--task", "worker:0"}, realm.Env(cluster));
  EXPECT_EQ(logs.exit_code, 0) << logs.out << logs.err;
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s));
}

// Staging fails after the tokens were fetched (a file where alice's staging root should be):
// the RM never got them to cancel, so `loom submit` cancels them itself.
TEST(YarnKerberosUser, TokensOfAFailedSubmissionAreCancelled) {
  LOOM_REQUIRE_YARN_DOUBLE("runs the double in Kerberos mode");
  Realm realm;
  ASSERT_TRUE(realm.ok());
  YarnDoubleCluster cluster([&](yarn_double::YarnTestDouble::Options& o) { realm.Configure(o); });
  ASSERT_OK(cluster.hdfs().PutFile("/user/alice/.loom", "not a directory", "alice", "644"));
  RunResult r = cluster.loom().Run(AliceJob(realm), realm.Env(cluster));
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("staging"));
  EXPECT_EQ(TokensOwnedBy(cluster.hdfs().tokens(), kAlice).size(), 1u) << r.err;
  EXPECT_EQ(CancelledCount(cluster.hdfs().tokens(), kAlice), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("cancelled 1 of the 1 HDFS delegation tokens"));
  for (const auto& c : cluster.yarn().ServedCalls()) EXPECT_NE(c.method, "submitApplication");
}

}  // namespace
}  // namespace loom::testing
