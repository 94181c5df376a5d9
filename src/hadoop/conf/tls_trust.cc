#include "hadoop/conf/tls_trust.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

#include "core/files.h"
#include "core/strings.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/wire/credentials.h"
#include "hadoop/wire/crypto_library.h"

namespace loom::hadoop {
namespace {

constexpr uint32_t kJksMagic = 0xFEEDFEED;
constexpr uint32_t kJceksMagic = 0xCECECECE;
constexpr char kJksWhitener[] = "Mighty Aphrodite";  // sun.security.provider.JavaKeyStore

// A bounds-checked big-endian reader over a JKS file.
class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  bool U16(uint32_t& v) { return Int(2, v); }
  bool U32(uint32_t& v) { return Int(4, v); }
  bool Skip(size_t n) {
    if (bytes_.size() - at_ < n) return false;
    at_ += n;
    return true;
  }
  bool Take(size_t n, std::string& out) {
    if (bytes_.size() - at_ < n) return false;
    out = bytes_.substr(at_, n);
    at_ += n;
    return true;
  }
  bool Utf() {  // DataOutput.writeUTF: u16 length + modified UTF-8, skipped
    uint32_t n = 0;
    return U16(n) && Skip(n);
  }
  size_t at() const { return at_; }

 private:
  bool Int(size_t n, uint32_t& v) {
    if (bytes_.size() - at_ < n) return false;
    v = 0;
    for (size_t i = 0; i < n; ++i) v = v << 8 | static_cast<uint8_t>(bytes_[at_ + i]);
    at_ += n;
    return true;
  }
  const std::string& bytes_;
  size_t at_ = 0;
};

// The password as Java's char[] in big-endian bytes (the JKS digest's key): UTF-8 -> UTF-16BE.
std::string Utf16Be(const std::string& utf8) {
  std::string out;
  auto put = [&](uint32_t unit) {
    out.push_back(static_cast<char>(unit >> 8));
    out.push_back(static_cast<char>(unit & 0xff));
  };
  for (size_t i = 0; i < utf8.size();) {
    auto c = static_cast<uint8_t>(utf8[i]);
    int extra = c < 0x80 ? 0 : c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    uint32_t cp = extra == 0 ? c : c & (0x3F >> extra);
    for (int k = 1; k <= extra && i + k < utf8.size(); ++k) cp = cp << 6 | (static_cast<uint8_t>(utf8[i + k]) & 0x3F);
    i += 1 + extra;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      put(0xD800 | (cp >> 10));
      put(0xDC00 | (cp & 0x3FF));
    } else {
      put(cp);
    }
  }
  return out;
}

Result<std::vector<std::string>> JksCertificates(const std::string& bytes, const std::string& password,
                                                 const std::string& name) {
  auto corrupt = [&](const std::string& why) {
    return Status::InvalidArgument(name + ": not a readable JKS truststore (" + why + ")");
  };
  Reader r(bytes);
  uint32_t magic = 0, version = 0, count = 0;
  if (!r.U32(magic) || magic != kJksMagic) return corrupt("no FEEDFEED magic");
  if (!r.U32(version) || (version != 1 && version != 2)) return corrupt("unknown version");
  if (!r.U32(count)) return corrupt("truncated header");
  std::vector<std::string> ders;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t tag = 0;
    if (!r.U32(tag) || !r.Utf() || !r.Skip(8)) return corrupt("truncated entry " + std::to_string(i));
    auto cert = [&](std::string& der) {
      uint32_t n = 0;
      return (version == 1 || r.Utf()) && r.U32(n) && r.Take(n, der);
    };
    if (tag == 2) {  // trusted certificate
      std::string der;
      if (!cert(der)) return corrupt("truncated certificate entry " + std::to_string(i));
      ders.push_back(std::move(der));
    } else if (tag == 1) {  // private key and its chain: Java trusts the chain's first certificate
      uint32_t key_len = 0, chain = 0;
      if (!r.U32(key_len) || !r.Skip(key_len) || !r.U32(chain)) return corrupt("truncated key entry");
      for (uint32_t c = 0; c < chain; ++c) {
        std::string der;
        if (!cert(der)) return corrupt("truncated key entry chain");
        if (c == 0) ders.push_back(std::move(der));
      }
    } else {
      return corrupt("entry tag " + std::to_string(tag));
    }
  }
  size_t data_len = r.at();
  std::string stored;
  if (!r.Take(20, stored)) return corrupt("no integrity digest");
  if (!password.empty()) {
    // KeyStore.load(in, password): SHA-1 over the password's UTF-16BE bytes, the whitener and
    // everything before the digest.
    std::string input = Utf16Be(password) + kJksWhitener + bytes.substr(0, data_len);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    if (Crypto().digest(input.data(), input.size(), md, &md_len, Crypto().sha1(), nullptr) != 1 || md_len != 20) {
      return Status::Internal(name + ": SHA-1 failed");
    }
    if (Crypto().memcmp(md, stored.data(), 20) != 0) {
      return Status::PermissionDenied(name + ": the password does not open this truststore (its integrity check "
                                             "failed: wrong password, or the file was altered)");
    }
  }
  return ders;
}

Result<std::vector<std::string>> Pkcs12Certificates(const std::string& bytes, const std::string& password,
                                                    const std::string& name) {
  const CryptoLibrary& c = Crypto();
  const auto* in = reinterpret_cast<const unsigned char*>(bytes.data());
  PKCS12* p12 = c.d2i_pkcs12(nullptr, &in, static_cast<long>(bytes.size()));
  if (p12 == nullptr) {
    return Status::InvalidArgument(name + ": neither a JKS nor a PKCS12 truststore");
  }
  std::unique_ptr<PKCS12, void (*)(PKCS12*)> hold(p12, c.pkcs12_free);
  const char* pass = password.c_str();
  // Without a password PKCS12_parse tries both empty encodings itself.
  if (!password.empty() && c.pkcs12_verify_mac(p12, pass, -1) != 1) {
    return Status::PermissionDenied(name + ": the password does not open this PKCS12 truststore (its MAC "
                                           "does not verify)");
  }
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  STACK_OF(X509)* ca = nullptr;
  if (c.pkcs12_parse(p12, pass, &key, &cert, &ca) != 1) {
    return Status::InvalidArgument(name + ": cannot read the PKCS12 truststore's certificates");
  }
  std::vector<X509*> certs;
  if (cert != nullptr) certs.push_back(cert);
  auto* stack = reinterpret_cast<OPENSSL_STACK*>(ca);
  for (int i = 0; stack != nullptr && i < c.sk_num(stack); ++i) certs.push_back(static_cast<X509*>(c.sk_value(stack, i)));
  std::vector<std::string> ders;
  for (X509* x : certs) {
    int n = c.i2d_x509(x, nullptr);
    if (n <= 0) continue;
    std::string der(static_cast<size_t>(n), '\0');
    auto* out = reinterpret_cast<unsigned char*>(der.data());
    if (c.i2d_x509(x, &out) == n) ders.push_back(std::move(der));
  }
  for (X509* x : certs) c.x509_free(x);
  if (stack != nullptr) c.sk_free(stack);
  if (key != nullptr) c.evp_pkey_free(key);
  return ders;
}

}  // namespace

Result<std::vector<std::string>> TrustStoreCertificates(const std::string& bytes, const std::string& password,
                                                        const std::string& name) {
  Result<std::vector<std::string>> ders = Status::Internal("unset");
  uint32_t magic = 0;
  Reader r(bytes);
  if (r.U32(magic) && magic == kJceksMagic) {
    return Status::InvalidArgument(name + ": a JCEKS keystore; a truststore must be JKS or PKCS12");
  }
  if (magic == kJksMagic) {
    ders = JksCertificates(bytes, password, name);
  } else {
    ders = Pkcs12Certificates(bytes, password, name);
  }
  if (ders.ok() && ders->empty()) return Status::NotFound(name + ": the truststore holds no certificate");
  return ders;
}

std::string CertificatesToPem(const std::vector<std::string>& ders) {
  std::string pem;
  for (const std::string& der : ders) {
    std::string b64 = Base64Encode(der);
    pem += "-----BEGIN CERTIFICATE-----\n";
    for (size_t at = 0; at < b64.size(); at += 64) pem += b64.substr(at, 64) + "\n";
    pem += "-----END CERTIFICATE-----\n";
  }
  return pem;
}

Result<std::string> LoadTrustStorePem(const TrustStoreSettings& settings) {
  if (settings.location.empty()) return std::string();
  const std::string where = " in " + settings.source;
  std::string type = ToLower(Trim(settings.type));
  if (type != "jks" && type != "pkcs12") {
    return Status::InvalidArgument("ssl.client.truststore.type = '" + settings.type + "'" + where +
                                   ": Loom reads jks and pkcs12 truststores");
  }
  Result<std::string> bytes = ReadFile(settings.location);
  if (!bytes.ok()) {
    return Status::FailedPrecondition("cannot read the HTTPS truststore " + settings.location +
                                      " (ssl.client.truststore.location" + where + "): " + bytes.status().message());
  }
  Result<std::vector<std::string>> ders =
      TrustStoreCertificates(*bytes, settings.password, "HTTPS truststore " + settings.location);
  if (!ders.ok()) {
    std::string key = ders.status().code() == StatusCode::kPermissionDenied ? "ssl.client.truststore.password"
                                                                             : "ssl.client.truststore.location";
    return Status(ders.status().code() == StatusCode::kPermissionDenied ? StatusCode::kFailedPrecondition
                                                                        : ders.status().code(),
                  ders.status().message() + "; check " + key + where);
  }
  return CertificatesToPem(*ders);
}

namespace {
// SetHttpsTrust's bundle; unset until the first https:// exchange or Load of a configuration.
std::mutex trust_mu;
std::optional<std::shared_ptr<const std::string>> trust_pem;

}  // namespace

Result<std::shared_ptr<const std::string>> HttpsTrust() {
  std::lock_guard<std::mutex> lock(trust_mu);
  if (!trust_pem) {
    std::string pem;
    if (const char* dir = std::getenv("HADOOP_CONF_DIR"); dir != nullptr && *dir != '\0') {
      LOOM_ASSIGN_OR_RETURN(TrustStoreSettings settings, ReadTrustStoreSettings(dir));
      LOOM_ASSIGN_OR_RETURN(pem, LoadTrustStorePem(settings));
    }
    trust_pem = std::make_shared<const std::string>(std::move(pem));
  }
  return *trust_pem;
}

void SetHttpsTrust(std::optional<std::string> pem_bundle) {
  std::lock_guard<std::mutex> lock(trust_mu);
  trust_pem.reset();
  if (pem_bundle) trust_pem = std::make_shared<const std::string>(std::move(*pem_bundle));
}

}  // namespace loom::hadoop
