#include "am/rendezvous_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "core/inet_address.h"
#include "core/testing.h"
#include "core/eventually.h"

using ::loom::testing::Eventually;

namespace loom::am {
namespace {

using ::testing::HasSubstr;

struct Reply {
  int code = 0;
  std::string head;
  std::string body;
};

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = Ipv4Address(INADDR_LOOPBACK, port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One request as Horovod's HTTP client (HTTPRequest.hpp) writes it: HTTP/1.1, Host and
// Content-Length always, then the body; the answer is read until the server closes.
Reply Request(int port, const std::string& method, const std::string& path, const std::string& body = "") {
  Reply r;
  int fd = Connect(port);
  if (fd < 0) return r;
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n" + body;
  (void)!::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string all;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) all.append(buf, static_cast<size_t>(n));
  ::close(fd);
  size_t end = all.find("\r\n\r\n");
  if (end == std::string::npos || all.size() < 12) return r;
  r.code = std::stoi(all.substr(9, 3));
  r.head = all.substr(0, end);
  r.body = all.substr(end + 4);
  return r;
}

// Sends `raw` as it is and returns the answer's status code (0: closed without one).
int RawRequest(int port, const std::string& raw) {
  int fd = Connect(port);
  if (fd < 0) return 0;
  (void)!::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  std::string all;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) all.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return all.size() >= 12 ? std::stoi(all.substr(9, 3)) : 0;
}

class RendezvousServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto port = server_.Start("127.0.0.1");
    ASSERT_OK(port);
    port_ = *port;
  }
  RendezvousServer server_;
  int port_ = 0;
};

TEST_F(RendezvousServerTest, PutThenGetReturnsTheValueWithItsLength) {
  // A rank's record is binary (sizes in host byte order, a sockaddr): NULs and CRLFs included.
  std::string value("host\0\x01\r\n\r\nend", 14);
  Reply put = Request(port_, "PUT", "/global/0", value);
  EXPECT_EQ(put.code, 200);
  EXPECT_THAT(put.head, HasSubstr("\r\nContent-Length: 0"));
  Reply get = Request(port_, "GET", "/global/0");
  EXPECT_EQ(get.code, 200);
  EXPECT_EQ(get.body, value);
  // Horovod's client matches this header's spelling exactly, and reads until it has that much.
  EXPECT_THAT(get.head, HasSubstr("\r\nContent-Length: 14\r\n"));
  // A second PUT replaces the value.
  EXPECT_EQ(Request(port_, "PUT", "/global/0", "again").code, 200);
  EXPECT_EQ(Request(port_, "GET", "/global/0").body, "again");
}

TEST_F(RendezvousServerTest, MissingKeyIs404SoThatTheClientPollsAgain) {
  Reply get = Request(port_, "GET", "/global/3");
  EXPECT_EQ(get.code, 404);
  EXPECT_THAT(get.head, HasSubstr("Content-Length: 0"));
  EXPECT_EQ(Request(port_, "PUT", "/local_h/3", "x").code, 200);
  EXPECT_EQ(Request(port_, "GET", "/global/3").code, 404) << "scopes are separate";
  EXPECT_EQ(Request(port_, "GET", "/local_h/3").code, 200);
}

TEST_F(RendezvousServerTest, RejectsWhatIsNotScopeAndKey) {
  EXPECT_EQ(Request(port_, "GET", "/global").code, 400);
  EXPECT_EQ(Request(port_, "PUT", "/a/b/c", "x").code, 400);
  EXPECT_EQ(Request(port_, "GET", "global/0").code, 400);
  EXPECT_EQ(Request(port_, "POST", "/global/0", "x").code, 405);
  EXPECT_EQ(server_.KeyCount(), 0u);
}

TEST_F(RendezvousServerTest, PlanScopeIsClearedOnceEveryRankFinalized) {
  // 2 hosts x 2 slots, as horovod's get_host_assignments gives them.
  std::vector<GlooSlot> plan = {{"h0", 0, 4, 2, 2}, {"h0", 1, 4, 2, 2}, {"h1", 0, 4, 2, 2}, {"h1", 1, 4, 2, 2}};
  server_.Reset(plan);
  for (int r = 0; r < 4; ++r) ASSERT_EQ(Request(port_, "PUT", "/global/" + std::to_string(r), "a").code, 200);
  ASSERT_EQ(Request(port_, "PUT", "/local_h0/0", "l").code, 200);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(Request(port_, "DELETE", "/global/" + std::to_string(r)).code, 200);
  // A retried DELETE counts once.
  EXPECT_EQ(Request(port_, "DELETE", "/global/2").code, 200);
  // Not everyone is done: a late reader still finds every key, rank 0's included.
  EXPECT_EQ(Request(port_, "GET", "/global/0").code, 200);
  EXPECT_EQ(Request(port_, "GET", "/global/3").code, 200);
  EXPECT_EQ(Request(port_, "DELETE", "/global/3").code, 200);
  EXPECT_EQ(Request(port_, "GET", "/global/0").code, 404);
  EXPECT_EQ(Request(port_, "GET", "/global/3").code, 404);
  EXPECT_EQ(Request(port_, "GET", "/local_h0/0").code, 200) << "other scopes keep theirs";
}

TEST_F(RendezvousServerTest, AdHocScopeDeleteRemovesThatKey) {
  ASSERT_EQ(Request(port_, "PUT", "/global_process_set_hash_ab/0", "a").code, 200);
  ASSERT_EQ(Request(port_, "PUT", "/global_process_set_hash_ab/1", "b").code, 200);
  EXPECT_EQ(Request(port_, "DELETE", "/global_process_set_hash_ab/0").code, 200);
  EXPECT_EQ(Request(port_, "GET", "/global_process_set_hash_ab/0").code, 404);
  EXPECT_EQ(Request(port_, "GET", "/global_process_set_hash_ab/1").code, 200);
  EXPECT_EQ(Request(port_, "DELETE", "/nothing/here").code, 200);
}

TEST_F(RendezvousServerTest, ResetDropsThePreviousAttemptsKeys) {
  ASSERT_EQ(Request(port_, "PUT", "/global/1", "old address").code, 200);
  server_.Reset({{"h0", 0, 2, 1, 2}, {"h1", 0, 2, 1, 2}});
  EXPECT_EQ(Request(port_, "GET", "/global/1").code, 404);
  EXPECT_EQ(server_.KeyCount(), 0u);
}

TEST(RendezvousScopes, SizesFollowHorovodsSlotPlan) {
  // Hosts with 2 and 1 slots: cross_0 spans both hosts, cross_1 only the first.
  std::vector<GlooSlot> plan = {{"a", 0, 3, 2, 2}, {"a", 1, 3, 2, 1}, {"b", 0, 3, 1, 2}};
  std::map<std::string, int> want = {{"global", 3}, {"local_a", 2}, {"local_b", 1}, {"cross_0", 2}, {"cross_1", 1}};
  EXPECT_EQ(RendezvousServer::ScopeSizes(plan), want);
}

TEST_F(RendezvousServerTest, ConcurrentRanksEachFindEveryPeer) {
  // What gloo does in one scope: PUT your key, then poll GET for every peer's until it is there.
  constexpr int kRanks = 16;
  std::vector<std::thread> ranks;
  std::atomic<int> found{0};
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back([this, r, &found] {
      ASSERT_EQ(Request(port_, "PUT", "/global/" + std::to_string(r), "addr-" + std::to_string(r)).code, 200);
      for (int peer = 0; peer < kRanks; ++peer) {
        Reply got;
        while ((got = Request(port_, "GET", "/global/" + std::to_string(peer))).code == 404) std::this_thread::yield();
        if (got.code == 200 && got.body == "addr-" + std::to_string(peer)) ++found;
      }
    });
  }
  for (auto& t : ranks) t.join();
  EXPECT_EQ(found.load(), kRanks * kRanks);
  EXPECT_GE(server_.requests(), kRanks * (kRanks + 1));
}

TEST_F(RendezvousServerTest, AClientThatSendsNothingDoesNotHoldUpTheOthers) {
  int idle = Connect(port_);
  ASSERT_GE(idle, 0);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Request(port_, "PUT", "/global/0", "x").code, 200);
  EXPECT_EQ(Request(port_, "GET", "/global/0").code, 200);
  // Served at once, not after the idle client's 3 s are up.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  ::close(idle);
}

TEST(RendezvousServerPorts, TakesAPortOfTheRangeThatNobodyHolds) {
  // A port held the way an executor holds its task's port: bound, SO_REUSEADDR, not listening.
  int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = Ipv4Address(INADDR_ANY, 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  int one = 1;
  ::setsockopt(holder, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  int held = ntohs(addr.sin_port);

  RendezvousServer server;
  EXPECT_STATUS(server.Start("0.0.0.0", held, held), kResourceExhausted, HasSubstr("loom.task.port-range"));
  ::close(holder);
  auto port = server.Start("0.0.0.0", held, held);
  ASSERT_OK(port);
  EXPECT_EQ(*port, held);
  server.Stop();
  EXPECT_EQ(Connect(held), -1) << "stopped: nothing listens any more";
}

TEST(RendezvousServerPorts, BadBindAddressIsRefused) {
  RendezvousServer server;
  EXPECT_STATUS(server.Start("not-an-address"), kInvalidArgument, HasSubstr("not-an-address"));
}

}  // namespace
}  // namespace loom::am

namespace loom::am {
namespace {

TEST(RendezvousServerLimits, AClientThatNeverReadsItsAnswerDoesNotHoldUpStop) {
  RendezvousServer::Limits limits;
  limits.request_timeout = std::chrono::milliseconds(200);
  RendezvousServer server(limits);
  auto port = server.Start("127.0.0.1");
  ASSERT_OK(port);
  // More than the kernel buffers on both ends hold, so that the answer's send blocks.
  std::string big(12 << 20, 'v');
  ASSERT_EQ(Request(*port, "PUT", "/global/0", big).code, 200);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int small = 4096;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  sockaddr_in addr = Ipv4Address(INADDR_LOOPBACK, *port);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  std::string get = "GET /global/0 HTTP/1.1\r\nContent-Length: 0\r\n\r\n";
  ASSERT_EQ(::send(fd, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  ASSERT_TRUE(Eventually([&] { return server.requests() == 2; }));  // the GET is being answered

  std::promise<void> stopped;
  std::thread stopper([&] {
    server.Stop();
    stopped.set_value();
  });
  bool in_time = stopped.get_future().wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  ::close(fd);  // lets a server without the limit go, so that the test ends either way
  stopper.join();
  EXPECT_TRUE(in_time) << "Stop() waited for a client that does not read";
}

TEST(RendezvousServerLimits, AValueOverItsLimitOrAFullStoreIsRefused) {
  RendezvousServer::Limits limits;
  limits.max_value_bytes = 100;
  limits.max_stored_bytes = 150;  // keys and values
  RendezvousServer server(limits);
  auto port = server.Start("127.0.0.1");
  ASSERT_OK(port);
  // Refused from its header alone, before its body is read.
  EXPECT_EQ(RawRequest(*port, "PUT /global/0 HTTP/1.1\r\nContent-Length: 101\r\n\r\n"), 413);
  EXPECT_EQ(Request(*port, "PUT", "/global/0", std::string(100, 'a')).code, 200);
  // 101 + 1 + 50 > 150: the store is full, not the value too big.
  EXPECT_EQ(Request(*port, "PUT", "/global/1", std::string(50, 'b')).code, 507);
  EXPECT_EQ(Request(*port, "GET", "/global/1").code, 404);
  // A value replaced counts once.
  EXPECT_EQ(Request(*port, "PUT", "/global/0", std::string(60, 'a')).code, 200);
  EXPECT_EQ(Request(*port, "PUT", "/global/1", std::string(50, 'b')).code, 200);
  // What a DELETE or a Reset frees can be used again.
  EXPECT_EQ(Request(*port, "DELETE", "/global/0").code, 200);
  EXPECT_EQ(Request(*port, "PUT", "/global/2", std::string(60, 'c')).code, 200);
  server.Reset({});
  EXPECT_EQ(Request(*port, "PUT", "/global/3", std::string(100, 'd')).code, 200);
}

TEST_F(RendezvousServerTest, AContentLengthThatIsNotOneNumberIsRefused) {
  auto put = [this](const std::string& headers) {
    return RawRequest(port_, "PUT /global/0 HTTP/1.1\r\n" + headers + "\r\nx");
  };
  EXPECT_EQ(put("Content-Length: 1\r\n"), 200);  // the case that works
  // Two lengths: a proxy in front could have read the other one.
  EXPECT_EQ(put("Content-Length: 1\r\nContent-Length: 1\r\n"), 400);
  EXPECT_EQ(put("Content-Length: 1\r\ncontent-length: 0\r\n"), 400);
  EXPECT_EQ(put("Content-Length: -1\r\n"), 400);
  EXPECT_EQ(put("Content-Length: +1\r\n"), 400);
  EXPECT_EQ(put("Content-Length: 0x1\r\n"), 400);
  EXPECT_EQ(put("Content-Length: \xb9\r\n"), 400);  // a byte over 127 (superscript one in Latin-1)
  EXPECT_EQ(put(""), 411);
}

TEST(RendezvousServerLimits, ConnectionsBeyondThoseThatMayWaitAreClosedAtOnce) {
  RendezvousServer::Limits limits;
  limits.max_pending = 1;
  limits.request_timeout = std::chrono::seconds(30);  // the idle clients hold their threads
  RendezvousServer server(limits);
  auto port = server.Start("127.0.0.1");
  ASSERT_OK(port);
  // Idle clients take every serving thread, then one waits in the queue.
  std::vector<int> idle;
  for (int i = 0; i < 5; ++i) {
    idle.push_back(Connect(*port));
    ASSERT_GE(idle.back(), 0);
    // Taken by a thread (the first four), or waiting (the fifth).
    size_t waiting = i < 4 ? 0 : 1;
    ASSERT_TRUE(Eventually([&] { return server.queued() == i + 1 && server.pending() == waiting; }));
  }
  // One more is closed unanswered, at once: Horovod's client tries again.
  int extra = Connect(*port);
  ASSERT_GE(extra, 0);
  timeval limit{5, 0};
  ::setsockopt(extra, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  char c;
  EXPECT_EQ(::recv(extra, &c, 1, 0), 0) << "not closed within 5 s";
  ::close(extra);
  EXPECT_EQ(server.pending(), 1u);
  // Stop closes the waiting one at once, unanswered, while the served ones still run.
  std::thread stopper([&] { server.Stop(); });
  ::setsockopt(idle[4], SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  EXPECT_EQ(::recv(idle[4], &c, 1, 0), 0) << "not closed within 5 s";
  for (int fd : idle) ::close(fd);  // the served ones end as their clients go
  stopper.join();
}

}  // namespace
}  // namespace loom::am

namespace loom::am {
namespace {

TEST_F(RendezvousServerTest, KeysAreTheTargetVerbatimAndEveryAnswerCloses) {
  // No percent-decoding, and a query is part of the key, as in horovod's Python server.
  Reply put = Request(port_, "PUT", "/global/a%2Fb", "x");
  EXPECT_EQ(put.code, 200);
  EXPECT_THAT(put.head, HasSubstr("\r\nConnection: close"));
  EXPECT_EQ(server_.Get("global", "a%2Fb"), "x");
  EXPECT_EQ(Request(port_, "GET", "/global/a/b").code, 400);
  EXPECT_EQ(Request(port_, "GET", "/global/a%2Fb").body, "x");
  EXPECT_EQ(Request(port_, "PUT", "/global/k?x=1", "q").code, 200);
  EXPECT_EQ(server_.Get("global", "k?x=1"), "q");
  EXPECT_EQ(Request(port_, "GET", "/global/k").code, 404);
  // The whole value, whatever a Range header asks.
  EXPECT_EQ(RawRequest(port_, "GET /global/a%2Fb HTTP/1.1\r\nRange: bytes=1-2\r\n\r\n"), 200);
  // Only Content-Length frames a body.
  EXPECT_EQ(RawRequest(port_, "PUT /global/0 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n"), 400);
}

// A request must be in within its time, read on the store's clock (a FakeClock moved past it
// here), however its bytes come: each read may wait up to cpp-httplib's read timeout (the
// request time too, but in real time, which the test never reaches), so only the whole-time
// limit can cut these. A client that trickles a byte now and then is the same case.
TEST(RendezvousServerLimits, ARequestNotInWithinItsTimeIsDropped) {
  FakeClock clock;
  RendezvousServer::Limits limits;
  limits.request_timeout = std::chrono::seconds(10);
  RendezvousServer server(limits, clock);
  auto port = server.Start("127.0.0.1");
  ASSERT_OK(port);
  // Sends `head`, then moves the clock past the request time and, with `body_byte`, sends a
  // byte of the body (one only: a byte the store never reads would make its close a reset,
  // which can overtake its answer); returns the answer's status once the store answered and
  // closed (0: closed unanswered).
  auto late = [&](const std::string& head, bool body_byte) {
    int fd = Connect(*port);
    (void)!::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    std::string all;
    auto closed = [&] {
      char buf[256];
      ssize_t n;
      while ((n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) all.append(buf, static_cast<size_t>(n));
      return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    };
    // A head that asks for "100 Continue" is in once the store says so: only then does the
    // clock move, so that it is the body that comes late.
    if (head.find("100-continue") != std::string::npos) {
      EXPECT_TRUE(Eventually([&] { return closed() || all.find(" 100 Continue") != std::string::npos; },
                             std::chrono::seconds(5)));
    }
    bool cut = Eventually([&] {
      clock.Advance(limits.request_timeout + std::chrono::milliseconds(1));  // past it, not at it
      if (std::exchange(body_byte, false)) (void)!::send(fd, "v", 1, MSG_NOSIGNAL);
      return closed();
    }, std::chrono::seconds(5));
    ::close(fd);
    EXPECT_TRUE(cut) << "not cut at the request time: " << head;
    size_t last = all.rfind("HTTP/1.1 ");
    return last != std::string::npos && all.size() >= last + 12 ? std::stoi(all.substr(last + 9, 3)) : 0;
  };
  // A body not in within the time (the byte after it is read late): dropped with a 408.
  EXPECT_EQ(late("PUT /global/0 HTTP/1.1\r\nContent-Length: 40\r\nExpect: 100-continue\r\n\r\n", true), 408);
  // No whole request line and headers in time: nothing to answer, closed.
  EXPECT_EQ(late("GET /global/0 HTTP/1.1\r\n", false), 0);
  EXPECT_EQ(late("", false), 0);
  EXPECT_EQ(server.KeyCount(), 0u);
  EXPECT_EQ(Request(*port, "PUT", "/global/0", "in time").code, 200);
}

}  // namespace
}  // namespace loom::am
