#pragma once
// The fixture of the Kerberized test double's tests (kerberos_double_test.cc: the IPC server's
// SASL GSSAPI and the NameNode RPC; secure_rm_double_test.cc: the ResourceManager's tokens): a
// real MIT KDC of the test's own (tests/kerberos/kdc_harness.h), root's ticket, and Loom's
// Kerberos client configuration. Tests only.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "core/eventually.h"
#include "core/files.h"
#include "core/testing.h"
#include "fake_hdfs.h"
#include "gss_test_initiator.h"
#include "hadoop/ipc/ipc_client.h"
#include "hadoop/ipc/namenode_client.h"
#include "hadoop/ipc/yarn_clients.h"
#include "hadoop/testing/ipc_server.h"
#include "hadoop/wire/credentials.h"
#include "hadoop/wire/ipc_frame.h"
#include "hadoop/wire/kerberos_login.h"
#include "hadoop/wire/sasl_gssapi.h"
#include "kerberos/kdc_harness.h"
#include "namenode_rpc.h"
#include "yarn_test_double.h"


namespace loom::yarn_double {

namespace ypb = ::hadoop::yarn;
using loom::testing::KdcHarness;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

inline constexpr char kRm[] = "rm/localhost@LOOM.TEST";
inline constexpr char kNn[] = "nn/localhost@LOOM.TEST";

class KerberosDoubleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(kdc_.StartLoggedIn({"root", "rm/localhost", "nn/localhost", "HTTP/localhost"}));
  }
  void TearDown() override { hadoop::SetProcessKerberos(nullptr); }

  // The client's Kerberos: the ticket cache (root), or a keytab's principal.
  std::shared_ptr<hadoop::KerberosClientConf> Client(const std::string& protection, const std::string& rm_principal = kRm,
                                                 const std::string& keytab_principal = "") {
    hadoop::KerberosLoginOptions lo;
    if (!keytab_principal.empty()) {
      lo.keytab = kdc_.Keytab(keytab_principal);
      lo.principal = KdcHarness::Principal(keytab_principal);
    }
    auto login = hadoop::KerberosLogin::Acquire(lo);
    EXPECT_OK(login);
    auto conf = std::make_shared<hadoop::KerberosClientConf>();
    if (login.ok()) conf->login = *login;
    conf->rpc_protection = protection;
    conf->rm_principal = rm_principal;
    conf->nn_principal = kNn;
    return conf;
  }

  KdcHarness kdc_;
};

}  // namespace loom::yarn_double
