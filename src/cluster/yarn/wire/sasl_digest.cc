#include "cluster/yarn/wire/sasl_digest.h"

#include <algorithm>

#include "cluster/yarn/wire/crypto_library.h"
#include "core/strings.h"

namespace loom::cluster::yarn {

namespace {

// What Hadoop's SaslRpcServer uses for every token protocol: serverId "default", protocol "".
constexpr std::string_view kRealm = "default";
constexpr std::string_view kDigestUri = "/default";
constexpr std::string_view kNonceCount = "00000001";  // one authentication per connection
constexpr std::string_view kFormatViolation = "DIGEST-MD5: digest response format violation. ";

std::string Md5(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  LOOM_CHECK(Crypto().digest(data.data(), data.size(), out, &n, Crypto().md5(), nullptr) == 1);
  return std::string(reinterpret_cast<const char*>(out), n);
}

std::string ToHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char ch : bytes) {
    out.push_back(kDigits[static_cast<uint8_t>(ch) >> 4]);
    out.push_back(kDigits[static_cast<uint8_t>(ch) & 0xf]);
  }
  return out;
}

std::string Md5Hex(std::string_view data) { return ToHex(Md5(data)); }

bool IsSpace(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'; }
bool IsNameChar(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_';
}

// A quoted-string with '"' and '\' escaped, as the RFC's quoted-pair allows.
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out.push_back('\\');
    out.push_back(ch);
  }
  out.push_back('"');
  return out;
}

bool OffersAuth(const std::vector<std::string>& qops) {
  return std::any_of(qops.begin(), qops.end(), [](const std::string& q) { return ToLower(q) == "auth"; });
}

Status QopNotSupported(const std::vector<std::string>& qops) {
  return Status::Unimplemented(
      "SASL DIGEST-MD5: the server offers qop \"" + Join(qops, ",") +
      "\" but not \"auth\": the cluster requires integrity or privacy (hadoop.rpc.protection=integrity or "
      "privacy), which Loom does not implement yet; it needs hadoop.rpc.protection=authentication");
}

// The value of `name` among `directives`; an error if it appears more than once.
Result<std::optional<std::string>> Single(const std::vector<std::pair<std::string, std::string>>& directives,
                                          std::string_view name) {
  std::optional<std::string> found;
  for (const auto& [k, v] : directives) {
    if (k != name) continue;
    if (found) return Status::InvalidArgument("duplicate directive " + std::string(name));
    found = v;
  }
  return found;
}

}  // namespace

Result<std::vector<std::pair<std::string, std::string>>> ParseDirectives(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t i = 0;
  const size_t n = text.size();
  auto skip_space = [&] {
    while (i < n && IsSpace(text[i])) ++i;
  };
  auto fail = [&](const std::string& why) {
    return Status::InvalidArgument("DIGEST-MD5: " + why + " at offset " + std::to_string(i));
  };
  while (true) {
    skip_space();
    while (i < n && text[i] == ',') {  // the RFC's #rule allows empty list elements
      ++i;
      skip_space();
    }
    if (i == n) break;
    size_t start = i;
    while (i < n && IsNameChar(text[i])) ++i;
    if (i == start) return fail("expected a directive name");
    std::string name = ToLower(text.substr(start, i - start));
    skip_space();
    if (i == n || text[i] != '=') return fail("expected '=' after " + name);
    ++i;
    skip_space();
    std::string value;
    if (i < n && text[i] == '"') {
      bool closed = false;
      for (++i; i < n;) {
        char ch = text[i++];
        if (ch == '"') {
          closed = true;
          break;
        }
        if (ch == '\\') {
          if (i == n) break;
          ch = text[i++];
        }
        value.push_back(ch);
      }
      if (!closed) return fail("unterminated quoted value of " + name);
    } else {
      size_t vstart = i;
      while (i < n && text[i] != ',' && text[i] != '"' && !IsSpace(text[i])) ++i;
      value = text.substr(vstart, i - vstart);
    }
    out.emplace_back(std::move(name), std::move(value));
    skip_space();
    if (i < n && text[i] != ',') return fail("expected ',' after the value of " + out.back().first);
  }
  return out;
}

Result<DigestChallenge> ParseDigestChallenge(std::string_view text) {
  auto fail = [](const Status& s) { return Status::InvalidArgument("DIGEST-MD5 challenge: " + s.message()); };
  Result<std::vector<std::pair<std::string, std::string>>> directives = ParseDirectives(text);
  if (!directives.ok()) return fail(directives.status());
  DigestChallenge c;
  // The RFC lets a server offer several realms; Hadoop offers one, and the first is the one used.
  for (const auto& [k, v] : *directives) {
    if (k == "realm") {
      c.realm = v;
      break;
    }
  }
  std::optional<std::string> nonce, qop, charset, algorithm;
  for (auto [name, slot] : {std::pair{"nonce", &nonce}, {"qop", &qop}, {"charset", &charset},
                            {"algorithm", &algorithm}}) {
    Result<std::optional<std::string>> v = Single(*directives, name);
    if (!v.ok()) return fail(v.status());
    *slot = *v;
  }
  if (!nonce || nonce->empty()) return Status::InvalidArgument("DIGEST-MD5 challenge: no nonce");
  c.nonce = *nonce;
  if (!algorithm || ToLower(*algorithm) != "md5-sess") {
    return Status::InvalidArgument("DIGEST-MD5 challenge: algorithm is \"" + algorithm.value_or("") +
                                   "\", expected md5-sess");
  }
  c.algorithm = "md5-sess";
  if (charset && ToLower(*charset) != "utf-8") {
    return Status::InvalidArgument("DIGEST-MD5 challenge: unsupported charset \"" + *charset + "\"");
  }
  if (charset) c.charset = "utf-8";
  for (const std::string& q : Split(qop.value_or("auth"), ',')) {  // no qop means "auth" (RFC 2831 2.1.1)
    std::string v = ToLower(Trim(q));
    if (!v.empty()) c.qops.push_back(std::move(v));
  }
  if (c.qops.empty()) return Status::InvalidArgument("DIGEST-MD5 challenge: empty qop list");
  return c;
}

DigestHashes ComputeDigestMd5Sess(std::string_view username, std::string_view realm, std::string_view password,
                                  std::string_view nonce, std::string_view cnonce, std::string_view digest_uri) {
  // A1 = MD5(user:realm:password) as 16 raw bytes, then ":" nonce ":" cnonce (no authzid).
  std::string a1 = Md5(std::string(username) + ":" + std::string(realm) + ":" + std::string(password));
  a1 += ":" + std::string(nonce) + ":" + std::string(cnonce);
  std::string ha1 = Md5Hex(a1);
  auto kd = [&](const std::string& a2) {
    return Md5Hex(ha1 + ":" + std::string(nonce) + ":" + std::string(kNonceCount) + ":" + std::string(cnonce) +
                  ":auth:" + Md5Hex(a2));
  };
  return {kd("AUTHENTICATE:" + std::string(digest_uri)), kd(":" + std::string(digest_uri))};
}

std::string NewCnonce() {
  unsigned char random[30];  // Java's DigestMD5Base draws 30 bytes: 40 Base64 characters
  LOOM_CHECK(Crypto().rand_bytes(random, sizeof(random)) == 1);
  return Base64Encode(std::string_view(reinterpret_cast<const char*>(random), sizeof(random)));
}

Result<DigestResult> DigestRespond(const Token& token, const DigestChallenge& challenge, std::string_view cnonce,
                                   std::string_view digest_uri) {
  if (!OffersAuth(challenge.qops)) return QopNotSupported(challenge.qops);
  if (challenge.nonce.empty()) return Status::InvalidArgument("DIGEST-MD5: the challenge has no nonce");
  if (cnonce.empty()) return Status::InvalidArgument("DIGEST-MD5: empty cnonce");
  std::string user = Base64Encode(token.identifier);
  DigestHashes h = ComputeDigestMd5Sess(user, challenge.realm, Base64Encode(token.password), challenge.nonce, cnonce,
                                        digest_uri);
  // Field order and quoting exactly as Java's DigestMD5Client writes them.
  std::string t = challenge.charset.empty() ? "" : "charset=utf-8,";
  t += "username=" + Quote(user) + ",realm=" + Quote(challenge.realm) + ",nonce=" + Quote(challenge.nonce) +
       ",nc=" + std::string(kNonceCount) + ",cnonce=" + Quote(cnonce) + ",digest-uri=" + Quote(digest_uri) +
       ",maxbuf=65536,response=" + h.response_hex + ",qop=auth";
  return DigestResult{std::move(t), std::move(h.response_hex), std::move(h.rspauth_hex)};
}

Status VerifyRspAuth(const DigestResult& expected, std::string_view success_token) {
  Result<std::vector<std::pair<std::string, std::string>>> d = ParseDirectives(success_token);
  if (!d.ok()) return Status::Unauthenticated("DIGEST-MD5: malformed server SUCCESS token: " + d.status().message());
  Result<std::optional<std::string>> rspauth = Single(*d, "rspauth");
  if (!rspauth.ok() || !*rspauth) return Status::Unauthenticated("DIGEST-MD5: the server's SUCCESS token has no rspauth");
  if (ToLower(**rspauth) != expected.rspauth_hex) {
    return Status::Unauthenticated("DIGEST-MD5: the server's rspauth does not match; it does not hold the token's "
                                   "password");
  }
  return Status::Ok();
}

std::string MakeDigestChallenge(std::string_view nonce) {
  return "realm=\"" + std::string(kRealm) + "\",nonce=\"" + std::string(nonce) +
         "\",qop=\"auth\",charset=utf-8,algorithm=md5-sess";
}

Result<DigestVerified> DigestVerifyWithPassword(std::string_view client_token, std::string_view nonce,
                                                std::string_view identifier, std::string_view password) {
  auto violation = [](const std::string& why) { return Status::Unauthenticated(std::string(kFormatViolation) + why); };
  Result<std::vector<std::pair<std::string, std::string>>> directives = ParseDirectives(client_token);
  if (!directives.ok()) return violation(directives.status().message());
  std::optional<std::string> user, realm, got_nonce, nc, cnonce, qop, uri, response, charset;
  for (auto [name, slot] : {std::pair{"username", &user}, {"realm", &realm}, {"nonce", &got_nonce}, {"nc", &nc},
                            {"cnonce", &cnonce}, {"qop", &qop}, {"digest-uri", &uri}, {"response", &response},
                            {"charset", &charset}}) {
    Result<std::optional<std::string>> v = Single(*directives, name);
    if (!v.ok()) return violation(v.status().message());
    *slot = *v;
  }
  if (!user) return violation("Missing username.");
  if (realm.value_or("") != kRealm) return violation("Unexpected realm \"" + realm.value_or("") + "\".");
  if (!got_nonce) return violation("Missing nonce.");
  if (*got_nonce != nonce) return violation("Mismatched nonce.");
  if (nc.value_or("") != kNonceCount) return violation("Nonce count does not match: " + nc.value_or("(none)"));
  if (!cnonce || cnonce->empty()) return violation("Missing cnonce.");
  if (ToLower(qop.value_or("auth")) != "auth") return violation("Invalid QOP: " + *qop);
  if (uri.value_or("") != kDigestUri) {
    return violation("Mismatched URI: " + uri.value_or("") + "; expecting: " + std::string(kDigestUri));
  }
  if (charset && ToLower(*charset) != "utf-8") return violation("Unsupported charset: " + *charset);
  if (!response) return violation("Missing response.");
  Result<std::string> named = Base64Decode(*user);
  if (!named.ok() || *named != identifier) {
    return Status::Unauthenticated("DIGEST-MD5: the user name does not encode the token identifier being checked");
  }
  DigestHashes h = ComputeDigestMd5Sess(*user, kRealm, Base64Encode(password), nonce, *cnonce, kDigestUri);
  if (response->size() != h.response_hex.size() ||
      Crypto().memcmp(response->data(), h.response_hex.data(), h.response_hex.size()) != 0) {
    return violation("Mismatched response.");
  }
  return DigestVerified{std::string(identifier), "rspauth=" + h.rspauth_hex};
}

}  // namespace loom::cluster::yarn
