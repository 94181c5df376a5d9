#include "hadoop/wire/sasl_digest.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include "core/strings.h"
#include "hadoop/wire/crypto_library.h"

namespace loom::hadoop {

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

// The ciphers this side implements, in the order the client prefers them (the JDK picks 3des
// from Hadoop's offer).
constexpr std::array<std::string_view, 5> kCiphers = {"3des", "rc4", "des", "rc4-56", "rc4-40"};
constexpr std::string_view kZeroA2Suffix = ":00000000000000000000000000000000";

bool Contains(const std::vector<std::string>& list, std::string_view v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

std::string ProtectionWords(const std::vector<std::string>& qops) {
  std::vector<std::string> words;
  for (const std::string& q : qops) words.push_back(RpcProtectionOfQop(q));
  return Join(words, ",");
}

Status NoCommonQop(const std::vector<std::string>& offered, const std::vector<std::string>& wanted) {
  return Status::FailedPrecondition(
      "SASL DIGEST-MD5: no common protection: the server requires qop \"" + Join(offered, ",") +
      "\" (its hadoop.rpc.protection=" + ProtectionWords(offered) + ") but this client allows only \"" +
      Join(wanted, ",") + "\" (hadoop.rpc.protection=" + ProtectionWords(wanted) +
      "); set hadoop.rpc.protection in $HADOOP_CONF_DIR/core-site.xml to the cluster's value");
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
  Result<std::optional<std::string>> cipher = Single(*directives, "cipher");
  if (!cipher.ok()) return fail(cipher.status());
  for (const std::string& name : Split(cipher->value_or(""), ',')) {
    std::string v = ToLower(Trim(name));
    if (!v.empty()) c.ciphers.push_back(std::move(v));
  }
  return c;
}

DigestHashes ComputeDigestMd5Sess(std::string_view username, std::string_view realm, std::string_view password,
                                  std::string_view nonce, std::string_view cnonce, std::string_view digest_uri,
                                  std::string_view qop) {
  // A1 = MD5(user:realm:password) as 16 raw bytes, then ":" nonce ":" cnonce (no authzid).
  std::string a1 = Md5(std::string(username) + ":" + std::string(realm) + ":" + std::string(password));
  a1 += ":" + std::string(nonce) + ":" + std::string(cnonce);
  std::string ha1 = Md5(a1);
  std::string ha1_hex = ToHex(ha1);
  // RFC 2831 2.1.2.1: with a security layer A2 also covers the (absent) entity body.
  const std::string suffix = qop == "auth" ? "" : std::string(kZeroA2Suffix);
  auto kd = [&](const std::string& a2) {
    return Md5Hex(ha1_hex + ":" + std::string(nonce) + ":" + std::string(kNonceCount) + ":" + std::string(cnonce) +
                  ":" + std::string(qop) + ":" + Md5Hex(a2 + suffix));
  };
  return {kd("AUTHENTICATE:" + std::string(digest_uri)), kd(":" + std::string(digest_uri)), std::move(ha1)};
}

std::string NewCnonce() {
  unsigned char random[30];  // Java's DigestMD5Base draws 30 bytes: 40 Base64 characters
  LOOM_CHECK(Crypto().rand_bytes(random, sizeof(random)) == 1);
  return Base64Encode(std::string_view(reinterpret_cast<const char*>(random), sizeof(random)));
}

Result<DigestResult> DigestRespond(const Token& token, const DigestChallenge& challenge, std::string_view cnonce,
                                   std::string_view digest_uri, const std::vector<std::string>& wanted_qops) {
  std::string qop;
  for (const std::string& w : wanted_qops) {
    if (Contains(challenge.qops, w)) {
      qop = w;
      break;
    }
  }
  if (qop.empty()) return NoCommonQop(challenge.qops, wanted_qops);
  if (qop != "auth" && qop != "auth-int" && qop != "auth-conf") {
    return Status::InvalidArgument("DIGEST-MD5: unknown qop \"" + qop + "\"");
  }
  std::string cipher;
  if (qop == "auth-conf") {
    for (std::string_view c : kCiphers) {
      if (Contains(challenge.ciphers, c)) {
        cipher = c;
        break;
      }
    }
    if (cipher.empty()) {
      return Status::FailedPrecondition("SASL DIGEST-MD5: the server offers privacy with ciphers \"" +
                                        Join(challenge.ciphers, ",") +
                                        "\", none of which Loom implements (3des, rc4, des, rc4-56, rc4-40)");
    }
  }
  if (challenge.nonce.empty()) return Status::InvalidArgument("DIGEST-MD5: the challenge has no nonce");
  if (cnonce.empty()) return Status::InvalidArgument("DIGEST-MD5: empty cnonce");
  std::string user = Base64Encode(token.identifier);
  DigestHashes h = ComputeDigestMd5Sess(user, challenge.realm, Base64Encode(token.password), challenge.nonce, cnonce,
                                        digest_uri, qop);
  // Field order and quoting exactly as Java's DigestMD5Client writes them (K5.3).
  std::string t = challenge.charset.empty() ? "" : "charset=utf-8,";
  t += "username=" + Quote(user) + ",realm=" + Quote(challenge.realm) + ",nonce=" + Quote(challenge.nonce) +
       ",nc=" + std::string(kNonceCount) + ",cnonce=" + Quote(cnonce) + ",digest-uri=" + Quote(digest_uri) +
       ",maxbuf=65536,response=" + h.response_hex + ",qop=" + qop;
  if (!cipher.empty()) t += ",cipher=" + Quote(cipher);
  return DigestResult{std::move(t), std::move(h.response_hex), std::move(h.rspauth_hex), std::move(qop),
                      std::move(cipher), std::move(h.ha1)};
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

std::string MakeDigestChallenge(std::string_view nonce, const std::vector<std::string>& qops) {
  std::string c = "realm=\"" + std::string(kRealm) + "\",nonce=\"" + std::string(nonce) + "\",qop=\"" +
                  Join(qops, ",") + "\",charset=utf-8,";
  if (Contains(qops, "auth-conf")) {
    std::vector<std::string> ciphers(kCiphers.begin(), kCiphers.end());
    c += "cipher=\"" + Join(ciphers, ",") + "\",";
  }
  return c + "algorithm=md5-sess";
}

Result<DigestVerified> DigestVerifyWithPassword(std::string_view client_token, std::string_view nonce,
                                                std::string_view identifier, std::string_view password,
                                                const std::vector<std::string>& offered_qops) {
  auto violation = [](const std::string& why) { return Status::Unauthenticated(std::string(kFormatViolation) + why); };
  Result<std::vector<std::pair<std::string, std::string>>> directives = ParseDirectives(client_token);
  if (!directives.ok()) return violation(directives.status().message());
  std::optional<std::string> user, realm, got_nonce, nc, cnonce, qop, uri, response, charset, cipher;
  for (auto [name, slot] : {std::pair{"username", &user}, {"realm", &realm}, {"nonce", &got_nonce}, {"nc", &nc},
                            {"cnonce", &cnonce}, {"qop", &qop}, {"digest-uri", &uri}, {"response", &response},
                            {"charset", &charset}, {"cipher", &cipher}}) {
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
  const std::string chosen_qop = ToLower(qop.value_or("auth"));
  if (!Contains(offered_qops, chosen_qop)) return violation("Invalid QOP: " + chosen_qop);
  std::string chosen_cipher;
  if (chosen_qop == "auth-conf") {
    chosen_cipher = ToLower(cipher.value_or(""));
    if (std::find(kCiphers.begin(), kCiphers.end(), chosen_cipher) == kCiphers.end()) {
      return violation("Invalid cipher: " + cipher.value_or("(none)"));
    }
  }
  if (uri.value_or("") != kDigestUri) {
    return violation("Mismatched URI: " + uri.value_or("") + "; expecting: " + std::string(kDigestUri));
  }
  if (charset && ToLower(*charset) != "utf-8") return violation("Unsupported charset: " + *charset);
  if (!response) return violation("Missing response.");
  Result<std::string> named = Base64Decode(*user);
  if (!named.ok() || *named != identifier) {
    return Status::Unauthenticated("DIGEST-MD5: the user name does not encode the token identifier being checked");
  }
  DigestHashes h =
      ComputeDigestMd5Sess(*user, kRealm, Base64Encode(password), nonce, *cnonce, kDigestUri, chosen_qop);
  if (response->size() != h.response_hex.size() ||
      Crypto().memcmp(response->data(), h.response_hex.data(), h.response_hex.size()) != 0) {
    return violation("Mismatched response.");
  }
  return DigestVerified{std::string(identifier), "rspauth=" + h.rspauth_hex, chosen_qop, std::move(chosen_cipher),
                        std::move(h.ha1)};
}

// ---- the security layer -----------------------------------------------------------------------

namespace {

constexpr size_t kMacBytes = 10;
constexpr size_t kTrailerBytes = 6;  // 00 01 (message type) + 4-byte sequence number

std::string BigEndian32(uint32_t v) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (24 - 8 * i)) & 0xff);
  return out;
}

uint32_t ReadBigEndian32(std::string_view b) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(b[i]);
  return v;
}

// HMAC-MD5(key, seq | msg), first 10 bytes (RFC 2831 2.3).
std::string Mac(const std::string& key, uint32_t seq, std::string_view msg) {
  std::string data = BigEndian32(seq);
  data.append(msg);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  LOOM_CHECK(Crypto().hmac(Crypto().md5(), key.data(), static_cast<int>(key.size()),
                           reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &n) != nullptr);
  return std::string(reinterpret_cast<const char*>(out), kMacBytes);
}

// 7 key bytes spread over 8, 7 bits each, with odd parity in the low bit (the JDK's
// DigestMD5Base.addDesParity).
std::string DesKey(std::string_view seven) {
  uint64_t bits = 0;
  for (int i = 0; i < 7; ++i) bits = (bits << 8) | static_cast<uint8_t>(seven[i]);
  std::string key(8, '\0');
  for (int i = 0; i < 8; ++i) {
    uint8_t b = static_cast<uint8_t>(((bits >> (49 - 7 * i)) & 0x7f) << 1);
    int ones = __builtin_popcount(b);
    key[i] = static_cast<char>(b | ((ones % 2 == 0) ? 1 : 0));
  }
  return key;
}

// One direction's cipher: DES-EDE3-CBC (3des as K1,K2,K1; des as K,K,K) with the chaining
// value kept between calls, or RC4 with its keystream position kept.
class DigestCipher {
 public:
  DigestCipher(std::string_view cipher, const std::string& kc, bool encrypt) {
    if (cipher == "3des" || cipher == "des") {
      std::string k1 = DesKey(std::string_view(kc).substr(0, 7));
      std::string k2 = cipher == "3des" ? DesKey(std::string_view(kc).substr(7, 7)) : k1;
      std::string key = k1 + k2 + k1;
      ctx_ = Crypto().cipher_ctx_new();
      LOOM_CHECK(ctx_ != nullptr);
      LOOM_CHECK(Crypto().cipher_init(ctx_, Crypto().des_ede3_cbc(), nullptr,
                                      reinterpret_cast<const unsigned char*>(key.data()),
                                      reinterpret_cast<const unsigned char*>(kc.data() + 8), encrypt ? 1 : 0) == 1);
      Crypto().cipher_set_padding(ctx_, 0);
    } else {
      // RC4 key schedule over all 16 bytes of Kc (rc4-40/rc4-56 shorten H(A1), not Kc).
      for (int i = 0; i < 256; ++i) s_[i] = static_cast<uint8_t>(i);
      uint8_t j = 0;
      for (int i = 0; i < 256; ++i) {
        j = static_cast<uint8_t>(j + s_[i] + static_cast<uint8_t>(kc[i % kc.size()]));
        std::swap(s_[i], s_[j]);
      }
    }
  }
  ~DigestCipher() {
    if (ctx_) Crypto().cipher_ctx_free(ctx_);
  }
  DigestCipher(const DigestCipher&) = delete;
  DigestCipher& operator=(const DigestCipher&) = delete;

  bool block() const { return ctx_ != nullptr; }

  // Transforms `data` in place (a multiple of 8 bytes for the DES ciphers).
  void Apply(std::string* data) {
    if (ctx_) {
      std::string out(data->size() + 8, '\0');
      int n = 0;
      LOOM_CHECK(Crypto().cipher_update(ctx_, reinterpret_cast<unsigned char*>(out.data()), &n,
                                        reinterpret_cast<const unsigned char*>(data->data()),
                                        static_cast<int>(data->size())) == 1);
      LOOM_CHECK(static_cast<size_t>(n) == data->size());
      out.resize(static_cast<size_t>(n));
      *data = std::move(out);
      return;
    }
    for (char& ch : *data) {
      i_ = static_cast<uint8_t>(i_ + 1);
      j_ = static_cast<uint8_t>(j_ + s_[i_]);
      std::swap(s_[i_], s_[j_]);
      ch = static_cast<char>(static_cast<uint8_t>(ch) ^ s_[static_cast<uint8_t>(s_[i_] + s_[j_])]);
    }
  }

 private:
  EVP_CIPHER_CTX* ctx_ = nullptr;
  uint8_t s_[256] = {};
  uint8_t i_ = 0, j_ = 0;
};

class DigestSecurityLayer final : public SaslSecurityLayer {
 public:
  DigestSecurityLayer(std::string qop, std::string_view cipher, const DigestKeys& keys, DigestSide side)
      : qop_(std::move(qop)), peer_(side == DigestSide::kClient ? "server" : "client") {
    const bool client = side == DigestSide::kClient;
    send_mac_key_ = client ? keys.kic : keys.kis;
    recv_mac_key_ = client ? keys.kis : keys.kic;
    if (qop_ == "auth-conf") {
      send_cipher_ = std::make_unique<DigestCipher>(cipher, client ? keys.kcc : keys.kcs, true);
      recv_cipher_ = std::make_unique<DigestCipher>(cipher, client ? keys.kcs : keys.kcc, false);
    }
  }

  Result<std::string> Wrap(std::string_view plain) override {
    const uint32_t seq = send_seq_++;
    std::string mac = Mac(send_mac_key_, seq, plain);
    std::string out;
    if (send_cipher_) {
      out.assign(plain);
      if (send_cipher_->block()) {
        // 1-8 bytes, each holding the pad length, so that msg | pad | mac fills whole blocks.
        size_t pad = 8 - (plain.size() + kMacBytes) % 8;
        out.append(pad, static_cast<char>(pad));
      }
      out += mac;
      send_cipher_->Apply(&out);
    } else {
      out.reserve(plain.size() + kMacBytes + kTrailerBytes);
      out.assign(plain);
      out += mac;
    }
    out += std::string("\x00\x01", 2) + BigEndian32(seq);
    return out;
  }

  Result<std::string> Unwrap(std::string_view token) override {
    auto malformed = [&](const std::string& why) {
      return Status(StatusCode::kDataLoss, "SASL DIGEST-MD5: malformed " + qop_ + " message from the " + peer_ +
                                               ": " + why);
    };
    if (token.size() < kMacBytes + kTrailerBytes) return malformed(std::to_string(token.size()) + " bytes");
    std::string_view trailer = token.substr(token.size() - kTrailerBytes);
    if (trailer[0] != 0 || trailer[1] != 1) return malformed("message type is not 0001");
    const uint32_t seq = ReadBigEndian32(trailer.substr(2));
    const uint32_t expected = recv_seq_++;
    if (seq != expected) {
      return Status::Unauthenticated("SASL DIGEST-MD5: " + qop_ + " message from the " + peer_ +
                                     " out of sequence: sequence number " + std::to_string(seq) + ", expected " +
                                     std::to_string(expected) + " (replayed, dropped or reordered)");
    }
    std::string body(token.substr(0, token.size() - kTrailerBytes));
    if (recv_cipher_) {
      if (recv_cipher_->block() && body.size() % 8 != 0) {
        return malformed("ciphertext of " + std::to_string(body.size()) + " bytes is not a whole number of blocks");
      }
      recv_cipher_->Apply(&body);
    }
    std::string mac = body.substr(body.size() - kMacBytes);
    body.resize(body.size() - kMacBytes);
    bool pad_ok = true;
    if (recv_cipher_ && recv_cipher_->block()) {
      // The MAC covers the message without its padding; a bad pad is reported as a MAC failure,
      // so that it tells a tamperer nothing more.
      size_t pad = body.empty() ? 0 : static_cast<uint8_t>(body.back());
      pad_ok = pad >= 1 && pad <= 8 && pad <= body.size();
      for (size_t i = 0; pad_ok && i < pad; ++i) pad_ok = static_cast<uint8_t>(body[body.size() - 1 - i]) == pad;
      if (pad_ok) body.resize(body.size() - pad);
    }
    std::string want = Mac(recv_mac_key_, seq, body);
    if (!pad_ok || Crypto().memcmp(mac.data(), want.data(), kMacBytes) != 0) {
      return Status::Unauthenticated("SASL DIGEST-MD5: the " + qop_ + " message " + std::to_string(seq) +
                                     " from the " + peer_ +
                                     " fails its integrity check (HMAC-MD5): corrupted, or not from the peer that "
                                     "authenticated");
    }
    return body;
  }

  std::string_view Qop() const override { return qop_; }

 private:
  const std::string qop_;
  const std::string peer_;  // who sends what Unwrap gets, for messages
  std::string send_mac_key_, recv_mac_key_;
  std::unique_ptr<DigestCipher> send_cipher_, recv_cipher_;
  uint32_t send_seq_ = 0, recv_seq_ = 0;
};

}  // namespace

DigestKeys DeriveDigestKeys(std::string_view ha1, std::string_view cipher) {
  DigestKeys k;
  std::string h(ha1);
  k.kic = Md5(h + "Digest session key to client-to-server signing key magic constant");
  k.kis = Md5(h + "Digest session key to server-to-client signing key magic constant");
  if (!cipher.empty()) {
    size_t n = cipher == "rc4-40" ? 5 : cipher == "rc4-56" ? 7 : 16;
    std::string part = h.substr(0, n);
    k.kcc = Md5(part + "Digest H(A1) to client-to-server sealing key magic constant");
    k.kcs = Md5(part + "Digest H(A1) to server-to-client sealing key magic constant");
  }
  return k;
}

Result<std::unique_ptr<SaslSecurityLayer>> NewDigestSecurityLayer(std::string_view qop, std::string_view cipher,
                                                                  std::string_view ha1, DigestSide side) {
  if (qop == "auth") return std::unique_ptr<SaslSecurityLayer>();
  if (qop != "auth-int" && qop != "auth-conf") {
    return Status::InvalidArgument("DIGEST-MD5: unknown qop \"" + std::string(qop) + "\"");
  }
  if (ha1.size() != 16) return Status::InvalidArgument("DIGEST-MD5: H(A1) must be 16 bytes");
  std::string c = qop == "auth-conf" ? std::string(cipher) : "";
  if (qop == "auth-conf" && std::find(kCiphers.begin(), kCiphers.end(), c) == kCiphers.end()) {
    return Status::InvalidArgument("DIGEST-MD5: unknown cipher \"" + c + "\"");
  }
  return std::unique_ptr<SaslSecurityLayer>(
      std::make_unique<DigestSecurityLayer>(std::string(qop), c, DeriveDigestKeys(ha1, c), side));
}

}  // namespace loom::hadoop
