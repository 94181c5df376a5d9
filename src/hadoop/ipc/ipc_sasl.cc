// IpcClient's SASL handshakes, as Java's SaslRpcClient runs them: TOKEN (DIGEST-MD5) and
// KERBEROS (GSSAPI), up to SUCCESS and the security layer they negotiate.
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

#include "hadoop/ipc/ipc_client.h"
#include "hadoop/ipc/ipc_client_internal.h"
#include "hadoop/wire/ipc_frame.h"
#include "hadoop/wire/sasl_digest.h"
#include "hadoop/wire/sasl_gssapi.h"
#include "hadoop/wire/sasl_layer.h"

namespace loom::hadoop {

using ipc_internal::Clock;
using ipc_internal::KerberosPrincipalKey;
using ipc_internal::Opened;
using ipc_internal::ParseServerFrame;
using ipc_internal::ReadFrame;
using ipc_internal::ServerFrame;
using ipc_internal::TestCnonce;

namespace {

std::string SaslFrame(const RpcSaslProto& sasl) {
  RpcRequestHeaderProto header = MakeRequestHeader(kSaslCallId, "", -1);
  return EncodeFrame({&header, &sasl});
}

const char* SaslStateName(RpcSaslProto::SaslState s) {
  switch (s) {
    case RpcSaslProto::SUCCESS: return "SUCCESS";
    case RpcSaslProto::NEGOTIATE: return "NEGOTIATE";
    case RpcSaslProto::INITIATE: return "INITIATE";
    case RpcSaslProto::CHALLENGE: return "CHALLENGE";
    case RpcSaslProto::RESPONSE: return "RESPONSE";
    case RpcSaslProto::WRAP: return "WRAP";
  }
  return "?";
}

std::mutex rpc_protection_mu;
std::string process_rpc_protection;  // SetProcessRpcProtection's

std::string DefaultRpcProtection() {
  std::lock_guard lock(rpc_protection_mu);
  return process_rpc_protection;
}

}  // namespace

void SetProcessRpcProtection(std::string rpc_protection) {
  std::lock_guard lock(rpc_protection_mu);
  process_rpc_protection = std::move(rpc_protection);
}

std::string ipc_internal::KerberosPrincipalKey(const std::string& protocol) {
  if (protocol == kClientProtocol) return "yarn.resourcemanager.principal";
  if (protocol == "org.apache.hadoop.hdfs.protocol.ClientProtocol") return "dfs.namenode.kerberos.principal";
  return "";
}

Result<RpcSaslProto> IpcClient::Impl::ReadSasl(Opened* o, Clock::time_point deadline) {
  Result<std::string> frame = ReadFrame(o->socket, &o->reader, deadline);
  if (!frame.ok()) return Lost(frame.status().WithContext("during SASL"));
  Result<ServerFrame> f = ParseServerFrame(*frame);
  if (!f.ok()) return f.status().WithContext(Describe() + ": during SASL");
  if (f->header.status() != RpcResponseHeaderProto::SUCCESS) return Fatal(f->header);
  if (ResponseCallId(f->header) != kSaslCallId) {
    return Status(StatusCode::kDataLoss, Describe() + ": reply with call id " +
                                             std::to_string(ResponseCallId(f->header)) + " during SASL");
  }
  RpcSaslProto sasl;
  if (!f->body || !sasl.ParseFromString(*f->body)) {
    return Status(StatusCode::kDataLoss, Describe() + ": malformed SASL reply");
  }
  return sasl;
}

// Runs SASL as Java's SaslRpcClient does; true when TOKEN (DIGEST-MD5) authenticated us, false
// when the server switched us to SIMPLE.
Result<bool> IpcClient::Impl::Sasl(Opened* o, const Token& tok, Clock::time_point deadline) {
  RpcSaslProto negotiate;
  negotiate.set_state(RpcSaslProto::NEGOTIATE);
  if (Status s = o->socket.WriteAll(Preamble(AuthProtocol::kSasl) + SaslFrame(negotiate)); !s.ok()) return Lost(s);
  LOOM_ASSIGN_OR_RETURN(RpcSaslProto offer, ReadSasl(o, deadline));
  // A server without security answers NEGOTIATE with SUCCESS: go on as SIMPLE.
  if (offer.state() == RpcSaslProto::SUCCESS) return false;
  if (offer.state() != RpcSaslProto::NEGOTIATE) {
    return Status::Unauthenticated(Describe() + ": SASL " + SaslStateName(offer.state()) + " instead of NEGOTIATE");
  }
  const RpcSaslProto::SaslAuth* chosen = nullptr;
  bool simple_offered = false;
  std::string offered;
  for (const auto& auth : offer.auths()) {
    if (auth.method() == "TOKEN" && auth.mechanism() == "DIGEST-MD5" && !chosen) chosen = &auth;
    if (auth.method() == "SIMPLE") simple_offered = true;
    offered += (offered.empty() ? "" : ",") + auth.method() + "/" + auth.mechanism();
  }
  if (!chosen && simple_offered) {
    // What Java sent to the NameNode in dshell/04: INITIATE naming SIMPLE, no token, no reply.
    RpcSaslProto initiate;
    initiate.set_state(RpcSaslProto::INITIATE);
    auto* simple = initiate.add_auths();
    simple->set_method("SIMPLE");
    simple->set_mechanism("");
    if (Status s = o->socket.WriteAll(SaslFrame(initiate)); !s.ok()) return Lost(s);
    return false;
  }
  if (!chosen) {
    return Status::Unauthenticated(Describe() + ": server offers no TOKEN/DIGEST-MD5 auth (offered: " + offered + ")");
  }

  const std::string cnonce = !options.cnonce_for_test.empty() ? options.cnonce_for_test
                             : !TestCnonce().empty()          ? TestCnonce()
                                                              : NewCnonce();
  const std::string digest_uri = chosen->protocol() + "/" + chosen->serverid();
  std::optional<DigestResult> digest;
  auto respond = [&](std::string_view challenge_text) -> Status {
    LOOM_ASSIGN_OR_RETURN(DigestChallenge challenge, ParseDigestChallenge(challenge_text));
    LOOM_ASSIGN_OR_RETURN(std::vector<std::string> wanted,
                          QopsFromRpcProtection(options.rpc_protection.empty() ? DefaultRpcProtection()
                                                                               : options.rpc_protection));
    LOOM_ASSIGN_OR_RETURN(DigestResult r, DigestRespond(tok, challenge, cnonce, digest_uri, wanted));
    digest = std::move(r);
    return Status::Ok();
  };

  // The server compares the echoed auth with its own challenge-less entry, field presence
  // included: clear the challenge and keep `protocol` present even when empty.
  RpcSaslProto initiate;
  initiate.set_state(RpcSaslProto::INITIATE);
  auto* echo = initiate.add_auths();
  *echo = *chosen;
  echo->clear_challenge();
  echo->set_protocol(chosen->protocol());
  if (chosen->has_challenge()) {
    if (Status s = respond(chosen->challenge()); !s.ok()) return s.WithContext(Describe());
    initiate.set_token(digest->response_token);
  }
  if (Status s = o->socket.WriteAll(SaslFrame(initiate)); !s.ok()) return Lost(s);

  for (;;) {
    LOOM_ASSIGN_OR_RETURN(RpcSaslProto reply, ReadSasl(o, deadline));
    if (reply.state() == RpcSaslProto::CHALLENGE) {
      if (Status s = respond(reply.token()); !s.ok()) return s.WithContext(Describe());
      RpcSaslProto response;
      response.set_state(RpcSaslProto::RESPONSE);
      response.set_token(digest->response_token);
      if (Status s = o->socket.WriteAll(SaslFrame(response)); !s.ok()) return Lost(s);
      continue;
    }
    if (reply.state() != RpcSaslProto::SUCCESS) {
      return Status::Unauthenticated(Describe() + ": unexpected SASL " + SaslStateName(reply.state()));
    }
    if (!digest) return Status::Unauthenticated(Describe() + ": SASL SUCCESS before any DIGEST-MD5 challenge");
    // The server proves it knows the password too (Java checks rspauth as well).
    if (Status s = VerifyRspAuth(*digest, reply.token()); !s.ok()) {
      return Status::Unauthenticated(Describe() + ": " + s.message());
    }
    Result<std::unique_ptr<SaslSecurityLayer>> layer =
        NewDigestSecurityLayer(digest->qop, digest->cipher, digest->ha1, DigestSide::kClient);
    if (!layer.ok()) return layer.status().WithContext(Describe());
    if (*layer) {
      o->wrapping = std::make_unique<Opened::Wrapping>();
      o->wrapping->layer = std::move(*layer);
    }
    return true;
  }
}

// SASL GSSAPI (sasl_gssapi.h, K4): NEGOTIATE, INITIATE, then CHALLENGE/RESPONSE rounds until
// SUCCESS. Errors the user must fix (no principal configured, a server that is not the
// configured one, a QOP the cluster does not offer, expired credentials) are InvalidArgument.
Status IpcClient::Impl::SaslKerberos(Opened* o, Clock::time_point deadline) {
  RpcSaslProto negotiate;
  negotiate.set_state(RpcSaslProto::NEGOTIATE);
  if (Status s = o->socket.WriteAll(Preamble(AuthProtocol::kSasl) + SaslFrame(negotiate)); !s.ok()) return Lost(s);
  LOOM_ASSIGN_OR_RETURN(RpcSaslProto offer, ReadSasl(o, deadline));
  if (offer.state() == RpcSaslProto::SUCCESS) {
    return Status::Unauthenticated(Describe() + ": the server has no security (SIMPLE), but this client's "
                                                "hadoop.security.authentication is kerberos");
  }
  if (offer.state() != RpcSaslProto::NEGOTIATE) {
    return Status::Unauthenticated(Describe() + ": SASL " + SaslStateName(offer.state()) + " instead of NEGOTIATE");
  }
  const RpcSaslProto::SaslAuth* kerberos_offer = FindKerberosOffer(offer);
  if (!kerberos_offer) {
    std::string offered;
    for (const auto& auth : offer.auths()) offered += (offered.empty() ? "" : ",") + auth.method() + "/" + auth.mechanism();
    return Status::Unauthenticated(Describe() + ": server offers no KERBEROS/GSSAPI auth (offered: " + offered + ")");
  }
  GssapiSaslClient::Options gopts;
  gopts.login = kerberos->login;
  gopts.principal_key = KerberosPrincipalKey(options.protocol);
  gopts.principal_conf = gopts.principal_key == "dfs.namenode.kerberos.principal" ? kerberos->nn_principal
                                                                                  : kerberos->rm_principal;
  gopts.server_host = CanonicalHostName(options.host);
  gopts.rpc_protection = kerberos->rpc_protection;
  gopts.server = Describe();
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<GssapiSaslClient> gss, GssapiSaslClient::Start(gopts, *kerberos_offer));
  LOOM_ASSIGN_OR_RETURN(RpcSaslProto initiate, gss->Initiate());
  if (Status s = o->socket.WriteAll(SaslFrame(initiate)); !s.ok()) return Lost(s);
  for (;;) {
    LOOM_ASSIGN_OR_RETURN(RpcSaslProto reply, ReadSasl(o, deadline));
    if (reply.state() == RpcSaslProto::CHALLENGE) {
      LOOM_ASSIGN_OR_RETURN(RpcSaslProto response, gss->Respond(reply.token()));
      if (Status s = o->socket.WriteAll(SaslFrame(response)); !s.ok()) return Lost(s);
      continue;
    }
    if (reply.state() != RpcSaslProto::SUCCESS) {
      return Status::Unauthenticated(Describe() + ": unexpected SASL " + SaslStateName(reply.state()));
    }
    LOOM_ASSIGN_OR_RETURN(std::unique_ptr<SaslSecurityLayer> layer, gss->Finish());
    if (layer) {
      o->wrapping = std::make_unique<Opened::Wrapping>();
      o->wrapping->layer = std::move(layer);
    }
    return Status::Ok();
  }
}

}  // namespace loom::hadoop
