#pragma once
// SASL DIGEST-MD5 (RFC 2831, md5-sess) as Hadoop uses it for TOKEN authentication: the user
// name is Base64(token identifier), the password Base64(token password), the realm and
// digest-uri come from the server's SaslAuth ("default", "/default"), qop "auth" only.
// Both sides: the client (AM to RM scheduler, AM to NM) and the server (the YARN test double).

#include <string>
#include <string_view>
#include <vector>

#include "cluster/yarn/wire/credentials.h"
#include "core/status.h"

namespace loom::cluster::yarn {

struct DigestChallenge {
  std::string realm;
  std::string nonce;
  std::vector<std::string> qops;  // the offered list, e.g. {"auth"} or {"auth-int", "auth-conf"}
  std::string charset;
  std::string algorithm;
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
};

// The core of RFC 2831 md5-sess for qop=auth, nc=00000001 and no authzid, over the user name and
// password as the strings that are hashed (for Hadoop: the Base64 of the token identifier and of
// its password). Both values are 32 lower-case hex digits. With charset=utf-8 the RFC hashes
// ISO-8859-1 when every character fits; Hadoop's strings are ASCII, so the bytes are hashed as is.
struct DigestHashes {
  std::string response_hex;  // what the client sends (A2 = "AUTHENTICATE:" digest-uri)
  std::string rspauth_hex;   // what the server answers (A2 = ":" digest-uri)
};
DigestHashes ComputeDigestMd5Sess(std::string_view username, std::string_view realm, std::string_view password,
                                  std::string_view nonce, std::string_view cnonce, std::string_view digest_uri);

// A 40-character random cnonce (Base64 alphabet), like Java's.
std::string NewCnonce();

// Computes the client's response to `challenge` for `token`. Fails with a clear message when
// the server offers no "auth" qop (integrity/privacy are not implemented).
// `digest_uri` is SaslAuth.protocol + "/" + SaslAuth.serverId.
Result<DigestResult> DigestRespond(const Token& token, const DigestChallenge& challenge, std::string_view cnonce,
                                   std::string_view digest_uri);
// Checks the server's SUCCESS token ("rspauth=<hex>").
Status VerifyRspAuth(const DigestResult& expected, std::string_view success_token);

// Server side. A challenge text as Hadoop sends it, for a given nonce.
std::string MakeDigestChallenge(std::string_view nonce);
// Verifies a client's INITIATE token against the password the server holds for the
// identifier it names; returns the SUCCESS token ("rspauth=...") or an error worded as
// Hadoop's ("DIGEST-MD5: digest response format violation. Mismatched response.").
struct DigestVerified {
  std::string identifier;  // bytes, decoded from the user name
  std::string success_token;
};
// `password_for` maps an identifier (bytes) to its password (bytes), or NotFound.
template <typename F>
Result<DigestVerified> DigestVerify(std::string_view client_token, std::string_view nonce, F password_for);
Result<DigestVerified> DigestVerifyWithPassword(std::string_view client_token, std::string_view nonce,
                                                std::string_view identifier, std::string_view password);

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

}  // namespace loom::cluster::yarn
