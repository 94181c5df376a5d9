#pragma once
// The GSSAPI functions Kerberos (SASL GSSAPI, RFC 4752) needs, from MIT Kerberos's
// libgssapi_krb5.so.2, loaded on first use. The `loom` binary is also every container's
// executor, and containers authenticate with tokens only: linking the library would make each
// of them load it for nothing, and a machine without it could not run an executor. Only the
// client logs in, as loom-kerberos (the same code linked to the system's libraries): the static
// `loom` refuses, since a static program cannot safely load a shared library that uses threads.
//
// Thread-safety: Gssapi() may be called from any thread; the functions are MIT's (credentials
// are safe to share between threads, a security context is not).

#include <gssapi/gssapi.h>
#include <gssapi/gssapi_ext.h>

#include <string>

#include "core/status.h"

namespace loom::hadoop {

struct GssapiLibrary {
  OM_uint32 (*import_name)(OM_uint32*, gss_buffer_t, gss_OID, gss_name_t*);
  OM_uint32 (*display_name)(OM_uint32*, gss_name_t, gss_buffer_t, gss_OID*);
  OM_uint32 (*release_name)(OM_uint32*, gss_name_t*);
  OM_uint32 (*canonicalize_name)(OM_uint32*, const gss_name_t, const gss_OID, gss_name_t*);
  OM_uint32 (*acquire_cred)(OM_uint32*, gss_name_t, OM_uint32, gss_OID_set, gss_cred_usage_t, gss_cred_id_t*,
                            gss_OID_set*, OM_uint32*);
  OM_uint32 (*acquire_cred_from)(OM_uint32*, gss_name_t, OM_uint32, gss_OID_set, gss_cred_usage_t,
                                 gss_const_key_value_set_t, gss_cred_id_t*, gss_OID_set*, OM_uint32*);
  OM_uint32 (*inquire_cred)(OM_uint32*, gss_cred_id_t, gss_name_t*, OM_uint32*, gss_cred_usage_t*, gss_OID_set*);
  OM_uint32 (*release_cred)(OM_uint32*, gss_cred_id_t*);
  OM_uint32 (*init_sec_context)(OM_uint32*, gss_cred_id_t, gss_ctx_id_t*, gss_name_t, gss_OID, OM_uint32, OM_uint32,
                                gss_channel_bindings_t, gss_buffer_t, gss_OID*, gss_buffer_t, OM_uint32*, OM_uint32*);
  OM_uint32 (*accept_sec_context)(OM_uint32*, gss_ctx_id_t*, gss_cred_id_t, gss_buffer_t, gss_channel_bindings_t,
                                  gss_name_t*, gss_OID*, gss_buffer_t, OM_uint32*, OM_uint32*, gss_cred_id_t*);
  OM_uint32 (*delete_sec_context)(OM_uint32*, gss_ctx_id_t*, gss_buffer_t);
  OM_uint32 (*wrap)(OM_uint32*, gss_ctx_id_t, int, gss_qop_t, gss_buffer_t, int*, gss_buffer_t);
  OM_uint32 (*unwrap)(OM_uint32*, gss_ctx_id_t, gss_buffer_t, gss_buffer_t, int*, gss_qop_t*);
  OM_uint32 (*release_buffer)(OM_uint32*, gss_buffer_t);
  OM_uint32 (*display_status)(OM_uint32*, OM_uint32, int, gss_OID, OM_uint32*, gss_buffer_t);
  gss_OID krb5_mech;            // gss_mech_krb5: 1.2.840.113554.1.2.2
  gss_OID krb5_principal_name;  // GSS_KRB5_NT_PRINCIPAL_NAME: "service/host@REALM" as written
};

// The loaded library, or FailedPrecondition saying which package provides it (the library stays
// loaded for the life of the process).
Result<const GssapiLibrary*> Gssapi();

// MIT's text for a GSSAPI failure: the major status, then the mechanism's minor status
// ("No Kerberos credentials available (default cache: FILE:/tmp/krb5cc_0)").
std::string GssapiError(const GssapiLibrary& gss, OM_uint32 major, OM_uint32 minor);

// The bytes of a buffer that GSSAPI allocated (a token, a name's text), which is then released.
std::string TakeBuffer(const GssapiLibrary& gss, gss_buffer_desc* buffer);

}  // namespace loom::hadoop
