#include "hadoop/testing/gss_acceptor.h"

#include "hadoop/wire/gssapi_library.h"

namespace loom::hadoop::testing {

struct GssAcceptor::State {
  const hadoop::GssapiLibrary* gss = nullptr;
  gss_cred_id_t cred = GSS_C_NO_CREDENTIAL;
  gss_ctx_id_t context = GSS_C_NO_CONTEXT;
  std::string principal;
  bool complete = false;

  ~State() {
    OM_uint32 minor = 0;
    if (context != GSS_C_NO_CONTEXT) gss->delete_sec_context(&minor, &context, GSS_C_NO_BUFFER);
    if (cred != GSS_C_NO_CREDENTIAL) gss->release_cred(&minor, &cred);
  }
};

Result<std::unique_ptr<GssAcceptor>> GssAcceptor::Create(const std::string& keytab, const std::string& principal) {
  LOOM_ASSIGN_OR_RETURN(const hadoop::GssapiLibrary* gss, hadoop::Gssapi());
  std::unique_ptr<GssAcceptor> acceptor(new GssAcceptor());
  acceptor->state_ = std::make_unique<State>();
  State& s = *acceptor->state_;
  s.gss = gss;
  s.principal = principal;
  OM_uint32 minor = 0;
  gss_buffer_desc text{principal.size(), const_cast<char*>(principal.data())};
  gss_name_t name = GSS_C_NO_NAME;
  OM_uint32 major = gss->import_name(&minor, &text, gss->krb5_principal_name, &name);
  if (GSS_ERROR(major)) {
    return Status::InvalidArgument("bad service principal " + principal + ": " + hadoop::GssapiError(*gss, major, minor));
  }
  // The keytab named here only (never the machine's /etc/krb5.keytab), bound to `principal`: a
  // ticket for any other service fails to decrypt, as it would at a real RM or NameNode. All
  // mechanisms (GSS_C_NO_OID_SET): raw Kerberos for SASL, SPNEGO for HTTP Negotiate.
  gss_key_value_element_desc element{"keytab", keytab.c_str()};
  gss_key_value_set_desc store{1, &element};
  major = gss->acquire_cred_from(&minor, name, GSS_C_INDEFINITE, GSS_C_NO_OID_SET, GSS_C_ACCEPT, &store, &s.cred,
                                 nullptr, nullptr);
  OM_uint32 ignored = 0;
  gss->release_name(&ignored, &name);
  if (GSS_ERROR(major)) {
    return Status::FailedPrecondition("no acceptor credentials for " + principal + " in keytab " + keytab + ": " +
                                      hadoop::GssapiError(*gss, major, minor));
  }
  return acceptor;
}

GssAcceptor::~GssAcceptor() = default;

Result<GssAcceptor::Step> GssAcceptor::Accept(std::string_view input) {
  State& s = *state_;
  if (s.complete) return Status::FailedPrecondition("GSSAPI context already established");
  const hadoop::GssapiLibrary& gss = *s.gss;
  OM_uint32 minor = 0;
  gss_buffer_desc in{input.size(), const_cast<char*>(input.data())};
  gss_buffer_desc out{0, nullptr};
  gss_name_t src = GSS_C_NO_NAME;
  OM_uint32 flags = 0;
  OM_uint32 major = gss.accept_sec_context(&minor, &s.context, s.cred, &in, GSS_C_NO_CHANNEL_BINDINGS, &src, nullptr,
                                           &out, &flags, nullptr, nullptr);
  Step step;
  if (out.length > 0) step.output = hadoop::TakeBuffer(gss, &out);
  if (GSS_ERROR(major)) {
    OM_uint32 ignored = 0;
    if (src != GSS_C_NO_NAME) gss.release_name(&ignored, &src);
    if (s.context != GSS_C_NO_CONTEXT) gss.delete_sec_context(&ignored, &s.context, GSS_C_NO_BUFFER);
    return Status::Unauthenticated("GSSAPI accept for " + s.principal + " failed: " +
                                   hadoop::GssapiError(gss, major, minor));
  }
  if (major == GSS_S_COMPLETE) {
    step.complete = true;
    s.complete = true;
    gss_buffer_desc shown{0, nullptr};
    OM_uint32 ignored = 0;
    if (!GSS_ERROR(gss.display_name(&ignored, src, &shown, nullptr))) {
      client_principal_ = hadoop::TakeBuffer(gss, &shown);
    }
  }
  if (src != GSS_C_NO_NAME) {
    OM_uint32 ignored = 0;
    gss.release_name(&ignored, &src);
  }
  return step;
}

Result<std::string> GssAcceptor::Wrap(std::string_view plain, bool conf) {
  State& s = *state_;
  if (!s.complete) return Status::FailedPrecondition("GSSAPI wrap before the context is established");
  OM_uint32 minor = 0;
  gss_buffer_desc in{plain.size(), const_cast<char*>(plain.data())};
  gss_buffer_desc out{0, nullptr};
  int conf_state = 0;
  OM_uint32 major = s.gss->wrap(&minor, s.context, conf ? 1 : 0, GSS_C_QOP_DEFAULT, &in, &conf_state, &out);
  if (GSS_ERROR(major)) return Status::Internal("GSSAPI wrap: " + hadoop::GssapiError(*s.gss, major, minor));
  if (conf && !conf_state) {
    OM_uint32 ignored = 0;
    s.gss->release_buffer(&ignored, &out);
    return Status::Internal("GSSAPI wrap: the context cannot seal (no confidentiality)");
  }
  return hadoop::TakeBuffer(*s.gss, &out);
}

Result<std::string> GssAcceptor::Unwrap(std::string_view token, bool* conf_used) {
  State& s = *state_;
  if (!s.complete) return Status::FailedPrecondition("GSSAPI unwrap before the context is established");
  OM_uint32 minor = 0;
  gss_buffer_desc in{token.size(), const_cast<char*>(token.data())};
  gss_buffer_desc out{0, nullptr};
  int conf_state = 0;
  OM_uint32 major = s.gss->unwrap(&minor, s.context, &in, &out, &conf_state, nullptr);
  if (GSS_ERROR(major)) {
    return Status::Unauthenticated("GSSAPI unwrap: " + hadoop::GssapiError(*s.gss, major, minor));
  }
  if (conf_used) *conf_used = conf_state != 0;
  return hadoop::TakeBuffer(*s.gss, &out);
}

}  // namespace loom::hadoop::testing
