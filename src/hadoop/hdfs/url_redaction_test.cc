// Delegation tokens in URLs (WebHDFS's delegation=, a DataNode redirect's, RENEW/CANCEL's
// token=) never reach a message or a log line: every message built from a URL redacts them.
// And libcurl refusing the cluster truststore fails the exchange instead of falling back to the
// system's CA store.

#include <cstdarg>
#include <memory>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "core/testing.h"
#include "hadoop/hdfs/curl_library.h"
#include "hadoop/hdfs/webhdfs.h"
#include "hadoop/testing/test_socket.h"
#include "hadoop/wire/credentials.h"

namespace loom::hadoop {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Token SomeToken() {
  DelegationTokenIdentifier id;
  id.owner = "root@LOOM.TEST";
  id.renewer = "rm";
  id.real_user = "";
  id.issue_date_ms = 1700000000000;
  id.max_date_ms = 1700600000000;
  id.sequence_number = 42;
  id.master_key_id = 7;
  return Token{SerializeDelegationTokenIdentifier(id), "secret-password-bytes", kHdfsDelegationKind,
               "127.0.0.1:8020"};
}

TEST(RedactUrlSecretsTest, RedactsDelegationAndTokenValuesOnly) {
  EXPECT_EQ(RedactUrlSecrets("http://nn:9870/webhdfs/v1/a?op=GETFILESTATUS&delegation=SECRET&x=1"),
            "http://nn:9870/webhdfs/v1/a?op=GETFILESTATUS&delegation=<redacted>&x=1");
  EXPECT_EQ(RedactUrlSecrets("PUT http://nn/webhdfs/v1/?op=RENEWDELEGATIONTOKEN&token=SECRET: refused"),
            "PUT http://nn/webhdfs/v1/?op=RENEWDELEGATIONTOKEN&token=<redacted>: refused");
  // A DataNode redirect (the NameNode's own token first) and upper-case names.
  EXPECT_EQ(RedactUrlSecrets("http://dn:9864/webhdfs/v1/f?Delegation=A-b_c&op=CREATE&namenoderpcaddress=nn:8020"),
            "http://dn:9864/webhdfs/v1/f?Delegation=<redacted>&op=CREATE&namenoderpcaddress=nn:8020");
  // Names that only end in "token=" are other parameters; a path is left alone.
  EXPECT_EQ(RedactUrlSecrets("http://h/token=x?mytoken=y&op=A"), "http://h/token=x?mytoken=y&op=A");
  EXPECT_EQ(RedactUrlSecrets("no url at all"), "no url at all");
}

TEST(RedactUrlSecretsTest, HttpExchangeErrorHasNoToken) {
  std::string secret = EncodeTokenUrlString(SomeToken());
  HttpRequest request;
  request.url = "http://127.0.0.1:" + std::to_string(testing::ClosedLoopbackPort()) +
                "/webhdfs/v1/user/root?op=GETFILESTATUS&delegation=" + secret;
  request.connect_timeout_s = 5;
  Result<HttpResponse> r = HttpExchange(request);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("delegation=<redacted>"));
  EXPECT_THAT(r.status().message(), Not(HasSubstr(secret)));
}

// The AM's mode (UseDelegationToken) against an HA pair whose NameNodes are both down: neither
// the Status nor the failover warning (the AM's log, shown in the YARN UI) quotes the token;
// RENEWDELEGATIONTOKEN's token= neither.
TEST(RedactUrlSecretsTest, WebHdfsWithDelegationTokenAgainstStoppedNameNodes) {
  Token token = SomeToken();
  std::string secret = EncodeTokenUrlString(token);
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  auto capture = std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  capture->set_level(spdlog::level::debug);
  spdlog::set_default_logger(capture);

  auto closed = [] { return "http://127.0.0.1:" + std::to_string(testing::ClosedLoopbackPort()); };
  WebHdfs hdfs(closed() + "," + closed(), "root");
  hdfs.UseDelegationToken(token);
  Result<HdfsFileStatus> status = hdfs.GetFileStatus("/user/root/.loom/history");
  Status created = hdfs.Create("/user/root/x", "bytes").status();
  Result<int64_t> renewed = hdfs.RenewDelegationToken(token);
  spdlog::set_default_logger(previous);

  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(status.status().message(), HasSubstr("delegation=<redacted>"));
  EXPECT_THAT(status.status().message(), Not(HasSubstr(secret)));
  ASSERT_FALSE(created.ok());
  EXPECT_THAT(created.message(), Not(HasSubstr(secret)));
  ASSERT_FALSE(renewed.ok());
  EXPECT_THAT(renewed.status().message(), HasSubstr("token=<redacted>"));
  EXPECT_THAT(renewed.status().message(), Not(HasSubstr(secret)));
  EXPECT_THAT(log.str(), HasSubstr("unreachable"));  // the failover warning was logged...
  EXPECT_THAT(log.str(), Not(HasSubstr(secret)));    // ...without the token
}

// ---- the truststore: a refused option fails the exchange ------------------------------------

CurlLibrary g_refusing;      // the loaded library, with easy_setopt below
CURLoption g_refused{};      // the option easy_setopt refuses
CURLcode (*g_real_setopt)(CURL*, CURLoption, ...) = nullptr;

CURLcode RefusingSetopt(CURL* h, CURLoption option, ...) {
  if (option == g_refused) return CURLE_NOT_BUILT_IN;  // as a libcurl older than the option
  va_list args;
  va_start(args, option);
  CURLcode rc;
  if (option < CURLOPTTYPE_OBJECTPOINT) {
    rc = g_real_setopt(h, option, va_arg(args, long));
  } else if (option >= CURLOPTTYPE_OFF_T && option < CURLOPTTYPE_BLOB) {
    rc = g_real_setopt(h, option, va_arg(args, curl_off_t));
  } else {
    rc = g_real_setopt(h, option, va_arg(args, void*));
  }
  va_end(args);
  return rc;
}

class RefusedOptionTest : public ::testing::Test {
 protected:
  void TearDown() override {
    SetCurlLibraryForTest(nullptr);
    SetHttpsTrust(std::nullopt);
  }
  Result<HttpResponse> HttpsWithRefused(CURLoption option) {
    SetCurlLibraryForTest(nullptr);
    Result<const CurlLibrary*> real = Curl();
    EXPECT_OK(real);
    g_refusing = **real;
    g_real_setopt = (*real)->easy_setopt;
    g_refusing.easy_setopt = RefusingSetopt;
    g_refused = option;
    // Any non-empty bundle: libcurl is refused before it would parse it.
    SetHttpsTrust("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    SetCurlLibraryForTest(&g_refusing);
    HttpRequest request;
    request.url = "https://127.0.0.1:" + std::to_string(testing::ClosedLoopbackPort()) + "/webhdfs/v1/?op=X&delegation=SECRET";
    request.connect_timeout_s = 5;
    return HttpExchange(request);
  }
};

TEST_F(RefusedOptionTest, RefusedTruststoreFailsClearly) {
  Result<HttpResponse> r = HttpsWithRefused(CURLOPT_CAINFO_BLOB);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("truststore"));
  EXPECT_THAT(r.status().message(), HasSubstr("ssl.client.truststore.location"));
  EXPECT_THAT(r.status().message(), Not(HasSubstr("SECRET")));
}

TEST_F(RefusedOptionTest, RefusedVerificationFailsClearly) {
  for (CURLoption option : {CURLOPT_SSL_VERIFYPEER, CURLOPT_SSL_VERIFYHOST, CURLOPT_CAPATH}) {
    Result<HttpResponse> r = HttpsWithRefused(option);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << option;
    EXPECT_THAT(r.status().message(), HasSubstr("libcurl refused")) << option;
  }
}

}  // namespace
}  // namespace loom::hadoop
