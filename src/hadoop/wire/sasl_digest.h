#pragma once
// SASL DIGEST-MD5 (RFC 2831, md5-sess) as Hadoop uses it for TOKEN authentication: the user
// name is Base64(token identifier), the password Base64(token password), the realm and
// digest-uri come from the server's SaslAuth ("default", "/default"). qop auth, auth-int
// (integrity) and auth-conf (privacy, ciphers 3des, des, rc4, rc4-56, rc4-40), with the security
// layer of RFC 2831 sections 2.3-2.4 as the JDK implements it (yarn-captures K5.3).
// Both sides: the client (AM to RM scheduler, AM to NM) and the server (the YARN test double).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "hadoop/wire/credentials.h"
#include "hadoop/wire/sasl_layer.h"

namespace loom::hadoop {

struct DigestChallenge {
  std::string realm;
  std::string nonce;
  std::vector<std::string> qops;  // the offered list, e.g. {"auth"} or {"auth-int", "auth-conf"}
  std::string charset;
  std::string algorithm;
  std::vector<std::string> ciphers;  // offered with auth-conf, e.g. {"3des", "rc4", "des", "rc4-56", "rc4-40"}
};

// Parses `realm="default",nonce="...",qop="auth",charset=utf-8,algorithm=md5-sess` (quoted or
// not, any order). Fails if nonce is missing or algorithm is not md5-sess.
Result<DigestChallenge> ParseDigestChallenge(std::string_view text);
// The directives of a client response (or any k=v list), unquoted, in order; names are
// lower-cased (they are case-insensitive). Quoted values may hold commas and backslash escapes.
Result<std::vector<std::pair<std::string, std::string>>> ParseDirectives(std::string_view text);

struct DigestResult {
  std::string response_token;  // the INITIATE token, exactly as Java writes it
  std::string response_hex;    // response=<32 hex>
  std::string rspauth_hex;     // what the server must answer in SUCCESS ("rspauth=<hex>")
  std::string qop;             // the qop chosen: "auth", "auth-int" or "auth-conf"
  std::string cipher;          // auth-conf only: the cipher chosen ("3des", ...)
  std::string ha1;             // H(A1), 16 raw bytes: the security layer's keys derive from it
};

// The core of RFC 2831 md5-sess for nc=00000001 and no authzid, over the user name and
// password as the strings that are hashed (for Hadoop: the Base64 of the token identifier and of
// its password). Both hex values are 32 lower-case hex digits. With charset=utf-8 the RFC hashes
// ISO-8859-1 when every character fits; Hadoop's strings are ASCII, so the bytes are hashed as is.
// For qop auth-int and auth-conf, A2 ends in ":00000000000000000000000000000000".
struct DigestHashes {
  std::string response_hex;  // what the client sends (A2 = "AUTHENTICATE:" digest-uri)
  std::string rspauth_hex;   // what the server answers (A2 = ":" digest-uri)
  std::string ha1;           // H(A1) = MD5(MD5(user:realm:password) ":" nonce ":" cnonce), raw
};
DigestHashes ComputeDigestMd5Sess(std::string_view username, std::string_view realm, std::string_view password,
                                  std::string_view nonce, std::string_view cnonce, std::string_view digest_uri,
                                  std::string_view qop = "auth");

// A 40-character random cnonce (Base64 alphabet), like Java's.
std::string NewCnonce();

// Computes the client's response to `challenge` for `token`. `wanted_qops` is what the client
// accepts, most preferred first (QopsFromRpcProtection of its hadoop.rpc.protection): the qop
// chosen is the first of them the server offers, as the JDK's DigestMD5Client chooses. With
// auth-conf the cipher is the first of 3des, rc4, des, rc4-56, rc4-40 the server offers (the
// JDK picks 3des from Hadoop's list). No common qop: FailedPrecondition naming
// hadoop.rpc.protection on both sides. `digest_uri` is SaslAuth.protocol + "/" + SaslAuth.serverId.
Result<DigestResult> DigestRespond(const Token& token, const DigestChallenge& challenge, std::string_view cnonce,
                                   std::string_view digest_uri,
                                   const std::vector<std::string>& wanted_qops = {"auth"});
// Checks the server's SUCCESS token ("rspauth=<hex>").
Status VerifyRspAuth(const DigestResult& expected, std::string_view success_token);

// ---- the security layer (RFC 2831 2.3 integrity, 2.4 confidentiality) ----

// The keys of RFC 2831 2.3/2.4, each 16 raw bytes: Kic/Kis sign client-to-server and
// server-to-client messages, Kcc/Kcs seal them (from the first 16, 7 or 5 bytes of H(A1) for
// 3des/des/rc4, rc4-56, rc4-40; empty when `cipher` is empty, i.e. without auth-conf).
struct DigestKeys {
  std::string kic, kis, kcc, kcs;
};
DigestKeys DeriveDigestKeys(std::string_view ha1, std::string_view cipher);

enum class DigestSide { kClient, kServer };
// The layer for a negotiated `qop`: nullptr for "auth" (no layer), else a layer whose Wrap
// signs (auth-int) or seals (auth-conf, with `cipher`) as `side` and whose Unwrap checks what
// the other side sent. Message format, as the JDK's DigestMD5Base:
//   auth-int:  msg | HMAC-MD5(Ki, seq | msg)[0:10] | 00 01 | seq (4 bytes BE)
//   auth-conf: CIPHER(Kc, msg | pad | HMAC-MD5(Ki, seq | msg)[0:10]) | 00 01 | seq
// where seq counts from 0 in each direction, pad is 1-8 bytes of its own length for the DES
// ciphers (none for RC4), 3des is DES-EDE K1,K2,K1 in CBC mode with IV = Kc[8:16] (des: one key,
// same IV), and the cipher state (CBC chaining value, RC4 keystream) carries over between
// messages. Unwrap returns Unauthenticated for a MAC that does not verify or a sequence number
// other than the next expected one, DataLoss for a malformed token. InvalidArgument for an
// unknown qop or cipher.
Result<std::unique_ptr<SaslSecurityLayer>> NewDigestSecurityLayer(std::string_view qop, std::string_view cipher,
                                                                  std::string_view ha1, DigestSide side);

// ---- server side ----

// A challenge text as Hadoop sends it, for a given nonce and the qops the server offers
// (from its hadoop.rpc.protection): `realm="default",nonce="..",qop="auth-conf",charset=utf-8,
// cipher="3des,rc4,des,rc4-56,rc4-40",algorithm=md5-sess` (the cipher list only with auth-conf).
std::string MakeDigestChallenge(std::string_view nonce, const std::vector<std::string>& qops = {"auth"});
// Verifies a client's INITIATE token against the password the server holds for the
// identifier it names; returns the SUCCESS token ("rspauth=...") or an error worded as
// Hadoop's ("DIGEST-MD5: digest response format violation. Mismatched response."). The
// client's qop must be one of `offered_qops` (and its cipher one the server offers).
struct DigestVerified {
  std::string identifier;  // bytes, decoded from the user name
  std::string success_token;
  std::string qop;     // what the client chose
  std::string cipher;  // auth-conf only
  std::string ha1;     // raw H(A1), for NewDigestSecurityLayer
};
// `password_for` maps an identifier (bytes) to its password (bytes), or NotFound.
template <typename F>
Result<DigestVerified> DigestVerify(std::string_view client_token, std::string_view nonce, F password_for);
Result<DigestVerified> DigestVerifyWithPassword(std::string_view client_token, std::string_view nonce,
                                                std::string_view identifier, std::string_view password,
                                                const std::vector<std::string>& offered_qops = {"auth"});

template <typename F>
Result<DigestVerified> DigestVerify(std::string_view client_token, std::string_view nonce, F password_for) {
  LOOM_ASSIGN_OR_RETURN(auto directives, ParseDirectives(client_token));
  std::string user;
  for (auto& [k, v] : directives) {
    if (k == "username") user = v;
  }
  LOOM_ASSIGN_OR_RETURN(std::string identifier, Base64Decode(user));
  LOOM_ASSIGN_OR_RETURN(std::string password, password_for(identifier));
  return DigestVerifyWithPassword(client_token, nonce, identifier, password);
}

}  // namespace loom::hadoop
