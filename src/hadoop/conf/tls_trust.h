#pragma once
// The certificates an HTTPS client of the cluster trusts, as Hadoop's Java clients find them:
// ssl-client.xml (hadoop.ssl.client.conf) names a truststore with ssl.client.truststore.location,
// .type ("jks", the default, or "pkcs12") and .password. Its trusted certificates become a PEM
// bundle for libcurl (SetHttpsTrust below), which then trusts those certificates
// only: like a Java client given a truststore, whose default cacerts no longer apply.
// Verification of the peer and its host name always stays on.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace loom::hadoop {

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

// What the HTTPS exchanges of this process trust: a PEM bundle of certificates that replaces
// libcurl's default CA store (curl_library.h) (as a Java client's truststore replaces its cacerts; tls_trust.h),
// or "" for the system's CA store. Peer and host name verification are always on. Until it is
// set, the first https:// exchange takes the truststore of $HADOOP_CONF_DIR's ssl-client.xml
// (no HADOOP_CONF_DIR or no truststore: the system store), so the client and a YARN AM trust
// what the cluster's Java clients trust; HadoopConf::Load sets it too. std::nullopt unsets it
// (the next https exchange reads HADOOP_CONF_DIR again). Thread-safe.
void SetHttpsTrust(std::optional<std::string> pem_bundle);

// The bundle SetHttpsTrust set, else, on first use, the one of $HADOOP_CONF_DIR's ssl-client.xml.
Result<std::shared_ptr<const std::string>> HttpsTrust();

}  // namespace loom::hadoop
