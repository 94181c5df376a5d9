#include "executor/port_reserver.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>

#include "core/inet_address.h"
#include "core/testing.h"

namespace loom::executor {
namespace {

int BindPort(int port, bool reuse, bool listen) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (reuse) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a = Ipv4Address(INADDR_ANY, port);
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  if (rc == 0 && listen) rc = ::listen(fd, 4);
  ::close(fd);
  return rc;
}

TEST(ReservedPort, OutsideTheEphemeralRange) {
  auto [lo, hi] = EphemeralPortRange();
  auto p = ReservedPort::Reserve(20000, 65000);
  ASSERT_OK(p);
  EXPECT_TRUE(p->port() < lo || p->port() > hi) << p->port();
}

TEST(ReservedPort, HeldAgainstOthersButOpenToTheFramework) {
  auto p = ReservedPort::Reserve(20000, 32000);
  ASSERT_OK(p);
  // A squatter binding the port plainly is refused while we hold it.
  EXPECT_NE(BindPort(p->port(), false, false), 0);
  // Another executor reserving cannot get it either.
  for (int i = 0; i < 50; ++i) {
    auto other = ReservedPort::Reserve(p->port(), p->port());
    EXPECT_FALSE(other.ok());
  }
  // The framework (SO_REUSEADDR bind + listen, as torch's TCPStore and gRPC do) gets it.
  EXPECT_EQ(BindPort(p->port(), true, true), 0);
}

TEST(ReservedPort, ConcurrentReservationsAreDistinct) {
  std::vector<ReservedPort> held;
  std::set<int> ports;
  for (int i = 0; i < 64; ++i) {
    auto p = ReservedPort::Reserve(21000, 21100);
    ASSERT_OK(p);
    ports.insert(p->port());
    held.push_back(std::move(*p));
  }
  EXPECT_EQ(ports.size(), 64u);
}


TEST(PortAnswers, OnlyOnceSomethingListens) {
  auto p = ReservedPort::Reserve(23000, 23500);
  ASSERT_OK(p);
  EXPECT_FALSE(PortAnswers("127.0.0.1", p->port(), 200));  // held, not listening
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a = Ipv4Address(INADDR_ANY, p->port());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);  // as TensorBoard's server does
  ASSERT_EQ(::listen(fd, 4), 0);
  EXPECT_TRUE(PortAnswers("127.0.0.1", p->port(), 200));
  EXPECT_TRUE(PortAnswers("localhost", p->port(), 200));
  EXPECT_FALSE(PortAnswers("no-such-host.invalid", p->port(), 200));
  ::close(fd);
}

}  // namespace
}  // namespace loom::executor
