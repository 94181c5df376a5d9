#include "am/status_page.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "core/testing.h"
#include "history/event_log.h"
#include "history/job_view.h"

namespace loom::am {
namespace {

using ::testing::HasSubstr;

class StatusPageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() / ("loom_sp_" + std::to_string(::getpid()) + "/job_y");
    std::filesystem::create_directories(root_);
    dir_ = history::JobDir(root_.string());
    history::EventLog log(dir_.events());
    ASSERT_OK(log.Append("JOB_SUBMITTED", {{"job_id", "job_y"}, {"name", "<digits>"}, {"tasks", {"worker:0", "worker:1"}}}));
    ASSERT_OK(log.Append("AM_STARTED", {{"pid", 1}}));
    ASSERT_OK(log.Append("TASK_STATE", {{"task", "worker:0"}, {"state", "RUNNING"}, {"address", "h:1"}}));
    ASSERT_OK(log.Append("TASK_STATE", {{"task", "worker:1"}, {"state", "FAILED"}, {"exit_code", 3}}));
  }
  void TearDown() override { std::filesystem::remove_all(root_.parent_path()); }
  std::filesystem::path root_;
  history::JobDir dir_;
};

TEST_F(StatusPageTest, ShowsTheTaskTableEscaped) {
  StatusPage page(dir_, "job_real_id");
  StatusPage::Page p = page.Render("/");
  EXPECT_EQ(p.code, 200);
  std::string r = p.body;
  EXPECT_THAT(r, HasSubstr("&lt;digits&gt;"));  // the job name is not markup
  EXPECT_THAT(r, HasSubstr("job_real_id"));      // the job's id, not its dir's name
  EXPECT_THAT(r, HasSubstr("worker:0"));
  EXPECT_THAT(r, HasSubstr("FAILED"));
  EXPECT_THAT(r, HasSubstr("RUNNING"));
}

TEST_F(StatusPageTest, StatusJsonHasTheShapeOfLoomStatus) {
  StatusPage page(dir_, "job_y");
  StatusPage::Page p = page.Render("/status.json");
  ASSERT_EQ(p.code, 200);
  auto j = nlohmann::json::parse(p.body);
  EXPECT_EQ(j, history::ToJson(*history::LoadJobView(dir_)));
  EXPECT_EQ(j["state"], "RUNNING");
  ASSERT_EQ(j["tasks"].size(), 2u);
  EXPECT_EQ(j["tasks"][1]["exit_code"], 3);
  EXPECT_EQ(page.Render("/etc/passwd").code, 404);
}

TEST_F(StatusPageTest, LinksTheTensorBoardOnceItAnswersWhileItsTaskRuns) {
  history::EventLog log(dir_.events());
  // The task's own port is its framework's, not TensorBoard's: no link yet.
  ASSERT_OK(log.Append("TASK_STATE", {{"task", "tensorboard:0"}, {"state", "RUNNING"}, {"address", "h:21000"}}));
  StatusPage page(dir_, "job_y");
  EXPECT_THAT(page.Render("/").body, ::testing::Not(HasSubstr("TensorBoard")));
  ASSERT_OK(log.Append("TENSORBOARD", {{"task", "tensorboard:0"}, {"url", "http://h:6006/"}}));
  EXPECT_THAT(page.Render("/").body, HasSubstr("<a id=\"tensorboard\" href=\"http://h:6006/\">TensorBoard</a>"));
  EXPECT_EQ(nlohmann::json::parse(page.Render("/status.json").body)["tensorboard_url"], "http://h:6006/");
  ASSERT_OK(log.Append("TASK_STATE", {{"task", "tensorboard:0"}, {"state", "KILLED"}}));
  EXPECT_THAT(page.Render("/").body, ::testing::Not(HasSubstr("TensorBoard")));  // gone with its task
}

TEST_F(StatusPageTest, ServesOverHttp) {
  StatusPage page(dir_, "job_y");
  auto port = page.Start("127.0.0.1");
  ASSERT_OK(port);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(*port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  std::string req = "GET /status.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(::write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) got.append(buf, static_cast<size_t>(n));
  ::close(fd);
  EXPECT_THAT(got, HasSubstr("\"job_id\": \"job_y\""));
  page.Stop();
}

}  // namespace
}  // namespace loom::am
