// The YARN test double's ResourceManager web proxy (rm_web_server.h) against the recordings of
// rm-rest/: a registered AM reached through /proxy/<app>/, the recorded pages of an app without
// a tracking URL, after its end, and of an unknown app.

#include <thread>

#include <gmock/gmock.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "yarn_double_test_fixture.h"

namespace loom::yarn_double {
namespace {

using ::testing::HasSubstr;

// The body of the recorded RM's answer `stem` (rm-rest/), with the recorded RM's address and
// application id replaced by `rm_web` and `app`.
std::string RecordedBody(const std::string& stem, const std::string& recorded_app, const std::string& rm_web,
                         const std::string& app) {
  std::string bytes = MustRead(CaptureDir() + "rm-rest/" + stem + ".s2c.bin");
  size_t end = bytes.find("\r\n\r\n");
  std::string body = end == std::string::npos ? "" : bytes.substr(end + 4);
  for (auto [from, to] : {std::pair<std::string, std::string>{"http://localhost:8088", rm_web}, {recorded_app, app}}) {
    for (size_t at = body.find(from); at != std::string::npos; at = body.find(from, at + to.size())) {
      body.replace(at, from.size(), to);
    }
  }
  return body;
}

TEST_F(YarnDoubleTest, TheRmWebProxyReachesTheAmAndAnswersAsTheRecordedRm) {
  StartDouble(RecordedOptions());
  const std::string rm_web = "http://localhost:" + std::to_string(double_->rm_web_port());
  // The conf dir names it, as a cluster's yarn-site.xml does.
  ASSERT_OK(double_->WriteHadoopConfDir(work_.string() + "/conf"));
  EXPECT_THAT(MustRead(work_.string() + "/conf/yarn-site.xml"),
              HasSubstr("<name>yarn.resourcemanager.webapp.address</name><value>" + double_->rm_web_address() +
                        "</value>"));
  EXPECT_EQ(double_->rm_web_address(), "127.0.0.1:" + std::to_string(double_->rm_web_port()));

  // The AM's web server: says what it was asked.
  httplib::Server am_web;
  am_web.Get(".*", [](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/") {
      res.set_header("X-Am", "yes");
      res.set_header("Cache-Control", "max-age=60");  // the AM's, instead of the RM's no-cache
      return res.set_content("<html>the AM</html>", "text/html");
    }
    if (req.path == "/api/missing") {
      res.status = 404;
      return res.set_content(R"({"error": "no"})", "application/json; charset=utf-8");
    }
    res.set_content(nlohmann::json({{"target", req.target},
                                    {"user_agent", req.get_header_value("User-Agent")},
                                    {"private", req.has_header("X-Private")}})
                        .dump(),
                    "application/json; charset=utf-8");
  });
  int am_port = am_web.bind_to_any_port("127.0.0.1");
  ASSERT_GT(am_port, 0);
  std::thread am_thread([&] { am_web.listen_after_bind(); });
  auto stop_am = [&] {
    if (!am_thread.joinable()) return;
    loom::testing::Eventually([&] { return am_web.is_running(); }, std::chrono::seconds(5));
    am_web.stop();
    am_thread.join();
  };

  TestIpc rm(double_->rm_port());
  rm.Simple("root", kClientProtocol);
  std::string app = Submit(rm, "exec sleep 300");
  ASSERT_OK(double_->WaitForAppState(app, yp::ACCEPTED, std::chrono::seconds(5)));
  httplib::Client proxy("127.0.0.1", double_->rm_web_port());
  proxy.set_read_timeout(10);

  // An application the RM does not know: 404 with rm-rest/07's page.
  std::string unknown = "application_" + std::to_string(kTs) + "_9999";
  auto got = proxy.Get(("/proxy/" + unknown + "/").c_str());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 404);
  EXPECT_EQ(got->get_header_value("Content-Type"), "text/html;charset=utf-8");
  EXPECT_EQ(got->body, RecordedBody("07-rm-8088-proxy-never-existed", "application_1795372454004_9999", rm_web, unknown));
  got = proxy.Get("/proxy/not-an-application/");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 404);
  EXPECT_THAT(got->body, HasSubstr("not-an-application appears to be formatted incorrectly."));

  // No tracking URL yet: 302 to the RM's application page, rm-rest/02's page.
  yp::ApplicationReportProto r = Report(rm, app);
  EXPECT_EQ(r.trackingurl(), rm_web + "/proxy/" + app + "/");  // from submission on (dshell/01)
  EXPECT_EQ(r.originaltrackingurl(), "N/A");
  got = proxy.Get(("/proxy/" + app + "/").c_str());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 302);
  EXPECT_EQ(got->get_header_value("Location"), rm_web + "/cluster/app/" + app);
  EXPECT_EQ(got->get_header_value("Content-Type"), "text/html;charset=utf-8");
  EXPECT_EQ(got->body, RecordedBody("02-rm-8088-proxy-RUNNING-empty-tracking-url", "application_1795372454004_0017",
                                    rm_web, app));

  // The AM registers its URL: the proxy fetches from it.
  TestIpc am_client(double_->scheduler_port());
  ASSERT_OK(am_client.Token(*double_->AmRmToken(app), kAmProtocol));
  yp::RegisterApplicationMasterRequestProto reg;
  reg.set_host("localhost");
  reg.set_rpc_port(-1);
  reg.set_tracking_url("http://127.0.0.1:" + std::to_string(am_port) + "/");
  am_client.CallOk<yp::RegisterApplicationMasterResponseProto>("registerApplicationMaster", kAmProtocol, reg);
  r = Report(rm, app);
  EXPECT_EQ(r.yarn_application_state(), yp::RUNNING);
  EXPECT_EQ(r.trackingurl(), rm_web + "/proxy/" + app + "/");
  EXPECT_EQ(r.originaltrackingurl(), reg.tracking_url());
  got = proxy.Get(("/proxy/" + app + "/").c_str());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->body, "<html>the AM</html>");
  EXPECT_EQ(got->get_header_value("Content-Type"), "text/html");
  EXPECT_EQ(got->get_header_value("X-Am"), "yes");
  EXPECT_EQ(got->get_header_value_count("Cache-Control"), 1u);
  EXPECT_EQ(got->get_header_value("Cache-Control"), "max-age=60");
  EXPECT_EQ(got->get_header_value("X-Frame-Options"), "SAMEORIGIN");  // the RM's own headers too
  // The rest of the path, as encoded, and the query; only the servlet's pass-through headers.
  got = proxy.Get(("/proxy/" + app + "/api/jobs/j/logs/worker%3A0/stdout?offset=-10&limit=5").c_str(),
                  {{"User-Agent", "proxy-test"}, {"X-Private", "not for the AM"}});
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->get_header_value("Content-Type"), "application/json; charset=utf-8");
  nlohmann::json seen = nlohmann::json::parse(got->body, nullptr, false);
  EXPECT_EQ(seen["target"], "/api/jobs/j/logs/worker%3A0/stdout?offset=-10&limit=5") << got->body;
  EXPECT_EQ(seen["user_agent"], "proxy-test");
  EXPECT_EQ(seen["private"], false);
  // The AM's status comes back, and HEAD answers without a body.
  got = proxy.Get(("/proxy/" + app + "/api/missing").c_str());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 404);
  EXPECT_EQ(got->body, R"({"error": "no"})");
  got = proxy.Head(("/proxy/" + app + "/").c_str());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->body, "");
  // The AM's web server gone: the servlet's IOException, a 500.
  stop_am();
  got = proxy.Get(("/proxy/" + app + "/").c_str());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 500);
  EXPECT_THAT(got->body, HasSubstr("Connection refused"));

  // Unregistered with no final tracking URL (as Loom's AM does): FINISHED keeps the /proxy/ URL
  // (rm-rest/04), which sends users to the RM's page (rm-rest/05).
  yp::FinishApplicationMasterRequestProto fin;
  fin.set_final_application_status(yp::APP_SUCCEEDED);
  fin.set_tracking_url("");
  am_client.CallOk<yp::FinishApplicationMasterResponseProto>("finishApplicationMaster", kAmProtocol, fin);
  r = Report(rm, app);
  EXPECT_EQ(r.yarn_application_state(), yp::FINISHED);
  EXPECT_EQ(r.trackingurl(), rm_web + "/proxy/" + app + "/");
  EXPECT_EQ(r.originaltrackingurl(), "N/A");
  got = proxy.Get(("/proxy/" + app + "/").c_str());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 302);
  EXPECT_EQ(got->get_header_value("Location"), rm_web + "/cluster/app/" + app);
  EXPECT_EQ(got->body, RecordedBody("05-rm-8088-proxy-FINISHED-empty-tracking-url", "application_1795372454004_0017",
                                    rm_web, app));

  // Killed: the RM's application page is the tracking URL, where the proxy sends users too.
  std::string killed = Submit(rm, "exec sleep 300");
  yp::KillApplicationRequestProto kill;
  size_t sep = killed.rfind('_');
  kill.mutable_application_id()->set_cluster_timestamp(kTs);
  kill.mutable_application_id()->set_id(std::stoi(killed.substr(sep + 1)));
  rm.CallOk<yp::KillApplicationResponseProto>("forceKillApplication", kClientProtocol, kill);
  r = Report(rm, killed);
  EXPECT_EQ(r.yarn_application_state(), yp::KILLED);
  EXPECT_EQ(r.trackingurl(), rm_web + "/cluster/app/" + killed);
  got = proxy.Get(("/proxy/" + killed + "/").c_str());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 302);
  EXPECT_EQ(got->get_header_value("Location"), rm_web + "/cluster/app/" + killed);
}

}  // namespace
}  // namespace loom::yarn_double
