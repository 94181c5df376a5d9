#pragma once
// The few libcrypto (OpenSSL) functions the YARN code uses (MD5, SHA-256, Base64, random bytes,
// HMAC-MD5 and 3DES-CBC for the DIGEST-MD5 security layer), as one table so that tests can see
// every use in one place. libcrypto is linked statically: `loom` runs on nodes whose OpenSSL is
// another version or absent.

#include <openssl/evp.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>

namespace loom::hadoop {

struct CryptoLibrary {
  int (*digest)(const void* data, size_t count, unsigned char* md, unsigned int* size, const EVP_MD* type,
                ENGINE* impl);
  const EVP_MD* (*md5)();
  const EVP_MD* (*sha256)();  // names the staged `loom` binary by its content
  int (*encode_block)(unsigned char* t, const unsigned char* f, int n);
  int (*decode_block)(unsigned char* t, const unsigned char* f, int n);
  int (*rand_bytes)(unsigned char* buf, int num);
  int (*memcmp)(const void* a, const void* b, size_t len);  // constant time
  // HMAC-MD5 (DIGEST-MD5 integrity, RFC 2831 2.3). One-shot; deprecated in 3.0 but exported.
  unsigned char* (*hmac)(const EVP_MD* md, const void* key, int key_len, const unsigned char* data, size_t data_len,
                         unsigned char* out, unsigned int* out_len);
  // DIGEST-MD5 privacy (RFC 2831 2.4): 3DES-EDE-CBC, which the default provider of OpenSSL 3
  // keeps. Single DES runs as DES-EDE3 with K,K,K (the same permutation); RC4 and single DES
  // need the legacy provider, which is often missing, so RC4 is done in sasl_digest.cc.
  const EVP_CIPHER* (*des_ede3_cbc)();
  EVP_CIPHER_CTX* (*cipher_ctx_new)();
  void (*cipher_ctx_free)(EVP_CIPHER_CTX* ctx);
  int (*cipher_init)(EVP_CIPHER_CTX* ctx, const EVP_CIPHER* cipher, ENGINE* impl, const unsigned char* key,
                     const unsigned char* iv, int enc);
  int (*cipher_update)(EVP_CIPHER_CTX* ctx, unsigned char* out, int* out_len, const unsigned char* in, int in_len);
  int (*cipher_set_padding)(EVP_CIPHER_CTX* ctx, int pad);
  // Reading an HTTPS truststore (hdfs/tls_trust.h): SHA-1 for a JKS file's integrity digest,
  // and a PKCS12 file's certificates.
  const EVP_MD* (*sha1)();
  PKCS12* (*d2i_pkcs12)(PKCS12** a, const unsigned char** in, long len);
  void (*pkcs12_free)(PKCS12* p12);
  int (*pkcs12_verify_mac)(PKCS12* p12, const char* pass, int passlen);
  int (*pkcs12_parse)(PKCS12* p12, const char* pass, EVP_PKEY** pkey, X509** cert, STACK_OF(X509)** ca);
  int (*i2d_x509)(const X509* a, unsigned char** out);
  void (*x509_free)(X509* a);
  void (*evp_pkey_free)(EVP_PKEY* key);
  int (*sk_num)(const OPENSSL_STACK* st);
  void* (*sk_value)(const OPENSSL_STACK* st, int i);
  void (*sk_free)(OPENSSL_STACK* st);
};

// The table, bound to the linked libcrypto (its configuration file is never read).
const CryptoLibrary& Crypto();

}  // namespace loom::hadoop
