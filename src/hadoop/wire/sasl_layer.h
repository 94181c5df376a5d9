#pragma once
// The security layer a SASL exchange may negotiate (RFC 4422 section 3.7): once the mechanism
// reports SUCCESS with qop auth-int (integrity) or auth-conf (privacy), every byte after it, in
// both directions, travels as the layer's tokens. In Hadoop IPC each token rides in a callId -33
// `RpcSaslProto{state WRAP, token}` frame, and the plaintext inside is one or more complete
// ordinary RPC frames (4-byte length + header + body); see yarn-captures K4.9-10.
//
// Implementations: DIGEST-MD5 (sasl_digest.h, RFC 2831 section 2.3/2.4: HMAC-MD5 MAC + sequence
// numbers, 3DES/DES/RC4 sealing) and GSSAPI (RFC 4121 gss_wrap/gss_unwrap).
//
// Contract:
// - One call per message, in wire order. Wrap() is called once per token the client sends, in
//   the order the tokens are written to the socket; Unwrap() once per token received, in the
//   order they arrived. The layer keeps per-direction state that makes the order matter: a
//   sequence number per direction (starting at 0 for DIGEST-MD5, at the negotiated initial
//   value for GSSAPI), and for DIGEST privacy the cipher state (3DES CBC chaining value, RC4
//   keystream position) that carries over from one message to the next. A token wrapped but
//   not sent, or received and not unwrapped, desynchronises the connection for good.
// - Unwrap() verifies integrity (MAC, sequence number, padding) before returning anything.
//   Any failure returns Unauthenticated (or DataLoss for a malformed token) with a message
//   naming the mechanism, and the connection must be closed: the layer's state is then
//   undefined and no later call may be made.
// - Wrap() of an empty message is allowed. A failure of Wrap() is fatal to the connection too.
// - Qop() is "auth-int" or "auth-conf" (the RFC 2831 names; GSSAPI maps its layer bits
//   0x02 integrity / 0x04 privacy onto them). A mechanism that negotiated "auth" has no layer:
//   its client returns a null layer rather than one whose Qop() is "auth".
// - Not thread-safe: the owner (one IPC connection) serialises all calls, Wrap and Unwrap
//   included (a GSSAPI context may not be used from two threads at once).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace loom::hadoop {

class SaslSecurityLayer {
 public:
  virtual ~SaslSecurityLayer() = default;

  // Protects one outgoing message; returns the token to put in RpcSaslProto.token.
  virtual Result<std::string> Wrap(std::string_view plain) = 0;
  // Checks and opens one incoming RpcSaslProto.token; returns the plaintext it carries.
  virtual Result<std::string> Unwrap(std::string_view token) = 0;
  // "auth-int" or "auth-conf".
  virtual std::string_view Qop() const = 0;
};

// The largest plaintext an IPC connection puts in one WRAP token. Both Hadoop peers announce a
// 65536-byte receive buffer (DIGEST maxbuf, GSSAPI's RFC 4752 offer) that bounds a whole token;
// this leaves room for the layer's overhead (DIGEST: 10-byte MAC, up to 8 pad bytes and 6 bytes
// of type and sequence; GSSAPI: a 16-byte header, a confounder and a checksum). Java cuts larger
// writes the same way (a BufferedOutputStream of the negotiated raw send size), so a receiver
// must reassemble frames across tokens.
inline constexpr size_t kSaslMaxWrapPlainBytes = 65536 - 128;

// The SASL qops a `hadoop.rpc.protection` value allows, in its order: authentication -> "auth",
// integrity -> "auth-int", privacy -> "auth-conf"; the value may be a comma list ("privacy,
// integrity"), case-insensitive, as Hadoop's SaslPropertiesResolver reads it. Empty: the
// default, {"auth"}. InvalidArgument naming hadoop.rpc.protection for any other word.
Result<std::vector<std::string>> QopsFromRpcProtection(std::string_view value);
// The hadoop.rpc.protection word of a qop ("auth-conf" -> "privacy"); the qop itself if unknown.
std::string RpcProtectionOfQop(std::string_view qop);

}  // namespace loom::hadoop
