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

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <google/protobuf/util/message_differencer.h>

#include "core/testing.h"
#include "hadoop/proto/hadoop_rpc.pb.h"
#include "hadoop/proto/yarn.pb.h"
#include "hadoop/wire/credentials.h"
#include "hadoop/wire/ipc_frame.h"
#include "hadoop/wire/sasl_digest.h"
#include "ipc_test_client.h"
#include "yarn_double_test_fixture.h"

namespace loom::yarn_double {
namespace {

using ::hadoop::common::RpcSaslProto;
using ::testing::HasSubstr;

bool ProtoEquals(const google::protobuf::Message& a, const google::protobuf::Message& b, std::string* diff) {
  google::protobuf::util::MessageDifferencer d;
  d.ReportDifferencesToString(diff);
  return d.Compare(a, b);
}

// ---- normalization: what a live cluster makes up anew ----------------------------------------

std::string HostOf(const std::string& host_port) { return host_port.substr(0, host_port.find(':')); }

void NormalizeToken(::hadoop::common::TokenProto* t, bool container_token) {
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

hadoop::Token TokenFromFile(const std::string& path, const std::string& kind) {
  Result<hadoop::Credentials> c = hadoop::ReadCredentialsFile(path);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  std::optional<hadoop::Token> t = c.ok() ? c->FindKind(kind) : std::nullopt;
  EXPECT_TRUE(t.has_value());
  return t.value_or(hadoop::Token{});
}

// The recorded options with the DIGEST-MD5 nonce the recording's server sent.
YarnTestDouble::Options WithNonce(YarnTestDouble::Options o, const std::string& nonce) {
  o.fixed_nonce_for_test = true;
  o.nonce_for_test = nonce;
  return o;
}

// The AMRMToken of the negative/ recordings' live attempt (app 2).
hadoop::Token NegativeAppAmRmToken() {
  return TokenFromFile(CaptureDir() + "negative/app2-am-container_tokens.bin", "YARN_AM_RM_TOKEN");
}

// ---- the recorded exchanges -----------------------------------------------------------------

// dshell/05: the DistributedShell AM's whole conversation with the RM scheduler port.
TEST_F(YarnDoubleTest, FollowsTheRecordedAmRmExchange) {
  const std::string nonce = "TEAHnyUm+eJaGNs5Ub7AQLaEyYNOngOaCkrFhuP6";
  StartDouble(WithNonce(RecordedOptions(), nonce));
  hadoop::Token amrm = TokenFromFile(CaptureDir() + "container/am-container_tokens.bin", "YARN_AM_RM_TOKEN");
  ASSERT_OK(double_->InstallAppForTest(amrm, false, 512, 1));  // the recorded AM container: 512 MB, 1 vcore
  double_->SetNoncesForTest({nonce});

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
  Result<hadoop::DigestChallenge> ch = hadoop::ParseDigestChallenge(offer.auths(0).challenge());
  EXPECT_TRUE(ch.ok());
  return ch.ok() ? ch->nonce : "";
}

// dshell/07, 11 and 13: the AM's and the RM's calls to the NM, each on its own connection with
// the recorded NMToken. Container _000002 is allocated and started through the double first.
TEST_F(YarnDoubleTest, FollowsTheRecordedNmExchanges) {
  StartDouble(RecordedOptions());
  hadoop::Token amrm = TokenFromFile(CaptureDir() + "container/am-container_tokens.bin", "YARN_AM_RM_TOKEN");
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
  ASSERT_TRUE(WaitStarted(c2));

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
  StartDouble(WithNonce(RecordedOptions(), "6kUc5OfJ56sxFdb61cbRR3H0MvNkT4JmdDCEEBUw"));
  ExpectIdenticalReplay("negative/02-sasl-madeup-identifier-8030", double_->scheduler_port());
}

// negative/03: the live attempt's identifier with a wrong password.
TEST_F(YarnDoubleTest, RejectsAWrongPasswordLikeTheRecording) {
  StartDouble(WithNonce(RecordedOptions(), "55Yc0VJQyFYGXd9djC2NhMeEurgcpQbAliMGUjwm"));
  ASSERT_OK(double_->InstallAppForTest(NegativeAppAmRmToken(), true));
  ExpectIdenticalReplay("negative/03-sasl-real-identifier-wrong-password-8030", double_->scheduler_port());
}

// negative/04: the right password, then a second registerApplicationMaster.
TEST_F(YarnDoubleTest, RefusesASecondRegistrationLikeTheRecording) {
  StartDouble(WithNonce(RecordedOptions(), "pLQT62mtS7/0HAgH+vZvRLcY+HV1uvFdda2ObkS3"));
  ASSERT_OK(double_->InstallAppForTest(NegativeAppAmRmToken(), true));
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
    ::hadoop::common::RequestHeaderProto rh;
    auto parts = hadoop::SplitDelimited(std::string_view(cap.c2s[i]).substr(4));
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

}  // namespace
}  // namespace loom::yarn_double
