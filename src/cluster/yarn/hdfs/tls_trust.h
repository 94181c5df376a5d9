#pragma once
// The certificates an HTTPS client of the cluster trusts, as Hadoop's Java clients find them:
// ssl-client.xml (hadoop.ssl.client.conf) names a truststore with ssl.client.truststore.location,
// .type ("jks", the default, or "pkcs12") and .password. Its trusted certificates become a PEM
// bundle for libcurl (curl_library.h SetHttpsTrust), which then trusts those certificates
// only: like a Java client given a truststore, whose default cacerts no longer apply.
// Verification of the peer and its host name always stays on.

#include <string>
#include <vector>

#include "core/status.h"

namespace loom::cluster::yarn {

// The ssl.client.truststore.* settings, as read from `source` (the ssl-client.xml file).
// An empty location: no truststore, the system's CA store applies.
struct TrustStoreSettings {
  std::string source;
  std::string location;
  std::string type = "jks";
  std::string password;  // empty: not checked (a JKS file's integrity digest is then skipped)
};

// The X.509 DER certificates of a truststore's bytes. The format comes from the content, as a
// Java 9+ "jks" KeyStore reads PKCS12 too: the JKS magic FEEDFEED (trusted-certificate
// entries; with a password, the keyed SHA-1 integrity digest must match), otherwise PKCS12
// (through libcrypto; with a password, the MAC must verify). `name` is for messages.
// InvalidArgument for a corrupt file, PermissionDenied for a wrong password, NotFound when the
// store holds no certificate.
Result<std::vector<std::string>> TrustStoreCertificates(const std::string& bytes, const std::string& password,
                                                        const std::string& name);

// DER certificates -> "-----BEGIN CERTIFICATE-----" blocks, one after the other.
std::string CertificatesToPem(const std::vector<std::string>& ders);

// The PEM bundle of `settings`' truststore; "" when it names none. Errors name the file and the
// ssl.client.truststore.* key to fix: a missing or unreadable file, an unknown type, a wrong
// password, a corrupt store.
Result<std::string> LoadTrustStorePem(const TrustStoreSettings& settings);

}  // namespace loom::cluster::yarn
