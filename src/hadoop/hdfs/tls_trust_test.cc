// HTTPS to a cluster that serves its web UIs over TLS only (dfs.http.policy=HTTPS_ONLY, the
// recorded Kerberos cluster's setup): a throwaway CA and server certificate made with the
// `openssl` CLI, `openssl s_server -www` as the server, and HttpExchange trusting exactly what
// ssl-client.xml's truststore (JKS or PKCS12) holds.

#include "hadoop/conf/tls_trust.h"

#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>

#include "core/eventually.h"
#include "core/files.h"
#include "core/subprocess.h"
#include "core/testing.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/hdfs/curl_library.h"
#include "hadoop/hdfs/tls_test_util.h"
#include "hadoop/hdfs/webhdfs.h"
#include "hadoop/logs/nm_web_logs.h"
#include "hadoop/logs/yarn_log_reader.h"
#include "hadoop/testing/test_socket.h"

namespace loom::hadoop {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::JksTrustStore;
using testing::PemFileToDer;

bool Accepts(int port) {
  Result<int> fd = testing::ConnectLoopback(port);
  if (fd.ok()) ::close(*fd);
  return fd.ok();
}

std::string Prop(const std::string& name, const std::string& value) {
  return "  <property><name>" + name + "</name><value>" + value + "</value></property>\n";
}
std::string Site(const std::string& props) { return "<?xml version=\"1.0\"?>\n<configuration>\n" + props + "</configuration>\n"; }

// One CA, a server certificate it signed for 127.0.0.1, an unrelated CA, and `openssl s_server`
// serving with the server certificate, for the whole suite.
class TlsTrustTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(::testing::TempDir() + "/tls_trust_test." + std::to_string(getpid()));
    const std::string& d = *dir_;
    ASSERT_OK(MakeDirs(d));
    auto ec_key = std::vector<std::string>{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"};
    auto req = [&](std::vector<std::string> argv) {
      std::vector<std::string> all = {"openssl", "req"};
      all.insert(all.end(), ec_key.begin(), ec_key.end());
      all.insert(all.end(), argv.begin(), argv.end());
      return RunTool(all, d);
    };
    for (std::string ca : {"ca", "other-ca"}) {
      ASSERT_OK(req({"-x509", "-days", "2", "-keyout", ca + ".key", "-out", ca + ".pem", "-subj", "/CN=Loom test " + ca,
                     "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"}));
    }
    ASSERT_OK(req({"-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"}));
    ASSERT_OK(WriteFileAtomic(d + "/server.ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                                                 "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"));
    ASSERT_OK(RunTool({"openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                       "-CAcreateserial", "-days", "2", "-extfile", "server.ext", "-out", "server.pem"},
                      d));
    // The port is free when picked; another process may take it before s_server binds, so a
    // server that exits is started again on a new one.
    for (int attempt = 0; attempt < 5 && port_ <= 0; ++attempt) {
      int port = testing::ClosedLoopbackPort();
      ASSERT_GT(port, 0);
      SpawnOptions o;
      o.argv = {"/usr/bin/openssl", "s_server", "-accept", std::to_string(port), "-cert", d + "/server.pem",
                "-key", d + "/server.key", "-www"};
      o.env = CurrentEnvironment();
      o.stdout_path = d + "/s_server.log";
      o.stderr_path = d + "/s_server.log";
      Result<Subprocess> p = Subprocess::Spawn(o);
      ASSERT_OK(p);
      server_ = new Subprocess(std::move(*p));
      // openssl s_server is a real process: wait until it listens, or has died.
      loom::testing::Eventually([&] { return !ProcessAlive(server_->pid()) || Accepts(port); },
                                std::chrono::seconds(20), std::chrono::milliseconds(20));
      if (ProcessAlive(server_->pid()) && Accepts(port)) {
        port_ = port;
      } else {
        delete server_;  // kills and reaps its process group
        server_ = nullptr;
      }
    }
    ASSERT_GT(port_, 0) << "openssl s_server did not start; see " << d << "/s_server.log";
  }
  static void TearDownTestSuite() {
    delete server_;  // the destructor ends the server's process group
    server_ = nullptr;
    if (dir_ != nullptr) (void)RemoveTree(*dir_);
    delete dir_;
    dir_ = nullptr;
  }

  void SetUp() override {
    conf_ = *dir_ + "/conf." + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_OK(MakeDirs(conf_));
    ASSERT_OK(WriteFileAtomic(conf_ + "/core-site.xml", Site(Prop("fs.defaultFS", "hdfs://127.0.0.1:9000"))));
    ASSERT_OK(WriteFileAtomic(conf_ + "/hdfs-site.xml",
                              Site(Prop("dfs.http.policy", "HTTPS_ONLY") +
                                   Prop("dfs.namenode.https-address", "127.0.0.1:" + std::to_string(port_)))));
  }

  void WriteSslClient(const std::string& location, const std::string& type, const std::string& password) {
    ASSERT_OK(WriteFileAtomic(conf_ + "/ssl-client.xml",
                              Site(Prop("ssl.client.truststore.location", location) +
                                   Prop("ssl.client.truststore.type", type) +
                                   Prop("ssl.client.truststore.password", password))));
  }
  // A JKS truststore holding the certificate of `ca` ("ca" or "other-ca").
  std::string WriteJks(const std::string& ca, const std::string& password) {
    Result<std::string> der = PemFileToDer(*dir_ + "/" + ca + ".pem", conf_ + "/" + ca + ".der");
    EXPECT_OK(der);
    std::string path = conf_ + "/truststore.jks";
    EXPECT_OK(WriteFileAtomic(path, JksTrustStore({der.ok() ? *der : ""}, password)));
    return path;
  }
  // GET / of the server through the NameNode URL that Load built, with the trust Load set.
  Result<HttpResponse> Get(const HadoopConf& conf) {
    HttpRequest request;
    request.url = conf.namenode_web_urls.at(0) + "/";
    request.connect_timeout_s = 10;
    request.stall_timeout_s = 10;
    return HttpExchange(request);
  }

  static std::string* dir_;
  static Subprocess* server_;
  static int port_;
  std::string conf_;
};

std::string* TlsTrustTest::dir_ = nullptr;
Subprocess* TlsTrustTest::server_ = nullptr;
int TlsTrustTest::port_ = 0;

TEST_F(TlsTrustTest, TrustedThroughAJksTruststore) {
  WriteSslClient(WriteJks("ca", "storepass"), "jks", "storepass");
  Result<HadoopConf> conf = HadoopConf::Load(conf_);
  ASSERT_OK(conf);
  EXPECT_EQ(conf->namenode_web_urls.at(0), "https://127.0.0.1:" + std::to_string(port_));
  EXPECT_THAT(conf->https_trust_pem, HasSubstr("-----BEGIN CERTIFICATE-----"));
  Result<HttpResponse> r = Get(*conf);
  ASSERT_OK(r);
  EXPECT_EQ(r->code, 200);
  // WebHDFS built from the configuration goes there too: s_server's page is what comes back.
  Status s = WebHdfs::ForConf(*conf, "alice").ListStatus("/").status();
  EXPECT_THAT(s.message(), AllOf(HasSubstr("LISTSTATUS"), HasSubstr("s_server -accept")));
}

TEST_F(TlsTrustTest, TrustedThroughAPkcs12Truststore) {
  ASSERT_OK(RunTool({"openssl", "pkcs12", "-export", "-nokeys", "-in", *dir_ + "/ca.pem", "-out", "trust.p12",
                     "-passout", "pass:p12secret"},
                    conf_));
  WriteSslClient(conf_ + "/trust.p12", "PKCS12", "p12secret");
  Result<HadoopConf> conf = HadoopConf::Load(conf_);
  ASSERT_OK(conf);
  Result<HttpResponse> r = Get(*conf);
  ASSERT_OK(r);
  EXPECT_EQ(r->code, 200);
}

TEST_F(TlsTrustTest, RefusedWithTheSystemStoreOnly) {
  // No ssl-client.xml: libcurl's system CA store, which does not know the throwaway CA.
  Result<HadoopConf> conf = HadoopConf::Load(conf_);
  ASSERT_OK(conf);
  EXPECT_EQ(conf->https_trust_pem, "");
  EXPECT_STATUS(Get(*conf), kUnavailable, HasSubstr("certificate"));
}

TEST_F(TlsTrustTest, RefusedWhenTheTruststoreHoldsAnotherCa) {
  WriteSslClient(WriteJks("other-ca", "storepass"), "jks", "storepass");
  Result<HadoopConf> conf = HadoopConf::Load(conf_);
  ASSERT_OK(conf);
  EXPECT_STATUS(Get(*conf), kUnavailable, HasSubstr("certificate"));
}

TEST_F(TlsTrustTest, AWrongJksPasswordIsRefusedBeforeAnyExchange) {
  SetHttpsTrust("");
  std::string jks = WriteJks("ca", "storepass");
  WriteSslClient(jks, "jks", "not-the-password");
  EXPECT_STATUS(HadoopConf::Load(conf_), kFailedPrecondition,
                AllOf(HasSubstr(jks), HasSubstr("password"), HasSubstr("ssl.client.truststore.password"),
                      HasSubstr(conf_ + "/ssl-client.xml")));
}

TEST_F(TlsTrustTest, AWrongPkcs12PasswordIsRefused) {
  ASSERT_OK(RunTool({"openssl", "pkcs12", "-export", "-nokeys", "-in", *dir_ + "/ca.pem", "-out", "trust.p12",
                     "-passout", "pass:p12secret"},
                    conf_));
  WriteSslClient(conf_ + "/trust.p12", "pkcs12", "wrong");
  EXPECT_STATUS(HadoopConf::Load(conf_), kFailedPrecondition,
                AllOf(HasSubstr("trust.p12"), HasSubstr("ssl.client.truststore.password")));
}

TEST_F(TlsTrustTest, AMissingTruststoreNamesTheFileAndTheKey) {
  WriteSslClient(conf_ + "/nowhere.jks", "jks", "x");
  EXPECT_STATUS(HadoopConf::Load(conf_), kFailedPrecondition,
                AllOf(HasSubstr(conf_ + "/nowhere.jks"), HasSubstr("ssl.client.truststore.location")));
}

TEST_F(TlsTrustTest, AnUnknownTruststoreTypeNamesTheKey) {
  WriteSslClient(WriteJks("ca", "p"), "jceks", "p");
  EXPECT_STATUS(HadoopConf::Load(conf_), kInvalidArgument, HasSubstr("ssl.client.truststore.type = 'jceks'"));
}

TEST_F(TlsTrustTest, AnHttpOnlyClusterDoesNotOpenTheTruststore) {
  // As a Java client, which opens the truststore for an https connection only.
  ASSERT_OK(WriteFileAtomic(conf_ + "/hdfs-site.xml", Site(Prop("dfs.http.policy", "HTTP_AND_HTTPS"))));
  WriteSslClient(conf_ + "/nowhere.jks", "jks", "x");
  Result<HadoopConf> conf = HadoopConf::Load(conf_);
  ASSERT_OK(conf);
  EXPECT_EQ(conf->namenode_web_urls.at(0), "http://127.0.0.1:9870");
}

TEST_F(TlsTrustTest, WithoutALoadTheFirstHttpsExchangeReadsHadoopConfDir) {
  // A YARN AM reads no HadoopConf before its first WebHDFS call: the trust comes from the
  // ssl-client.xml of the HADOOP_CONF_DIR its container was given.
  WriteSslClient(WriteJks("ca", "storepass"), "jks", "storepass");
  const char* saved = std::getenv("HADOOP_CONF_DIR");
  std::string saved_value = saved ? saved : "";
  setenv("HADOOP_CONF_DIR", conf_.c_str(), 1);
  SetHttpsTrust(std::nullopt);
  HttpRequest request;
  request.url = "https://127.0.0.1:" + std::to_string(port_) + "/";
  Result<HttpResponse> trusted = HttpExchange(request);
  // A bad truststore is an error of the exchange, naming it.
  WriteSslClient(WriteJks("ca", "storepass"), "jks", "wrong");
  SetHttpsTrust(std::nullopt);
  Result<HttpResponse> refused = HttpExchange(request);
  if (saved) {
    setenv("HADOOP_CONF_DIR", saved_value.c_str(), 1);
  } else {
    unsetenv("HADOOP_CONF_DIR");
  }
  ASSERT_OK(trusted);
  EXPECT_EQ(trusted->code, 200);
  EXPECT_STATUS(refused, kFailedPrecondition, AllOf(HasSubstr("truststore.jks"), HasSubstr("ssl.client.truststore.password")));
}

TEST_F(TlsTrustTest, NodeManagerWebOverHttps) {
  // yarn.http.policy=HTTPS_ONLY: `loom logs` asks the NodeManager at https://<node>:<https port>.
  ASSERT_OK(WriteFileAtomic(conf_ + "/yarn-site.xml",
                            Site(Prop("yarn.http.policy", "HTTPS_ONLY") +
                                 Prop("yarn.nodemanager.webapp.https.address", "127.0.0.1:" + std::to_string(port_)))));
  WriteSslClient(WriteJks("ca", "storepass"), "jks", "storepass");
  Result<HadoopConf> conf = HadoopConf::Load(conf_);
  ASSERT_OK(conf);
  ASSERT_EQ(conf->nm_web_scheme, "https");
  NmWebLogs nm(conf->nm_web_scheme + "://" + conf->nm_webapp.ToString(), "alice");
  // s_server's status page is no NodeManager JSON; that it arrived at all means TLS worked.
  EXPECT_STATUS(nm.ListLogs("container_1_0001_01_000001"), kInternal, HasSubstr("not the expected JSON"));
  // Plain http to the TLS port gets no HTTP answer.
  NmWebLogs plain(conf->nm_webapp.ToString(), "alice");
  EXPECT_STATUS(plain.ListLogs("container_1_0001_01_000001"), kUnavailable, HasSubstr("127.0.0.1"));
  // `loom logs`' reader: the node's web address (yarn.nodemanager.webapp.https.address's port
  // on the node's host) is asked over https.
  YarnLogReader reader(*conf, "alice");
  Status s = reader.List("application_1_0001", {"container_1_0001_01_000001", "127.0.0.1:45454", ""}).status();
  EXPECT_THAT(s.message(), AllOf(HasSubstr("NodeManager https://127.0.0.1:" + std::to_string(port_)),
                                 HasSubstr("not the expected JSON")));
}

TEST(TrustStoreFormat, ReadsAJksThatKeytoolWrote) {
  // Java's own writer checks the format this file reads (and JksTrustStore writes).
  if (!PathExists("/usr/bin/keytool")) GTEST_SKIP() << "no keytool";
  std::string dir = ::testing::TempDir() + "/tls_trust_keytool." + std::to_string(getpid());
  ASSERT_OK(MakeDirs(dir));
  ASSERT_OK(RunTool({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-days", "2", "-keyout", "k.pem", "-out", "c.pem", "-subj", "/CN=keytool test"},
                    dir));
  ASSERT_OK(RunTool({"/usr/bin/keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", "c.pem", "-keystore",
                     "kt.jks", "-storetype", "JKS", "-storepass", "changeit"},
                    dir));
  Result<std::string> der = testing::PemFileToDer(dir + "/c.pem", dir + "/c.der");
  ASSERT_OK(der);
  Result<std::string> bytes = ReadFile(dir + "/kt.jks");
  ASSERT_OK(bytes);
  Result<std::vector<std::string>> certs = TrustStoreCertificates(*bytes, "changeit", "kt.jks");
  ASSERT_OK(certs);
  ASSERT_EQ(certs->size(), 1u);
  EXPECT_EQ(certs->at(0), *der);
  EXPECT_STATUS(TrustStoreCertificates(*bytes, "wrong", "kt.jks"), kPermissionDenied, HasSubstr("password"));
  // No password: Java skips the integrity check, and so does Loom.
  EXPECT_OK(TrustStoreCertificates(*bytes, "", "kt.jks"));
  (void)RemoveTree(dir);
}

TEST(TrustStoreFormat, ACorruptJksIsInvalid) {
  std::string jks = testing::JksTrustStore({std::string(100, 'x')}, "p");
  EXPECT_STATUS(TrustStoreCertificates(jks.substr(0, 40), "p", "t.jks"), kInvalidArgument, HasSubstr("t.jks"));
  EXPECT_STATUS(TrustStoreCertificates("not a keystore", "", "t.jks"), kInvalidArgument, HasSubstr("t.jks"));
  jks[30] ^= 1;  // inside the certificate: the digest no longer matches
  EXPECT_STATUS(TrustStoreCertificates(jks, "p", "t.jks"), kPermissionDenied, HasSubstr("integrity"));
}

}  // namespace
}  // namespace loom::hadoop
