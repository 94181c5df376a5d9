// Our client against the bytes of real Hadoop 3.3.6 servers (tests/data/yarn-captures): with the
// recorded client id, cnonce and call ids pinned, everything it sends must equal what the Java
// client sent, byte for byte, and it must make sense of every recorded reply. What the real servers refused:
// ipc_replay_negative_test.cc.

#include "hadoop/ipc/ipc_replay_test_helpers.h"

namespace loom::hadoop {
namespace {

using namespace replay_test;

// ---- IpcClient, byte for byte, over every recorded TOKEN connection ----

struct TokenConnection {
  const char* stem;
  const char* protocol;
  bool one_call;
};

class TokenReplay : public ::testing::TestWithParam<TokenConnection> {};

TEST_P(TokenReplay, SendsTheRecordedBytes) {
  const TokenConnection& param = GetParam();
  Capture cap = Load(param.stem);
  ReplayServer server(ReplaySteps(cap));
  IpcOptions o = RecordedOptions(cap, server.port(), param.protocol);
  ASSERT_EQ(o.client_id_for_test.size(), 16u);
  ASSERT_EQ(o.cnonce_for_test.size(), 40u);
  o.token = RecordedToken(param.stem);
  o.one_call_per_connection = param.one_call;
  {
    IpcClient client(o);
    ReplayEveryCall(client, cap);
  }
  EXPECT_OK(server.Wait());
}

INSTANTIATE_TEST_SUITE_P(
    Recorded, TokenReplay,
    ::testing::Values(TokenConnection{"dshell/05-am-rm-8030", kAmProtocol, false},
                      TokenConnection{"dshell/03-rm-nm-45454-startContainers-AM", kNmProtocol, true},
                      TokenConnection{"dshell/06-am-nm-45454-startContainers-c02", kNmProtocol, true},
                      TokenConnection{"dshell/07-am-nm-45454-getContainerStatuses-c02", kNmProtocol, true},
                      TokenConnection{"dshell/08-am-nm-45454-startContainers-c03", kNmProtocol, true},
                      TokenConnection{"dshell/09-am-nm-45454-getContainerStatuses-c03", kNmProtocol, true},
                      TokenConnection{"dshell/10-am-nm-45454-stopContainers-c03", kNmProtocol, true},
                      TokenConnection{"dshell/11-am-nm-45454-stopContainers-c02", kNmProtocol, true},
                      TokenConnection{"dshell/13-rm-nm-45454-stopContainers-AM", kNmProtocol, true}),
    [](const auto& info) { return "c" + std::string(info.param.stem).substr(7, 2); });

// The AMRMToken as the AM finds it: in the HDTS credentials file the NM wrote.
TEST(AmRmReplay, TokenFromTheContainerCredentialsFile) {
  Token from_file = AmRmTokenFromFile("container/am-container_tokens.bin");
  Token recorded = RecordedToken("dshell/05-am-rm-8030");
  EXPECT_EQ(from_file.identifier, recorded.identifier);
  EXPECT_EQ(from_file.password, recorded.password);
  EXPECT_EQ(from_file.kind, "YARN_AM_RM_TOKEN");
}

// ---- The YARN clients, byte for byte: the DistributedShell AM's conversation ----

ypb::ResourceRequestProto WorkerAsk(int n) {
  // As AMRMClient fills a ContainerRequest of 256 MB / 1 vcore at priority 0.
  ypb::ResourceRequestProto ask;
  ask.mutable_priority()->set_priority(0);
  ask.set_resource_name("*");
  auto* cap = ask.mutable_capability();
  cap->set_memory(256);
  cap->set_virtual_cores(1);
  auto* mem = cap->add_resource_value_map();
  mem->set_key("memory-mb");
  mem->set_value(256);
  mem->set_units("Mi");
  mem->set_type(ypb::COUNTABLE);
  auto* cores = cap->add_resource_value_map();
  cores->set_key("vcores");
  cores->set_value(1);
  cores->set_units("");
  cores->set_type(ypb::COUNTABLE);
  ask.set_num_containers(n);
  ask.set_relax_locality(true);
  ask.mutable_execution_type_request()->set_execution_type(ypb::GUARANTEED);
  ask.mutable_execution_type_request()->set_enforce_execution_type(false);
  ask.set_allocation_request_id(0);
  return ask;
}

class AmReplay : public ::testing::Test {
 protected:
  void TearDown() override { SetIpcIdentityForTest("", ""); }
};

TEST_F(AmReplay, AmRmClientThenNmClient) {
  Capture am = Load("dshell/05-am-rm-8030");
  ReplayServer rm(ReplaySteps(am));
  SetIpcIdentityForTest(RecordedClientId(am), RecordedCnonce(am));
  auto am_client = std::make_unique<AmRmClient>("127.0.0.1", rm.port(),
                                                AmRmTokenFromFile("container/am-container_tokens.bin"));
  AmRmClient& client = *am_client;

  SetNextCallIdForTest(0);
  auto reg = client.Register("vm/127.0.0.1", -1, "");
  ASSERT_OK(reg);
  EXPECT_EQ(reg->maximumcapability().memory(), 8192);
  EXPECT_EQ(reg->queue(), "default");

  // The AM asks for 2 workers, keeps that total while waiting (nothing is sent again), then
  // lowers it as containers arrive, to 0.
  struct Beat {
    int32_t call_id;
    int total;
    float progress;
    int32_t expect_response_id;
  };
  ypb::ContainerProto worker;
  for (Beat b : {Beat{1, -1, 0, 1}, Beat{2, 2, 0, 2}, Beat{3, 2, 0, 3}, Beat{6, 1, 0, 4}, Beat{9, 0, 0.5, 5}}) {
    SCOPED_TRACE("allocate call " + std::to_string(b.call_id));
    SetNextCallIdForTest(b.call_id);
    std::vector<ypb::ResourceRequestProto> asks;
    if (b.total >= 0) asks.push_back(WorkerAsk(b.total));
    auto resp = client.Allocate(asks, {}, b.progress);
    ASSERT_OK(resp);
    EXPECT_EQ(resp->response_id(), b.expect_response_id);
    if (b.call_id == 3) {
      ASSERT_EQ(resp->allocated_containers_size(), 1);
      worker = resp->allocated_containers(0);
    }
  }
  EXPECT_EQ(ContainerIdString(worker.id()), "container_1795263045862_0001_01_000002");

  // The first finish reply says "not yet"; the second, 100 ms later, "unregistered".
  SetNextCallIdForTest(12);
  auto start = std::chrono::steady_clock::now();
  ASSERT_OK(client.Finish(ypb::APP_SUCCEEDED, "", "", std::chrono::seconds(5)));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));

  std::optional<Token> nm_token = client.NmToken("localhost:45454");
  ASSERT_TRUE(nm_token.has_value());
  EXPECT_EQ(nm_token->kind, "NMToken");
  EXPECT_EQ(nm_token->password, RecordedToken("dshell/06-am-nm-45454-startContainers-c02").password);
  EXPECT_FALSE(client.NmToken("localhost:1").has_value());

  // Then the worker, on the NodeManager: the recorded launch context, this AM's client id and
  // call ids 4 and 5 (the counter is per process). Only the address points at the replay.
  Capture start_c02 = Load("dshell/06-am-nm-45454-startContainers-c02");
  ReplayServer nm_start(ReplaySteps(start_c02));
  EXPECT_EQ(RecordedClientId(start_c02), RecordedClientId(am));
  auto recorded = RecordedMessage<ypb::StartContainersRequestProto>(RecordedRequest(start_c02, 4));
  ypb::ContainerProto at_replay = worker;
  at_replay.mutable_nodeid()->set_host("127.0.0.1");
  at_replay.mutable_nodeid()->set_port(nm_start.port());
  SetIpcIdentityForTest(RecordedClientId(am), RecordedCnonce(start_c02));
  SetNextCallIdForTest(4);
  EXPECT_OK(NmClient::StartContainer(at_replay, *nm_token,
                                     recorded.start_container_request(0).container_launch_context()));
  EXPECT_OK(nm_start.Wait());

  Capture status_c02 = Load("dshell/07-am-nm-45454-getContainerStatuses-c02");
  ReplayServer nm_status(ReplaySteps(status_c02));
  at_replay.mutable_nodeid()->set_port(nm_status.port());
  SetIpcIdentityForTest(RecordedClientId(am), RecordedCnonce(status_c02));
  SetNextCallIdForTest(5);
  auto status = NmClient::GetContainerStatus(at_replay, *nm_token);
  ASSERT_OK(status);
  EXPECT_EQ(ContainerIdString(status->container_id()), "container_1795263045862_0001_01_000002");
  EXPECT_OK(nm_status.Wait());

  am_client.reset();  // closes the RM connection, ending the replay
  EXPECT_OK(rm.Wait());
}

// ---- The submitting client (SIMPLE as root) ----

TEST(ClientReplay, EveryRecordedCallIncludingTheRemoteError) {
  Capture cap = Load("dshell/01-client-rm-8032");
  ReplayServer server(ReplaySteps(cap));
  IpcOptions o = RecordedOptions(cap, server.port(), kClientProtocol);
  o.user = "root";
  {
    IpcClient client(o);
    // Call 5 (getResourceProfiles) gets YARNFeatureNotEnabledException, non-fatal: the calls
    // after it go on over the same connection.
    ReplayEveryCall(client, cap);
  }
  EXPECT_OK(server.Wait());
}

TEST(ClientReplay, RemoteErrorMessageIsItsFirstLine) {
  Capture cap = Load("dshell/01-client-rm-8032");
  ReplayServer server(ReplaySteps(cap, [](int32_t id) { return id == 5 || id == 6; }));
  IpcOptions o = RecordedOptions(cap, server.port(), kClientProtocol);
  o.user = "root";
  {
    IpcClient client(o);
    SetNextCallIdForTest(5);
    RawMessage request, response;
    Status st = client.Call("getResourceProfiles", request, &response);
    EXPECT_STATUS(st, kAborted,
                  "org.apache.hadoop.yarn.exceptions.YARNFeatureNotEnabledException: Resource profile is not "
                  "enabled, please enable resource profile feature before using its functions. (by setting "
                  "yarn.resourcemanager.resource-profiles.enabled to true)");
    SetNextCallIdForTest(6);
    ypb::GetNewApplicationResponseProto app;
    ASSERT_OK(client.Call("getNewApplication", ypb::GetNewApplicationRequestProto(), &app));
    EXPECT_EQ(ApplicationIdString(app.application_id()), "application_1795263045862_0001");
  }
  EXPECT_OK(server.Wait());
}

class ClientApiReplay : public ::testing::Test {
 protected:
  void TearDown() override { SetIpcIdentityForTest("", ""); }
};

// ApplicationClient's own requests against the recording (the calls it has no method for are
// left out of the replay).
TEST_F(ClientApiReplay, ApplicationClientSendsTheRecordedRequests) {
  Capture cap = Load("dshell/01-client-rm-8032");
  auto api_call = [](int32_t id) { return (id >= 1 && id <= 4) || id == 6 || id >= 21; };
  ReplayServer server(ReplaySteps(cap, api_call));
  SetIpcIdentityForTest(RecordedClientId(cap), "");
  auto client = std::make_unique<ApplicationClient>("127.0.0.1", server.port(), "root");

  SetNextCallIdForTest(1);
  auto metrics = client->GetClusterMetrics();
  ASSERT_OK(metrics);
  EXPECT_EQ(metrics->num_node_managers(), 1);

  SetNextCallIdForTest(2);
  auto nodes = client->GetClusterNodes();
  ASSERT_OK(nodes);
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ(NodeIdString((*nodes)[0].nodeid()), "localhost:45454");

  // DistributedShell's client asks for its queue with the applications, as `yarn queue` does.
  SetNextCallIdForTest(3);
  auto queue = client->GetQueueInfo("default", /*include_applications=*/true);
  ASSERT_OK(queue);
  EXPECT_EQ(queue->queuename(), "default");
  EXPECT_EQ(queue->maximumcapacity(), 1.0f);

  SetNextCallIdForTest(4);
  auto acls = client->GetQueueUserAcls();
  ASSERT_OK(acls);
  ASSERT_EQ(acls->size(), 2u);
  EXPECT_EQ((*acls)[1].queuename(), "root.default");

  SetNextCallIdForTest(6);
  auto app = client->GetNewApplication();
  ASSERT_OK(app);
  EXPECT_EQ(ApplicationIdString(app->application_id()), "application_1795263045862_0001");

  SetNextCallIdForTest(21);
  auto submitted = RecordedMessage<ypb::SubmitApplicationRequestProto>(RecordedRequest(cap, 21));
  ASSERT_OK(client->SubmitApplication(submitted.application_submission_context()));

  ypb::YarnApplicationStateProto last = ypb::NEW;
  for (int32_t id = 22; id <= 29; ++id) {
    SetNextCallIdForTest(id);
    auto report = client->GetApplicationReport(app->application_id());
    ASSERT_OK(report);
    last = report->yarn_application_state();
  }
  EXPECT_EQ(last, ypb::FINISHED);
  client.reset();
  EXPECT_OK(server.Wait());
}

// ---- The `yarn` CLI's queue and application calls (ipc-queue/, README section 12) ----
//
// The CLI's request headers carry a callerContext {context: "CLI"} that Loom's client does not
// send, so these replays read the client's frames without comparing them whole; the request
// bodies are compared afterwards, byte for byte.

struct SentCall {
  std::string method;
  std::string body;
};

// The calls in what a client sent (preamble, context, then calls).
std::vector<SentCall> SentCalls(const std::string& received) {
  std::vector<SentCall> calls;
  FrameReader reader;
  reader.Feed(std::string_view(received).substr(std::min<size_t>(7, received.size())));
  for (;;) {
    Result<std::optional<std::string>> frame = reader.Next();
    EXPECT_OK(frame);
    if (!frame.ok() || !frame->has_value()) break;
    Result<std::vector<std::string_view>> parts = SplitDelimited(**frame);
    EXPECT_OK(parts);
    if (!parts.ok() || parts->size() < 3) continue;  // the connection context
    auto header = RecordedMessage<::hadoop::common::RequestHeaderProto>(std::string((*parts)[1]));
    calls.push_back({header.methodname(), std::string((*parts)[2])});
  }
  return calls;
}

// A recorded SUCCESS reply moved to another call id (same client id, same body).
std::string ReplyFrameFor(const CapturedFrame& recorded, int32_t call_id) {
  auto header = RecordedMessage<RpcResponseHeaderProto>(recorded.messages[0]);
  header.set_callid(static_cast<uint32_t>(call_id));
  RawMessage body = RecordedMessage<RawMessage>(recorded.messages[1]);
  return EncodeFrame({&header, &body});
}

class QueueReplay : public ClientApiReplay {
 protected:
  // Replays `stem` (plus `extra` steps) to a fresh ApplicationClient handed to `use`.
  std::vector<SentCall> Run(const std::string& stem, const std::function<void(ApplicationClient&)>& use,
                            std::vector<testing::ReplayStep> extra = {}) {
    Capture cap = Load(stem);
    std::vector<testing::ReplayStep> steps = ReplaySteps(cap);
    steps.insert(steps.end(), extra.begin(), extra.end());
    ReplayOptions options;
    options.compare = false;
    ReplayServer server(steps, options);
    SetIpcIdentityForTest(RecordedClientId(cap), "");
    {
      ApplicationClient client("127.0.0.1", server.port(), "root");
      SetNextCallIdForTest(0);
      use(client);
    }
    EXPECT_OK(server.Wait());
    return SentCalls(server.received());
  }
};

TEST_F(QueueReplay, BusyQueueWithItsApplications) {
  const std::string stem = "ipc-queue/01-cli-rm-8032-queue-status-default";
  auto sent = Run(stem, [](ApplicationClient& client) {
    auto queue = client.GetQueueInfo("default", /*include_applications=*/true);
    ASSERT_OK(queue);
    EXPECT_EQ(queue->queuename(), "default");
    EXPECT_EQ(queue->state(), ypb::Q_RUNNING);
    EXPECT_FLOAT_EQ(queue->capacity(), 1.0f);  // fractions, not percentages
    EXPECT_FLOAT_EQ(queue->maximumcapacity(), 1.0f);
    EXPECT_FLOAT_EQ(queue->currentcapacity(), 0.75f);
    ASSERT_EQ(queue->queueconfigurationsmap_size(), 1);
    EXPECT_FLOAT_EQ(queue->queueconfigurationsmap(0).queueconfigurations().maxampercentage(), 0.1f);
    EXPECT_EQ(queue->queueconfigurationsmap(0).queueconfigurations().effectivemaxcapacity().memory(), 8192);
    ASSERT_EQ(queue->applications_size(), 1);
    EXPECT_EQ(queue->applications(0).applicationtags(1), "loom-job:job_20261122184846_4816");
    EXPECT_EQ(queue->queuestatistics().allocatedmemorymb(), 6144);
  });
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].method, "getQueueInfo");
  // All four fields written out, includeApplications true: the CLI's bytes exactly.
  EXPECT_EQ(sent[0].body, RecordedRequest(Load(stem), 0));
}

TEST_F(QueueReplay, IdleQueueWithoutApplicationsAsLoomAsks) {
  const std::string stem = "ipc-queue/06-cli-rm-8032-queue-status-default-idle";
  auto sent = Run(stem, [](ApplicationClient& client) {
    auto queue = client.GetQueueInfo("default");
    ASSERT_OK(queue);
    EXPECT_FLOAT_EQ(queue->currentcapacity(), 0.0f);
    EXPECT_EQ(queue->applications_size(), 0);
  });
  ASSERT_EQ(sent.size(), 1u);
  // Loom leaves the applications out: the recorded request with includeApplications false.
  std::string recorded = RecordedRequest(Load(stem), 0);
  auto expected = RecordedMessage<ypb::GetQueueInfoRequestProto>(recorded);
  ASSERT_TRUE(expected.includeapplications());
  expected.set_includeapplications(false);
  EXPECT_EQ(sent[0].body, expected.SerializeAsString());
  EXPECT_EQ(sent[0].body.size(), recorded.size());  // still all four fields on the wire
}

TEST_F(QueueReplay, UnknownQueueIsNotFoundWithTheQueuesThatExist) {
  // The unknown queue's reply (SUCCESS, empty body), then the ACL list DistributedShell's client
  // got in dshell/01 (call 4), answered to our call 1.
  Capture dshell = Load("dshell/01-client-rm-8032");
  const CapturedFrame* acls = ReplyTo(dshell, 4);
  ASSERT_NE(acls, nullptr);
  testing::ReplayStep acl_step{"", ReplyFrameFor(*acls, 1)};
  auto sent = Run(
      "ipc-queue/02-cli-rm-8032-queue-status-nosuch",
      [](ApplicationClient& client) {
        EXPECT_STATUS(client.GetQueueInfo("nosuch"), kNotFound, "unknown YARN queue 'nosuch' (queues: root.default)");
      },
      {acl_step});
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].method, "getQueueInfo");
  EXPECT_EQ(sent[1].method, "getQueueUserAcls");
  EXPECT_EQ(sent[1].body, "");
}

TEST_F(QueueReplay, ApplicationsByState) {
  const std::string stem = "ipc-queue/03-cli-rm-8032-application-list-ACCEPTED-RUNNING";
  auto sent = Run(stem, [](ApplicationClient& client) {
    auto apps = client.GetApplications({ypb::ACCEPTED, ypb::RUNNING});
    ASSERT_OK(apps);
    ASSERT_EQ(apps->size(), 2u);
    std::set<ypb::YarnApplicationStateProto> states;
    for (const auto& a : *apps) states.insert(a.yarn_application_state());
    EXPECT_EQ(states, (std::set<ypb::YarnApplicationStateProto>{ypb::ACCEPTED, ypb::RUNNING}));
  });
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].method, "getApplications");
  EXPECT_EQ(sent[0].body, RecordedRequest(Load(stem), 0));  // 10 04 10 05: states only
}

TEST_F(QueueReplay, KillIsPolledUntilComplete) {
  const std::string stem = "ipc-queue/04-cli-rm-8032-application-kill-ACCEPTED-app";
  Capture cap = Load(stem);
  auto app = ParseApplicationId("application_1795372454004_0025");
  ASSERT_OK(app);
  auto sent = Run(stem, [&](ApplicationClient& client) {
    auto report = client.GetApplicationReport(*app);
    ASSERT_OK(report);
    EXPECT_EQ(report->yarn_application_state(), ypb::ACCEPTED);
    EXPECT_THAT(report->diagnostics(), HasSubstr("Queue's AM resource limit exceeded."));
    auto first = client.KillApplication(*app, "");
    ASSERT_OK(first);
    EXPECT_FALSE(*first);
    auto second = client.KillApplication(*app, "");
    ASSERT_OK(second);
    EXPECT_TRUE(*second);
  });
  ASSERT_EQ(sent.size(), 3u);
  for (int32_t id = 0; id < 3; ++id) EXPECT_EQ(sent[id].body, RecordedRequest(cap, id)) << "call " << id;
}

// The replay server itself must notice a client that strays from the recording.
}  // namespace
}  // namespace loom::hadoop
