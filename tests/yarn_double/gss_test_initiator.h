#pragma once
// GssTestInitiator: the initiating side of a Kerberos context straight on the GSSAPI library,
// for tests that must send what Loom's own client never would (a layer the server did not
// offer, SPNEGO tokens), with the ticket cache of the process (KRB5CCNAME).
//
// Not thread-safe; one per context.

#include <string>

#include "core/status.h"
#include "hadoop/wire/gssapi_library.h"

namespace loom::yarn_double {

class GssTestInitiator {
 public:
  // `mech`: null for raw Kerberos (SASL GSSAPI), or SpnegoOid().
  explicit GssTestInitiator(const std::string& service, gss_OID mech = nullptr) {
    gss_ = *hadoop::Gssapi();
    mech_ = mech ? mech : gss_->krb5_mech;
    OM_uint32 minor = 0;
    gss_buffer_desc text{service.size(), const_cast<char*>(service.data())};
    gss_->import_name(&minor, &text, gss_->krb5_principal_name, &target_);
  }
  ~GssTestInitiator() {
    OM_uint32 minor = 0;
    if (ctx_ != GSS_C_NO_CONTEXT) gss_->delete_sec_context(&minor, &ctx_, GSS_C_NO_BUFFER);
    gss_->release_name(&minor, &target_);
  }
  GssTestInitiator(const GssTestInitiator&) = delete;
  GssTestInitiator& operator=(const GssTestInitiator&) = delete;

  static gss_OID SpnegoOid() {
    static gss_OID_desc spnego = {6, const_cast<char*>("\x2b\x06\x01\x05\x05\x02")};
    return &spnego;
  }

  // One step with Java's flags (K4.3: MUTUAL|REPLAY|SEQUENCE|CONF|INTEG); the token to send.
  Result<std::string> Step(const std::string& input, bool* complete) {
    OM_uint32 minor = 0;
    gss_buffer_desc in{input.size(), const_cast<char*>(input.data())};
    gss_buffer_desc out{0, nullptr};
    OM_uint32 major = gss_->init_sec_context(
        &minor, GSS_C_NO_CREDENTIAL, &ctx_, target_, mech_,
        GSS_C_MUTUAL_FLAG | GSS_C_REPLAY_FLAG | GSS_C_SEQUENCE_FLAG | GSS_C_CONF_FLAG | GSS_C_INTEG_FLAG, 0,
        GSS_C_NO_CHANNEL_BINDINGS, input.empty() ? GSS_C_NO_BUFFER : &in, nullptr, &out, nullptr, nullptr);
    if (GSS_ERROR(major)) return Status::Unauthenticated(hadoop::GssapiError(*gss_, major, minor));
    *complete = major == GSS_S_COMPLETE;
    return Take(&out);
  }
  Result<std::string> Wrap(const std::string& plain, bool conf) {
    OM_uint32 minor = 0;
    gss_buffer_desc in{plain.size(), const_cast<char*>(plain.data())};
    gss_buffer_desc out{0, nullptr};
    OM_uint32 major = gss_->wrap(&minor, ctx_, conf, GSS_C_QOP_DEFAULT, &in, nullptr, &out);
    if (GSS_ERROR(major)) return Status::Internal(hadoop::GssapiError(*gss_, major, minor));
    return Take(&out);
  }
  // `conf`: set to whether the token was sealed.
  Result<std::string> Unwrap(const std::string& token, int* conf) {
    OM_uint32 minor = 0;
    gss_buffer_desc in{token.size(), const_cast<char*>(token.data())};
    gss_buffer_desc out{0, nullptr};
    OM_uint32 major = gss_->unwrap(&minor, ctx_, &in, &out, conf, nullptr);
    if (GSS_ERROR(major)) return Status::Internal(hadoop::GssapiError(*gss_, major, minor));
    return Take(&out);
  }

 private:
  std::string Take(gss_buffer_desc* out) {
    std::string bytes(static_cast<const char*>(out->value), out->length);
    OM_uint32 minor = 0;
    gss_->release_buffer(&minor, out);
    return bytes;
  }

  const hadoop::GssapiLibrary* gss_ = nullptr;
  gss_OID mech_ = nullptr;
  gss_name_t target_ = GSS_C_NO_NAME;
  gss_ctx_id_t ctx_ = GSS_C_NO_CONTEXT;
};

}  // namespace loom::yarn_double
