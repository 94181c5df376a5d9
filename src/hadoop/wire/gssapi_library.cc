#include "hadoop/wire/gssapi_library.h"

#include <dlfcn.h>

#include <mutex>

#include "core/static_binary.h"

namespace loom::hadoop {

namespace {

constexpr char kLibrary[] = "libgssapi_krb5.so.2";

struct Loaded {
  GssapiLibrary lib{};
  Status status;
};

template <typename F>
bool Resolve(void* handle, const char* name, F* fn, std::string* missing) {
  *fn = reinterpret_cast<F>(::dlsym(handle, name));
  if (!*fn) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *fn != nullptr;
}

Loaded Load() {
  Loaded out;
  // A static program's dlopen brings up the system's libc.so.6 beside its own, and MIT's
  // library then crashes in threads that the static libc started (seen in profile_init).
  if (SelfIsStatic()) {
    out.status = Status::FailedPrecondition(
        "Kerberos: this loom is linked statically and cannot load the system's GSSAPI library (" +
        std::string(kLibrary) + "); run loom-kerberos, installed beside it, which `loom` starts by itself for "
        "client commands when HADOOP_CONF_DIR's core-site.xml says hadoop.security.authentication=kerberos");
    return out;
  }
  void* handle = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = ::dlerror();
    out.status = Status::FailedPrecondition(
        std::string("Kerberos needs MIT Kerberos's GSSAPI library (apt-get install libgssapi-krb5-2): ") +
        (err ? err : "dlopen failed"));
    return out;
  }
  GssapiLibrary& g = out.lib;
  std::string missing;
  Resolve(handle, "gss_import_name", &g.import_name, &missing);
  Resolve(handle, "gss_display_name", &g.display_name, &missing);
  Resolve(handle, "gss_release_name", &g.release_name, &missing);
  Resolve(handle, "gss_canonicalize_name", &g.canonicalize_name, &missing);
  Resolve(handle, "gss_acquire_cred", &g.acquire_cred, &missing);
  Resolve(handle, "gss_acquire_cred_from", &g.acquire_cred_from, &missing);
  Resolve(handle, "gss_inquire_cred", &g.inquire_cred, &missing);
  Resolve(handle, "gss_release_cred", &g.release_cred, &missing);
  Resolve(handle, "gss_init_sec_context", &g.init_sec_context, &missing);
  Resolve(handle, "gss_accept_sec_context", &g.accept_sec_context, &missing);
  Resolve(handle, "gss_delete_sec_context", &g.delete_sec_context, &missing);
  Resolve(handle, "gss_wrap", &g.wrap, &missing);
  Resolve(handle, "gss_unwrap", &g.unwrap, &missing);
  Resolve(handle, "gss_release_buffer", &g.release_buffer, &missing);
  Resolve(handle, "gss_display_status", &g.display_status, &missing);
  // Exported variables: each symbol is the address of a `const gss_OID`.
  gss_OID* mech = nullptr;
  gss_OID* nt = nullptr;
  Resolve(handle, "gss_mech_krb5", &mech, &missing);
  Resolve(handle, "GSS_KRB5_NT_PRINCIPAL_NAME", &nt, &missing);
  if (!missing.empty()) {
    out.status = Status::FailedPrecondition(std::string(kLibrary) + " lacks " + missing + " (MIT Kerberos 1.11 or later is needed)");
    return out;
  }
  g.krb5_mech = *mech;
  g.krb5_principal_name = *nt;
  return out;
}

}  // namespace

Result<const GssapiLibrary*> Gssapi() {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = Load(); });
  if (!loaded.status.ok()) return loaded.status;
  return &loaded.lib;
}

std::string TakeBuffer(const GssapiLibrary& gss, gss_buffer_desc* buffer) {
  std::string bytes(static_cast<const char*>(buffer->value), buffer->length);
  OM_uint32 ignored = 0;
  if (buffer->value != nullptr) gss.release_buffer(&ignored, buffer);
  return bytes;
}

std::string GssapiError(const GssapiLibrary& gss, OM_uint32 major, OM_uint32 minor) {
  auto messages = [&](OM_uint32 code, int type, gss_OID mech) {
    std::string text;
    OM_uint32 context = 0;
    do {
      OM_uint32 ignored = 0;
      gss_buffer_desc buf{0, nullptr};
      if (GSS_ERROR(gss.display_status(&ignored, code, type, mech, &context, &buf))) break;
      if (!text.empty()) text += "; ";
      text += TakeBuffer(gss, &buf);
    } while (context != 0);
    return text;
  };
  std::string text = messages(major, GSS_C_GSS_CODE, GSS_C_NO_OID);
  if (minor != 0) {
    std::string mech = messages(minor, GSS_C_MECH_CODE, gss.krb5_mech);
    if (!mech.empty()) text += (text.empty() ? "" : ": ") + mech;
  }
  return text.empty() ? "GSSAPI error " + std::to_string(major) : text;
}

}  // namespace loom::hadoop
