#include "hadoop/wire/sasl_gssapi.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cctype>

#include "core/host_resolver.h"
#include "core/strings.h"
#include "hadoop/wire/gssapi_library.h"

namespace loom::hadoop {

namespace {

// What Java's GSSAPI client asks for (K4.3: checksum flags 0x3e).
constexpr OM_uint32 kContextFlags =
    GSS_C_MUTUAL_FLAG | GSS_C_REPLAY_FLAG | GSS_C_SEQUENCE_FLAG | GSS_C_CONF_FLAG | GSS_C_INTEG_FLAG;

std::string LayerNames(uint8_t layers) {
  std::vector<std::string> names;
  if (layers & kGssapiLayerNone) names.push_back("authentication");
  if (layers & kGssapiLayerIntegrity) names.push_back("integrity");
  if (layers & kGssapiLayerPrivacy) names.push_back("privacy");
  return names.empty() ? "none" : Join(names, ",");
}

// `text` as MIT names it after canonicalization ("rm/localhost" -> "rm/localhost@LOOM.TEST").
Result<std::string> CanonicalPrincipal(const GssapiLibrary& gss, const std::string& text) {
  gss_buffer_desc in{text.size(), const_cast<char*>(text.data())};
  gss_name_t name = GSS_C_NO_NAME;
  gss_name_t canon = GSS_C_NO_NAME;
  OM_uint32 minor = 0;
  OM_uint32 major = gss.import_name(&minor, &in, gss.krb5_principal_name, &name);
  if (GSS_ERROR(major)) return Status::InvalidArgument("'" + text + "' is not a Kerberos principal (" + GssapiError(gss, major, minor) + ")");
  major = gss.canonicalize_name(&minor, name, gss.krb5_mech, &canon);
  OM_uint32 ignored = 0;
  gss.release_name(&ignored, &name);
  if (GSS_ERROR(major)) return Status::InvalidArgument("'" + text + "' is not a Kerberos principal (" + GssapiError(gss, major, minor) + ")");
  gss_buffer_desc shown{0, nullptr};
  major = gss.display_name(&minor, canon, &shown, nullptr);
  gss.release_name(&ignored, &canon);
  if (GSS_ERROR(major)) return Status::InvalidArgument("'" + text + "' is not a Kerberos principal (" + GssapiError(gss, major, minor) + ")");
  return TakeBuffer(gss, &shown);
}

// gss_wrap with or without encryption.
Result<std::string> WrapWith(const GssapiLibrary& gss, gss_ctx_id_t context, bool privacy, std::string_view plain) {
  gss_buffer_desc in{plain.size(), const_cast<char*>(plain.data())};
  gss_buffer_desc out{0, nullptr};
  OM_uint32 minor = 0;
  int conf_state = 0;
  OM_uint32 major = gss.wrap(&minor, context, privacy ? 1 : 0, GSS_C_QOP_DEFAULT, &in, &conf_state, &out);
  if (GSS_ERROR(major)) return Status::Unauthenticated("GSSAPI wrap: " + GssapiError(gss, major, minor));
  std::string token = TakeBuffer(gss, &out);
  if (privacy && !conf_state) return Status::Unauthenticated("GSSAPI wrap: the context cannot encrypt (privacy)");
  return token;
}

// gss_unwrap, refusing tokens out of sequence and, under privacy, tokens not encrypted.
Result<std::string> UnwrapWith(const GssapiLibrary& gss, gss_ctx_id_t context, bool privacy, std::string_view token) {
  gss_buffer_desc in{token.size(), const_cast<char*>(token.data())};
  gss_buffer_desc out{0, nullptr};
  OM_uint32 minor = 0;
  int conf_state = 0;
  OM_uint32 major = gss.unwrap(&minor, context, &in, &out, &conf_state, nullptr);
  if (GSS_ERROR(major)) return Status::Unauthenticated("GSSAPI unwrap: " + GssapiError(gss, major, minor));
  std::string plain = TakeBuffer(gss, &out);
  // Replayed, duplicate or out-of-order tokens are supplementary bits, not errors, to GSSAPI.
  if (major & (GSS_S_DUPLICATE_TOKEN | GSS_S_OLD_TOKEN | GSS_S_UNSEQ_TOKEN | GSS_S_GAP_TOKEN)) {
    return Status::Unauthenticated("GSSAPI unwrap: token out of sequence (replayed or lost)");
  }
  if (privacy && !conf_state) return Status::Unauthenticated("GSSAPI unwrap: a token without encryption under privacy");
  return plain;
}

class GssapiLayer : public SaslSecurityLayer {
 public:
  GssapiLayer(const GssapiLibrary* gss, gss_ctx_id_t context, bool privacy)
      : gss_(gss), context_(context), privacy_(privacy) {}
  ~GssapiLayer() override {
    OM_uint32 minor = 0;
    if (context_ != GSS_C_NO_CONTEXT) gss_->delete_sec_context(&minor, &context_, GSS_C_NO_BUFFER);
  }
  Result<std::string> Wrap(std::string_view plain) override { return WrapWith(*gss_, context_, privacy_, plain); }
  Result<std::string> Unwrap(std::string_view token) override { return UnwrapWith(*gss_, context_, privacy_, token); }
  std::string_view Qop() const override { return privacy_ ? "auth-conf" : "auth-int"; }

 private:
  const GssapiLibrary* gss_;
  gss_ctx_id_t context_;
  bool privacy_;
};

}  // namespace

Result<GssapiLayerMessage> ParseGssapiLayerMessage(std::string_view plain) {
  if (plain.size() < 4) {
    return Status(StatusCode::kDataLoss, "GSSAPI security layer message of " + std::to_string(plain.size()) +
                                             " bytes (RFC 4752 needs 4)");
  }
  GssapiLayerMessage m;
  m.layers = static_cast<uint8_t>(plain[0]);
  m.max_buffer = (static_cast<uint32_t>(static_cast<uint8_t>(plain[1])) << 16) |
                 (static_cast<uint32_t>(static_cast<uint8_t>(plain[2])) << 8) | static_cast<uint8_t>(plain[3]);
  m.authzid = std::string(plain.substr(4));
  return m;
}

std::string BuildGssapiLayerMessage(uint8_t layer, uint32_t max_buffer) {
  std::string out(4, '\0');
  out[0] = static_cast<char>(layer);
  out[1] = static_cast<char>((max_buffer >> 16) & 0xff);
  out[2] = static_cast<char>((max_buffer >> 8) & 0xff);
  out[3] = static_cast<char>(max_buffer & 0xff);
  return out;
}

Result<uint8_t> ChooseGssapiLayer(uint8_t offered, std::string_view rpc_protection) {
  std::vector<uint8_t> wanted;
  for (const std::string& raw : Split(std::string(rpc_protection), ',')) {
    std::string name = ToLower(Trim(raw));
    if (name.empty()) continue;
    if (name == "authentication") {
      wanted.push_back(kGssapiLayerNone);
    } else if (name == "integrity") {
      wanted.push_back(kGssapiLayerIntegrity);
    } else if (name == "privacy") {
      wanted.push_back(kGssapiLayerPrivacy);
    } else {
      return Status::InvalidArgument("hadoop.rpc.protection=" + std::string(rpc_protection) + ": '" + name +
                                     "' is not authentication, integrity or privacy");
    }
  }
  if (wanted.empty()) wanted.push_back(kGssapiLayerNone);  // Hadoop's default
  for (uint8_t w : wanted) {
    if (offered & w) return w;
  }
  return Status::InvalidArgument("the server protects RPC with " + LayerNames(offered) +
                                 " but hadoop.rpc.protection=" + std::string(rpc_protection) +
                                 " here: set it as the cluster does");
}

std::string ExpandHostInPrincipal(std::string_view pattern, std::string_view host) {
  // Only a second component that is exactly _HOST is replaced: "rm/_HOST@REALM".
  size_t slash = pattern.find('/');
  if (slash == std::string_view::npos) return std::string(pattern);
  size_t at = pattern.find('@', slash);
  std::string_view instance = pattern.substr(slash + 1, at == std::string_view::npos ? std::string_view::npos : at - slash - 1);
  if (instance != "_HOST") return std::string(pattern);
  std::string out(pattern.substr(0, slash + 1));
  out += ToLower(std::string(host));
  if (at != std::string_view::npos) out += pattern.substr(at);
  return out;
}

std::string CanonicalHostName(const std::string& host) {
  Result<std::string> ip = ResolveHostToIp(host);
  Result<std::string> name = ip.ok() ? ReverseResolve(*ip) : Result<std::string>(ip.status());
  return name.ok() ? *name : ToLower(host);
}

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

std::string ServicePrincipalHost(const std::string& host) {
  return IsIpLiteral(host) ? CanonicalHostName(host) : ToLower(host);
}

std::unique_ptr<SaslSecurityLayer> MakeGssapiSecurityLayer(gss_ctx_id_t context, bool privacy) {
  auto gss = Gssapi();
  if (!gss.ok()) return nullptr;  // a context exists only if the library loaded
  return std::make_unique<GssapiLayer>(*gss, context, privacy);
}

Result<std::unique_ptr<GssapiSaslClient>> GssapiSaslClient::Start(Options options, const RpcSaslProto::SaslAuth& offer) {
  LOOM_ASSIGN_OR_RETURN(const GssapiLibrary* gss, Gssapi());
  if (!options.login) return Status::Unauthenticated(options.server + ": no Kerberos login");
  if (offer.protocol().empty() || offer.serverid().empty()) {
    return Status::Unauthenticated(options.server + " offers KERBEROS without a service principal (protocol '" +
                                   offer.protocol() + "', serverId '" + offer.serverid() + "')");
  }
  if (options.principal_conf.empty()) {
    return Status::InvalidArgument(options.server + " offers Kerberos as " + offer.protocol() + "/" + offer.serverid() +
                                   ", but " + options.principal_key +
                                   " is not set: set it to the server's principal (e.g. " + offer.protocol() +
                                   "/_HOST@REALM)");
  }
  std::unique_ptr<GssapiSaslClient> c(new GssapiSaslClient());
  c->options_ = std::move(options);
  c->offer_ = offer;
  const std::string offered = offer.protocol() + "/" + offer.serverid();
  const std::string expanded = ExpandHostInPrincipal(c->options_.principal_conf, c->options_.server_host);
  LOOM_ASSIGN_OR_RETURN(std::string server, CanonicalPrincipal(*gss, offered));
  auto configured = CanonicalPrincipal(*gss, expanded);
  if (!configured.ok()) {
    return Status::InvalidArgument(c->options_.principal_key + "=" + c->options_.principal_conf + ": " +
                                   configured.status().message());
  }
  if (server != *configured) {
    std::string conf_text = c->options_.principal_key + "=" + c->options_.principal_conf;
    if (expanded != c->options_.principal_conf) conf_text += " (" + expanded + " for host " + c->options_.server_host + ")";
    return Status::InvalidArgument("wrong Kerberos service principal: " + c->options_.server + " is " + server +
                                   ", but " + conf_text + " names another; refusing to authenticate to it");
  }
  c->server_principal_ = server;
  gss_buffer_desc in{server.size(), server.data()};
  gss_name_t target = GSS_C_NO_NAME;
  OM_uint32 minor = 0;
  OM_uint32 major = gss->import_name(&minor, &in, gss->krb5_principal_name, &target);
  if (GSS_ERROR(major)) return Status::Unauthenticated(server + ": " + GssapiError(*gss, major, minor));
  c->target_ = target;
  return c;
}

GssapiSaslClient::~GssapiSaslClient() {
  auto gss = Gssapi();
  if (!gss.ok()) return;
  OM_uint32 minor = 0;
  if (context_ != GSS_C_NO_CONTEXT) (*gss)->delete_sec_context(&minor, &context_, GSS_C_NO_BUFFER);
  if (target_) {
    gss_name_t n = static_cast<gss_name_t>(target_);
    (*gss)->release_name(&minor, &n);
  }
}

// One gss_init_sec_context step; the output token (empty once the context is complete).
Result<std::string> GssapiSaslClient::Step(const std::string& input) {
  LOOM_ASSIGN_OR_RETURN(const GssapiLibrary* gss, Gssapi());
  gss_buffer_desc in{input.size(), const_cast<char*>(input.data())};
  gss_buffer_desc out{0, nullptr};
  OM_uint32 minor = 0;
  OM_uint32 ret_flags = 0;
  OM_uint32 major = gss->init_sec_context(&minor, options_.login->credential(), &context_,
                                          static_cast<gss_name_t>(target_), gss->krb5_mech, kContextFlags, 0,
                                          GSS_C_NO_CHANNEL_BINDINGS, context_ == GSS_C_NO_CONTEXT ? GSS_C_NO_BUFFER : &in,
                                          nullptr, &out, &ret_flags, nullptr);
  std::string token = TakeBuffer(*gss, &out);
  if (GSS_ERROR(major)) {
    std::string why = GssapiError(*gss, major, minor);
    if (major == GSS_S_CREDENTIALS_EXPIRED || GSS_ERROR(major) == GSS_S_NO_CRED) {
      return Status::InvalidArgument("Kerberos credentials of " + options_.login->principal() + " for " +
                                     server_principal_ + ": " + why + " (run kinit again)");
    }
    return Status::Unauthenticated("Kerberos authentication to " + options_.server + " as " +
                                   options_.login->principal() + " (service " + server_principal_ + "): " + why);
  }
  established_ = major == GSS_S_COMPLETE;
  if (established_ && (ret_flags & (GSS_C_INTEG_FLAG | GSS_C_MUTUAL_FLAG)) != (GSS_C_INTEG_FLAG | GSS_C_MUTUAL_FLAG)) {
    return Status::Unauthenticated(options_.server + ": the GSSAPI context lacks mutual authentication or integrity");
  }
  return token;
}

const RpcSaslProto::SaslAuth* FindKerberosOffer(const RpcSaslProto& negotiate) {
  for (const auto& auth : negotiate.auths()) {
    if (auth.method() == "KERBEROS" && auth.mechanism() == "GSSAPI") return &auth;
  }
  return nullptr;
}

RpcSaslProto GssapiInitiate(const RpcSaslProto::SaslAuth& offer, std::string token) {
  RpcSaslProto initiate;
  initiate.set_state(RpcSaslProto::INITIATE);
  initiate.set_token(std::move(token));
  auto* echo = initiate.add_auths();
  *echo = offer;
  echo->clear_challenge();
  return initiate;
}

RpcSaslProto GssapiResponse(std::string token) {
  RpcSaslProto response;
  response.set_state(RpcSaslProto::RESPONSE);
  response.set_token(std::move(token));
  return response;
}

Result<RpcSaslProto> GssapiSaslClient::Initiate() {
  LOOM_ASSIGN_OR_RETURN(std::string token, Step(""));
  return GssapiInitiate(offer_, std::move(token));
}

Result<RpcSaslProto> GssapiSaslClient::Respond(const std::string& challenge) {
  if (!established_) {
    // The AP-REP: completes the context on our side. SASL still needs the (empty) reply (K5.1).
    LOOM_ASSIGN_OR_RETURN(std::string token, Step(challenge));
    return GssapiResponse(std::move(token));
  }
  if (chosen_layer_ != 0) return Status::Unauthenticated(options_.server + ": a third GSSAPI CHALLENGE");
  LOOM_ASSIGN_OR_RETURN(const GssapiLibrary* gss, Gssapi());
  // The layer offer and our choice are wrapped without encryption (K4.6-7).
  auto plain = UnwrapWith(*gss, context_, false, challenge);
  if (!plain.ok()) return plain.status().WithContext(options_.server + ": the security layer offer");
  auto offer = ParseGssapiLayerMessage(*plain);
  if (!offer.ok()) return offer.status().WithContext(options_.server);
  auto layer = ChooseGssapiLayer(offer->layers, options_.rpc_protection);
  if (!layer.ok()) return Status::InvalidArgument(options_.server + ": " + layer.status().message());
  chosen_layer_ = *layer;
  auto token = WrapWith(*gss, context_, false, BuildGssapiLayerMessage(chosen_layer_, kGssapiMaxBuffer));
  if (!token.ok()) return token.status().WithContext(options_.server);
  return GssapiResponse(std::move(*token));
}

Result<std::unique_ptr<SaslSecurityLayer>> GssapiSaslClient::Finish() {
  if (!established_ || chosen_layer_ == 0) {
    return Status::Unauthenticated(options_.server + ": SASL SUCCESS before the GSSAPI exchange was complete");
  }
  if (chosen_layer_ == kGssapiLayerNone) return std::unique_ptr<SaslSecurityLayer>();
  gss_ctx_id_t context = context_;
  context_ = GSS_C_NO_CONTEXT;
  return MakeGssapiSecurityLayer(context, chosen_layer_ == kGssapiLayerPrivacy);
}

}  // namespace loom::hadoop
