#include "hadoop/wire/crypto_library.h"

#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <mutex>

namespace loom::hadoop {

namespace {

CryptoLibrary Bind() {
  CryptoLibrary c{};
  c.digest = &EVP_Digest;
  c.md5 = &EVP_md5;
  c.sha256 = &EVP_sha256;
  c.encode_block = &EVP_EncodeBlock;
  c.decode_block = &EVP_DecodeBlock;
  c.rand_bytes = &RAND_bytes;
  c.memcmp = &CRYPTO_memcmp;
  c.hmac = &HMAC;
  c.des_ede3_cbc = &EVP_des_ede3_cbc;
  c.cipher_ctx_new = &EVP_CIPHER_CTX_new;
  c.cipher_ctx_free = &EVP_CIPHER_CTX_free;
  c.cipher_init = &EVP_CipherInit_ex;
  c.cipher_update = &EVP_CipherUpdate;
  c.cipher_set_padding = &EVP_CIPHER_CTX_set_padding;
  c.sha1 = &EVP_sha1;
  c.d2i_pkcs12 = &d2i_PKCS12;
  c.pkcs12_free = &PKCS12_free;
  c.pkcs12_verify_mac = &PKCS12_verify_mac;
  c.pkcs12_parse = &PKCS12_parse;
  c.i2d_x509 = &i2d_X509;
  c.x509_free = &X509_free;
  c.evp_pkey_free = &EVP_PKEY_free;
  c.sk_num = &OPENSSL_sk_num;
  c.sk_value = &OPENSSL_sk_value;
  c.sk_free = &OPENSSL_sk_free;
  return c;
}

}  // namespace

const CryptoLibrary& Crypto() {
  static std::once_flag once;
  static CryptoLibrary lib;
  std::call_once(once, [] {
    // The node's openssl.cnf belongs to its own OpenSSL (1.1 on older nodes, with engines and
    // providers of that version): this statically linked libcrypto never reads it.
    OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, nullptr);
    lib = Bind();
  });
  return lib;
}

}  // namespace loom::hadoop
