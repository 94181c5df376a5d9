#include "cluster/local/docker_check.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include <gmock/gmock.h>

#include "core/files.h"
#include "core/testing.h"

namespace loom::cluster::local {
namespace {

using ::testing::HasSubstr;

// A unix-socket HTTP server that answers every request with `response`, like dockerd's API
// socket (GET /_ping -> 200 "OK").
class FakeDaemon {
 public:
  FakeDaemon(std::string path, std::string response) : path_(std::move(path)), response_(std::move(response)) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path_.c_str(), path_.size());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << std::strerror(errno);
    EXPECT_EQ(::listen(fd_, 4), 0);
    server_ = std::thread([this] {
      while (true) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        char buf[1024];
        std::string request;
        while (request.find("\r\n\r\n") == std::string::npos) {
          ssize_t n = ::recv(c, buf, sizeof(buf), 0);
          if (n <= 0) break;
          request.append(buf, static_cast<size_t>(n));
        }
        requests_ += request;
        (void)::send(c, response_.data(), response_.size(), MSG_NOSIGNAL);
        ::close(c);
      }
    });
  }
  ~FakeDaemon() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    server_.join();
    ::unlink(path_.c_str());
  }
  const std::string& requests() const { return requests_; }

 private:
  std::string path_, response_;
  int fd_ = -1;
  std::thread server_;
  std::string requests_;
};

class DockerCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/docker_check_test." + std::to_string(::getpid());
    ASSERT_OK(MakeDirs(dir_));
    const char* saved = std::getenv("DOCKER_HOST");
    if (saved) saved_ = saved;
  }
  void TearDown() override {
    if (saved_) {
      ::setenv("DOCKER_HOST", saved_->c_str(), 1);
    } else {
      ::unsetenv("DOCKER_HOST");
    }
    (void)RemoveTree(dir_);
  }
  std::string dir_;
  std::optional<std::string> saved_;
};

constexpr char kPong[] = "HTTP/1.1 200 OK\r\nApi-Version: 1.43\r\nContent-Length: 2\r\n\r\nOK";

TEST_F(DockerCheckTest, SocketPathFollowsDockerHost) {
  ::unsetenv("DOCKER_HOST");
  EXPECT_EQ(DockerSocketPath(), "/var/run/docker.sock");
  ::setenv("DOCKER_HOST", "unix:///run/user/1000/docker.sock", 1);
  EXPECT_EQ(DockerSocketPath(), "/run/user/1000/docker.sock");
  ::setenv("DOCKER_HOST", "tcp://10.0.0.1:2375", 1);
  EXPECT_EQ(DockerSocketPath(), std::nullopt);
}

TEST_F(DockerCheckTest, OnlyAnEngineThatAnswersPingCounts) {
  std::string sock = dir_ + "/docker.sock";
  EXPECT_FALSE(DockerDaemonAnswers(sock));  // nothing there
  {
    FakeDaemon daemon(sock, kPong);
    EXPECT_TRUE(DockerDaemonAnswers(sock));
    EXPECT_THAT(daemon.requests(), HasSubstr("GET /_ping HTTP/1.0\r\n"));
  }
  {
    FakeDaemon other(sock, "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found");
    EXPECT_FALSE(DockerDaemonAnswers(sock));
  }
  {
    FakeDaemon silent(sock, "");
    EXPECT_FALSE(DockerDaemonAnswers(sock, 200));
  }
}

TEST_F(DockerCheckTest, DockerOnTheLocalBackendIsRefusedNamingTheKeyAsWritten) {
  config::Config off;
  EXPECT_OK(RefuseDockerOnLocal(off));
  off.Set("tony.docker.enabled", "false", "--conf");
  EXPECT_OK(RefuseDockerOnLocal(off));

  config::Config on;
  on.Set("tony.docker.enabled", "true", "--conf");
  on.Set("tony.docker.containers.image", "repo/train:1", "--conf");
  std::string sock = dir_ + "/docker.sock";
  ::setenv("DOCKER_HOST", ("unix://" + sock).c_str(), 1);
  EXPECT_STATUS(RefuseDockerOnLocal(on), kInvalidArgument,
                HasSubstr("tony.docker.enabled=true (from --conf): no Docker daemon answers here (" + sock + ")"));
  // A daemon here changes what the message says, not the answer: tasks never run in images.
  FakeDaemon daemon(sock, kPong);
  Status refused = RefuseDockerOnLocal(on);
  EXPECT_STATUS(refused, kInvalidArgument, HasSubstr("a Docker daemon answers at " + sock + ", but the local backend"));
  EXPECT_THAT(refused.message(), HasSubstr("--cluster yarn"));
  EXPECT_THAT(refused.message(), HasSubstr("set tony.docker.enabled=false"));
}

}  // namespace
}  // namespace loom::cluster::local
