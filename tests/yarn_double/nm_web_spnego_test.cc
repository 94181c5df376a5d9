// `loom logs` on a Kerberized cluster: the NodeManager web reader (src/hadoop/logs/
// nm_web_logs) negotiates SPNEGO with the double's NodeManager web server (Options::kerberos)
// and a real MIT KDC (tests/kerberos/kdc_harness.h).

#include "core/files.h"
#include "core/test_dir.h"
#include "core/testing.h"
#include "fake_hdfs.h"
#include "hadoop/hdfs/spnego.h"
#include "hadoop/logs/nm_web_logs.h"
#include "hadoop/wire/kerberos_login.h"
#include "kerberos/kdc_harness.h"
#include "kerberos/process_login.h"
#include "yarn_test_double.h"

namespace loom::yarn_double {
namespace {

using loom::testing::KdcHarness;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kContainer[] = "container_1795373773768_0001_01_000001";

class NmWebSpnegoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(kdc_.StartLoggedIn({"root", "rm/localhost", "nn/localhost", "HTTP/localhost"}));
    dir_ = loom::testing::MakeTestDir("nm_web_spnego_test");
    hdfs_ = std::make_unique<FakeHdfs>(dir_ + "/hdfs");
    ASSERT_OK(hdfs_->Start());
    YarnTestDouble::Options o;
    o.work_dir = dir_ + "/yarn";
    o.hdfs = hdfs_.get();
    o.kerberos.enabled = true;
    o.kerberos.rm_keytab = kdc_.Keytab("rm/localhost");
    o.kerberos.nn_keytab = kdc_.Keytab("nn/localhost");
    o.kerberos.http_keytab = kdc_.Keytab("HTTP/localhost");
    double_ = std::make_unique<YarnTestDouble>(o);
    ASSERT_OK(double_->Start());
    hadoop::SetProcessKerberos(nullptr);
    hadoop::ClearSpnegoCookies();
  }
  void TearDown() override {
    hadoop::SetProcessKerberos(nullptr);
    double_.reset();
    hdfs_.reset();
    (void)RemoveTree(dir_);
  }
  void Login() { loom::testing::SetProcessLogin(); }

  KdcHarness kdc_;
  std::string dir_;
  std::unique_ptr<FakeHdfs> hdfs_;
  std::unique_ptr<YarnTestDouble> double_;
};

TEST_F(NmWebSpnegoTest, WithoutKerberosTheNodeManagerAsksForIt) {
  hadoop::NmWebLogs nm(double_->nm_http_address(), "root");
  EXPECT_STATUS(nm.ListLogs(kContainer), kUnauthenticated,
                AllOf(HasSubstr("requires Kerberos (SPNEGO"), HasSubstr("run kinit")));
}

TEST_F(NmWebSpnegoTest, LoginReachesTheNodeManager) {
  Login();
  hadoop::NmWebLogs nm(double_->nm_http_address(), "root");
  auto listing = nm.ListLogs(kContainer);
  ASSERT_OK(listing);  // authenticated: the NM's own answer about a container it never ran
  EXPECT_EQ(listing->answer, hadoop::NmLogAnswer::kUnknownContainer);
  auto log = nm.ReadLog(kContainer, "stdout");
  ASSERT_OK(log);
  EXPECT_EQ(log->answer, hadoop::NmLogAnswer::kUnknownContainer);
}

}  // namespace
}  // namespace loom::yarn_double
