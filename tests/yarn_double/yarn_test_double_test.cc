// Tests of the YARN test double. The recorded-exchange tests write the captured client bytes
// of tests/data/yarn-captures/ frame by frame into the double and compare its replies with
// the captured server bytes:
//   byte-identical (whole frames): the SASL NEGOTIATE and SUCCESS replies, every FATAL/ERROR
//     reply (negative/01-04, dshell/01 getResourceProfiles), and the replies whose content
//     does not depend on time, ports or secrets (dshell/05 register, allocate #1 and #2,
//     finish x2; dshell/01 getResourceTypeInfo x2, getClusterMetrics, getQueueInfo,
//     getQueueUserAcls, getNewApplication, submitApplication; dshell/07, 11, 13 whole);
//   header-identical and equal after normalization: the other replies. Normalization blanks
//     only what a live cluster makes up anew (ports, token passwords, master key ids,
//     timestamps, node utilization), see Normalize*() below.
//   header-identical and same top-level fields: getApplicationReport (the recorded AM was a
//     JVM that ran; the replayed one cannot localize hdfs://127.0.0.1:9000 and fails).

#include "yarn_test_double.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <set>
#include <thread>

#include <google/protobuf/util/message_differencer.h>

#include "cluster/yarn/proto/hadoop_rpc.pb.h"
#include "cluster/yarn/proto/yarn.pb.h"
#include "cluster/yarn/wire/credentials.h"
#include "cluster/yarn/wire/ipc_frame.h"
#include "cluster/yarn/wire/sasl_digest.h"
#include "core/files.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "core/testing.h"
#include "fake_hdfs.h"

namespace loom::yarn_double {
namespace {

namespace wire = loom::cluster::yarn;
namespace yp = hadoop::yarn;
using hadoop::common::RpcResponseHeaderProto;
using hadoop::common::RpcSaslProto;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kTs = 1795263045862;
constexpr char kAmProtocol[] = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB";
constexpr char kClientProtocol[] = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB";
constexpr char kNmProtocol[] = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB";

std::string CaptureDir() { return std::string(LOOM_TEST_SOURCE_DIR) + "/tests/data/yarn-captures/"; }

std::string MustRead(const std::string& path) {
  Result<std::string> r = ReadFile(path);
  EXPECT_TRUE(r.ok()) << path;
  return r.ok() ? *r : std::string();
}

// Frames with their 4-byte length prefix.
std::vector<std::string> SplitFrames(std::string_view b) {
  std::vector<std::string> out;
  while (b.size() >= 4) {
    uint32_t len = (uint32_t{static_cast<uint8_t>(b[0])} << 24) | (uint32_t{static_cast<uint8_t>(b[1])} << 16) |
                   (uint32_t{static_cast<uint8_t>(b[2])} << 8) | uint32_t{static_cast<uint8_t>(b[3])};
    out.emplace_back(b.substr(0, 4 + len));
    b.remove_prefix(4 + len);
  }
  return out;
}

struct Capture {
  std::string preamble;
  std::vector<std::string> c2s, s2c;
};

Capture LoadCapture(const std::string& stem) {
  Capture c;
  std::string c2s = MustRead(CaptureDir() + stem + ".c2s.bin");
  if (c2s.rfind("hrpc", 0) == 0) {
    c.preamble = c2s.substr(0, 7);
    c2s = c2s.substr(7);
  }
  c.c2s = SplitFrames(c2s);
  c.s2c = SplitFrames(MustRead(CaptureDir() + stem + ".s2c.bin"));
  return c;
}

struct Reply {
  RpcResponseHeaderProto header;
  std::string header_bytes;
  std::optional<std::string> body;
};

Reply Decode(const std::string& frame) {
  Reply r;
  Result<std::vector<std::string_view>> parts = wire::SplitDelimited(std::string_view(frame).substr(4));
  EXPECT_TRUE(parts.ok() && !parts->empty());
  if (!parts.ok() || parts->empty()) return r;
  r.header_bytes = std::string((*parts)[0]);
  r.header.ParseFromString(r.header_bytes);
  if (parts->size() > 1) r.body = std::string((*parts)[1]);
  return r;
}

// A plain TCP client that reads whole IPC frames.
class Socket {
 public:
  explicit Socket(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  }
  ~Socket() { ::close(fd_); }
  void Send(const std::string& b) { ASSERT_EQ(::send(fd_, b.data(), b.size(), MSG_NOSIGNAL), ssize_t(b.size())); }
  // The next frame (with its length prefix); nullopt on EOF or after 10 s.
  std::optional<std::string> ReadFrame() {
    std::string len;
    if (!ReadN(4, &len)) return std::nullopt;
    uint32_t n = (uint32_t{static_cast<uint8_t>(len[0])} << 24) | (uint32_t{static_cast<uint8_t>(len[1])} << 16) |
                 (uint32_t{static_cast<uint8_t>(len[2])} << 8) | uint32_t{static_cast<uint8_t>(len[3])};
    std::string body;
    if (!ReadN(n, &body)) return std::nullopt;
    return len + body;
  }
  // True when the server closed the connection (FIN) with nothing more to read.
  bool ClosedByServer() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return false;
    char c;
    return ::recv(fd_, &c, 1, 0) == 0;
  }

 private:
  bool ReadN(size_t n, std::string* out) {
    out->clear();
    while (out->size() < n) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 10000) <= 0) return false;
      char buf[65536];
      ssize_t r = ::recv(fd_, buf, std::min(sizeof(buf), n - out->size()), 0);
      if (r <= 0) return false;
      out->append(buf, static_cast<size_t>(r));
    }
    return true;
  }
  int fd_ = -1;
};

// A minimal Hadoop IPC client for the tests (no Loom backend): SIMPLE or TOKEN, then calls.
class TestIpc {
 public:
  explicit TestIpc(int port) : socket_(port) {}

  void Simple(const std::string& user, const std::string& protocol) {
    socket_.Send(wire::Preamble(wire::AuthProtocol::kNone));
    SendContext(user, protocol);
  }

  // SASL DIGEST-MD5 with `token`; the FATAL reply as a Status if the server refuses.
  Status Token(const wire::Token& token, const std::string& protocol) {
    RpcSaslProto negotiate;
    negotiate.set_state(RpcSaslProto::NEGOTIATE);
    auto sasl_header = wire::MakeRequestHeader(wire::kSaslCallId, "", -1);
    socket_.Send(wire::Preamble(wire::AuthProtocol::kSasl) + wire::EncodeFrame({&sasl_header, &negotiate}));
    std::optional<std::string> f = socket_.ReadFrame();
    if (!f) return Status::Unavailable("no NEGOTIATE reply");
    RpcSaslProto offer;
    offer.ParseFromString(*Decode(*f).body);
    RpcSaslProto::SaslAuth auth = offer.auths(0);
    LOOM_ASSIGN_OR_RETURN(wire::DigestChallenge ch, wire::ParseDigestChallenge(auth.challenge()));
    LOOM_ASSIGN_OR_RETURN(wire::DigestResult dr, wire::DigestRespond(token, ch, wire::NewCnonce(),
                                                                     auth.protocol() + "/" + auth.serverid()));
    RpcSaslProto initiate;
    initiate.set_state(RpcSaslProto::INITIATE);
    initiate.set_token(dr.response_token);
    auth.clear_challenge();
    *initiate.add_auths() = auth;
    socket_.Send(wire::EncodeFrame({&sasl_header, &initiate}));
    f = socket_.ReadFrame();
    if (!f) return Status::Unavailable("no SASL reply");
    Reply r = Decode(*f);
    if (r.header.status() != RpcResponseHeaderProto::SUCCESS) return wire::RemoteErrorStatus(r.header);
    RpcSaslProto success;
    success.ParseFromString(*r.body);
    LOOM_RETURN_IF_ERROR(wire::VerifyRspAuth(dr, success.token()));
    SendContext("", protocol);
    return Status::Ok();
  }

  // One call; the reply's header and body.
  Reply Call(const std::string& method, const std::string& protocol, const google::protobuf::Message& request) {
    auto header = wire::MakeRequestHeader(next_call_++, client_id_, 0);
    hadoop::common::RequestHeaderProto rh;
    rh.set_methodname(method);
    rh.set_declaringclassprotocolname(protocol);
    rh.set_clientprotocolversion(1);
    socket_.Send(wire::EncodeFrame({&header, &rh, &request}));
    std::optional<std::string> f = socket_.ReadFrame();
    EXPECT_TRUE(f.has_value()) << method;
    return f ? Decode(*f) : Reply{};
  }

  template <typename T>
  T CallOk(const std::string& method, const std::string& protocol, const google::protobuf::Message& request) {
    Reply r = Call(method, protocol, request);
    EXPECT_EQ(r.header.status(), RpcResponseHeaderProto::SUCCESS) << method << ": " << r.header.errormsg();
    T resp;
    if (r.body) resp.ParseFromString(*r.body);
    return resp;
  }

  Socket& socket() { return socket_; }

 private:
  void SendContext(const std::string& user, const std::string& protocol) {
    hadoop::common::IpcConnectionContextProto ctx;
    auto* ui = ctx.mutable_userinfo();
    if (!user.empty()) ui->set_effectiveuser(user);
    ctx.set_protocol(protocol);
    auto header = wire::MakeRequestHeader(wire::kConnectionContextCallId, client_id_, -1);
    socket_.Send(wire::EncodeFrame({&header, &ctx}));
  }

  Socket socket_;
  std::string client_id_ = "0123456789abcdef";
  int32_t next_call_ = 0;
};

std::string HexDiff(const std::string& got, const std::string& want) {
  auto hex = [](const std::string& s) {
    std::string out;
    char b[4];
    for (unsigned char c : s) {
      std::snprintf(b, sizeof(b), "%02x", c);
      out += b;
    }
    return out;
  };
  return "\n got: " + hex(got) + "\nwant: " + hex(want);
}

bool ProtoEquals(const google::protobuf::Message& a, const google::protobuf::Message& b, std::string* diff) {
  google::protobuf::util::MessageDifferencer d;
  d.ReportDifferencesToString(diff);
  return d.Compare(a, b);
}

// ---- normalization: what a live cluster makes up anew ----------------------------------------

std::string HostOf(const std::string& host_port) { return host_port.substr(0, host_port.find(':')); }

void NormalizeToken(hadoop::common::TokenProto* t, bool container_token) {
  t->set_password("");
  t->set_service(HostOf(t->service()));
  if (container_token) {
    yp::ContainerTokenIdentifierProto id;
    id.ParseFromString(t->identifier());
    id.set_nmhostaddr(HostOf(id.nmhostaddr()));
    id.set_expirytimestamp(0);
    id.set_masterkeyid(0);
    id.set_creationtime(0);
    t->set_identifier(id.SerializeAsString());
  } else {
    yp::NMTokenIdentifierProto id;
    id.ParseFromString(t->identifier());
    id.mutable_nodeid()->set_port(0);
    id.set_keyid(0);
    t->set_identifier(id.SerializeAsString());
  }
}

void NormalizeAllocate(yp::AllocateResponseProto* r) {
  for (auto& c : *r->mutable_allocated_containers()) {
    c.mutable_nodeid()->set_port(0);
    c.set_node_http_address(HostOf(c.node_http_address()));
    NormalizeToken(c.mutable_container_token(), true);
  }
  for (auto& t : *r->mutable_nm_tokens()) {
    t.mutable_nodeid()->set_port(0);
    NormalizeToken(t.mutable_token(), false);
  }
}

void NormalizeNodes(yp::GetClusterNodesResponseProto* r) {
  for (auto& n : *r->mutable_nodereports()) {
    n.mutable_nodeid()->set_port(0);
    n.set_httpaddress(HostOf(n.httpaddress()));
    n.set_last_health_report_time(0);
    for (auto* u : {n.mutable_containers_utilization(), n.mutable_node_utilization()}) {
      u->set_pmem(0);
      u->set_vmem(0);
      u->set_cpu(0);
    }
  }
}

std::set<int> TopLevelFields(const google::protobuf::Message& m) {
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  m.GetReflection()->ListFields(m, &fields);
  std::set<int> out;
  for (const auto* f : fields) out.insert(f->number());
  return out;
}

wire::Token TokenFromFile(const std::string& path, const std::string& kind) {
  Result<wire::Credentials> c = wire::ReadCredentialsFile(path);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  std::optional<wire::Token> t = c.ok() ? c->FindKind(kind) : std::nullopt;
  EXPECT_TRUE(t.has_value());
  return t.value_or(wire::Token{});
}

// ---- fixture ----------------------------------------------------------------------------------

class YarnDoubleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = std::filesystem::temp_directory_path() /
            ("yarn-double-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(work_);
    std::filesystem::create_directories(work_);
  }
  void TearDown() override {
    if (double_) {
      double_->Stop();
      EXPECT_TRUE(double_->LiveContainerProcesses().empty());
    }
    double_.reset();
    if (hdfs_) hdfs_->Stop();
    std::filesystem::remove_all(work_);
  }

  YarnTestDouble::Options RecordedOptions() {
    YarnTestDouble::Options o;
    o.work_dir = work_.string() + "/yarn";
    o.node_memory_mb = 8192;
    o.node_vcores = 4;  // the recorded NM
    o.cluster_timestamp = kTs;
    o.max_containers_per_allocate = 1;  // the recorded RM handed out one container per heartbeat
    o.nm_heartbeat_ms = 0;  // placed during each allocate call, so the replay is deterministic
    return o;
  }

  void StartDouble(YarnTestDouble::Options o) {
    double_ = std::make_unique<YarnTestDouble>(std::move(o));
    ASSERT_OK(double_->Start());
  }

  void StartHdfs() {
    hdfs_ = std::make_unique<FakeHdfs>(work_.string() + "/hdfs");
    ASSERT_OK(hdfs_->Start());
  }

  // Replays a whole capture whose server bytes must come back identical.
  void ExpectIdenticalReplay(const std::string& stem, int port) {
    Capture cap = LoadCapture(stem);
    Socket s(port);
    size_t next_reply = 0;
    for (size_t i = 0; i < cap.c2s.size(); ++i) {
      s.Send((i == 0 ? cap.preamble : "") + cap.c2s[i]);
      hadoop::common::RpcRequestHeaderProto sent;
      auto parts = wire::SplitDelimited(std::string_view(cap.c2s[i]).substr(4));
      ASSERT_TRUE(parts.ok());
      sent.ParseFromArray((*parts)[0].data(), static_cast<int>((*parts)[0].size()));
      if (sent.callid() == wire::kConnectionContextCallId) continue;  // no reply
      if (next_reply >= cap.s2c.size()) break;
      std::optional<std::string> got = s.ReadFrame();
      ASSERT_TRUE(got.has_value()) << stem << " frame " << next_reply;
      EXPECT_EQ(*got, cap.s2c[next_reply]) << stem << " frame " << next_reply << HexDiff(*got, cap.s2c[next_reply]);
      ++next_reply;
    }
    EXPECT_EQ(next_reply, cap.s2c.size());
  }

  std::optional<YarnTestDouble::ContainerInfo> FindContainer(const std::string& id) {
    for (auto& c : double_->Containers()) {
      if (c.id == id) return c;
    }
    return std::nullopt;
  }

  bool WaitComplete(const std::string& id, int timeout_ms = 10000) {
    for (int waited = 0; waited < timeout_ms; waited += 20) {
      auto c = FindContainer(id);
      if (c && c->state == yp::C_COMPLETE) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // startContainers through the NM with `nm_token`, running `command`.
  yp::StartContainersResponseProto StartOnNm(const wire::Token& nm_token, const yp::ContainerProto& c,
                                             const std::string& command,
                                             const yp::ContainerLaunchContextProto* base = nullptr) {
    TestIpc nm(double_->nm_port());
    EXPECT_OK(nm.Token(nm_token, kNmProtocol));
    yp::StartContainersRequestProto req;
    auto* r = req.add_start_container_request();
    if (base) *r->mutable_container_launch_context() = *base;
    r->mutable_container_launch_context()->add_command(command);
    *r->mutable_container_token() = c.container_token();
    return nm.CallOk<yp::StartContainersResponseProto>("startContainers", kNmProtocol, req);
  }

  std::filesystem::path work_;
  wire::Token nm_token_;
  std::unique_ptr<FakeHdfs> hdfs_;
  std::unique_ptr<YarnTestDouble> double_;
};

int64_t ResourceGpus(const yp::ResourceProto& r) {
  for (const auto& i : r.resource_value_map()) {
    if (i.key() == "yarn.io/gpu") return i.value();
  }
  return 0;
}

wire::Token NmTokenOf(const yp::AllocateResponseProto& r) {
  const auto& t = r.nm_tokens(0).token();
  return wire::Token{t.identifier(), t.password(), t.kind(), t.service()};
}

// ---- the recorded exchanges -----------------------------------------------------------------

// dshell/05: the DistributedShell AM's whole conversation with the RM scheduler port.
TEST_F(YarnDoubleTest, FollowsTheRecordedAmRmExchange) {
  YarnTestDouble::Options o = RecordedOptions();
  o.fixed_nonce_for_test = true;
  o.nonce_for_test = "TEAHnyUm+eJaGNs5Ub7AQLaEyYNOngOaCkrFhuP6";
  StartDouble(o);
  wire::Token amrm = TokenFromFile(CaptureDir() + "container/am-container_tokens.bin", "YARN_AM_RM_TOKEN");
  ASSERT_OK(double_->InstallAppForTest(amrm, false, 512, 1));  // the recorded AM container: 512 MB, 1 vcore
  double_->SetNoncesForTest({o.nonce_for_test});

  Capture cap = LoadCapture("dshell/05-am-rm-8030");
  ASSERT_EQ(cap.c2s.size(), 11u);  // NEGOTIATE, INITIATE, context, register, allocate x5, finish x2
  ASSERT_EQ(cap.s2c.size(), 10u);
  Socket s(double_->scheduler_port());
  auto exchange = [&](const std::string& bytes) {
    s.Send(bytes);
    std::optional<std::string> f = s.ReadFrame();
    EXPECT_TRUE(f.has_value());
    return f.value_or("");
  };
  auto identical = [&](const std::string& got, size_t i) {
    EXPECT_EQ(got, cap.s2c[i]) << "s2c frame " << i << HexDiff(got, cap.s2c[i]);
  };
  // SASL: NEGOTIATE reply (with the challenge) and SUCCESS (rspauth), byte for byte.
  identical(exchange(cap.preamble + cap.c2s[0]), 0);
  identical(exchange(cap.c2s[1]), 1);
  // The context (no reply) travels with registerApplicationMaster, as the AM sent them.
  identical(exchange(cap.c2s[2] + cap.c2s[3]), 2);
  identical(exchange(cap.c2s[4]), 3);  // allocate #1: response_id 1, limit 7680/3
  identical(exchange(cap.c2s[5]), 4);  // allocate #2 (asks 2 x 256 MB): nothing yet

  // allocate #3 .. #5: containers _000002, _000003, _000004, and the completions of the first
  // two, which the AM started (and which exited 0) between the calls, as in the recording.
  std::vector<std::string> started;
  for (size_t call = 6, reply = 5; call <= 8; ++call, ++reply) {
    std::string got = exchange(cap.c2s[call]);
    Reply g = Decode(got), w = Decode(cap.s2c[reply]);
    EXPECT_EQ(g.header_bytes, w.header_bytes) << "reply " << reply;
    yp::AllocateResponseProto gr, wr;
    ASSERT_TRUE(gr.ParseFromString(*g.body));
    ASSERT_TRUE(wr.ParseFromString(*w.body));
    ASSERT_EQ(gr.allocated_containers_size(), 1);
    // Our NM port differs from 45454; the token's service names it.
    EXPECT_EQ(gr.allocated_containers(0).container_token().service(),
              "127.0.0.1:" + std::to_string(double_->nm_port()));
    if (reply == 5) {
      ASSERT_EQ(gr.nm_tokens_size(), 1);
      nm_token_ = NmTokenOf(gr);
    }
    yp::AllocateResponseProto granted = gr;
    NormalizeAllocate(&gr);
    NormalizeAllocate(&wr);
    std::string diff;
    EXPECT_TRUE(ProtoEquals(gr, wr, &diff)) << "reply " << reply << ": " << diff;
    if (call < 8) {  // the AM launches _000002 and _000003; _000004 stays unused, as recorded
      const yp::ContainerProto& c = granted.allocated_containers(0);
      yp::StartContainersResponseProto sr = StartOnNm(nm_token_, c, "exit 0");
      ASSERT_EQ(sr.succeeded_requests_size(), 1);
      std::string id = "container_1795263045862_0001_01_00000" + std::to_string(call - 4);
      EXPECT_TRUE(WaitComplete(id)) << id;
      started.push_back(id);
    }
  }
  identical(exchange(cap.c2s[9]), 8);   // finish #1: isUnregistered false (08 00)
  identical(exchange(cap.c2s[10]), 9);  // finish #2: true
  Result<yp::ApplicationReportProto> report = double_->ApplicationReport("application_1795263045862_0001");
  ASSERT_OK(report);
  EXPECT_EQ(report->yarn_application_state(), yp::FINISHED);
  EXPECT_EQ(report->final_application_status(), yp::APP_SUCCEEDED);
  EXPECT_EQ(report->host(), "vm/127.0.0.1");
  EXPECT_EQ(double_->ServedMethods(),
            (std::vector<std::string>{"registerApplicationMaster", "allocate", "allocate", "allocate",
                                      "startContainers", "allocate", "startContainers", "allocate",
                                      "finishApplicationMaster", "finishApplicationMaster"}));
}

// The nonce a recorded server chose: in the challenge of its NEGOTIATE reply.
std::string RecordedNonce(const Capture& cap) {
  RpcSaslProto offer;
  offer.ParseFromString(Decode(cap.s2c[0]).body.value_or(""));
  Result<wire::DigestChallenge> ch = wire::ParseDigestChallenge(offer.auths(0).challenge());
  EXPECT_TRUE(ch.ok());
  return ch.ok() ? ch->nonce : "";
}

// dshell/07, 11 and 13: the AM's and the RM's calls to the NM, each on its own connection with
// the recorded NMToken. Container _000002 is allocated and started through the double first.
TEST_F(YarnDoubleTest, FollowsTheRecordedNmExchanges) {
  StartDouble(RecordedOptions());
  wire::Token amrm = TokenFromFile(CaptureDir() + "container/am-container_tokens.bin", "YARN_AM_RM_TOKEN");
  ASSERT_OK(double_->InstallAppForTest(amrm, true, 512, 1));
  TestIpc am(double_->scheduler_port());
  ASSERT_OK(am.Token(amrm, kAmProtocol));
  yp::AllocateRequestProto req;
  auto* ask = req.add_ask();
  ask->mutable_priority()->set_priority(0);
  ask->set_resource_name("*");
  ask->mutable_capability()->set_memory(256);
  ask->mutable_capability()->set_virtual_cores(1);
  ask->set_num_containers(1);
  ask->set_allocation_request_id(0);
  req.set_response_id(0);
  am.CallOk<yp::AllocateResponseProto>("allocate", kAmProtocol, req);
  yp::AllocateRequestProto next;
  next.set_response_id(1);
  auto got = am.CallOk<yp::AllocateResponseProto>("allocate", kAmProtocol, next);
  ASSERT_EQ(got.allocated_containers_size(), 1);
  const std::string c2 = "container_1795263045862_0001_01_000002";
  ASSERT_EQ(got.allocated_containers(0).id().id(), 2);
  ASSERT_EQ(StartOnNm(NmTokenOf(got), got.allocated_containers(0), "exec sleep 60").succeeded_requests_size(), 1);
  for (int i = 0; i < 250 && FindContainer(c2)->pid <= 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));

  // The NMToken the recorded RM issued (dshell/05, allocate reply 3).
  yp::AllocateResponseProto recorded;
  recorded.ParseFromString(*Decode(LoadCapture("dshell/05-am-rm-8030").s2c[5]).body);
  ASSERT_OK(double_->InstallNmTokenForTest(NmTokenOf(recorded)));
  for (const char* stem : {"dshell/07-am-nm-45454-getContainerStatuses-c02", "dshell/11-am-nm-45454-stopContainers-c02",
                           "dshell/13-rm-nm-45454-stopContainers-AM"}) {
    double_->SetNoncesForTest({RecordedNonce(LoadCapture(stem))});
    ExpectIdenticalReplay(stem, double_->nm_port());
  }
  ASSERT_TRUE(WaitComplete(c2));
  EXPECT_EQ(FindContainer(c2)->exit_status, 143);
}

// negative/01: a NONE preamble on the TOKEN-only scheduler port.
TEST_F(YarnDoubleTest, RefusesSimpleAuthOnTheSchedulerPortLikeTheRecording) {
  StartDouble(RecordedOptions());
  Capture cap = LoadCapture("negative/01-none-auth-register-8030");
  Socket s(double_->scheduler_port());
  std::string all = cap.preamble;
  for (const auto& f : cap.c2s) all += f;
  s.Send(all);  // one write, as the recorded client did
  std::optional<std::string> got = s.ReadFrame();
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(cap.s2c.size(), 1u);
  EXPECT_EQ(*got, cap.s2c[0]) << HexDiff(*got, cap.s2c[0]);
  EXPECT_TRUE(s.ClosedByServer());
  EXPECT_TRUE(double_->ServedMethods().empty());  // the call is never processed
}

// negative/02: a made-up AMRMToken identifier.
TEST_F(YarnDoubleTest, RejectsAnUnknownAmRmTokenLikeTheRecording) {
  YarnTestDouble::Options o = RecordedOptions();
  o.fixed_nonce_for_test = true;
  o.nonce_for_test = "6kUc5OfJ56sxFdb61cbRR3H0MvNkT4JmdDCEEBUw";
  StartDouble(o);
  ExpectIdenticalReplay("negative/02-sasl-madeup-identifier-8030", double_->scheduler_port());
}

// negative/03: the live attempt's identifier with a wrong password.
TEST_F(YarnDoubleTest, RejectsAWrongPasswordLikeTheRecording) {
  YarnTestDouble::Options o = RecordedOptions();
  o.fixed_nonce_for_test = true;
  o.nonce_for_test = "55Yc0VJQyFYGXd9djC2NhMeEurgcpQbAliMGUjwm";
  StartDouble(o);
  ASSERT_OK(double_->InstallAppForTest(
      TokenFromFile(CaptureDir() + "negative/app2-am-container_tokens.bin", "YARN_AM_RM_TOKEN"), true));
  ExpectIdenticalReplay("negative/03-sasl-real-identifier-wrong-password-8030", double_->scheduler_port());
}

// negative/04: the right password, then a second registerApplicationMaster.
TEST_F(YarnDoubleTest, RefusesASecondRegistrationLikeTheRecording) {
  YarnTestDouble::Options o = RecordedOptions();
  o.fixed_nonce_for_test = true;
  o.nonce_for_test = "pLQT62mtS7/0HAgH+vZvRLcY+HV1uvFdda2ObkS3";
  StartDouble(o);
  ASSERT_OK(double_->InstallAppForTest(
      TokenFromFile(CaptureDir() + "negative/app2-am-container_tokens.bin", "YARN_AM_RM_TOKEN"), true));
  ExpectIdenticalReplay("negative/04-sasl-ok-then-register-again-8030", double_->scheduler_port());
  EXPECT_EQ(double_->ServedCalls().size(), 1u);
  EXPECT_FALSE(double_->ServedCalls()[0].ok);
}

// dshell/01: the DistributedShell client on the RM client port (SIMPLE).
TEST_F(YarnDoubleTest, FollowsTheRecordedClientRmExchange) {
  StartDouble(RecordedOptions());
  Capture cap = LoadCapture("dshell/01-client-rm-8032");
  Socket s(double_->rm_port());
  size_t reply = 0;
  for (size_t i = 0; i < cap.c2s.size(); ++i) {
    s.Send((i == 0 ? cap.preamble : "") + cap.c2s[i]);
    if (i == 0) continue;  // the connection context gets no reply
    std::optional<std::string> f = s.ReadFrame();
    ASSERT_TRUE(f.has_value()) << "reply " << reply;
    const std::string& want = cap.s2c[reply];
    Reply g = Decode(*f), w = Decode(want);
    hadoop::common::RequestHeaderProto rh;
    auto parts = wire::SplitDelimited(std::string_view(cap.c2s[i]).substr(4));
    ASSERT_TRUE(parts.ok() && parts->size() == 3);
    rh.ParseFromArray((*parts)[1].data(), static_cast<int>((*parts)[1].size()));
    const std::string& method = rh.methodname();
    EXPECT_EQ(g.header_bytes, w.header_bytes) << method << HexDiff(g.header_bytes, w.header_bytes);
    if (method == "getClusterNodes") {
      yp::GetClusterNodesResponseProto gr, wr;
      gr.ParseFromString(*g.body);
      wr.ParseFromString(*w.body);
      NormalizeNodes(&gr);
      NormalizeNodes(&wr);
      EXPECT_EQ(gr.SerializeAsString(), wr.SerializeAsString()) << gr.DebugString() << wr.DebugString();
    } else if (method == "getApplicationReport") {
      yp::GetApplicationReportResponseProto gr, wr;
      gr.ParseFromString(*g.body);
      wr.ParseFromString(*w.body);
      const auto &ga = gr.application_report(), &wa = wr.application_report();
      EXPECT_EQ(TopLevelFields(ga), TopLevelFields(wa)) << ga.DebugString();
      EXPECT_EQ(ga.user(), wa.user());
      EXPECT_EQ(ga.queue(), wa.queue());
      EXPECT_EQ(ga.name(), wa.name());
      EXPECT_EQ(ga.applicationtype(), wa.applicationtype());
      EXPECT_EQ(ga.appnodelabelexpression(), wa.appnodelabelexpression());
      EXPECT_EQ(ga.amnodelabelexpression(), wa.amnodelabelexpression());
      EXPECT_EQ(ga.applicationid().SerializeAsString(), wa.applicationid().SerializeAsString());
      EXPECT_EQ(ga.currentapplicationattemptid().SerializeAsString(),
                wa.currentapplicationattemptid().SerializeAsString());
      EXPECT_EQ(ga.apptimeouts(0).SerializeAsString(), wa.apptimeouts(0).SerializeAsString());
    } else {
      EXPECT_EQ(*f, want) << method << HexDiff(*f, want);
    }
    ++reply;
  }
  EXPECT_EQ(reply, cap.s2c.size());
  // The replayed AM names resources on hdfs://127.0.0.1:9000, which this double cannot serve.
  ASSERT_OK(double_->WaitForAppEnd("application_1795263045862_0001", std::chrono::seconds(10)));
  Result<yp::ApplicationReportProto> report = double_->ApplicationReport("application_1795263045862_0001");
  ASSERT_OK(report);
  EXPECT_EQ(report->yarn_application_state(), yp::FAILED);
  EXPECT_THAT(report->diagnostics(), HasSubstr("exited with  exitCode: -1000"));
}

// ---- behaviour, end to end with raw protos -----------------------------------------------------

// WebHDFS CREATE in two steps (NameNode 307, then the DataNode), over raw HTTP.
Status WebHdfsPut(int nn_port, const std::string& path, const std::string& data) {
  auto http = [](int port, const std::string& request) -> std::string {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    std::string reply;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
        ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == ssize_t(request.size())) {
      char buf[4096];
      for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0) break;
        ssize_t r = ::recv(fd, buf, sizeof(buf), 0);
        if (r <= 0) break;
        reply.append(buf, static_cast<size_t>(r));
        if (reply.find("\r\n\r\n") != std::string::npos && reply.find(" 100 Continue") == std::string::npos &&
            reply.find("Content-Length: 0") != std::string::npos) {
          break;
        }
      }
    }
    ::close(fd);
    return reply;
  };
  std::string step1 = http(nn_port, "PUT /webhdfs/v1" + path + "?op=CREATE&user.name=root&overwrite=true HTTP/1.1\r\n"
                                    "Host: 127.0.0.1\r\nContent-Length: 0\r\n\r\n");
  size_t loc = step1.find("Location: http://127.0.0.1:");
  if (loc == std::string::npos) return Status::Internal("no redirect: " + step1);
  std::string rest = step1.substr(loc + 27);
  int dn_port = std::stoi(rest);
  std::string target = rest.substr(rest.find('/'), rest.find("\r\n") - rest.find('/'));
  std::string step2 = http(dn_port, "PUT " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                                        std::to_string(data.size()) + "\r\n\r\n" + data);
  if (step2.find(" 201 ") == std::string::npos) return Status::Internal("upload failed: " + step2);
  return Status::Ok();
}

bool WaitForFile(const std::string& path, int timeout_ms = 15000) {
  for (int waited = 0; waited < timeout_ms; waited += 20) {
    if (PathExists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::map<std::string, std::string> ReadEnvFile(const std::string& path) {
  std::map<std::string, std::string> env;
  for (const std::string& line : Split(MustRead(path), '\n')) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

yp::LocalResourceProto HdfsResource(FakeHdfs& hdfs, const std::string& path, yp::LocalResourceTypeProto type,
                                    int64_t timestamp_delta = 0) {
  std::string fs = hdfs.default_fs();  // hdfs://127.0.0.1:<port>
  yp::LocalResourceProto r;
  r.mutable_resource()->set_scheme("hdfs");
  r.mutable_resource()->set_host("127.0.0.1");
  r.mutable_resource()->set_port(std::stoi(fs.substr(fs.rfind(':') + 1)));
  r.mutable_resource()->set_file(path);
  Result<FakeHdfs::Entry> e = hdfs.Stat(path);
  EXPECT_TRUE(e.ok()) << path;
  r.set_size(e.ok() ? e->length : 0);
  r.set_timestamp((e.ok() ? e->mtime_ms : 0) + timestamp_delta);
  r.set_type(type);
  r.set_visibility(yp::APPLICATION);
  return r;
}

// Submits an application whose AM runs `command`; returns its id.
std::string Submit(TestIpc& rm, const std::string& command, int64_t memory_mb = 512,
                   const yp::ContainerLaunchContextProto& base = {}) {
  auto na = rm.CallOk<yp::GetNewApplicationResponseProto>("getNewApplication", kClientProtocol,
                                                           yp::GetNewApplicationRequestProto());
  yp::SubmitApplicationRequestProto sub;
  auto* asc = sub.mutable_application_submission_context();
  *asc->mutable_application_id() = na.application_id();
  asc->set_application_name("e2e");
  asc->set_queue("default");
  asc->add_applicationtags("Loom-Test");
  asc->mutable_resource()->set_memory(memory_mb);
  asc->mutable_resource()->set_virtual_cores(1);
  *asc->mutable_am_container_spec() = base;
  asc->mutable_am_container_spec()->add_command(command);
  rm.CallOk<yp::SubmitApplicationResponseProto>("submitApplication", kClientProtocol, sub);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "application_%lld_%04d",
                static_cast<long long>(na.application_id().cluster_timestamp()), na.application_id().id());
  return buf;
}

yp::ApplicationReportProto Report(TestIpc& rm, const std::string& app_id) {
  yp::GetApplicationReportRequestProto req;
  size_t a = app_id.find('_'), b = app_id.rfind('_');
  req.mutable_application_id()->set_cluster_timestamp(std::stoll(app_id.substr(a + 1, b - a - 1)));
  req.mutable_application_id()->set_id(std::stoi(app_id.substr(b + 1)));
  return rm.CallOk<yp::GetApplicationReportResponseProto>("getApplicationReport", kClientProtocol, req)
      .application_report();
}

TEST_F(YarnDoubleTest, RunsAnAmWithTheContainerContractAndKillsIt) {
  StartHdfs();
  YarnTestDouble::Options o;
  o.work_dir = work_.string() + "/yarn";
  o.hdfs = hdfs_.get();
  StartDouble(o);
  ASSERT_OK(WebHdfsPut(hdfs_->namenode_http_port(), "/user/root/e2e/hello.sh", "echo hi from hdfs\n"));
  std::string out = work_.string() + "/out";
  ASSERT_OK(MakeDirs(out));
  // An ARCHIVE resource: unpacked into a directory the key names.
  ASSERT_OK(MakeDirs(work_.string() + "/arch/sub"));
  ASSERT_OK(WriteFileAtomic(work_.string() + "/arch/sub/inner.txt", "inside\n"));
  SpawnOptions tar;
  tar.argv = {"tar", "-czf", work_.string() + "/arch.tar.gz", "-C", work_.string() + "/arch", "sub"};
  tar.env = {{"PATH", "/usr/bin:/bin"}};
  Result<Subprocess> tar_proc = Subprocess::Spawn(tar);
  ASSERT_OK(tar_proc);
  ASSERT_TRUE(tar_proc->Wait()->success());
  ASSERT_OK(WebHdfsPut(hdfs_->namenode_http_port(), "/user/root/e2e/arch.tar.gz",
                       MustRead(work_.string() + "/arch.tar.gz")));

  TestIpc rm(double_->rm_port());
  rm.Simple("root", kClientProtocol);
  yp::ContainerLaunchContextProto clc;
  auto* res = clc.add_localresources();
  res->set_key("hello.sh");
  *res->mutable_value() = HdfsResource(*hdfs_, "/user/root/e2e/hello.sh", yp::FILE);
  auto* arch = clc.add_localresources();
  arch->set_key("unpacked");
  *arch->mutable_value() = HdfsResource(*hdfs_, "/user/root/e2e/arch.tar.gz", yp::ARCHIVE);
  for (auto [k, v] : {std::pair{"MY_VAR", "x{{HOME}}/y"}, {"CP", "a<CPS>b"}, {"CONTAINER_ID", "overridden?"}}) {
    auto* e = clc.add_environment();
    e->set_key(k);
    e->set_value(v);
  }
  std::string app = Submit(rm,
                           "{ env > " + out + "/env.txt; cp $HADOOP_TOKEN_FILE_LOCATION " + out +
                               "/tokens.bin; ./hello.sh > " + out + "/res.txt; cp unpacked/sub/inner.txt " + out + "; touch " + out +
                               "/ready; exec sleep 300; } 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr",
                           300, clc);
  ASSERT_TRUE(WaitForFile(out + "/ready"));
  yp::ApplicationReportProto r = Report(rm, app);
  EXPECT_EQ(r.yarn_application_state(), yp::ACCEPTED);
  EXPECT_EQ(r.diagnostics(), "AM container is launched, waiting for AM container to Register with RM");
  EXPECT_EQ(r.applicationtags(0), "loom-test");

  // The environment the NM promises (README 9, container/worker-stdout-env.txt).
  std::string am = "container_" + app.substr(12) + "_01_000001";
  std::string work_dir = o.work_dir + "/nm-local/usercache/root/appcache/" + app + "/" + am;
  std::string log_dir = o.work_dir + "/logs/" + app + "/" + am;
  std::map<std::string, std::string> env = ReadEnvFile(out + "/env.txt");
  EXPECT_EQ(env["CONTAINER_ID"], am);
  EXPECT_EQ(env["HADOOP_TOKEN_FILE_LOCATION"], work_dir + "/container_tokens");
  EXPECT_EQ(env["NM_HOST"], "localhost");
  EXPECT_EQ(env["NM_PORT"], std::to_string(double_->nm_port()));
  EXPECT_EQ(env["NM_HTTP_PORT"], std::to_string(double_->nm_http_port()));
  EXPECT_EQ(env["LOG_DIRS"], log_dir);
  EXPECT_EQ(env["LOCAL_DIRS"], o.work_dir + "/nm-local/usercache/root/appcache/" + app);
  EXPECT_EQ(env["LOCAL_USER_DIRS"], o.work_dir + "/nm-local/usercache/root/");
  EXPECT_EQ(env["PWD"], work_dir);
  EXPECT_EQ(env["USER"], "root");
  EXPECT_EQ(env["HOME"], "/home/");
  EXPECT_EQ(env["APPLICATION_WEB_PROXY_BASE"], "/proxy/" + app);
  EXPECT_FALSE(env["APP_SUBMIT_TIME_ENV"].empty());
  EXPECT_FALSE(env["JVM_PID"].empty());
  EXPECT_EQ(env["MY_VAR"], "x/home//y");  // {{HOME}} -> $HOME, expanded by the launch script
  EXPECT_EQ(env["CP"], "a:b");
  // What the NodeManager received, unexpanded: the CLC's variables and the two the RM adds.
  bool seen = false;
  for (auto c : double_->Containers()) {
    if (c.id != am) continue;
    seen = true;
    EXPECT_EQ(c.launch_env["MY_VAR"], "x{{HOME}}/y");
    EXPECT_EQ(c.launch_env["APPLICATION_WEB_PROXY_BASE"], "/proxy/" + app);
    EXPECT_EQ(c.launch_env.count("NM_HOST"), 0u);  // the NM's own, not the launch context's
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(MustRead(out + "/res.txt"), "hi from hdfs\n");  // a FILE resource, executable once localized
  EXPECT_EQ(MustRead(out + "/inner.txt"), "inside\n");
  EXPECT_TRUE(PathExists(log_dir + "/launch_container.sh"));
  EXPECT_TRUE(PathExists(log_dir + "/directory.info"));

  // container_tokens: HDTS with the AMRMToken, which the scheduler port accepts.
  Result<wire::Credentials> creds = wire::ParseCredentials(MustRead(out + "/tokens.bin"));
  ASSERT_OK(creds);
  std::optional<wire::Token> amrm = creds->FindKind("YARN_AM_RM_TOKEN");
  ASSERT_TRUE(amrm.has_value());
  EXPECT_EQ(amrm->service, "");
  EXPECT_EQ(*amrm, *double_->AmRmToken(app));
  TestIpc am_client(double_->scheduler_port());
  ASSERT_OK(am_client.Token(*amrm, kAmProtocol));
  yp::RegisterApplicationMasterRequestProto reg;
  reg.set_host("e2e-host");
  reg.set_rpc_port(4242);
  reg.set_tracking_url("http://e2e-host:4243/");
  auto rr = am_client.CallOk<yp::RegisterApplicationMasterResponseProto>("registerApplicationMaster", kAmProtocol, reg);
  EXPECT_EQ(rr.queue(), "default");
  r = Report(rm, app);
  EXPECT_EQ(r.yarn_application_state(), yp::RUNNING);
  EXPECT_EQ(r.host(), "e2e-host");
  EXPECT_EQ(r.rpc_port(), 4242);
  EXPECT_EQ(r.trackingurl(), "http://e2e-host:4243/");

  // A forged password is refused at SASL time.
  wire::Token forged = *amrm;
  forged.password[0] ^= 1;
  TestIpc bad(double_->scheduler_port());
  EXPECT_STATUS(bad.Token(forged, kAmProtocol), kUnauthenticated, HasSubstr("Mismatched response"));

  // Kill: the AM's process group goes, the state is KILLED at once.
  pid_t pid = FindContainer(am)->pid;
  ASSERT_GT(pid, 0);
  yp::KillApplicationRequestProto kill;
  *kill.mutable_application_id() = r.applicationid();
  EXPECT_TRUE(rm.CallOk<yp::KillApplicationResponseProto>("forceKillApplication", kClientProtocol, kill)
                  .is_kill_completed());
  r = Report(rm, app);
  EXPECT_EQ(r.yarn_application_state(), yp::KILLED);
  EXPECT_EQ(r.final_application_status(), yp::APP_KILLED);
  EXPECT_THAT(r.diagnostics(), StartsWith("Application " + app + " was killed by user root at 127.0.0.1"));
  ASSERT_TRUE(WaitComplete(am));
  EXPECT_EQ(FindContainer(am)->exit_status, 143);
  EXPECT_FALSE(ProcessAlive(pid));
  EXPECT_TRUE(double_->LiveContainerProcesses().empty());
  // The RM dropped the attempt: the open connection gets ApplicationAttemptNotFoundException.
  Reply after = am_client.Call("allocate", kAmProtocol, yp::AllocateRequestProto());
  EXPECT_EQ(after.header.exceptionclassname(), "org.apache.hadoop.yarn.exceptions.ApplicationAttemptNotFoundException");
  // Unknown applications.
  Reply missing = rm.Call("getApplicationReport", kClientProtocol, [] {
    yp::GetApplicationReportRequestProto q;
    q.mutable_application_id()->set_id(77);
    q.mutable_application_id()->set_cluster_timestamp(5);
    return q;
  }());
  EXPECT_EQ(missing.header.status(), RpcResponseHeaderProto::ERROR);
  EXPECT_EQ(missing.header.exceptionclassname(), "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException");
  EXPECT_THAT(missing.header.errormsg(),
              StartsWith("Application with id 'application_5_0077' doesn't exist in RM. Please check that the job "
                         "submission was successful.\n\tat "));
}

TEST_F(YarnDoubleTest, SchedulesWorkersAndReportsHowTheyEnd) {
  StartHdfs();
  YarnTestDouble::Options o;
  o.work_dir = work_.string() + "/yarn";
  o.hdfs = hdfs_.get();
  o.node_memory_mb = 4096;
  o.node_vcores = 8;
  o.node_gpus = 2;
  o.nm_heartbeat_ms = 0;  // what each allocate call gets is what this test checks
  StartDouble(o);
  ASSERT_OK(WebHdfsPut(hdfs_->namenode_http_port(), "/user/root/w/data.txt", "payload\n"));
  TestIpc rm(double_->rm_port());
  rm.Simple("root", kClientProtocol);
  std::string app = Submit(rm, "exec sleep 300");
  std::string am = "container_" + app.substr(12) + "_01_000001";
  ASSERT_OK(double_->WaitForAppState(app, yp::ACCEPTED, std::chrono::seconds(5)));
  for (int i = 0; i < 250 && FindContainer(am)->pid <= 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));

  TestIpc am_client(double_->scheduler_port());
  ASSERT_OK(am_client.Token(*double_->AmRmToken(app), kAmProtocol));
  // Before registering: ApplicationMasterNotRegisteredException.
  EXPECT_EQ(am_client.Call("allocate", kAmProtocol, yp::AllocateRequestProto()).header.exceptionclassname(),
            "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException");
  yp::RegisterApplicationMasterRequestProto reg;
  reg.set_host("h");
  reg.set_rpc_port(-1);
  reg.set_tracking_url("");
  auto rr = am_client.CallOk<yp::RegisterApplicationMasterResponseProto>("registerApplicationMaster", kAmProtocol, reg);
  ASSERT_EQ(rr.resource_types_size(), 3);
  EXPECT_EQ(rr.resource_types(2).name(), "yarn.io/gpu");

  int32_t rid = 0;
  std::map<int64_t, yp::ContainerStatusProto> ends;  // every end comes back once through allocate
  auto allocate = [&](std::vector<yp::ResourceRequestProto> asks, std::vector<yp::ContainerIdProto> release = {}) {
    yp::AllocateRequestProto req;
    for (auto& a : asks) *req.add_ask() = a;
    for (auto& c : release) *req.add_release() = c;
    req.set_response_id(rid);
    auto resp = am_client.CallOk<yp::AllocateResponseProto>("allocate", kAmProtocol, req);
    rid = resp.response_id();
    for (const auto& s : resp.completed_container_statuses()) {
      EXPECT_FALSE(ends.count(s.container_id().id())) << "reported twice";
      ends[s.container_id().id()] = s;
    }
    return resp;
  };
  auto ask = [](int priority, int64_t mb, int vcores, int64_t gpus, int n) {
    yp::ResourceRequestProto a;
    a.mutable_priority()->set_priority(priority);
    a.set_resource_name("*");
    a.mutable_capability()->set_memory(mb);
    a.mutable_capability()->set_virtual_cores(vcores);
    if (gpus) {
      auto* g = a.mutable_capability()->add_resource_value_map();
      g->set_key("yarn.io/gpu");
      g->set_value(gpus);
    }
    a.set_num_containers(n);
    a.set_allocation_request_id(priority * 10);
    return a;
  };
  // More than the node can ever hold: InvalidResourceRequestException, nothing changes.
  {
    yp::AllocateRequestProto req;
    *req.add_ask() = ask(1, 1000, 1, 3, 1);
    req.set_response_id(rid);
    Reply r = am_client.Call("allocate", kAmProtocol, req);
    EXPECT_EQ(r.header.exceptionclassname(), "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException");
    EXPECT_THAT(r.header.errormsg(),
                StartsWith("Invalid resource request! Cannot allocate containers as requested resource is greater "
                           "than maximum allowed allocation. Requested resource type=[yarn.io/gpu]"));
  }
  // Three GPU workers wanted, the node has two GPUs: two now, on the next call.
  EXPECT_EQ(allocate({ask(1, 1000, 1, 1, 3)}).allocated_containers_size(), 0);
  yp::AllocateResponseProto got = allocate({});
  ASSERT_EQ(got.allocated_containers_size(), 2);
  ASSERT_EQ(got.nm_tokens_size(), 1);
  EXPECT_EQ(got.allocated_containers(0).resource().memory(), 1024);  // rounded up to the 128 MB minimum
  EXPECT_EQ(got.allocated_containers(0).allocation_request_id(), 10);
  EXPECT_EQ(ResourceGpus(got.allocated_containers(0).resource()), 1);
  wire::Token nm_token = NmTokenOf(got);
  // The request before the last one is a retry and gets the cached reply; anything else fails.
  {
    yp::AllocateRequestProto retry;
    retry.set_response_id(rid - 1);
    Reply again = am_client.Call("allocate", kAmProtocol, retry);
    EXPECT_EQ(again.body.value_or(""), got.SerializeAsString());
    retry.set_response_id(rid + 5);
    EXPECT_EQ(am_client.Call("allocate", kAmProtocol, retry).header.exceptionclassname(),
              "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException");
  }
  // Two plain workers for the stop and release cases; cancel the third GPU worker.
  allocate({ask(1, 1000, 1, 1, 0), ask(2, 256, 1, 0, 2)});
  yp::AllocateResponseProto plain = allocate({});
  ASSERT_EQ(plain.allocated_containers_size(), 2);
  EXPECT_EQ(plain.nm_tokens_size(), 0);  // one NMToken per node and attempt

  const yp::ContainerProto &fails = got.allocated_containers(0), &stale = got.allocated_containers(1);
  const yp::ContainerProto &stopped = plain.allocated_containers(0), &released = plain.allocated_containers(1);
  EXPECT_EQ(StartOnNm(nm_token, fails, "echo oops >&2; exit 3 2><LOG_DIR>/stderr").succeeded_requests_size(), 1);
  yp::ContainerLaunchContextProto with_stale;
  auto* lr = with_stale.add_localresources();
  lr->set_key("data.txt");
  *lr->mutable_value() = HdfsResource(*hdfs_, "/user/root/w/data.txt", yp::FILE, -5);
  EXPECT_EQ(StartOnNm(nm_token, stale, "true", &with_stale).succeeded_requests_size(), 1);
  EXPECT_EQ(StartOnNm(nm_token, stopped, "exec sleep 300").succeeded_requests_size(), 1);
  EXPECT_EQ(StartOnNm(nm_token, released, "exec sleep 300").succeeded_requests_size(), 1);
  // Starting twice, or with a forged container token, is refused per container.
  EXPECT_EQ(StartOnNm(nm_token, stopped, "true").failed_requests_size(), 1);
  yp::ContainerProto forged = released;
  forged.mutable_container_token()->mutable_password()->at(0) ^= 1;
  auto refused = StartOnNm(nm_token, forged, "true");
  ASSERT_EQ(refused.failed_requests_size(), 1);
  EXPECT_THAT(refused.failed_requests(0).exception().message(), HasSubstr("Invalid container token"));

  std::string stopped_id = "container_" + app.substr(12) + "_01_00000" + std::to_string(stopped.id().id());
  for (int i = 0; i < 250 && FindContainer(stopped_id)->pid <= 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  {
    TestIpc nm(double_->nm_port());
    ASSERT_OK(nm.Token(nm_token, kNmProtocol));
    yp::StopContainersRequestProto stop;
    *stop.add_container_id() = stopped.id();
    EXPECT_EQ(nm.CallOk<yp::StopContainersResponseProto>("stopContainers", kNmProtocol, stop).succeeded_requests_size(),
              1);
  }
  ASSERT_TRUE(WaitComplete(stopped_id));
  allocate({}, {released.id()});

  for (int i = 0; i < 200 && ends.size() < 4; ++i) {
    allocate({});
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_EQ(ends.size(), 4u);
  EXPECT_EQ(ends[fails.id().id()].exit_status(), 3);
  EXPECT_THAT(ends[fails.id().id()].diagnostics(), HasSubstr("Exception from container-launch."));
  EXPECT_EQ(ends[stale.id().id()].exit_status(), -1000);
  EXPECT_THAT(ends[stale.id().id()].diagnostics(), HasSubstr(" changed on src filesystem (expected "));
  EXPECT_EQ(ends[stopped.id().id()].exit_status(), 143);
  EXPECT_THAT(ends[stopped.id().id()].diagnostics(), StartsWith("Container killed by the ApplicationMaster."));
  EXPECT_EQ(ends[released.id().id()].exit_status(), -100);
  EXPECT_EQ(ends[released.id().id()].diagnostics(), "Container released by application");
  for (const auto& [id, s] : ends) {
    EXPECT_EQ(s.state(), yp::C_COMPLETE);
    EXPECT_EQ(s.container_sub_state(), yp::CSS_DONE);
  }

  // Unregister: false, then true; FINISHED with the AM's status; the AM container is stopped.
  yp::FinishApplicationMasterRequestProto fin;
  fin.set_final_application_status(yp::APP_FAILED);
  fin.set_diagnostics("two of four failed");
  EXPECT_FALSE(am_client.CallOk<yp::FinishApplicationMasterResponseProto>("finishApplicationMaster", kAmProtocol, fin)
                   .isunregistered());
  EXPECT_TRUE(am_client.CallOk<yp::FinishApplicationMasterResponseProto>("finishApplicationMaster", kAmProtocol, fin)
                  .isunregistered());
  yp::ApplicationReportProto r = Report(rm, app);
  EXPECT_EQ(r.yarn_application_state(), yp::FINISHED);
  EXPECT_EQ(r.final_application_status(), yp::APP_FAILED);
  EXPECT_EQ(r.diagnostics(), "two of four failed");
  ASSERT_TRUE(WaitComplete(am));
  EXPECT_TRUE(double_->LiveContainerProcesses().empty());
}

TEST_F(YarnDoubleTest, AnAmThatExitsWithoutUnregisteringFailsTheApplication) {
  StartDouble(RecordedOptions());
  TestIpc rm(double_->rm_port());
  rm.Simple("root", kClientProtocol);
  std::string app = Submit(rm, "exit 7");
  ASSERT_OK(double_->WaitForAppEnd(app, std::chrono::seconds(10)));
  yp::ApplicationReportProto r = Report(rm, app);
  EXPECT_EQ(r.yarn_application_state(), yp::FAILED);
  EXPECT_EQ(r.final_application_status(), yp::APP_FAILED);
  EXPECT_THAT(r.diagnostics(), StartsWith("Application " + app + " failed 1 times due to AM Container for appattempt_" +
                                          app.substr(12) + "_000001 exited with  exitCode: 7\n"));
  EXPECT_THAT(r.diagnostics(), HasSubstr(". Failing the application."));
  // Submission errors.
  yp::SubmitApplicationRequestProto sub;
  auto* asc = sub.mutable_application_submission_context();
  asc->mutable_application_id()->set_id(9);
  asc->mutable_application_id()->set_cluster_timestamp(kTs);
  asc->set_queue("gpu");
  asc->mutable_am_container_spec()->add_command("true");
  asc->mutable_resource()->set_memory(512);
  Reply bad_queue = rm.Call("submitApplication", kClientProtocol, sub);
  EXPECT_EQ(bad_queue.header.status(), RpcResponseHeaderProto::ERROR);
  EXPECT_THAT(bad_queue.header.errormsg(), HasSubstr("to unknown queue: gpu"));
  asc->set_queue("default");
  asc->mutable_resource()->set_memory(100000);
  EXPECT_EQ(rm.Call("submitApplication", kClientProtocol, sub).header.exceptionclassname(),
            "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException");
  asc->mutable_resource()->set_memory(512);
  asc->mutable_am_container_spec()->set_tokens("");  // present but empty: not HDTS
  EXPECT_THAT(rm.Call("submitApplication", kClientProtocol, sub).header.errormsg(), HasSubstr("java.io.IOException"));
  // Unknown methods.
  Reply unknown = rm.Call("getLabelsToNodes", kClientProtocol, yp::GetClusterMetricsRequestProto());
  EXPECT_EQ(unknown.header.errordetail(), RpcResponseHeaderProto::ERROR_NO_SUCH_METHOD);
  // The connection survived every ERROR.
  EXPECT_EQ(rm.CallOk<yp::GetClusterMetricsResponseProto>("getClusterMetrics", kClientProtocol,
                                                          yp::GetClusterMetricsRequestProto())
                .cluster_metrics()
                .num_active_nms(),
            1);
}

// ClientRMService.submitApplication: an application without a type is "YARN", a type longer
// than YarnConfiguration.APPLICATION_TYPE_LENGTH (20) is cut to it.
TEST_F(YarnDoubleTest, ApplicationTypesAreKeptAsTheRmKeepsThem) {
  StartDouble(RecordedOptions());
  TestIpc rm(double_->rm_port());
  rm.Simple("root", kClientProtocol);
  EXPECT_EQ(Report(rm, Submit(rm, "exit 0")).applicationtype(), "YARN");
  for (auto [sent, kept] : {std::pair<std::string, std::string>{"TRAINING", "TRAINING"},
                            {"A-TYPE-OF-EXACTLY-20", "A-TYPE-OF-EXACTLY-20"},
                            {"A-TYPE-LONGER-THAN-TWENTY", "A-TYPE-LONGER-THAN-T"}}) {
    yp::ContainerLaunchContextProto clc;
    auto na = rm.CallOk<yp::GetNewApplicationResponseProto>("getNewApplication", kClientProtocol,
                                                             yp::GetNewApplicationRequestProto());
    yp::SubmitApplicationRequestProto sub;
    auto* asc = sub.mutable_application_submission_context();
    *asc->mutable_application_id() = na.application_id();
    asc->set_queue("default");
    asc->set_applicationtype(sent);
    asc->mutable_resource()->set_memory(512);
    asc->mutable_resource()->set_virtual_cores(1);
    asc->mutable_am_container_spec()->add_command("exit 0");
    rm.CallOk<yp::SubmitApplicationResponseProto>("submitApplication", kClientProtocol, sub);
    yp::GetApplicationReportRequestProto req;
    *req.mutable_application_id() = na.application_id();
    EXPECT_EQ(rm.CallOk<yp::GetApplicationReportResponseProto>("getApplicationReport", kClientProtocol, req)
                  .application_report()
                  .applicationtype(),
              kept);
  }
}

TEST_F(YarnDoubleTest, MalformedInputGetsAnErrorAndTheDoubleKeepsServing) {
  StartDouble(RecordedOptions());
  {
    Socket s(double_->scheduler_port());  // wrong IPC version
    s.Send(std::string("hrpc\x08\x00\xdf", 7));
    std::optional<std::string> f = s.ReadFrame();
    ASSERT_TRUE(f.has_value());
    Reply r = Decode(*f);
    EXPECT_EQ(r.header.status(), RpcResponseHeaderProto::FATAL);
    EXPECT_EQ(r.header.errordetail(), RpcResponseHeaderProto::FATAL_VERSION_MISMATCH);
    EXPECT_TRUE(s.ClosedByServer());
  }
  {
    Socket s(double_->nm_port());  // garbage where SASL should be
    s.Send(std::string("hrpc\x09\x00\xdf", 7) + std::string("\x00\x00\x00\x05hello", 9));
    std::optional<std::string> f = s.ReadFrame();
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(Decode(*f).header.status(), RpcResponseHeaderProto::FATAL);
    EXPECT_TRUE(s.ClosedByServer());
  }
  {
    Socket s(double_->rm_port());  // a frame length over the limit
    s.Send(std::string("hrpc\x09\x00\x00", 7) + std::string("\x7f\xff\xff\xff", 4));
    std::optional<std::string> f = s.ReadFrame();
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(Decode(*f).header.status(), RpcResponseHeaderProto::FATAL);
  }
  {
    Socket s(double_->rm_port());  // not IPC at all
    s.Send("GET / HTTP/1.1\r\n\r\n");
    EXPECT_TRUE(s.ClosedByServer());
  }
  {
    TestIpc rm(double_->rm_port());  // a call whose body does not parse
    rm.Simple("root", kClientProtocol);
    yp::GetClusterMetricsRequestProto empty;
    auto header = wire::MakeRequestHeader(0, "0123456789abcdef", 0);
    hadoop::common::RequestHeaderProto rh;
    rh.set_methodname("getApplicationReport");
    rh.set_declaringclassprotocolname(kClientProtocol);
    rh.set_clientprotocolversion(1);
    std::string frame = wire::EncodeFrame({&header, &rh, &empty});
    frame += std::string("\x05\xff\xff", 3);  // a truncated trailing message
    frame[3] = static_cast<char>(frame[3] + 3);
    rm.socket().Send(frame);
    std::optional<std::string> f = rm.socket().ReadFrame();
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(Decode(*f).header.status(), RpcResponseHeaderProto::FATAL);
  }
  TestIpc rm(double_->rm_port());
  rm.Simple("root", kClientProtocol);
  EXPECT_EQ(rm.CallOk<yp::GetClusterMetricsResponseProto>("getClusterMetrics", kClientProtocol,
                                                          yp::GetClusterMetricsRequestProto())
                .cluster_metrics()
                .num_node_managers(),
            1);
}

TEST_F(YarnDoubleTest, WritesAHadoopConfDirThatPointsAtIt) {
  StartHdfs();
  YarnTestDouble::Options o;
  o.work_dir = work_.string() + "/yarn";
  o.hdfs = hdfs_.get();
  StartDouble(o);
  std::string conf = work_.string() + "/conf";
  ASSERT_OK(double_->WriteHadoopConfDir(conf));
  EXPECT_THAT(MustRead(conf + "/core-site.xml"),
              HasSubstr("<name>fs.defaultFS</name><value>" + hdfs_->default_fs() + "</value>"));
  EXPECT_THAT(MustRead(conf + "/hdfs-site.xml"),
              HasSubstr("<name>dfs.namenode.http-address</name><value>127.0.0.1:" +
                        std::to_string(hdfs_->namenode_http_port()) + "</value>"));
  std::string yarn = MustRead(conf + "/yarn-site.xml");
  EXPECT_THAT(yarn, HasSubstr("<name>yarn.resourcemanager.address</name><value>127.0.0.1:" +
                              std::to_string(double_->rm_port()) + "</value>"));
  EXPECT_THAT(yarn, HasSubstr("<name>yarn.resourcemanager.scheduler.address</name><value>127.0.0.1:" +
                              std::to_string(double_->scheduler_port()) + "</value>"));
}

}  // namespace
}  // namespace loom::yarn_double
