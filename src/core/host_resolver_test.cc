#include "core/host_resolver.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "core/files.h"
#include "core/inet_address.h"

namespace loom {
namespace {

constexpr uint16_t kTypeA = 1, kTypePtr = 12, kTypeAaaa = 28;

// A DNS server on 127.0.0.1 (UDP) that knows a few records, answers NXDOMAIN otherwise, and
// remembers every question it was asked ("name/type").
class FakeDnsServer {
 public:
  FakeDnsServer() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = Ipv4Address(INADDR_LOOPBACK, 0);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeDnsServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  // rdata: 4 or 16 address bytes, or a name for PTR.
  void Add(const std::string& name, uint16_t type, std::string rdata) { records_[{name, type}] = std::move(rdata); }
  std::string Servers() const { return "127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> Asked() {
    std::lock_guard<std::mutex> lock(mu_);
    return asked_;
  }

 private:
  static std::string EncodeName(const std::string& name) {
    std::string out;
    size_t start = 0;
    while (start < name.size()) {
      size_t dot = name.find('.', start);
      if (dot == std::string::npos) dot = name.size();
      out += static_cast<char>(dot - start);
      out += name.substr(start, dot - start);
      start = dot + 1;
    }
    return out + '\0';
  }

  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      unsigned char q[512];
      sockaddr_in from{};
      socklen_t from_len = sizeof from;
      ssize_t n = ::recvfrom(fd_, q, sizeof q, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n < 17) continue;
      std::string name;
      size_t i = 12;
      while (i < static_cast<size_t>(n) && q[i] != 0) {
        if (!name.empty()) name += '.';
        name.append(reinterpret_cast<char*>(q + i + 1), q[i]);
        i += q[i] + 1;
      }
      uint16_t type = static_cast<uint16_t>(q[i + 1] << 8 | q[i + 2]);
      size_t question_end = i + 5;
      {
        std::lock_guard<std::mutex> lock(mu_);
        asked_.push_back(name + "/" + std::to_string(type));
      }
      auto record = records_.find({name, type});
      std::string answer(reinterpret_cast<char*>(q), question_end);
      answer[2] = static_cast<char>(0x81);  // response, recursion desired
      answer[3] = static_cast<char>(record == records_.end() ? 0x83 : 0x80);  // NXDOMAIN or NOERROR
      answer[6] = 0;
      answer[7] = record == records_.end() ? 0 : 1;
      answer[8] = answer[9] = answer[10] = answer[11] = 0;
      if (record != records_.end()) {
        std::string rdata = type == kTypePtr ? EncodeName(record->second) : record->second;
        answer += std::string("\xc0\x0c", 2);                                         // the question's name
        answer += {static_cast<char>(type >> 8), static_cast<char>(type & 0xff), 0, 1};  // type, IN
        answer += std::string("\0\0\0\x3c", 4);                                       // TTL 60
        answer += {static_cast<char>(rdata.size() >> 8), static_cast<char>(rdata.size() & 0xff)};
        answer += rdata;
      }
      ::sendto(fd_, answer.data(), answer.size(), 0, reinterpret_cast<sockaddr*>(&from), from_len);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::map<std::pair<std::string, uint16_t>, std::string> records_;
  std::mutex mu_;
  std::vector<std::string> asked_;
  std::thread thread_;
};

std::string V4(const char* text) {
  in_addr a{};
  ::inet_pton(AF_INET, text, &a);
  return std::string(reinterpret_cast<char*>(&a), 4);
}

std::string V6(const char* text) {
  in6_addr a{};
  ::inet_pton(AF_INET6, text, &a);
  return std::string(reinterpret_cast<char*>(&a), 16);
}

class HostResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/loom-host-resolver-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    sources_.hosts_file = dir_ + "/hosts";
    sources_.dns_servers = dns_.Servers();
    sources_.dns_timeout_ms = 300;
    sources_.use_own_host_name = false;
    ASSERT_TRUE(WriteFileAtomic(sources_.hosts_file,
                                "# comment\n127.0.0.1\tlocalhost\n::1 localhost ip6-localhost\n"
                                "10.0.0.5  nn1.cluster.test nn1   # the NameNode\n"
                                "fd00::7 v6host.cluster.test\n10.0.0.6 NN2.Cluster.Test\n")
                    .ok());
  }
  void TearDown() override { (void)RemoveTree(dir_); }

  FakeDnsServer dns_;
  std::string dir_;
  ResolverSources sources_;
};

TEST(HostsFile, NamesAliasesCaseAndComments) {
  std::string text = "127.0.0.1 localhost\n# 10.1.1.1 commented\n::1 localhost\n10.0.0.5 a.example a # x\n"
                     "10.0.0.9 A.EXAMPLE\nnot-an-ip b.example\n";
  std::vector<IpAddress> a = LookUpHostsFile(text, "a.example");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].text, "10.0.0.5");
  EXPECT_EQ(a[1].text, "10.0.0.9");
  EXPECT_EQ(LookUpHostsFile(text, "A").front().text, "10.0.0.5");
  EXPECT_EQ(LookUpHostsFile(text, "a.example.").size(), 2u);  // a fully qualified name
  EXPECT_TRUE(LookUpHostsFile(text, "commented").empty());
  EXPECT_TRUE(LookUpHostsFile(text, "b.example").empty());
  std::vector<IpAddress> local = LookUpHostsFile(text, "localhost");
  ASSERT_EQ(local.size(), 2u);
  EXPECT_EQ(local[1].family, AF_INET6);
  EXPECT_EQ(ReverseLookUpHostsFile(text, "10.0.0.5"), "a.example");
  EXPECT_EQ(ReverseLookUpHostsFile(text, "::1"), "localhost");
  EXPECT_EQ(ReverseLookUpHostsFile(text, "10.0.0.77"), "");
}

TEST(IpLiteral, ParsesBothFamiliesAndBrackets) {
  IpAddress a;
  ASSERT_TRUE(ParseIpLiteral("[::1]", &a));
  EXPECT_EQ(a.family, AF_INET6);
  EXPECT_EQ(a.text, "::1");
  ASSERT_TRUE(ParseIpLiteral("192.168.1.2", &a));
  EXPECT_EQ(a.family, AF_INET);
  EXPECT_FALSE(ParseIpLiteral("host.example", &a));
  EXPECT_FALSE(ParseIpLiteral("", &a));
}

TEST_F(HostResolverTest, HostsFileFirstIpv4FirstAndDnsNotAsked) {
  Result<std::vector<IpAddress>> local = ResolveHost("localhost", sources_);
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  ASSERT_EQ(local->size(), 2u);
  EXPECT_EQ((*local)[0].text, "127.0.0.1");
  EXPECT_EQ(*ResolveHostToIp("NN1", sources_), "10.0.0.5");
  EXPECT_EQ(*ResolveHostToIp("nn2.cluster.test", sources_), "10.0.0.6");
  EXPECT_EQ(*ResolveHostToIp("v6host.cluster.test", sources_), "fd00::7");
  EXPECT_TRUE(dns_.Asked().empty());
}

TEST_F(HostResolverTest, DnsAsksAaaaOnlyWhenThereIsNoARecord) {
  dns_.Add("node7.cluster.test", kTypeA, V4("10.9.8.7"));
  dns_.Add("node7.cluster.test", kTypeAaaa, V6("fd00::87"));
  dns_.Add("only6.cluster.test", kTypeAaaa, V6("fd00::66"));
  EXPECT_EQ(*ResolveHostToIp("node7.cluster.test", sources_), "10.9.8.7");
  EXPECT_EQ(dns_.Asked(), std::vector<std::string>{"node7.cluster.test/1"});
  EXPECT_EQ(*ResolveHostToIp("only6.cluster.test", sources_), "fd00::66");
  EXPECT_EQ(*GrpcTarget("only6.cluster.test:8030", sources_), "ipv6:[fd00::66]:8030");
  EXPECT_EQ(*GrpcTarget("node7.cluster.test:50051", sources_), "ipv4:10.9.8.7:50051");
}

TEST_F(HostResolverTest, UnknownNamesAreNotFoundNamingWhereItLooked) {
  Result<std::vector<IpAddress>> r = ResolveHost("nowhere.cluster.test", sources_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("nowhere.cluster.test"), std::string::npos);
  EXPECT_NE(r.status().message().find(sources_.hosts_file), std::string::npos);
  EXPECT_EQ(ResolveHost("", sources_).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(GrpcTarget("no-port", sources_).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(HostResolverTest, ReverseFromHostsFileThenDnsPtr) {
  EXPECT_EQ(*ReverseResolve("10.0.0.6", sources_), "nn2.cluster.test");  // lower-cased
  EXPECT_EQ(*ReverseResolve("127.0.0.1", sources_), "localhost");
  dns_.Add("9.8.9.10.in-addr.arpa", kTypePtr, "Worker9.Cluster.Test");
  EXPECT_EQ(*ReverseResolve("10.9.8.9", sources_), "worker9.cluster.test");
  EXPECT_EQ(ReverseResolve("10.9.8.1", sources_).status().code(), StatusCode::kNotFound);
}

TEST_F(HostResolverTest, OwnHostNameFromInterfacesWhenNothingElseKnowsIt) {
  char own[256] = {};
  ASSERT_EQ(::gethostname(own, sizeof own - 1), 0);
  EXPECT_FALSE(ResolveHost(own, sources_).ok());
  sources_.use_own_host_name = true;
  Result<std::vector<IpAddress>> r = ResolveHost(own, sources_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->empty());
}

TEST_F(HostResolverTest, IpLiteralsAreTheirOwnAddress) {
  EXPECT_EQ(*ResolveHostToIp("10.1.2.3", sources_), "10.1.2.3");
  EXPECT_EQ(*GrpcTarget("[::1]:80", sources_), "ipv6:[::1]:80");
  EXPECT_EQ(*GrpcTarget("127.0.0.1:80", sources_), "ipv4:127.0.0.1:80");
  EXPECT_TRUE(dns_.Asked().empty());
}

}  // namespace
}  // namespace loom
