#include "cluster/yarn/wire/crypto_library.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace loom::cluster::yarn {

namespace {

template <typename F>
void Resolve(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(::dlsym(lib, name));
  if (!*fn) {
    std::fprintf(stderr, "loom: libcrypto.so.3 lacks %s\n", name);
    std::abort();
  }
}

CryptoLibrary Load() {
  void* lib = ::dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = ::dlerror();
    std::fprintf(stderr, "loom: the YARN backend needs OpenSSL's libcrypto (apt-get install libssl3): %s\n",
                 err ? err : "dlopen failed");
    std::abort();
  }
  CryptoLibrary c{};
  Resolve(lib, "EVP_Digest", &c.digest);
  Resolve(lib, "EVP_md5", &c.md5);
  Resolve(lib, "EVP_sha256", &c.sha256);
  Resolve(lib, "EVP_EncodeBlock", &c.encode_block);
  Resolve(lib, "EVP_DecodeBlock", &c.decode_block);
  Resolve(lib, "RAND_bytes", &c.rand_bytes);
  Resolve(lib, "CRYPTO_memcmp", &c.memcmp);
  Resolve(lib, "HMAC", &c.hmac);
  Resolve(lib, "EVP_des_ede3_cbc", &c.des_ede3_cbc);
  Resolve(lib, "EVP_CIPHER_CTX_new", &c.cipher_ctx_new);
  Resolve(lib, "EVP_CIPHER_CTX_free", &c.cipher_ctx_free);
  Resolve(lib, "EVP_CipherInit_ex", &c.cipher_init);
  Resolve(lib, "EVP_CipherUpdate", &c.cipher_update);
  Resolve(lib, "EVP_CIPHER_CTX_set_padding", &c.cipher_set_padding);
  Resolve(lib, "EVP_sha1", &c.sha1);
  Resolve(lib, "d2i_PKCS12", &c.d2i_pkcs12);
  Resolve(lib, "PKCS12_free", &c.pkcs12_free);
  Resolve(lib, "PKCS12_verify_mac", &c.pkcs12_verify_mac);
  Resolve(lib, "PKCS12_parse", &c.pkcs12_parse);
  Resolve(lib, "i2d_X509", &c.i2d_x509);
  Resolve(lib, "X509_free", &c.x509_free);
  Resolve(lib, "EVP_PKEY_free", &c.evp_pkey_free);
  Resolve(lib, "OPENSSL_sk_num", &c.sk_num);
  Resolve(lib, "OPENSSL_sk_value", &c.sk_value);
  Resolve(lib, "OPENSSL_sk_free", &c.sk_free);
  return c;  // the library stays loaded for the life of the process
}

}  // namespace

const CryptoLibrary& Crypto() {
  static std::once_flag once;
  static CryptoLibrary lib;
  std::call_once(once, [] { lib = Load(); });
  return lib;
}

}  // namespace loom::cluster::yarn
