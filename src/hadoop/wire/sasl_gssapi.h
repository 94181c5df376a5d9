#pragma once
// The client side of SASL GSSAPI (RFC 4752) as Hadoop IPC runs it towards a Kerberized
// ResourceManager or NameNode (yarn-captures K4, K5.1):
//   S NEGOTIATE offers {KERBEROS, GSSAPI, protocol "rm", serverId "localhost"}
//   C INITIATE  {token: GSS initial context token (AP-REQ), auths: [that offer echoed]}
//   S CHALLENGE {token: AP-REP}            C RESPONSE {token: ""}   (present, empty)
//   S CHALLENGE {token: wrap(layers, max buffer)}
//   C RESPONSE  {token: wrap(chosen layer, max buffer)}   (no authzid)
//   S SUCCESS   (no token); with integrity or privacy every later frame is a WRAP (sasl_layer.h).
// The service principal is protocol/serverId@REALM, and it must be the one the configuration
// names (yarn.resourcemanager.principal, `_HOST` expanded to the server's host name), as Java's
// SaslRpcClient.getServerPrincipal checks: a server that names another is refused.
//
// Not thread-safe: one object per connection handshake.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "hadoop/proto/hadoop_rpc.pb.h"
#include "hadoop/wire/kerberos_login.h"
#include "hadoop/wire/sasl_layer.h"

namespace loom::hadoop {

using ::hadoop::common::RpcSaslProto;

// RFC 4752 section 3.3 security layers (the first byte of the layer message).
inline constexpr uint8_t kGssapiLayerNone = 0x01;
inline constexpr uint8_t kGssapiLayerIntegrity = 0x02;
inline constexpr uint8_t kGssapiLayerPrivacy = 0x04;
// What Java's GssKrb5Client and Hadoop's servers send as their maximum message size.
inline constexpr uint32_t kGssapiMaxBuffer = 65536;

struct GssapiLayerMessage {
  uint8_t layers = 0;       // bitmask
  uint32_t max_buffer = 0;  // 24 bits, big-endian on the wire
  std::string authzid;      // after the 4 bytes; Hadoop sends none
};
// The 4-byte (+ authzid) plaintext of a layer message; DataLoss when shorter than 4 bytes.
Result<GssapiLayerMessage> ParseGssapiLayerMessage(std::string_view plain);
// `layer` and `max_buffer` (24 bits) with no authzid: "04 01 00 00" for privacy, 65536.
std::string BuildGssapiLayerMessage(uint8_t layer, uint32_t max_buffer);
// The layer to choose: the first QOP of `rpc_protection` (hadoop.rpc.protection, a comma list
// of authentication/integrity/privacy) that the server offers in `offered`. InvalidArgument
// naming both when none is, or when the list has an unknown name.
Result<uint8_t> ChooseGssapiLayer(uint8_t offered, std::string_view rpc_protection);

// `pattern` with its `_HOST` component replaced by `host` lowercased (Java's
// SecurityUtil.getServerPrincipal); unchanged when it has none.
std::string ExpandHostInPrincipal(std::string_view pattern, std::string_view host);
// The host name Java's InetAddress.getCanonicalHostName() gives for `host`: the reverse lookup
// of its first address, lowercased ("127.0.0.1" -> "localhost"); `host` itself when none.
std::string CanonicalHostName(const std::string& host);
// Whether `host` is an IPv4 or IPv6 address literal (without brackets).
bool IsIpLiteral(const std::string& host);
// The host part of a service principal for a server reached at `host`, as Java's clients
// build it: an IP literal becomes CanonicalHostName(host) ("127.0.0.1" -> "localhost"), a name
// is kept, lowercased. The SPNEGO principal of a URL (HTTP/<host>) and the RM principal's
// _HOST for a renewer both use it.
std::string ServicePrincipalHost(const std::string& host);

// A security layer over an established GSSAPI context (client or acceptor side: gss_wrap and
// gss_unwrap are the same calls). Takes ownership of `context` (deleted with the layer).
std::unique_ptr<SaslSecurityLayer> MakeGssapiSecurityLayer(gss_ctx_id_t context, bool privacy);

// The KERBEROS/GSSAPI entry of a NEGOTIATE reply, or null.
const RpcSaslProto::SaslAuth* FindKerberosOffer(const RpcSaslProto& negotiate);
// INITIATE carrying `token`, with `offer` echoed as the only auth (its challenge cleared: the
// server compares with protobuf equality).
RpcSaslProto GssapiInitiate(const RpcSaslProto::SaslAuth& offer, std::string token);
// RESPONSE carrying `token`; an empty token stays present on the wire ("10 04 1a 00", K4.5).
RpcSaslProto GssapiResponse(std::string token);

class GssapiSaslClient {
 public:
  struct Options {
    std::shared_ptr<const KerberosLogin> login;
    std::string principal_key;   // "yarn.resourcemanager.principal"
    std::string principal_conf;  // its value, e.g. "rm/_HOST@LOOM.TEST"
    std::string server_host;     // the server's host name for `_HOST` (canonical, as Java)
    std::string rpc_protection;  // hadoop.rpc.protection
    std::string server;          // "ResourceManager at 127.0.0.1:8032", for messages
  };
  // Checks `offer`'s principal against the configuration. InvalidArgument when the key is
  // unset or names another principal.
  static Result<std::unique_ptr<GssapiSaslClient>> Start(Options options, const RpcSaslProto::SaslAuth& offer);
  ~GssapiSaslClient();

  const std::string& server_principal() const { return server_principal_; }
  // INITIATE: the initial context token, with the offer echoed as the only auth.
  // Unauthenticated when the KDC gives no ticket for the service (its message says why).
  Result<RpcSaslProto> Initiate();
  // The RESPONSE to a CHALLENGE: first the AP-REP (answered with an empty token), then the
  // server's security-layer offer (answered with the wrapped choice).
  Result<RpcSaslProto> Respond(const std::string& challenge);
  // After SUCCESS: the layer for the chosen QOP, or null for "authentication". Unauthenticated
  // when the exchange is not complete.
  Result<std::unique_ptr<SaslSecurityLayer>> Finish();

 private:
  GssapiSaslClient() = default;
  Result<std::string> Step(const std::string& input);

  Options options_;
  RpcSaslProto::SaslAuth offer_;
  std::string server_principal_;
  void* target_ = nullptr;  // gss_name_t
  gss_ctx_id_t context_ = GSS_C_NO_CONTEXT;
  bool established_ = false;
  uint8_t chosen_layer_ = 0;  // set once the layer offer is answered
};

}  // namespace loom::hadoop
