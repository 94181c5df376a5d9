// A Kerberos user whose principal is not $USER (issue 11): a real MIT KDC (tests/kerberos/
// kdc_harness.h) and the YARN test double in its Kerberos mode, as yarn_kerberos_test.cc sets
// them up. The NameNode refuses a WebHDFS user.name other than the authenticated principal's
// short name, and the RM names the application's user after the principal, so Loom's user is
// that short name (Hadoop's DEFAULT auth_to_local: "alice@LOOM.TEST" -> "alice") while
// $USER=root: the staging dir, every WebHDFS call, the job's record and the later `loom status`.

#include <filesystem>

#include <gmock/gmock.h>

#include "cluster/yarn/wire/credentials.h"
#include "cluster/yarn/yarn_job_submitter.h"
#include "core/files.h"
#include "core/strings.h"
#include "core/testing.h"
#include "delegation_token_store.h"
#include "kerberos/kdc_harness.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
namespace ypb = ::hadoop::yarn;

const std::string kAlice = "alice@LOOM.TEST";

// The recorded cluster's service principals and alice, who logs in with her keytab only.
class Realm {
 public:
  Realm() {
    Status started = kdc_.Start({"alice", "rm/localhost", "nn/localhost", "HTTP/localhost"});
    EXPECT_OK(started);
    ok_ = started.ok();
  }
  bool ok() const { return ok_; }
  KdcHarness& kdc() { return kdc_; }
  void Configure(yarn_double::YarnTestDouble::Options& o) {
    o.rpc_protection = "privacy";
    o.kerberos.enabled = true;
    o.kerberos.rm_principal = "rm/localhost@LOOM.TEST";
    o.kerberos.rm_keytab = kdc_.Keytab("rm/localhost");
    o.kerberos.nn_principal = "nn/localhost@LOOM.TEST";
    o.kerberos.nn_keytab = kdc_.Keytab("nn/localhost");
    o.kerberos.http_principal = "HTTP/localhost@LOOM.TEST";
    o.kerberos.http_keytab = kdc_.Keytab("HTTP/localhost");
  }
  // The client's environment: $USER=root (cluster.Env()), the realm's krb5.conf, and no ticket
  // cache: alice's keytab (the job's keys) is the only login there is.
  std::map<std::string, std::string> Env(YarnDoubleCluster& cluster) const {
    std::map<std::string, std::string> env = cluster.Env();
    for (const auto& [k, v] : kdc_.Env()) env[k] = v;
    env["KRB5CCNAME"] = "FILE:" + cluster.root() + "/no-such-cache";
    return env;
  }

 private:
  KdcHarness kdc_;
  bool ok_ = false;
};

// As yarn_kerberos_test.cc: containers get HADOOP_CONF_DIR and no Kerberos cache.
void ContainerEnvironment(YarnDoubleCluster& cluster) {
  ::setenv("HADOOP_CONF_DIR", (cluster.root() + "/conf").c_str(), 1);
  ::setenv("KRB5CCNAME", "FILE:/nonexistent/loom-test-no-cache", 1);
}

std::vector<std::string> AliceJob(Realm& realm) {
  return {"submit", "--cluster", "yarn", "--src_dir", MiniLoom::Source("tests/integration/scripts"),
          "--executes", "fail_with.py", "--python_binary_path", "/usr/bin/python3", "--task_params",
          "--task none:9 --lines 2", "--conf", "tony.worker.instances=1", "--conf", "tony.am.memory=512m",
          "--conf", "tony.worker.memory=512m", "--conf", "tony.keytab.location=" + realm.kdc().Keytab("alice"),
          "--conf", "tony.keytab.user=" + kAlice};
}

// alice's HDFS delegation tokens, and how many of them are cancelled.
int AliceTokens(yarn_double::DelegationTokenStore& store, int* cancelled) {
  int n = 0;
  *cancelled = 0;
  for (const auto& id : store.Minted()) {
    if (id.owner != kAlice) continue;
    ++n;
    cluster::yarn::Token t{cluster::yarn::SerializeDelegationTokenIdentifier(id), "",
                           cluster::yarn::kHdfsDelegationKind, ""};
    *cancelled += store.Cancelled(t) ? 1 : 0;
  }
  return n;
}

TEST(YarnKerberosUser, PrincipalsShortNameIsTheUserNotDollarUser) {
  LOOM_REQUIRE_YARN_DOUBLE("runs the double in Kerberos mode");
  Realm realm;
  ASSERT_TRUE(realm.ok());
  YarnDoubleCluster cluster([&](yarn_double::YarnTestDouble::Options& o) { realm.Configure(o); });
  ContainerEnvironment(cluster);
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
  EXPECT_TRUE(MiniLoom::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s));
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
  int cancelled = 0;
  EXPECT_EQ(AliceTokens(cluster.hdfs().tokens(), &cancelled), 1) << r.err;
  EXPECT_EQ(cancelled, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("cancelled 1 of the 1 HDFS delegation tokens"));
  for (const auto& c : cluster.yarn().ServedCalls()) EXPECT_NE(c.method, "submitApplication");
}

}  // namespace
}  // namespace loom::testing
