#pragma once
// The Kerberized YARN test double for integration tests: a real MIT KDC (tests/kerberos/
// kdc_harness.h) with the recorded secure cluster's service principals (yarn-captures
// kerberos/ K1: rm/localhost, nn/localhost, HTTP/localhost) and one user, the double's options
// for them, and what tests look at in its token store.

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/testing.h"
#include "delegation_token_store.h"
#include "hadoop/wire/credentials.h"
#include "kerberos/kdc_harness.h"
#include "yarn_double_cluster.h"

namespace loom::testing {

class KerberosRealm {
 public:
  // `user`: the user's principal name ("root", "alice"); `kinit`: fill the ticket cache for it
  // (else only its keytab logs in).
  KerberosRealm(const std::string& user, bool kinit) {
    Status started = kdc_.Start({user, "rm/localhost", "nn/localhost", "HTTP/localhost"});
    EXPECT_OK(started);
    ok_ = started.ok();
    if (ok_ && kinit) EXPECT_OK(kdc_.Kinit(user));
  }
  bool ok() const { return ok_; }
  KdcHarness& kdc() { return kdc_; }
  // The double's Kerberos mode with this realm's service keytabs.
  void Configure(yarn_double::YarnTestDouble::Options& o, const std::string& protection = "privacy") {
    o.rpc_protection = protection;
    o.kerberos.enabled = true;
    o.kerberos.rm_principal = "rm/localhost@LOOM.TEST";
    o.kerberos.rm_keytab = kdc_.Keytab("rm/localhost");
    o.kerberos.nn_principal = "nn/localhost@LOOM.TEST";
    o.kerberos.nn_keytab = kdc_.Keytab("nn/localhost");
    o.kerberos.http_principal = "HTTP/localhost@LOOM.TEST";
    o.kerberos.http_keytab = kdc_.Keytab("HTTP/localhost");
  }
  // The client's environment: the cluster's conf dir plus the realm's krb5.conf and cache.
  std::map<std::string, std::string> Env(YarnDoubleCluster& cluster) const {
    std::map<std::string, std::string> env = cluster.Env();
    for (const auto& [k, v] : kdc_.Env()) env[k] = v;
    return env;
  }

 private:
  KdcHarness kdc_;
  bool ok_ = false;
};

// The double's NodeManager passes its own environment to containers: this test process's,
// which must hold no Kerberos cache (a container authenticates with tokens only, K3), and
// HADOOP_CONF_DIR as a NodeManager's env-whitelist would pass it.
inline void KerberosContainerEnvironment(YarnDoubleCluster& cluster) {
  ::setenv("HADOOP_CONF_DIR", (cluster.root() + "/conf").c_str(), 1);
  ::setenv("KRB5CCNAME", "FILE:/nonexistent/loom-test-no-cache", 1);
}

// The delegation tokens `owner` ("root@LOOM.TEST") got over RPC (not the NameNode's redirect
// tokens, owned by short names), identified by their identifiers, and how many are cancelled.
inline std::vector<hadoop::Token> TokensOwnedBy(yarn_double::DelegationTokenStore& store,
                                                       const std::string& owner) {
  std::vector<hadoop::Token> out;
  for (const auto& id : store.Minted()) {
    if (id.owner == owner) {
      out.push_back(hadoop::Token{hadoop::SerializeDelegationTokenIdentifier(id), "",
                                         hadoop::kHdfsDelegationKind, ""});
    }
  }
  return out;
}
inline int CancelledCount(yarn_double::DelegationTokenStore& store, const std::string& owner) {
  int n = 0;
  for (const auto& t : TokensOwnedBy(store, owner)) n += store.Cancelled(t) ? 1 : 0;
  return n;
}

}  // namespace loom::testing
