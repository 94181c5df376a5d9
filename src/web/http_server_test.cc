#include "web/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "core/clock.h"
#include "core/eventually.h"
#include "core/inet_address.h"

namespace loom::web {
namespace {

using ::loom::testing::Eventually;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// The raw exchange of one request, for what a well-behaved client would never send: what came
// back until the server closed the connection (it does after each of these answers) or 2 s.
// Not half-closed: cpp-httplib writes nothing to a peer that has shut its side.
std::string RawExchange(int port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval limit{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  sockaddr_in addr = Ipv4Address(INADDR_LOOPBACK, port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return "connect failed";
  (void)!::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto port = server_.Start("127.0.0.1", 0, 2);
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    port_ = *port;
  }
  std::atomic<int> calls_{0};
  HttpRequest last_;
  HttpServer server_{[this](const HttpRequest& r) {
    ++calls_;
    last_ = r;
    HttpResponse answer;
    answer.body = "{\"path\":\"ok\"}";
    return answer;
  }};
  int port_ = 0;
};

TEST_F(HttpServerTest, TheHandlerSeesTheDecodedPathAndQuery) {
  httplib::Client client("127.0.0.1", port_);
  auto res = client.Get("/api/jobs/job_1/logs/worker%3A0/std%2e%2eout?offset=-5&name=a%20b");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(last_.path, "/api/jobs/job_1/logs/worker:0/std..out");
  EXPECT_EQ(last_.params.at("offset"), "-5");
  EXPECT_EQ(last_.params.at("name"), "a b");
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json; charset=utf-8");
  EXPECT_EQ(res->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_THAT(res->get_header_value("Content-Security-Policy"), HasSubstr("default-src 'self'"));
  EXPECT_EQ(res->get_header_value("Cache-Control"), "no-store");
}

TEST_F(HttpServerTest, ReadOnlyAndBadRequestsAre4xxAndTheServerGoesOn) {
  httplib::Client client("127.0.0.1", port_);
  std::string post = RawExchange(port_, "POST /api/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(post, HasSubstr("HTTP/1.1 405"));
  EXPECT_THAT(post, HasSubstr("read-only"));
  auto with_body = client.Post("/api/jobs", "x", "text/plain");
  ASSERT_TRUE(with_body);
  EXPECT_EQ(with_body->status, 413);
  EXPECT_THAT(RawExchange(port_, "GARBAGE\r\n\r\n"), HasSubstr("HTTP/1.1 400"));
  EXPECT_THAT(RawExchange(port_, "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n"),
              HasSubstr("HTTP/1.1 414"));
  EXPECT_THAT(RawExchange(port_, "GET / HTTP/1.1\r\nHost: x\r\nX: " + std::string(20000, 'a') + "\r\n\r\n"),
              ::testing::AnyOf(HasSubstr("HTTP/1.1 400"), HasSubstr("HTTP/1.1 431"), ::testing::IsEmpty()));
  EXPECT_EQ(calls_, 0);  // none of them reached the handler
  auto after = client.Get("/");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(calls_, 1);
}

// Clients that send part of a request and then nothing hold the server's two threads only for
// the request time, read on the server's clock (a FakeClock here, moved past it): then they are
// closed and a real request is answered. cpp-httplib's own read timeout (5 s, real time) is
// never reached while the test runs: without the whole-time limit nothing would close them and
// the GET would not be answered. A client that trickles a byte now and then is the same case.
TEST(HttpServer, ClientsThatDoNotFinishTheirRequestsAreCutAtTheRequestTime) {
  FakeClock clock;
  std::atomic<int> calls{0};
  HttpServer server(
      [&](const HttpRequest&) {
        ++calls;
        return HttpResponse{};
      },
      clock);
  auto port = server.Start("127.0.0.1", 0, /*threads=*/2, /*request_time=*/1500ms);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  struct Slow {
    int fd = -1;
    bool closed = false;
  };
  Slow slow[2];
  for (Slow& c : slow) {
    c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr = Ipv4Address(INADDR_LOOPBACK, *port);
    ASSERT_EQ(::connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    const std::string start = "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    ASSERT_EQ(::send(c.fd, start.data(), start.size(), MSG_NOSIGNAL), static_cast<ssize_t>(start.size()));
  }
  // An end or a reset from the server; nothing else comes for a request never finished.
  auto all_closed = [&] {
    for (Slow& c : slow) {
      char byte;
      ssize_t got = ::recv(c.fd, &byte, 1, MSG_DONTWAIT);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) c.closed = true;
    }
    return slow[0].closed && slow[1].closed;
  };
  EXPECT_FALSE(all_closed()) << "closed before the request time";
  // A connection the server has not taken yet is armed on the moved clock: the next move cuts it.
  EXPECT_TRUE(Eventually([&] {
    clock.Advance(1500ms);
    return all_closed();
  }, 3s)) << "the unfinished requests were not cut at the request time";
  httplib::Client client("127.0.0.1", *port);
  client.set_read_timeout(3, 0);
  auto res = client.Get("/");
  for (Slow& c : slow) ::close(c.fd);
  ASSERT_TRUE(res) << "no answer while two clients held the server's threads";
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(calls, 1);  // the unfinished requests never reached the handler
}

TEST(HttpServer, RefusesANameAsBindAddressAndATakenPort) {
  HttpServer a([](const HttpRequest&) { return HttpResponse{}; });
  auto port = a.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  HttpServer b([](const HttpRequest&) { return HttpResponse{}; });
  EXPECT_FALSE(b.Start("127.0.0.1", *port).ok());
  HttpServer c([](const HttpRequest&) { return HttpResponse{}; });
  EXPECT_FALSE(c.Start("localhost", 0).ok());
  a.Stop();
  a.Stop();
}

}  // namespace
}  // namespace loom::web
