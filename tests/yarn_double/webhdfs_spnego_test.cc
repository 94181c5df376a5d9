// Kerberized WebHDFS end to end: Loom's WebHDFS client (src/hadoop/hdfs/webhdfs, spnego)
// against the double's SPNEGO NameNode (FakeHdfs::RequireSpnego) with a real MIT KDC
// (tests/kerberos/kdc_harness.h), and the double's answers against the recorded Kerberized
// NameNode (tests/data/yarn-captures/kerberos/webhdfs/).

#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "core/files.h"
#include "core/strings.h"
#include "core/test_dir.h"
#include "core/testing.h"
#include "fake_hdfs.h"
#include "hadoop/hdfs/spnego.h"
#include "hadoop/hdfs/webhdfs.h"
#include "hadoop/testing/captures.h"
#include "hadoop/testing/test_socket.h"
#include "hadoop/wire/kerberos_login.h"
#include "kerberos/kdc_harness.h"
#include "kerberos/process_login.h"

namespace loom::yarn_double {
namespace {

using loom::testing::KdcHarness;
using ::testing::AllOf;
using ::testing::HasSubstr;

// A file of the recordings under kerberos/webhdfs/.
std::string Capture(const std::string& name) { return hadoop::testing::ReadCapture("kerberos/webhdfs/" + name); }

// Sends raw bytes and reads one response (head and Content-Length body), or until the server
// closes.
std::string RawExchange(int port, const std::string& request) {
  Result<int> connected = hadoop::testing::ConnectLoopback(port);
  if (!connected.ok()) return "";
  int fd = *connected;
  EXPECT_OK(hadoop::testing::WriteAll(fd, request));
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) {
    out.append(buf, static_cast<size_t>(n));
    size_t head = out.find("\r\n\r\n");
    size_t length_at = ToLower(out.substr(0, head)).find("content-length: ");
    if (head != std::string::npos && length_at != std::string::npos &&
        out.size() >= head + 4 + std::stoul(out.substr(length_at + 16))) {
      break;
    }
  }
  ::close(fd);
  return out;
}

// Header names of an HTTP response, in order.
std::vector<std::string> HeaderNames(const std::string& response) {
  std::vector<std::string> names;
  std::string head = response.substr(0, response.find("\r\n\r\n"));
  std::vector<std::string> lines = Split(head, '\n');
  for (size_t i = 1; i < lines.size(); ++i) names.push_back(lines[i].substr(0, lines[i].find(':')));
  return names;
}

std::string HeaderValue(const std::string& response, const std::string& name) {
  std::string head = response.substr(0, response.find("\r\n\r\n"));
  for (const std::string& line : Split(head, '\n')) {
    if (StartsWith(line, name + ": ")) return Trim(line.substr(name.size() + 2));
  }
  return "";
}

class WebHdfsSpnegoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(kdc_.StartLoggedIn({"root", "rm/localhost", "HTTP/localhost", "HTTP/otherhost"}));
    dir_ = loom::testing::MakeTestDir("webhdfs_spnego_test");
    hdfs_ = std::make_unique<FakeHdfs>(dir_ + "/hdfs");
    ASSERT_OK(hdfs_->Start());
    ASSERT_OK(hdfs_->RequireSpnego(kdc_.Keytab("HTTP/localhost"), "HTTP/localhost@LOOM.TEST"));
    hadoop::SetProcessKerberos(nullptr);
    hadoop::ClearSpnegoCookies();
  }
  void TearDown() override {
    hadoop::SetProcessKerberos(nullptr);
    hadoop::ClearSpnegoCookies();
    hdfs_.reset();
    (void)RemoveTree(dir_);
  }

  // What `loom` does once kinit's ticket is found.
  void Login() { loom::testing::SetProcessLogin(); }

  // 127.0.0.1, as Loom's conf-derived URLs often are: the principal must still be HTTP/localhost.
  hadoop::WebHdfs Client(const std::string& user = "root") {
    return hadoop::WebHdfs("http://127.0.0.1:" + std::to_string(hdfs_->namenode_http_port()), user);
  }

  KdcHarness kdc_;
  std::string dir_;
  std::unique_ptr<FakeHdfs> hdfs_;
};

TEST(SpnegoServiceHostTest, LowerCasesAndNamesAnAddressByItsHost) {
  // Java builds WebHDFS URLs from InetSocketAddress.getHostName() (a reverse lookup for an
  // address) and KerberosUtil lower-cases it (K5.7).
  EXPECT_EQ(*hadoop::SpnegoServiceHost("http://127.0.0.1:9870/webhdfs/v1/?op=X"), "localhost");
  EXPECT_EQ(*hadoop::SpnegoServiceHost("https://NN1.Example.COM:9871"), "nn1.example.com");
  EXPECT_STATUS(hadoop::SpnegoServiceHost("nn:9870"), kInvalidArgument, HasSubstr("not an http(s) URL"));
}

TEST_F(WebHdfsSpnegoTest, NoKerberosLoginIsAClearError) {
  EXPECT_STATUS(Client().ListStatus("/"), kUnauthenticated,
                AllOf(HasSubstr("requires Kerberos (SPNEGO"), HasSubstr("run kinit"),
                      HasSubstr("hadoop.security.authentication=kerberos")));
  EXPECT_EQ(hdfs_->spnego_accepts(), 0);
}

TEST_F(WebHdfsSpnegoTest, LoginListsCreatesAndOpens) {
  Login();
  hadoop::WebHdfs client = Client();
  ASSERT_OK(client.Mkdirs("/user/root"));
  auto created = client.Create("/user/root/hello.txt", "hello kerberos\n");
  ASSERT_OK(created);
  EXPECT_EQ(created->length, 15);
  auto listing = client.ListStatus("/user/root");
  ASSERT_OK(listing);
  ASSERT_EQ(listing->size(), 1u);
  EXPECT_EQ((*listing)[0].path_suffix, "hello.txt");
  EXPECT_EQ((*listing)[0].owner, "root");  // the authenticated user, short name
  auto bytes = client.Open("/user/root/hello.txt");
  ASSERT_OK(bytes);
  EXPECT_EQ(*bytes, "hello kerberos\n");
  // The DataNode steps went with the NameNode's fresh token (owner and renewer root, K5.8).
  std::vector<hadoop::DelegationTokenIdentifier> minted = hdfs_->tokens().Minted();
  ASSERT_GE(minted.size(), 2u);
  EXPECT_EQ(minted.back().owner, "root");
  EXPECT_EQ(minted.back().renewer, "root");
}

// loom.kerberos.keytab: the login lives in a private memory cache, and KRB5CCNAME names none.
TEST_F(WebHdfsSpnegoTest, KeytabLoginWorksWithoutATicketCache) {
  ::setenv("KRB5CCNAME", ("FILE:" + dir_ + "/no-such-cache").c_str(), 1);
  hadoop::KerberosLoginOptions options;
  options.keytab = kdc_.Keytab("root");
  options.principal = "root@LOOM.TEST";
  ASSERT_NO_FATAL_FAILURE(loom::testing::SetProcessLogin(options));
  EXPECT_OK(Client().Mkdirs("/user/root"));
  EXPECT_EQ(hdfs_->Stat("/user/root")->owner, "root");
  EXPECT_EQ(hdfs_->spnego_accepts(), 1);
}

TEST_F(WebHdfsSpnegoTest, UserNameIsNotTrustedOnceAuthenticated) {
  Login();
  EXPECT_STATUS(Client("mallory").Mkdirs("/tmp/x"), kUnauthenticated,
                HasSubstr("Usernames not matched: name=mallory != expected=root"));
  EXPECT_FALSE(hdfs_->Stat("/tmp/x").ok());
}

TEST_F(WebHdfsSpnegoTest, CookieIsReplayedInsteadOfANewTicket) {
  Login();
  hadoop::WebHdfs client = Client();
  ASSERT_OK(client.Mkdirs("/a"));
  for (int i = 0; i < 4; ++i) ASSERT_OK(client.ListStatus("/"));
  ASSERT_OK(Client().GetFileStatus("/a"));  // another WebHdfs object, same process: same cookie
  EXPECT_EQ(hdfs_->spnego_accepts(), 1);
  // A server that no longer honours the cookie (a new signing secret) answers 401: the client
  // negotiates once more and goes on.
  ASSERT_OK(hdfs_->RequireSpnego(kdc_.Keytab("HTTP/localhost"), "HTTP/localhost@LOOM.TEST"));
  ASSERT_OK(client.ListStatus("/"));
  EXPECT_EQ(hdfs_->spnego_accepts(), 2);
  ASSERT_OK(client.ListStatus("/"));
  EXPECT_EQ(hdfs_->spnego_accepts(), 2);
}

TEST_F(WebHdfsSpnegoTest, TicketForAnotherHttpPrincipalIsRefused) {
  // The server's keytab is for HTTP/otherhost; the client, at 127.0.0.1, asks for HTTP/localhost.
  ASSERT_OK(hdfs_->RequireSpnego(kdc_.Keytab("HTTP/otherhost"), "HTTP/otherhost@LOOM.TEST"));
  Login();
  EXPECT_STATUS(Client().ListStatus("/"), kPermissionDenied,
                AllOf(HasSubstr("HTTP/localhost"), HasSubstr("root@LOOM.TEST"), HasSubstr("HTTP 403"),
                      HasSubstr("kinit")));
  EXPECT_EQ(hdfs_->spnego_accepts(), 0);
}

TEST_F(WebHdfsSpnegoTest, DelegationTokenWorksWithoutKerberosUntilCancelled) {
  Login();
  hadoop::WebHdfs user = Client();
  ASSERT_OK(user.Mkdirs("/user/root"));
  ASSERT_OK(user.Create("/user/root/in.txt", "data"));
  auto token = user.GetDelegationToken("rm");
  ASSERT_OK(token);
  EXPECT_EQ(token->kind, "WEBHDFS delegation");
  auto id = hadoop::ParseDelegationTokenIdentifier(token->identifier);
  ASSERT_OK(id);
  EXPECT_EQ(id->owner, "root");  // WebHDFS stores the short name (K5.5)
  EXPECT_EQ(id->renewer, "rm");
  // Only the renewer may renew (webhdfs/07).
  EXPECT_STATUS(user.RenewDelegationToken(*token), kPermissionDenied,
                HasSubstr("root tries to renew a token"));

  // The AM: no Kerberos at all, only the token.
  hadoop::SetProcessKerberos(nullptr);
  hadoop::ClearSpnegoCookies();
  int64_t accepts = hdfs_->spnego_accepts();
  hadoop::WebHdfs am = Client("yarn");
  am.UseDelegationToken(*token);
  auto listing = am.ListStatus("/user/root");
  ASSERT_OK(listing);
  EXPECT_EQ(listing->size(), 1u);
  auto bytes = am.Open("/user/root/in.txt");
  ASSERT_OK(bytes);
  EXPECT_EQ(*bytes, "data");
  ASSERT_OK(am.Create("/user/root/out.txt", "result"));
  EXPECT_EQ(hdfs_->Stat("/user/root/out.txt")->owner, "root");  // the token's owner
  EXPECT_EQ(hdfs_->spnego_accepts(), accepts);

  // The owner cancels it; the AM is refused from then on.
  Login();
  ASSERT_OK(user.CancelDelegationToken(*token));
  EXPECT_TRUE(hdfs_->tokens().Cancelled(*token));
  EXPECT_STATUS(am.ListStatus("/user/root"), kPermissionDenied, HasSubstr("can't be found in cache"));
}

TEST_F(WebHdfsSpnegoTest, DataNodeWantsTheNameNodesToken) {
  std::string answer = RawExchange(hdfs_->datanode_http_port(),
                                   "GET /webhdfs/v1/x?op=OPEN&user.name=root&namenoderpcaddress=127.0.0.1:1 HTTP/1.1\r\n"
                                   "Host: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(answer, AllOf(HasSubstr("HTTP/1.1 403"), HasSubstr("InvalidToken")));
}

TEST_F(WebHdfsSpnegoTest, UnauthenticatedAnswerIsShapedLikeTheRecording) {
  std::string recorded = Capture("01-nn-19871-LISTSTATUS-noauth.s2c.bin");
  ASSERT_FALSE(recorded.empty());
  std::string answer = RawExchange(hdfs_->namenode_http_port(),
                                   "GET /webhdfs/v1/user/root?op=LISTSTATUS HTTP/1.1\r\nHost: localhost\r\n"
                                   "User-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n");
  EXPECT_EQ(answer.substr(0, answer.find("\r\n")), recorded.substr(0, recorded.find("\r\n")));
  EXPECT_EQ(HeaderNames(answer), HeaderNames(recorded));
  for (const char* name : {"WWW-Authenticate", "Set-Cookie", "Content-Type", "Content-Length", "Cache-Control"}) {
    EXPECT_EQ(HeaderValue(answer, name), HeaderValue(recorded, name)) << name;
  }
  EXPECT_EQ(answer.substr(answer.find("\r\n\r\n")), recorded.substr(recorded.find("\r\n\r\n")));
}

TEST_F(WebHdfsSpnegoTest, NegotiatedAnswerCarriesMutualTokenAndSignedCookie) {
  Login();
  hadoop::HttpRequest request;
  request.url = "http://127.0.0.1:" + std::to_string(hdfs_->namenode_http_port()) +
                "/webhdfs/v1/?op=LISTSTATUS&user.name=root";
  auto response = hadoop::AuthenticatedExchange(request);
  ASSERT_OK(response);
  EXPECT_EQ(response->code, 200);
  EXPECT_EQ(hdfs_->spnego_accepts(), 1);
  // As webhdfs/02: the mutual-auth token (here the AP-REP GSS token, 60 ..: "Y") and the signed
  // cookie.
  ASSERT_EQ(response->HeaderValues("WWW-Authenticate").size(), 1u);
  EXPECT_THAT(response->HeaderValues("WWW-Authenticate")[0], ::testing::StartsWith("Negotiate Y"));
  ASSERT_EQ(response->HeaderValues("Set-Cookie").size(), 1u);
  EXPECT_THAT(response->HeaderValues("Set-Cookie")[0],
              ::testing::MatchesRegex("hadoop.auth=\"u=root&p=root@LOOM.TEST&t=kerberos&e=[0-9]+&s=[A-Za-z0-9+/]{43}=\"; "
                                      "Path=/; Secure; HttpOnly"));
  // A forged cookie (signature of another secret) is ignored: the 401 challenge again.
  std::string answer = RawExchange(
      hdfs_->namenode_http_port(),
      "GET /webhdfs/v1/?op=LISTSTATUS HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
      "Cookie: hadoop.auth=\"u=root&p=root@LOOM.TEST&t=kerberos&e=99999999999999&s=AAAA\"\r\n\r\n");
  EXPECT_THAT(answer, AllOf(HasSubstr("HTTP/1.1 401 Authentication required"), HasSubstr("WWW-Authenticate: Negotiate\r\n")));
}

// A server whose mutual-auth token does not belong to the client's context (here the one
// recorded in webhdfs/02, made with another session key) is not the service the ticket was
// for: the answer is refused even though it is a 200.
TEST_F(WebHdfsSpnegoTest, BadMutualAuthTokenIsRefused) {
  std::string recorded = Capture("02-nn-19871-LISTSTATUS-spnego.s2c.bin");
  std::string mutual = HeaderValue(recorded, "WWW-Authenticate");
  ASSERT_THAT(mutual, ::testing::StartsWith("Negotiate oY"));
  int port = 0;
  Result<int> listening = hadoop::testing::ListenLoopback(&port);
  ASSERT_OK(listening);
  int listen_fd = *listening;
  std::string seen;
  std::thread server([&] {
    int fd = ::accept(listen_fd, nullptr, nullptr);
    if (fd < 0) return;
    char buf[8192];
    for (ssize_t n; seen.find("\r\n\r\n") == std::string::npos && (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) {
      seen.append(buf, static_cast<size_t>(n));
    }
    std::string answer = "HTTP/1.1 200 OK\r\nWWW-Authenticate: " + mutual +
                         "\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
    ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
    ::close(fd);
  });
  Login();
  hadoop::HttpRequest request;
  request.url = "http://127.0.0.1:" + std::to_string(port) + "/webhdfs/v1/?op=LISTSTATUS";
  EXPECT_STATUS(hadoop::AuthenticatedExchange(request), kUnauthenticated,
                AllOf(HasSubstr("mutual-authentication token for HTTP/localhost is not valid")));
  server.join();
  ::close(listen_fd);
  EXPECT_THAT(seen, HasSubstr("Authorization: Negotiate YII"));  // on the first request, as curl
}

}  // namespace
}  // namespace loom::yarn_double
