#pragma once
// Test-only: truststores written byte by byte, the way Java's KeyStore ("JKS") stores them, and
// certificates converted with the `openssl` CLI. Shared by tls_trust_test and hadoop_conf_test.

#include <cstdint>
#include <string>
#include <vector>

#include "core/files.h"
#include "core/subprocess.h"
#include "hadoop/wire/crypto_library.h"

namespace loom::hadoop::testing {

inline void PutU16(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}
inline void PutU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}
inline void PutUtf(std::string& out, const std::string& ascii) {
  PutU16(out, static_cast<uint32_t>(ascii.size()));
  out += ascii;
}

// A version-2 JKS file with one trusted-certificate entry per DER, then the integrity digest
// SHA-1(password as UTF-16BE || "Mighty Aphrodite" || everything before). ASCII passwords.
inline std::string JksTrustStore(const std::vector<std::string>& ders, const std::string& password) {
  std::string out;
  PutU32(out, 0xFEEDFEED);
  PutU32(out, 2);
  PutU32(out, static_cast<uint32_t>(ders.size()));
  for (size_t i = 0; i < ders.size(); ++i) {
    PutU32(out, 2);  // trusted certificate
    PutUtf(out, "cert" + std::to_string(i));
    PutU32(out, 0x00000195);  // creation time, ms since the epoch (any)
    PutU32(out, 0x12345678);
    PutUtf(out, "X.509");
    PutU32(out, static_cast<uint32_t>(ders[i].size()));
    out += ders[i];
  }
  std::string input;
  for (char c : password) input += std::string(1, '\0') + c;
  input += "Mighty Aphrodite" + out;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  Crypto().digest(input.data(), input.size(), md, &n, Crypto().sha1(), nullptr);
  out.append(reinterpret_cast<const char*>(md), n);
  return out;
}

// The DER bytes of a PEM certificate file, through `openssl x509`.
inline Result<std::string> PemFileToDer(const std::string& pem_path, const std::string& der_path) {
  LOOM_RETURN_IF_ERROR(RunTool({"openssl", "x509", "-in", pem_path, "-outform", "DER", "-out", der_path}));
  return ReadFile(der_path);
}

}  // namespace loom::hadoop::testing
