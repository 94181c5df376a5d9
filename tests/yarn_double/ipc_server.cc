#include "ipc_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <google/protobuf/io/coded_stream.h>

#include "cluster/yarn/wire/ipc_frame.h"
#include "cluster/yarn/wire/sasl_digest.h"
#include "cluster/yarn/wire/sasl_gssapi.h"
#include "cluster/yarn/wire/sasl_layer.h"
#include "gss_acceptor.h"

namespace loom::yarn_double {

namespace {

using hadoop::common::IpcConnectionContextProto;
using hadoop::common::RequestHeaderProto;
using hadoop::common::RpcRequestHeaderProto;
using hadoop::common::RpcResponseHeaderProto;
using hadoop::common::RpcSaslProto;
namespace wire = loom::cluster::yarn;

constexpr char kAccessControlException[] = "org.apache.hadoop.security.AccessControlException";
constexpr char kSaslException[] = "javax.security.sasl.SaslException";
constexpr char kInvalidToken[] = "org.apache.hadoop.security.token.SecretManager$InvalidToken";
// Not in the recordings: the class Hadoop's Server uses for malformed IPC input.
constexpr char kIpcException[] = "org.apache.hadoop.ipc.IpcException";

RpcError Fatal(std::string cls, std::string msg, ErrorCode detail = RpcResponseHeaderProto::FATAL_UNAUTHORIZED) {
  return RpcError{std::move(cls), std::move(msg), detail, true};
}

std::string VarintPrefixed(std::string_view bytes) {
  uint8_t prefix[10];
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(bytes.size()),
                                                                                 prefix);
  std::string out(reinterpret_cast<const char*>(prefix), end - prefix);
  out.append(bytes);
  return out;
}

std::string BigEndian32(uint32_t v) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (24 - 8 * i)) & 0xff);
  return out;
}

// The RFC 4752 security layer over the acceptor's context: gss_wrap with confidentiality for
// privacy, integrity only otherwise. On a privacy connection a token that is not sealed is
// refused (the double checks the QOP the client agreed to).
class GssLayer : public wire::SaslSecurityLayer {
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

// One connection, from preamble to close. Runs on its own thread.
class Session {
 public:
  Session(int fd, const IpcServerOptions& options, std::atomic<bool>* stopping)
      : fd_(fd), options_(options), stopping_(stopping) {
    Result<std::vector<std::string>> qops = wire::QopsFromRpcProtection(options.rpc_protection);
    qops_ = qops.ok() ? *qops : std::vector<std::string>{"auth"};  // Start() has refused a bad value
  }

  void Run() {
    info_.peer_ip = PeerIp();
    if (!Handshake()) return CloseGracefully();
    while (!stopping_->load()) {
      std::optional<std::string> frame = ReadPlainFrame();
      if (!frame) break;
      if (!HandleFrame(*frame)) break;
    }
    CloseGracefully();
  }

 private:
  // ---- socket I/O ----------------------------------------------------------------------------

  std::string PeerIp() const {
    sockaddr_in addr{};
    socklen_t len = sizeof(addr);
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "127.0.0.1";
    char buf[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &addr.sin_addr, buf, sizeof(buf));
    return buf;
  }

  bool ReadExact(char* buf, size_t n) {
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::recv(fd_, buf + got, n - got, 0);
      if (r == 0) return false;
      if (r < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      got += static_cast<size_t>(r);
    }
    return true;
  }

  // Waits for the next frame. Like Hadoop's server, drops a connection idle for too long.
  std::optional<std::string> ReadFrame() {
    if (options_.idle_close_ms > 0) {
      pollfd p{fd_, POLLIN, 0};
      int r;
      do r = ::poll(&p, 1, options_.idle_close_ms); while (r < 0 && errno == EINTR);
      if (r <= 0) return std::nullopt;
    }
    char len_bytes[4];
    if (!ReadExact(len_bytes, 4)) return std::nullopt;
    uint32_t len = 0;
    for (char c : len_bytes) len = (len << 8) | static_cast<uint8_t>(c);
    if (len > wire::kMaxFrameBytes) {
      SendError(wire::kAuthFailedCallId, "", -1,
                Fatal(kIpcException,
                      "Requested data length " + std::to_string(len) +
                          " is longer than maximum configured RPC length " + std::to_string(wire::kMaxFrameBytes),
                      RpcResponseHeaderProto::FATAL_INVALID_RPC_HEADER));
      return std::nullopt;
    }
    std::string body(len, '\0');
    if (len > 0 && !ReadExact(body.data(), len)) return std::nullopt;
    return body;
  }

  // The next ordinary frame after SASL: as read, or reassembled from the client's WRAP tokens
  // once a security layer is negotiated (a frame may span tokens, as Hadoop's server allows).
  // nullopt: the connection is over (a frame in clear, or a token that fails its check).
  std::optional<std::string> ReadPlainFrame() {
    if (!layer_) return ReadFrame();
    for (;;) {
      if (plain_.size() >= 4) {
        uint32_t len = 0;
        for (int i = 0; i < 4; ++i) len = (len << 8) | static_cast<uint8_t>(plain_[static_cast<size_t>(i)]);
        if (len > wire::kMaxFrameBytes) return std::nullopt;
        if (plain_.size() >= 4 + static_cast<size_t>(len)) {
          std::string body = plain_.substr(4, len);
          plain_.erase(0, 4 + static_cast<size_t>(len));
          return body;
        }
      }
      std::optional<std::string> frame = ReadFrame();
      if (!frame) return std::nullopt;
      RpcRequestHeaderProto header;
      RpcSaslProto msg;
      Result<std::vector<std::string_view>> parts = wire::SplitDelimited(*frame);
      bool wrapped = parts.ok() && parts->size() == 2 &&
                     header.ParseFromArray((*parts)[0].data(), static_cast<int>((*parts)[0].size())) &&
                     header.callid() == wire::kSaslCallId &&
                     msg.ParseFromArray((*parts)[1].data(), static_cast<int>((*parts)[1].size())) &&
                     msg.state() == RpcSaslProto::WRAP;
      if (!wrapped) {
        // Hadoop's server would try to unwrap it and fail: the connection ends.
        return Drop("a frame in clear after SASL negotiated " + std::string(layer_->Qop()));
      }
      Result<std::string> plain = layer_->Unwrap(msg.token());
      if (!plain.ok()) {
        return Drop(plain.status().message());
      }
      plain_ += *plain;
    }
  }

  // Ends a wrapped stream, saying why on stderr (the test's log): Hadoop closes silently.
  std::nullopt_t Drop(const std::string& why) {
    std::fprintf(stderr, "yarn double %s: closing a connection from %s: %s\n", options_.name.c_str(),
                 info_.peer_ip.c_str(), why.c_str());
    return std::nullopt;
  }

  void SendAll(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t r = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return;
      sent += static_cast<size_t>(r);
    }
  }

  // A response frame: the header, then the body (SUCCESS only), both varint-delimited.
  void SendResponse(const RpcResponseHeaderProto& header, const std::string* body) {
    std::string payload = VarintPrefixed(header.SerializeAsString());
    if (body) payload += VarintPrefixed(*body);
    std::string frame = BigEndian32(static_cast<uint32_t>(payload.size())) + payload;
    if (!layer_) return SendAll(frame);
    // Wrapped as recorded (rpc/08): header {callId -33, status SUCCESS} only, then
    // RpcSaslProto{WRAP, token}; one token per response unless it is too large for one.
    std::string out;
    for (size_t at = 0; at < frame.size(); at += wire::kSaslMaxWrapPlainBytes) {
      Result<std::string> token = layer_->Wrap(std::string_view(frame).substr(at, wire::kSaslMaxWrapPlainBytes));
      if (!token.ok()) return;
      RpcResponseHeaderProto h;
      h.set_callid(static_cast<uint32_t>(wire::kSaslCallId));
      h.set_status(RpcResponseHeaderProto::SUCCESS);
      RpcSaslProto wrap;
      wrap.set_state(RpcSaslProto::WRAP);
      wrap.set_token(*token);
      std::string p = VarintPrefixed(h.SerializeAsString()) + VarintPrefixed(wrap.SerializeAsString());
      out += BigEndian32(static_cast<uint32_t>(p.size())) + p;
    }
    SendAll(out);
  }

  static RpcResponseHeaderProto Header(int32_t call_id, RpcResponseHeaderProto::RpcStatusProto status,
                                       const std::string& client_id, int32_t retry) {
    RpcResponseHeaderProto h;
    h.set_callid(static_cast<uint32_t>(call_id));
    h.set_status(status);
    h.set_serveripcversionnum(wire::kIpcVersion);
    h.set_clientid(client_id);
    h.set_retrycount(retry);
    return h;
  }

  void SendSuccess(int32_t call_id, const std::string& client_id, int32_t retry, const std::string& body) {
    SendResponse(Header(call_id, RpcResponseHeaderProto::SUCCESS, client_id, retry), &body);
  }

  void SendError(int32_t call_id, const std::string& client_id, int32_t retry, const RpcError& e) {
    RpcResponseHeaderProto h =
        Header(call_id, e.fatal ? RpcResponseHeaderProto::FATAL : RpcResponseHeaderProto::ERROR, client_id, retry);
    h.set_exceptionclassname(e.exception_class);
    h.set_errormsg(e.message);
    h.set_errordetail(e.detail);
    // Field order on the wire is by number, so the error fields precede clientId as recorded.
    SendResponse(h, nullptr);
  }

  // Like the Java server: half-close, then drain what the client already sent so the kernel
  // sends FIN rather than RST (an RST could destroy the reply before the client reads it).
  void CloseGracefully() {
    ::shutdown(fd_, SHUT_WR);
    char buf[4096];
    for (int i = 0; i < 64; ++i) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) break;
      ssize_t r = ::recv(fd_, buf, sizeof(buf), 0);
      if (r <= 0) break;
    }
  }

  // ---- connection set-up ---------------------------------------------------------------------

  bool kerberos() const { return !options_.kerberos_principal.empty(); }
  // A Kerberized Hadoop server never offers SIMPLE, on any port (K5.4).
  bool simple_allowed() const { return options_.allow_simple && !kerberos(); }
  std::string AvailableMethods() const {
    return kerberos() ? "[TOKEN, KERBEROS]" : simple_allowed() ? "[TOKEN, SIMPLE]" : "[TOKEN]";
  }

  // Preamble, SASL (or SIMPLE) and the connection context. False: the connection is over.
  bool Handshake() {
    char pre[7];
    if (!ReadExact(pre, sizeof(pre))) return false;
    if (std::string_view(pre, 4) != "hrpc") return false;  // not IPC at all: just close, as Hadoop does
    uint8_t version = static_cast<uint8_t>(pre[4]);
    if (version != wire::kIpcVersion) {
      SendError(wire::kAuthFailedCallId, "", -1,
                Fatal("org.apache.hadoop.ipc.RPC$VersionMismatch",
                      "Server IPC version 9 cannot communicate with client version " + std::to_string(version),
                      RpcResponseHeaderProto::FATAL_VERSION_MISMATCH));
      return false;
    }
    uint8_t auth = static_cast<uint8_t>(pre[6]);
    if (auth == static_cast<uint8_t>(wire::AuthProtocol::kNone)) {
      if (!simple_allowed()) {
        // negative/01: callId -1, FATAL_UNAUTHORIZED, empty clientId, retryCount -1, then FIN.
        SendError(wire::kAuthFailedCallId, "", -1,
                  Fatal(kAccessControlException, "SIMPLE authentication is not enabled.  Available:" + AvailableMethods()));
        return false;
      }
      return ReadContext();
    }
    if (auth != static_cast<uint8_t>(wire::AuthProtocol::kSasl)) {
      SendError(wire::kAuthFailedCallId, "", -1,
                Fatal(kIpcException, "Unknown auth protocol:" + std::to_string(static_cast<int8_t>(auth))));
      return false;
    }
    return Sasl() && ReadContext();
  }

  // The SASL exchange; true once authenticated (TOKEN) or switched to SIMPLE.
  bool Sasl() {
    bool sent_negotiate = false;
    std::string nonce;
    while (true) {
      std::optional<std::string> frame = ReadFrame();
      if (!frame) return false;
      RpcRequestHeaderProto header;
      RpcSaslProto msg;
      Result<std::vector<std::string_view>> parts = wire::SplitDelimited(*frame);
      if (!parts.ok() || parts->size() < 2 || !header.ParseFromArray((*parts)[0].data(), (*parts)[0].size())) {
        SendError(wire::kAuthFailedCallId, "", -1,
                  Fatal(kIpcException, "malformed SASL frame", RpcResponseHeaderProto::FATAL_INVALID_RPC_HEADER));
        return false;
      }
      if (header.callid() != wire::kSaslCallId) {
        SendError(header.callid(), header.clientid(), header.retrycount(),
                  Fatal(kIpcException,
                        header.callid() == wire::kConnectionContextCallId
                            ? "Connection header sent during SASL negotiation"
                            : "Connection context not established",
                        RpcResponseHeaderProto::FATAL_INVALID_RPC_HEADER));
        return false;
      }
      if (!msg.ParseFromArray((*parts)[1].data(), (*parts)[1].size())) {
        SendSaslFailure(Fatal(kSaslException, "malformed RpcSaslProto"));
        return false;
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
      bool is_token = chosen.SerializeAsString() == TokenAuth().SerializeAsString();
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
      return VerifyDigest(msg.token(), nonce);
    }
  }

  // The next SASL RESPONSE of the GSSAPI exchange; nullopt (after a FATAL reply where Hadoop
  // sends one) when the client sent anything else or went away.
  std::optional<RpcSaslProto> ReadSaslResponse() {
    std::optional<std::string> frame = ReadFrame();
    if (!frame) return std::nullopt;
    RpcRequestHeaderProto header;
    RpcSaslProto msg;
    Result<std::vector<std::string_view>> parts = wire::SplitDelimited(*frame);
    if (!parts.ok() || parts->size() < 2 || !header.ParseFromArray((*parts)[0].data(), (*parts)[0].size()) ||
        header.callid() != wire::kSaslCallId || !msg.ParseFromArray((*parts)[1].data(), (*parts)[1].size())) {
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
  bool AcceptGssapi(const std::string& first_token) {
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
      offered |= q == "auth-conf" ? wire::kGssapiLayerPrivacy
                 : q == "auth-int" ? wire::kGssapiLayerIntegrity
                                   : wire::kGssapiLayerNone;
    }
    Result<std::string> offer = acceptor_->Wrap(wire::BuildGssapiLayerMessage(offered, wire::kGssapiMaxBuffer), false);
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
    Result<wire::GssapiLayerMessage> choice = wire::ParseGssapiLayerMessage(*plain);
    if (!choice.ok()) {
      SendSaslFailure(Fatal(kSaslException, "Final handshake message is malformed: " + choice.status().message()));
      return false;
    }
    uint8_t chosen = choice->layers;
    bool single = chosen == wire::kGssapiLayerNone || chosen == wire::kGssapiLayerIntegrity ||
                  chosen == wire::kGssapiLayerPrivacy;
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
    if (chosen != wire::kGssapiLayerNone) {
      layer_ = std::make_unique<GssLayer>(acceptor_.get(), chosen == wire::kGssapiLayerPrivacy);
    }
    return true;
  }

  bool VerifyDigest(const std::string& client_token, const std::string& nonce) {
    Result<std::vector<std::pair<std::string, std::string>>> directives = wire::ParseDirectives(client_token);
    if (!directives.ok()) {
      SendSaslFailure(Fatal(kSaslException, "DIGEST-MD5: digest response format violation. " +
                                                directives.status().message()));
      return false;
    }
    std::string user;
    for (const auto& [k, v] : *directives) {
      if (k == "username") user = v;
    }
    Result<std::string> identifier = wire::Base64Decode(user);
    if (!identifier.ok() || identifier->empty()) {
      SendSaslFailure(Fatal(kInvalidToken, "Can't de-serialize tokenIdentifier"));
      return false;
    }
    PasswordLookup password = options_.password_for(*identifier);
    if (auto* e = std::get_if<RpcError>(&password)) {
      SendSaslFailure(Fatal(e->exception_class, e->message));
      return false;
    }
    Result<wire::DigestVerified> verified =
        wire::DigestVerifyWithPassword(client_token, nonce, *identifier, std::get<std::string>(password), qops_);
    if (!verified.ok()) {
      SendSaslFailure(Fatal(kSaslException, verified.status().message()));
      return false;
    }
    RpcSaslProto success;
    success.set_state(RpcSaslProto::SUCCESS);
    success.set_token(verified->success_token);
    SendSaslReply(success);
    // The layer starts after SUCCESS: that reply itself travels in clear.
    Result<std::unique_ptr<wire::SaslSecurityLayer>> layer =
        wire::NewDigestSecurityLayer(verified->qop, verified->cipher, verified->ha1, wire::DigestSide::kServer);
    if (!layer.ok()) return false;
    layer_ = std::move(*layer);
    info_.token_auth = true;
    info_.token_identifier = *identifier;
    info_.user = options_.token_user ? options_.token_user(*identifier) : std::string();
    return true;
  }

  static RpcSaslProto::SaslAuth TokenAuth() {
    RpcSaslProto::SaslAuth a;
    a.set_method("TOKEN");
    a.set_mechanism("DIGEST-MD5");
    a.set_protocol("");  // present though empty (1a 00), as recorded
    a.set_serverid("default");
    return a;
  }

  // {KERBEROS, GSSAPI, protocol "rm", serverId "localhost"} for "rm/localhost@LOOM.TEST" (K1).
  RpcSaslProto::SaslAuth KerberosAuth() const {
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

  static RpcSaslProto::SaslAuth SimpleAuth() {
    RpcSaslProto::SaslAuth a;
    a.set_method("SIMPLE");
    a.set_mechanism("");
    return a;
  }

  RpcSaslProto NegotiateReply(const std::string& nonce) const {
    RpcSaslProto reply;
    reply.set_state(RpcSaslProto::NEGOTIATE);
    RpcSaslProto::SaslAuth* token = reply.add_auths();
    *token = TokenAuth();
    token->set_challenge(wire::MakeDigestChallenge(nonce, qops_));
    if (kerberos()) *reply.add_auths() = KerberosAuth();
    if (simple_allowed()) *reply.add_auths() = SimpleAuth();
    return reply;
  }

  // SASL replies: callId -33, empty clientId, retryCount -1.
  void SendSaslReply(const RpcSaslProto& msg) { SendSuccess(wire::kSaslCallId, "", -1, msg.SerializeAsString()); }
  void SendSaslFailure(const RpcError& e) { SendError(wire::kSaslCallId, "", -1, e); }

  bool ReadContext() {
    std::optional<std::string> frame = ReadPlainFrame();
    if (!frame) return false;
    RpcRequestHeaderProto header;
    IpcConnectionContextProto context;
    Result<std::vector<std::string_view>> parts = wire::SplitDelimited(*frame);
    if (!parts.ok() || parts->empty() || !header.ParseFromArray((*parts)[0].data(), (*parts)[0].size())) {
      SendError(wire::kAuthFailedCallId, "", -1,
                Fatal(kIpcException, "malformed RPC header", RpcResponseHeaderProto::FATAL_INVALID_RPC_HEADER));
      return false;
    }
    if (header.callid() != wire::kConnectionContextCallId || parts->size() < 2 ||
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

  // ---- calls ---------------------------------------------------------------------------------

  // One frame after set-up; false: close the connection.
  bool HandleFrame(const std::string& frame) {
    RpcRequestHeaderProto header;
    Result<std::vector<std::string_view>> parts = wire::SplitDelimited(frame);
    if (!parts.ok() || parts->empty() || !header.ParseFromArray((*parts)[0].data(), (*parts)[0].size())) {
      SendError(wire::kAuthFailedCallId, "", -1,
                Fatal(kIpcException, "malformed RPC header", RpcResponseHeaderProto::FATAL_INVALID_RPC_HEADER));
      return false;
    }
    int32_t call_id = header.callid();
    if (call_id == wire::kPingCallId) return true;
    if (header.rpcop() == RpcRequestHeaderProto::RPC_CLOSE_CONNECTION) return false;
    if (call_id < 0) {
      SendError(call_id, header.clientid(), header.retrycount(),
                Fatal(kIpcException, "Unknown out of band call #" + std::to_string(call_id),
                      RpcResponseHeaderProto::FATAL_INVALID_RPC_HEADER));
      return false;
    }
    if (header.rpckind() != hadoop::common::RPC_PROTOCOL_BUFFER) {
      SendError(call_id, header.clientid(), header.retrycount(),
                Fatal(kIpcException, "Unknown rpc kind in rpc header" + std::to_string(header.rpckind()),
                      RpcResponseHeaderProto::FATAL_INVALID_RPC_HEADER));
      return false;
    }
    RequestHeaderProto request_header;
    if (parts->size() < 3 ||
        !request_header.ParseFromArray((*parts)[1].data(), static_cast<int>((*parts)[1].size()))) {
      SendError(call_id, header.clientid(), header.retrycount(),
                Fatal(kIpcException, "Error decoding the request of call #" + std::to_string(call_id),
                      RpcResponseHeaderProto::FATAL_DESERIALIZING_REQUEST));
      return false;
    }
    if (request_header.declaringclassprotocolname() != options_.protocol) {
      SendError(call_id, header.clientid(), header.retrycount(),
                RpcError{"org.apache.hadoop.ipc.RpcNoSuchProtocolException",
                         "Unknown protocol: " + request_header.declaringclassprotocolname(),
                         RpcResponseHeaderProto::ERROR_NO_SUCH_PROTOCOL, false});
      return true;
    }
    CallResult result = options_.handle(request_header.methodname(), (*parts)[2], info_);
    if (auto* body = std::get_if<std::string>(&result)) {
      SendSuccess(call_id, header.clientid(), header.retrycount(), *body);
      return true;
    }
    const RpcError& e = std::get<RpcError>(result);
    SendError(call_id, header.clientid(), header.retrycount(), e);
    return !e.fatal;
  }

  int fd_;
  const IpcServerOptions& options_;
  std::atomic<bool>* stopping_;
  ConnectionInfo info_;
  std::vector<std::string> qops_;                   // what the DIGEST challenge offers
  std::unique_ptr<GssAcceptor> acceptor_;           // KERBEROS: the GSSAPI context (before layer_)
  std::unique_ptr<wire::SaslSecurityLayer> layer_;  // after SUCCESS with auth-int/auth-conf
  std::string plain_;                               // unwrapped bytes not yet a whole frame
};

}  // namespace

IpcServer::IpcServer(IpcServerOptions options) : options_(std::move(options)) {}

IpcServer::~IpcServer() { Stop(); }

Status IpcServer::Start() {
  if (Result<std::vector<std::string>> q = wire::QopsFromRpcProtection(options_.rpc_protection); !q.ok()) {
    return q.status().WithContext("IPC server " + options_.name);
  }
  if (!options_.kerberos_principal.empty()) {
    // Fail at start, not at the first client, when the keytab lacks the service's key.
    Result<std::unique_ptr<GssAcceptor>> probe = GssAcceptor::Create(options_.kerberos_keytab, options_.kerberos_principal);
    if (!probe.ok()) return probe.status().WithContext("IPC server " + options_.name);
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::FromErrno("socket", errno);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (::inet_pton(AF_INET, options_.bind_ip.c_str(), &addr.sin_addr) != 1) {
    return Status::InvalidArgument("not an IPv4 address for " + options_.name + ": " + options_.bind_ip);
  }
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Status::FromErrno("bind " + options_.bind_ip + ":0 for " + options_.name, errno);
  }
  if (::listen(listen_fd_, 64) != 0) return Status::FromErrno("listen", errno);
  socklen_t len = sizeof(addr);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return Status::Ok();
}

void IpcServer::AcceptLoop() {
  while (!stopping_.load()) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      break;  // the listener was shut down
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_.load()) {
      ::close(fd);
      break;
    }
    ReapFinished();
    auto conn = std::make_unique<Conn>();
    conn->fd = fd;
    Conn* raw = conn.get();
    conns_.push_back(std::move(conn));
    raw->thread = std::thread([this, raw] { Serve(raw); });
  }
}

void IpcServer::Serve(Conn* conn) {
  Session(conn->fd, options_, &stopping_).Run();
  conn->done.store(true);
}

void IpcServer::ReapFinished() {
  for (auto it = conns_.begin(); it != conns_.end();) {
    if ((*it)->done.load()) {
      (*it)->thread.join();
      ::close((*it)->fd);
      it = conns_.erase(it);
    } else {
      ++it;
    }
  }
}

void IpcServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  if (accept_thread_.joinable()) accept_thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  std::list<std::unique_ptr<Conn>> conns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    conns.swap(conns_);
  }
  for (auto& c : conns) ::shutdown(c->fd, SHUT_RDWR);  // unblocks the session's recv
  for (auto& c : conns) {
    if (c->thread.joinable()) c->thread.join();
    ::close(c->fd);
  }
}

}  // namespace loom::yarn_double
