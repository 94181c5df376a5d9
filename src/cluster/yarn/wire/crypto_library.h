#pragma once
// The few libcrypto (OpenSSL) functions the YARN code uses (MD5, SHA-256, Base64, random bytes),
// loaded on first use. Only the client and a YARN AM ever call them; linking libcrypto would
// make every executor map and relocate it at start for nothing.

#include <openssl/evp.h>

namespace loom::cluster::yarn {

struct CryptoLibrary {
  int (*digest)(const void* data, size_t count, unsigned char* md, unsigned int* size, const EVP_MD* type,
                ENGINE* impl);
  const EVP_MD* (*md5)();
  const EVP_MD* (*sha256)();  // names the staged `loom` binary by its content
  int (*encode_block)(unsigned char* t, const unsigned char* f, int n);
  int (*decode_block)(unsigned char* t, const unsigned char* f, int n);
  int (*rand_bytes)(unsigned char* buf, int num);
  int (*memcmp)(const void* a, const void* b, size_t len);  // constant time
};

// The loaded library. libcrypto is a dependency of the package; its absence is fatal.
const CryptoLibrary& Crypto();

}  // namespace loom::cluster::yarn
