#include "hadoop/wire/kerberos_login.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "hadoop/wire/gssapi_library.h"

namespace loom::hadoop {

namespace {

std::mutex g_process_mu;
std::shared_ptr<const KerberosClientConf> g_process;  // guarded by g_process_mu

std::string NoTicket(const KerberosLoginOptions& o) {
  return "no Kerberos ticket: run kinit <principal>, or set " + o.keytab_key + " and " + o.principal_key;
}

}  // namespace

KerberosLogin::~KerberosLogin() {
  if (cred_ == GSS_C_NO_CREDENTIAL) return;
  if (auto gss = Gssapi(); gss.ok()) {
    OM_uint32 minor = 0;
    (*gss)->release_cred(&minor, &cred_);
  }
}

Result<std::shared_ptr<KerberosLogin>> KerberosLogin::Acquire(const KerberosLoginOptions& o) {
  // The keys first: a mistake in them is found without a KDC.
  if (!o.keytab.empty() || !o.principal.empty()) {
    if (o.keytab.empty()) {
      return Status::InvalidArgument(o.principal_key + "=" + o.principal + " needs " + o.keytab_key +
                                     " (the keytab to log in with); without both, Loom uses the ticket cache of kinit");
    }
    if (o.principal.empty()) {
      return Status::InvalidArgument(o.keytab_key + "=" + o.keytab + " needs " + o.principal_key +
                                     " (the principal in the keytab to log in as, e.g. alice@EXAMPLE.COM)");
    }
    struct stat st {};
    if (::stat(o.keytab.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return Status::InvalidArgument(o.keytab_key + "=" + o.keytab + ": no such keytab file");
    }
    if (::access(o.keytab.c_str(), R_OK) != 0) {
      return Status::InvalidArgument(o.keytab_key + "=" + o.keytab + ": the keytab is not readable by this user");
    }
  }
  LOOM_ASSIGN_OR_RETURN(const GssapiLibrary* gss, Gssapi());
  gss_OID_set_desc mechs{1, gss->krb5_mech};
  std::shared_ptr<KerberosLogin> login(new KerberosLogin());
  OM_uint32 minor = 0;
  OM_uint32 major = 0;
  if (o.keytab.empty()) {
    major = gss->acquire_cred(&minor, GSS_C_NO_NAME, GSS_C_INDEFINITE, &mechs, GSS_C_INITIATE, &login->cred_,
                              nullptr, nullptr);
    if (major == GSS_S_CREDENTIALS_EXPIRED) {
      return Status::InvalidArgument("the Kerberos ticket has expired: run kinit again (" +
                                     GssapiError(*gss, major, minor) + ")");
    }
    if (GSS_ERROR(major)) return Status::InvalidArgument(NoTicket(o) + " (" + GssapiError(*gss, major, minor) + ")");
  } else {
    gss_buffer_desc text{o.principal.size(), const_cast<char*>(o.principal.data())};
    gss_name_t name = GSS_C_NO_NAME;
    major = gss->import_name(&minor, &text, gss->krb5_principal_name, &name);
    if (GSS_ERROR(major)) {
      return Status::InvalidArgument(o.principal_key + "=" + o.principal + ": not a Kerberos principal (" +
                                     GssapiError(*gss, major, minor) + ")");
    }
    // A private memory cache per login: the keytab's tickets never reach the user's cache, and
    // MIT gets (and renews) the TGT from the keytab when the cache has none.
    static std::atomic<int> serial{0};
    std::string ccache = "MEMORY:loom-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
    gss_key_value_element_desc elements[] = {{"client_keytab", o.keytab.c_str()}, {"ccache", ccache.c_str()}};
    gss_key_value_set_desc store{2, elements};
    major = gss->acquire_cred_from(&minor, name, GSS_C_INDEFINITE, &mechs, GSS_C_INITIATE, &store, &login->cred_,
                                   nullptr, nullptr);
    OM_uint32 ignored = 0;
    gss->release_name(&ignored, &name);
    if (GSS_ERROR(major)) {
      return Status::InvalidArgument(o.keytab_key + "=" + o.keytab + ", " + o.principal_key + "=" + o.principal +
                                     ": cannot log in from the keytab (" + GssapiError(*gss, major, minor) + ")");
    }
  }
  gss_name_t name = GSS_C_NO_NAME;
  OM_uint32 lifetime = 0;
  major = gss->inquire_cred(&minor, login->cred_, &name, &lifetime, nullptr, nullptr);
  if (major == GSS_S_CREDENTIALS_EXPIRED || (!GSS_ERROR(major) && lifetime == 0 && o.keytab.empty())) {
    if (name != GSS_C_NO_NAME) gss->release_name(&minor, &name);
    return Status::InvalidArgument("the Kerberos ticket has expired: run kinit again" +
                                   std::string(o.keytab.empty() ? "" : " (or check " + o.keytab_key + ")"));
  }
  if (GSS_ERROR(major)) return Status::InvalidArgument(NoTicket(o) + " (" + GssapiError(*gss, major, minor) + ")");
  gss_buffer_desc shown{0, nullptr};
  major = gss->display_name(&minor, name, &shown, nullptr);
  OM_uint32 ignored = 0;
  if (!GSS_ERROR(major)) login->principal_ = TakeBuffer(*gss, &shown);
  gss->release_name(&ignored, &name);
  if (login->principal_.empty()) return Status::InvalidArgument(NoTicket(o) + " (the credentials name no principal)");
  login->lifetime_s_ = lifetime;
  return login;
}

void SetProcessKerberos(std::shared_ptr<const KerberosClientConf> conf) {
  std::lock_guard lock(g_process_mu);
  g_process = std::move(conf);
}

std::shared_ptr<const KerberosClientConf> ProcessKerberos() {
  std::lock_guard lock(g_process_mu);
  return g_process;
}

}  // namespace loom::hadoop
