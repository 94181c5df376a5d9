// The set-up of a connection to the test IPC server (a Session of ipc_server_internal.h):
// the preamble, SASL (TOKEN/DIGEST-MD5 against the owner's passwords, KERBEROS/GSSAPI with a
// service keytab, SIMPLE where allowed) and the connection context, as Hadoop 3.3.6's server
// answers them (negative/01-04, dshell/04, kerberos/rpc/).

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hadoop/testing/gss_acceptor.h"
#include "hadoop/testing/ipc_server_internal.h"
#include "hadoop/wire/ipc_frame.h"
#include "hadoop/wire/sasl_digest.h"
#include "hadoop/wire/sasl_gssapi.h"
#include "hadoop/wire/sasl_layer.h"

namespace loom::hadoop::testing::ipc_internal {

namespace {

// The RFC 4752 security layer over the acceptor's context: gss_wrap with confidentiality for
// privacy, integrity only otherwise. On a privacy connection a token that is not sealed is
// refused (the double checks the QOP the client agreed to).
class GssLayer : public hadoop::SaslSecurityLayer {
 public:
  GssLayer(GssAcceptor* acceptor, bool privacy) : acceptor_(acceptor), privacy_(privacy) {}
  Result<std::string> Wrap(std::string_view plain) override { return acceptor_->Wrap(plain, privacy_); }
  Result<std::string> Unwrap(std::string_view token) override {
    bool sealed = false;
    LOOM_ASSIGN_OR_RETURN(std::string plain, acceptor_->Unwrap(token, &sealed));
    if (privacy_ && !sealed) return Status::Unauthenticated("GSSAPI: a WRAP token not sealed on a privacy connection");
    return plain;
  }
  std::string_view Qop() const override { return privacy_ ? "auth-conf" : "auth-int"; }

 private:
  GssAcceptor* acceptor_;
  bool privacy_;
};

}  // namespace

// ---- connection set-up ---------------------------------------------------------------------

// Preamble, SASL (or SIMPLE) and the connection context. False: the connection is over.
bool Session::Handshake() {
  char pre[7];
  if (!ReadExact(pre, sizeof(pre))) return false;
  if (std::string_view(pre, 4) != "hrpc") return false;  // not IPC at all: just close, as Hadoop does
  uint8_t version = static_cast<uint8_t>(pre[4]);
  if (version != hadoop::kIpcVersion) {
    SendError(hadoop::kAuthFailedCallId, "", -1,
              Fatal("org.apache.hadoop.ipc.RPC$VersionMismatch",
                    "Server IPC version 9 cannot communicate with client version " + std::to_string(version),
                    RpcResponseHeaderProto::FATAL_VERSION_MISMATCH));
    return false;
  }
  uint8_t auth = static_cast<uint8_t>(pre[6]);
  if (auth == static_cast<uint8_t>(hadoop::AuthProtocol::kNone)) {
    if (!simple_allowed()) {
      // negative/01: callId -1, FATAL_UNAUTHORIZED, empty clientId, retryCount -1, then FIN.
      SendError(hadoop::kAuthFailedCallId, "", -1,
                Fatal(kAccessControlException, "SIMPLE authentication is not enabled.  Available:" + AvailableMethods()));
      return false;
    }
    return ReadContext();
  }
  if (auth != static_cast<uint8_t>(hadoop::AuthProtocol::kSasl)) {
    SendError(hadoop::kAuthFailedCallId, "", -1,
              Fatal(kIpcException, "Unknown auth protocol:" + std::to_string(static_cast<int8_t>(auth))));
    return false;
  }
  return Sasl() && ReadContext();
}

// The SASL exchange; true once authenticated (TOKEN) or switched to SIMPLE.
bool Session::Sasl() {
  bool sent_negotiate = false;
  std::string nonce;
  while (true) {
    std::optional<std::string> frame = ReadFrame();
    if (!frame) return false;
    RpcRequestHeaderProto header;
    RpcSaslProto msg;
    Result<std::vector<std::string_view>> parts = hadoop::SplitDelimited(*frame);
    if (!parts.ok() || parts->size() < 2 || !header.ParseFromArray((*parts)[0].data(), (*parts)[0].size())) {
      SendError(hadoop::kAuthFailedCallId, "", -1,
                Fatal(kIpcException, "malformed SASL frame", RpcResponseHeaderProto::FATAL_INVALID_RPC_HEADER));
      return false;
    }
    if (header.callid() != hadoop::kSaslCallId) {
      SendError(header.callid(), header.clientid(), header.retrycount(),
                Fatal(kIpcException,
                      header.callid() == hadoop::kConnectionContextCallId
                          ? "Connection header sent during SASL negotiation"
                          : "Connection context not established",
                      RpcResponseHeaderProto::FATAL_INVALID_RPC_HEADER));
      return false;
    }
    if (!msg.ParseFromArray((*parts)[1].data(), (*parts)[1].size())) {
      SendSaslFailure(Fatal(kSaslException, "malformed RpcSaslProto"));
      return false;
    }
    if (msg.state() == RpcSaslProto::NEGOTIATE && simple_allowed() && !token_allowed()) {
      RpcSaslProto success;  // a SIMPLE-only server's answer: "switch to simple"
      success.set_state(RpcSaslProto::SUCCESS);
      SendSaslReply(success);
      return true;
    }
    if (msg.state() == RpcSaslProto::NEGOTIATE) {
      nonce = options_.next_nonce();
      SendSaslReply(NegotiateReply(nonce));
      sent_negotiate = true;
      continue;
    }
    if (msg.state() != RpcSaslProto::INITIATE) {
      SendSaslFailure(Fatal(kSaslException, "Client sent unsupported SASL state " +
                                                RpcSaslProto::SaslState_Name(msg.state())));
      return false;
    }
    if (msg.auths_size() != 1) {
      SendSaslFailure(Fatal(kSaslException, "Client mechanism is malformed"));
      return false;
    }
    const RpcSaslProto::SaslAuth& chosen = msg.auths(0);
    bool is_token = token_allowed() && chosen.SerializeAsString() == TokenAuth().SerializeAsString();
    bool is_simple = simple_allowed() && chosen.SerializeAsString() == SimpleAuth().SerializeAsString();
    bool is_kerberos = kerberos() && chosen.SerializeAsString() == KerberosAuth().SerializeAsString();
    if (!is_token && !is_simple && !is_kerberos) {
      if (!sent_negotiate) {  // Hadoop answers an unexpected INITIATE with its offer
        nonce = options_.next_nonce();
        SendSaslReply(NegotiateReply(nonce));
        sent_negotiate = true;
        continue;
      }
      SendSaslFailure(Fatal(kAccessControlException,
                            chosen.method() + " authentication is not enabled.  Available:" + AvailableMethods()));
      return false;
    }
    if (is_simple) return true;  // recorded in dshell/04: no reply, the context follows
    if (is_kerberos) return AcceptGssapi(msg.token());
    if (!options_.separate_challenge) return VerifyDigest(msg.token(), nonce);
    if (!msg.token().empty()) {
      SendSaslFailure(Fatal(kSaslException, "DIGEST-MD5: the INITIATE carries a token before the challenge"));
      return false;
    }
    RpcSaslProto challenge;
    challenge.set_state(RpcSaslProto::CHALLENGE);
    challenge.set_token(hadoop::MakeDigestChallenge(nonce, qops_));
    SendSaslReply(challenge);
    std::optional<RpcSaslProto> response = ReadSaslResponse();
    return response && VerifyDigest(response->token(), nonce);
  }
}

std::string Session::AvailableMethods() const {
  std::vector<std::string> methods;
  if (token_allowed()) methods.push_back("TOKEN");
  if (kerberos()) methods.push_back("KERBEROS");
  if (simple_allowed()) methods.push_back("SIMPLE");
  std::string out = "[";
  for (size_t i = 0; i < methods.size(); ++i) out += (i ? ", " : "") + methods[i];
  return out + "]";
}

// The next SASL RESPONSE of the GSSAPI exchange; nullopt (after a FATAL reply where Hadoop
// sends one) when the client sent anything else or went away.
std::optional<RpcSaslProto> Session::ReadSaslResponse() {
  std::optional<std::string> frame = ReadFrame();
  if (!frame) return std::nullopt;
  RpcRequestHeaderProto header;
  RpcSaslProto msg;
  Result<std::vector<std::string_view>> parts = hadoop::SplitDelimited(*frame);
  if (!parts.ok() || parts->size() < 2 || !header.ParseFromArray((*parts)[0].data(), (*parts)[0].size()) ||
      header.callid() != hadoop::kSaslCallId || !msg.ParseFromArray((*parts)[1].data(), (*parts)[1].size())) {
    SendSaslFailure(Fatal(kSaslException, "malformed SASL RESPONSE"));
    return std::nullopt;
  }
  if (msg.state() != RpcSaslProto::RESPONSE) {
    SendSaslFailure(Fatal(kSaslException,
                          "Client sent unsupported SASL state " + RpcSaslProto::SaslState_Name(msg.state())));
    return std::nullopt;
  }
  return msg;
}

// SASL GSSAPI as Hadoop's server (Java's GssKrb5Server) runs it (K4.3-K4.8): the AP-REQ is
// answered with a CHALLENGE carrying the AP-REP, the client's empty RESPONSE with the wrapped
// security-layer offer, the client's wrapped choice with SUCCESS (no token).
bool Session::AcceptGssapi(const std::string& first_token) {
  auto gss_failure = [this](const std::string& why) {
    SendSaslFailure(Fatal(kSaslException, "GSS initiate failed [Caused by GSSException: " + why + "]"));
    return false;
  };
  Result<std::unique_ptr<GssAcceptor>> acceptor =
      GssAcceptor::Create(options_.kerberos_keytab, options_.kerberos_principal);
  if (!acceptor.ok()) return gss_failure(acceptor.status().message());
  acceptor_ = std::move(*acceptor);
  std::string input = first_token;
  for (;;) {
    Result<GssAcceptor::Step> step = acceptor_->Accept(input);
    if (!step.ok()) {
      Drop(step.status().message());
      return gss_failure(step.status().message());
    }
    if (step->output.empty() && step->complete) break;  // no mutual authentication: offer at once
    RpcSaslProto challenge;
    challenge.set_state(RpcSaslProto::CHALLENGE);
    challenge.set_token(step->output);
    SendSaslReply(challenge);
    std::optional<RpcSaslProto> response = ReadSaslResponse();
    if (!response) return false;
    if (step->complete) break;  // K4.5: the client's RESPONSE after the AP-REP is empty
    input = response->token();
  }
  // K4.6: the layers hadoop.rpc.protection allows, max buffer 65536, signed not sealed.
  uint8_t offered = 0;
  for (const std::string& q : qops_) {
    offered |= q == "auth-conf" ? hadoop::kGssapiLayerPrivacy
               : q == "auth-int" ? hadoop::kGssapiLayerIntegrity
                                 : hadoop::kGssapiLayerNone;
  }
  Result<std::string> offer = acceptor_->Wrap(hadoop::BuildGssapiLayerMessage(offered, hadoop::kGssapiMaxBuffer), false);
  if (!offer.ok()) return gss_failure(offer.status().message());
  RpcSaslProto challenge;
  challenge.set_state(RpcSaslProto::CHALLENGE);
  challenge.set_token(*offer);
  SendSaslReply(challenge);
  std::optional<RpcSaslProto> response = ReadSaslResponse();
  if (!response) return false;
  Result<std::string> plain = acceptor_->Unwrap(response->token(), nullptr);
  if (!plain.ok()) {
    SendSaslFailure(Fatal(kSaslException, "Problem unwrapping handshake [Caused by " + plain.status().message() + "]"));
    return false;
  }
  Result<hadoop::GssapiLayerMessage> choice = hadoop::ParseGssapiLayerMessage(*plain);
  if (!choice.ok()) {
    SendSaslFailure(Fatal(kSaslException, "Final handshake message is malformed: " + choice.status().message()));
    return false;
  }
  uint8_t chosen = choice->layers;
  bool single = chosen == hadoop::kGssapiLayerNone || chosen == hadoop::kGssapiLayerIntegrity ||
                chosen == hadoop::kGssapiLayerPrivacy;
  if (!single || (chosen & offered) == 0) {
    // Java's GssKrb5Server words; Hadoop sends them FATAL and closes.
    SendSaslFailure(Fatal(kSaslException, "Client selected unsupported protection: " + std::to_string(chosen)));
    return false;
  }
  RpcSaslProto success;
  success.set_state(RpcSaslProto::SUCCESS);
  SendSaslReply(success);
  info_.kerberos_principal = acceptor_->client_principal();
  info_.user = info_.kerberos_principal;
  if (chosen != hadoop::kGssapiLayerNone) {
    layer_ = std::make_unique<GssLayer>(acceptor_.get(), chosen == hadoop::kGssapiLayerPrivacy);
  }
  return true;
}

bool Session::VerifyDigest(const std::string& client_token, const std::string& nonce) {
  Result<std::vector<std::pair<std::string, std::string>>> directives = hadoop::ParseDirectives(client_token);
  if (!directives.ok()) {
    SendSaslFailure(Fatal(kSaslException, "DIGEST-MD5: digest response format violation. " +
                                              directives.status().message()));
    return false;
  }
  std::string user;
  for (const auto& [k, v] : *directives) {
    if (k == "username") user = v;
  }
  Result<std::string> identifier = hadoop::Base64Decode(user);
  if (!identifier.ok() || identifier->empty()) {
    SendSaslFailure(Fatal(kInvalidToken, "Can't de-serialize tokenIdentifier"));
    return false;
  }
  PasswordLookup password = options_.password_for ? options_.password_for(*identifier)
                                                  : PasswordLookup(RpcError{kInvalidToken, "no token secrets here"});
  if (auto* e = std::get_if<RpcError>(&password)) {
    SendSaslFailure(Fatal(e->exception_class, e->message));
    return false;
  }
  Result<hadoop::DigestVerified> verified =
      hadoop::DigestVerifyWithPassword(client_token, nonce, *identifier, std::get<std::string>(password), qops_);
  if (!verified.ok()) {
    SendSaslFailure(Fatal(kSaslException, verified.status().message()));
    return false;
  }
  RpcSaslProto success;
  success.set_state(RpcSaslProto::SUCCESS);
  success.set_token(verified->success_token);
  SendSaslReply(success);
  // The layer starts after SUCCESS: that reply itself travels in clear.
  Result<std::unique_ptr<hadoop::SaslSecurityLayer>> layer =
      hadoop::NewDigestSecurityLayer(verified->qop, verified->cipher, verified->ha1, hadoop::DigestSide::kServer);
  if (!layer.ok()) return false;
  layer_ = std::move(*layer);
  info_.token_auth = true;
  info_.token_identifier = *identifier;
  info_.user = options_.token_user ? options_.token_user(*identifier) : std::string();
  return true;
}

RpcSaslProto::SaslAuth Session::TokenAuth() {
  RpcSaslProto::SaslAuth a;
  a.set_method("TOKEN");
  a.set_mechanism("DIGEST-MD5");
  a.set_protocol("");  // present though empty (1a 00), as recorded
  a.set_serverid("default");
  return a;
}

// {KERBEROS, GSSAPI, protocol "rm", serverId "localhost"} for "rm/localhost@LOOM.TEST" (K1).
RpcSaslProto::SaslAuth Session::KerberosAuth() const {
  const std::string& p = options_.kerberos_principal;
  size_t slash = p.find('/');
  size_t at = p.find('@');
  RpcSaslProto::SaslAuth a;
  a.set_method("KERBEROS");
  a.set_mechanism("GSSAPI");
  a.set_protocol(p.substr(0, std::min(slash, at)));
  a.set_serverid(slash == std::string::npos ? std::string() : p.substr(slash + 1, at == std::string::npos ? std::string::npos : at - slash - 1));
  return a;
}

RpcSaslProto::SaslAuth Session::SimpleAuth() {
  RpcSaslProto::SaslAuth a;
  a.set_method("SIMPLE");
  a.set_mechanism("");
  return a;
}

RpcSaslProto Session::NegotiateReply(const std::string& nonce) const {
  RpcSaslProto reply;
  reply.set_state(RpcSaslProto::NEGOTIATE);
  if (token_allowed()) {
    RpcSaslProto::SaslAuth* token = reply.add_auths();
    *token = TokenAuth();
    if (!options_.separate_challenge) token->set_challenge(hadoop::MakeDigestChallenge(nonce, qops_));
  }
  if (kerberos()) *reply.add_auths() = KerberosAuth();
  if (simple_allowed()) *reply.add_auths() = SimpleAuth();
  return reply;
}

bool Session::ReadContext() {
  std::optional<std::string> frame = ReadPlainFrame();
  if (!frame) return false;
  RpcRequestHeaderProto header;
  IpcConnectionContextProto context;
  Result<std::vector<std::string_view>> parts = hadoop::SplitDelimited(*frame);
  if (!parts.ok() || parts->empty() || !header.ParseFromArray((*parts)[0].data(), (*parts)[0].size())) {
    SendError(hadoop::kAuthFailedCallId, "", -1,
              Fatal(kIpcException, "malformed RPC header", RpcResponseHeaderProto::FATAL_INVALID_RPC_HEADER));
    return false;
  }
  if (header.callid() != hadoop::kConnectionContextCallId || parts->size() < 2 ||
      !context.ParseFromArray((*parts)[1].data(), (*parts)[1].size())) {
    SendError(header.callid(), header.clientid(), header.retrycount(),
              Fatal(kIpcException, "Connection context not established",
                    RpcResponseHeaderProto::FATAL_INVALID_RPC_HEADER));
    return false;
  }
  info_.protocol = context.protocol();
  const std::string& claimed = context.userinfo().effectiveuser();
  if (!info_.kerberos_principal.empty()) {
    // K4.11: a Kerberos client names its full principal. Another name asks the server to
    // impersonate it, which Hadoop refuses unless hadoop.proxyuser.* allows it (never here).
    if (!claimed.empty() && claimed != info_.kerberos_principal) {
      SendError(header.callid(), header.clientid(), header.retrycount(),
                Fatal("org.apache.hadoop.security.authorize.AuthorizationException",
                      "User: " + info_.kerberos_principal + " is not allowed to impersonate " + claimed));
      return false;
    }
  } else if (!info_.token_auth) {
    if (claimed.empty()) {
      SendError(header.callid(), header.clientid(), header.retrycount(),
                Fatal(kAccessControlException, "SIMPLE authentication needs userInfo.effectiveUser"));
      return false;
    }
    info_.user = claimed;
  } else if (!claimed.empty() && claimed != info_.user) {
    SendError(header.callid(), header.clientid(), header.retrycount(),
              Fatal(kAccessControlException, "Authenticated user (" + info_.user +
                                                 ") doesn't match what the client claims to be (" + claimed + ")"));
    return false;
  }
  return true;
}

}  // namespace loom::hadoop::testing::ipc_internal
