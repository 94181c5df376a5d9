#pragma once
// KerberosLogin: the client's Kerberos credentials for SASL GSSAPI, as Java's
// UserGroupInformation login user: from the ticket cache `kinit` filled ($KRB5CCNAME or the
// default one), or from a keytab into a private in-memory cache (loom.kerberos.keytab and
// loom.kerberos.principal), so that the user's own cache is never touched.
//
// Acquire() is what `loom submit`, `status`, `logs` and `kill` check before they stage or ask
// anything, so that a missing or expired ticket is the user's to fix (InvalidArgument, exit 2)
// rather than an RPC failure later.
//
// Thread-safety: a KerberosLogin is immutable once acquired and shared by every connection
// (MIT's credential handles are safe to use from several threads).

#include <gssapi/gssapi.h>

#include <memory>
#include <string>

#include "core/status.h"

namespace loom::hadoop {

struct KerberosLoginOptions {
  std::string keytab;     // empty: the ticket cache
  std::string principal;  // with `keytab`: the client principal to log in as
  // The keys as the user wrote them (loom.* or tony.*), for messages.
  std::string keytab_key = "loom.kerberos.keytab";
  std::string principal_key = "loom.kerberos.principal";
};

class KerberosLogin {
 public:
  // InvalidArgument: no ticket cache or no TGT in it ("no Kerberos ticket: run kinit ..."), an
  // expired TGT, a keytab that does not exist or lacks the principal, a keytab without a
  // principal. FailedPrecondition: libgssapi_krb5 is missing.
  static Result<std::shared_ptr<KerberosLogin>> Acquire(const KerberosLoginOptions& options);
  ~KerberosLogin();
  KerberosLogin(const KerberosLogin&) = delete;
  KerberosLogin& operator=(const KerberosLogin&) = delete;

  // The full principal, "root@LOOM.TEST": the connection context's effectiveUser (K4.11).
  const std::string& principal() const { return principal_; }
  // Seconds the credentials stay valid (GSS_C_INDEFINITE when a keytab renews them).
  uint32_t lifetime_s() const { return lifetime_s_; }
  // Valid for the life of this object.
  gss_cred_id_t credential() const { return cred_; }

 private:
  KerberosLogin() = default;
  gss_cred_id_t cred_ = GSS_C_NO_CREDENTIAL;
  std::string principal_;
  uint32_t lifetime_s_ = 0;
};

// Kerberos for this process's IPC clients (Java: the UGI login user plus the conf). Connections
// to a protocol that has a server principal key (ApplicationClientProtocol:
// yarn.resourcemanager.principal; the NameNode's ClientProtocol: dfs.namenode.kerberos.principal)
// and no token use it; the AM's and NodeManagers' protocols never do (they are TOKEN only).
struct KerberosClientConf {
  std::shared_ptr<const KerberosLogin> login;
  std::string rpc_protection = "authentication";  // hadoop.rpc.protection (a list)
  std::string rm_principal;                        // yarn.resourcemanager.principal
  std::string nn_principal;                        // dfs.namenode.kerberos.principal
};

// Set once by the client before its first call; null turns Kerberos off again (tests).
void SetProcessKerberos(std::shared_ptr<const KerberosClientConf> conf);
std::shared_ptr<const KerberosClientConf> ProcessKerberos();

}  // namespace loom::hadoop
