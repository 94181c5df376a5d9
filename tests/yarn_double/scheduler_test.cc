// The YARN test double's CapacityScheduler: queues (getQueueInfo as ipc-queue/ recorded), the
// queue AM share and its ACCEPTED diagnostics (rm-rest 08, 16), several NodeManagers, placement
// on NodeManager heartbeats (one OFF_SWITCH container per heartbeat, every NODE_LOCAL one that
// fits), and a NodeManager that disappears. Driven through Loom's own YARN clients.

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "core/eventually.h"
#include "core/files.h"
#include "core/testing.h"
#include "hadoop/ipc/yarn_clients.h"
#include "hadoop/testing/captures.h"
#include "yarn_double_test_fixture.h"
#include "yarn_test_double.h"

using ::loom::testing::Eventually;

namespace loom::yarn_double {
namespace {

namespace ypb = ::hadoop::yarn;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

const std::string kCaptures = hadoop::testing::CaptureDir();

// The "diagnostics" value of a recorded /ws/v1/cluster/apps/{id} JSON body.
std::string RecordedDiagnostics(const std::string& file) {
  Result<std::string> text = ReadFile(kCaptures + file);
  EXPECT_OK(text);
  std::smatch m;
  std::string body = text.value_or("");
  EXPECT_TRUE(std::regex_search(body, m, std::regex(R"re("diagnostics":"([^"]*)")re"))) << file;
  return m.size() > 1 ? m[1].str() : "";
}

ypb::ResourceRequestProto Ask(const std::string& where, int64_t allocation_request_id, int64_t mb, int n = 1) {
  ypb::ResourceRequestProto a;
  a.mutable_priority()->set_priority(1);
  a.set_resource_name(where);
  a.mutable_capability()->set_memory(mb);
  a.mutable_capability()->set_virtual_cores(1);
  a.set_num_containers(n);
  a.set_relax_locality(true);
  a.set_allocation_request_id(allocation_request_id);
  return a;
}

// One task's asks as YarnContainerBroker sends them: its host, the rack and "*".
std::vector<ypb::ResourceRequestProto> LocalAsks(const std::string& host, int64_t id, int64_t mb) {
  return {Ask(host, id, mb), Ask("/default-rack", id, mb), Ask("*", id, mb)};
}

// The asks of tasks 1..`tasks`, each of `mb`, all local to `host`.
std::vector<ypb::ResourceRequestProto> LocalAsksOfTasks(const std::string& host, int64_t tasks, int64_t mb) {
  std::vector<ypb::ResourceRequestProto> asks;
  for (int64_t id = 1; id <= tasks; ++id) {
    for (auto& a : LocalAsks(host, id, mb)) asks.push_back(a);
  }
  return asks;
}

// The double's fixture (its work dir, started and stopped), driven through Loom's own clients.
class SchedulerTest : public YarnDoubleTest {
 protected:
  YarnTestDouble::Options Options(int nodes, int heartbeat_ms) {
    YarnTestDouble::Options o;
    o.work_dir = work_.string() + "/yarn";
    o.node_memory_mb = 8192;
    o.node_vcores = 4;  // the recorded NM
    o.node_count = nodes;
    o.nm_heartbeat_ms = heartbeat_ms;
    return o;
  }
  void Start(YarnTestDouble::Options o) {
    double_ = std::make_unique<YarnTestDouble>(std::move(o));
    ASSERT_OK(double_->Start());
    rm_ = std::make_unique<hadoop::ApplicationClient>("127.0.0.1", double_->rm_port(), "root");
  }

  // Submits an application whose AM runs `command`.
  ypb::ApplicationIdProto Submit(int64_t am_mb, const std::string& command = "exec sleep 300",
                                 const std::string& queue = "default", const std::string& tag = "") {
    auto fresh = rm_->GetNewApplication();
    EXPECT_OK(fresh);
    ypb::ApplicationSubmissionContextProto asc;
    *asc.mutable_application_id() = fresh->application_id();
    asc.set_application_name("sched");
    asc.set_queue(queue);
    if (!tag.empty()) asc.add_applicationtags(tag);
    asc.mutable_resource()->set_memory(am_mb);
    asc.mutable_resource()->set_virtual_cores(1);
    asc.mutable_am_container_spec()->add_command(command);
    EXPECT_OK(rm_->SubmitApplication(asc));
    return fresh->application_id();
  }
  ypb::ApplicationReportProto Report(const ypb::ApplicationIdProto& app) {
    auto r = rm_->GetApplicationReport(app);
    EXPECT_OK(r);
    return r.value_or(ypb::ApplicationReportProto{});
  }

  // Acts as the AM of `app` (whose AM container runs something else): registers with the
  // scheduler port using the attempt's AMRMToken.
  std::unique_ptr<hadoop::AmRmClient> Am(const ypb::ApplicationIdProto& app) {
    auto token = double_->AmRmToken(hadoop::ApplicationIdString(app));
    EXPECT_OK(token);
    auto am = std::make_unique<hadoop::AmRmClient>("127.0.0.1", double_->scheduler_port(), token.value_or(hadoop::Token{}));
    EXPECT_OK(am->Register("am-host", -1, ""));
    return am;
  }

  // Once `app` is ACCEPTED, node 0's heartbeat launches its AM container, and `*am` acts as its AM.
  void PlayAmOf(const ypb::ApplicationIdProto& app, std::unique_ptr<hadoop::AmRmClient>* am) {
    ASSERT_TRUE(Eventually([&] { return Report(app).yarn_application_state() == ypb::ACCEPTED; }));
    ASSERT_OK(double_->NodeHeartbeatForTest(0));
    *am = Am(app);
  }

  // An application whose AM the test plays, and one container its node-local asks got on
  // node 1 (127.0.0.2).
  struct OnNode1 {
    ypb::ApplicationIdProto app;
    std::unique_ptr<hadoop::AmRmClient> am;
    ypb::ContainerProto container;
  };
  void PlaceOnNode1(OnNode1* out) {
    out->app = Submit(128);
    ASSERT_NO_FATAL_FAILURE(PlayAmOf(out->app, &out->am));
    ASSERT_OK(out->am->Allocate(LocalAsks("127.0.0.2", 1, 256), {}, 0));
    ASSERT_EQ(*double_->NodeHeartbeatForTest(1), 1);
    std::vector<ypb::ContainerProto> got = AllocateUntil(*out->am, 1);
    ASSERT_EQ(got.size(), 1u);
    out->container = got[0];
  }

  // allocate until `n` containers came back in all (or the time is up).
  std::vector<ypb::ContainerProto> AllocateUntil(hadoop::AmRmClient& am, size_t n,
                                                 std::chrono::milliseconds timeout = 10s) {
    std::vector<ypb::ContainerProto> got;
    Eventually(
        [&] {
          auto r = am.Allocate({}, {}, 0);
          EXPECT_OK(r);
          if (r.ok()) got.insert(got.end(), r->allocated_containers().begin(), r->allocated_containers().end());
          return got.size() >= n;
        },
        timeout);
    return got;
  }

  std::unique_ptr<hadoop::ApplicationClient> rm_;
};

// ---- queues ------------------------------------------------------------------------------------

TEST_F(SchedulerTest, DefaultQueueIsTheRecordedOneAndUnknownQueuesAreEmptyAnswers) {
  Start(Options(2, -1));
  auto q = rm_->GetQueueInfo("default");
  ASSERT_OK(q);
  EXPECT_EQ(q->queuename(), "default");
  EXPECT_EQ(q->state(), ypb::Q_RUNNING);
  EXPECT_FLOAT_EQ(q->capacity(), 1.0f);
  EXPECT_FLOAT_EQ(q->maximumcapacity(), 1.0f);
  ASSERT_EQ(q->queueconfigurationsmap_size(), 1);
  const auto& c = q->queueconfigurationsmap(0).queueconfigurations();
  EXPECT_FLOAT_EQ(c.maxampercentage(), 0.1f);
  EXPECT_EQ(c.effectivemaxcapacity().memory(), 16384);  // two 8192 MB nodes
  EXPECT_OK(rm_->GetQueueInfo("root.default"));
  // ipc-queue/02: SUCCESS, no queueInfo; the client turns it into NotFound with the queues.
  EXPECT_STATUS(rm_->GetQueueInfo("nosuch"), kNotFound, "unknown YARN queue 'nosuch' (queues: root.default)");
}

TEST_F(SchedulerTest, QueuesFromOptionsWithTheirCapacities) {
  YarnTestDouble::Options o = Options(2, -1);
  o.queues = {{"prod", 0.75f, 1.0f, 0.2f}, {"adhoc", 0.25f, 0.5f, 0.1f}};
  Start(o);
  auto adhoc = rm_->GetQueueInfo("adhoc");
  ASSERT_OK(adhoc);
  EXPECT_FLOAT_EQ(adhoc->capacity(), 0.25f);
  EXPECT_FLOAT_EQ(adhoc->maximumcapacity(), 0.5f);
  const auto& c = adhoc->queueconfigurationsmap(0).queueconfigurations();
  EXPECT_EQ(c.effectivemincapacity().memory(), 4096);
  EXPECT_EQ(c.effectivemaxcapacity().memory(), 8192);
  EXPECT_STATUS(rm_->GetQueueInfo("default"), kNotFound,
                "unknown YARN queue 'default' (queues: root.prod, root.adhoc)");
  // Submitting to a queue that does not exist is refused; to one that does, accepted there.
  auto fresh = rm_->GetNewApplication();
  ASSERT_OK(fresh);
  ypb::ApplicationSubmissionContextProto asc;
  *asc.mutable_application_id() = fresh->application_id();
  asc.set_queue("default");
  asc.mutable_resource()->set_memory(128);
  asc.mutable_am_container_spec()->add_command("true");
  EXPECT_STATUS(rm_->SubmitApplication(asc), kAborted, HasSubstr("to unknown queue: default"));
  ypb::ApplicationIdProto app = Submit(128, "exec sleep 300", "root.adhoc");
  EXPECT_EQ(Report(app).queue(), "adhoc");
}

// ---- the queue's AM share (rm-rest 08 and 16, README section 11 fact 1) ------------------------

TEST_F(SchedulerTest, SecondAmWaitsAcceptedWithTheRecordedDiagnosticsUntilTheFirstEnds) {
  Start(Options(1, -1));  // the recorded 8192 MB node; AMs are never placed (no heartbeats)
  ypb::ApplicationIdProto first = Submit(2048);
  ypb::ApplicationIdProto second = Submit(2048);
  // The first is activated although 2048 MB alone exceeds the 896 MB AM limit.
  ASSERT_TRUE(Eventually([&] { return Report(second).diagnostics() != ""; }));
  EXPECT_EQ(Report(first).diagnostics(), "");
  ypb::ApplicationReportProto r = Report(second);
  EXPECT_EQ(r.yarn_application_state(), ypb::ACCEPTED);
  // Byte for byte the recorded text (08, and 16 of another run) but for the date, which has
  // the recorded format.
  const std::regex date(R"(^\[[A-Z][a-z]{2} [A-Z][a-z]{2} \d{2} \d{2}:\d{2}:\d{2} \+0000 \d{4}\] )");
  auto undated = [&](const std::string& diagnostics) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(diagnostics, m, date)) << diagnostics;
    return m.empty() ? diagnostics : diagnostics.substr(static_cast<size_t>(m.length()));
  };
  std::string recorded = undated(RecordedDiagnostics("rm-rest/08-rm-8088-app-ACCEPTED-am-limit.txt"));
  ASSERT_EQ(recorded, undated(RecordedDiagnostics("rm-rest/16-rm-8088-app-ACCEPTED-am-limit-own.txt")));
  EXPECT_EQ(undated(r.diagnostics()), recorded);

  // The first application ends: the second is activated, its diagnostics cleared.
  ASSERT_OK(rm_->KillApplication(first, ""));
  ASSERT_TRUE(Eventually([&] { return Report(second).diagnostics().empty(); }));
  // With a heartbeat its AM container is placed and launched.
  auto placed = double_->NodeHeartbeatForTest(0);
  ASSERT_OK(placed);
  EXPECT_EQ(*placed, 1);
  EXPECT_TRUE(Eventually([&] { return Report(second).diagnostics() ==
                                      "AM container is launched, waiting for AM container to Register with RM"; }));
}

// Loom's 128 MB AM: seven fit the 896 MB AM share of the recorded queue, the eighth waits.
TEST_F(SchedulerTest, SevenSmallAmsShareTheRecordedAmLimit) {
  Start(Options(1, -1));
  std::vector<ypb::ApplicationIdProto> apps;
  for (int i = 0; i < 8; ++i) apps.push_back(Submit(128));
  ASSERT_TRUE(Eventually([&] { return !Report(apps[7]).diagnostics().empty(); }));
  for (int i = 0; i < 7; ++i) EXPECT_EQ(Report(apps[i]).diagnostics(), "") << i;
  EXPECT_THAT(
      Report(apps[7]).diagnostics(),
      HasSubstr("Queue's AM resource limit exceeded.  Details : AM Partition = <DEFAULT_PARTITION>; AM Resource "
                "Request = <memory:128, vCores:1>; Queue Resource Limit for AM = <memory:896, vCores:1>; User "
                "AM Resource Limit of the queue = <memory:896, vCores:1>; Queue AM Resource Usage = "
                "<memory:896, vCores:7>; "));  // usage sums the vcores of the seven AMs
}

// ---- placement on NodeManager heartbeats ---------------------------------------------------------

TEST_F(SchedulerTest, OffSwitchAsksGetOneContainerPerNodeHeartbeat) {
  Start(Options(2, -1));
  ypb::ApplicationIdProto app = Submit(128);
  std::unique_ptr<hadoop::AmRmClient> am;
  ASSERT_NO_FATAL_FAILURE(PlayAmOf(app, &am));  // the AM container
  std::vector<ypb::ResourceRequestProto> asks;
  for (int64_t id = 1; id <= 4; ++id) asks.push_back(Ask("*", id, 1024));
  auto first = am->Allocate(asks, {}, 0);
  ASSERT_OK(first);
  EXPECT_EQ(first->allocated_containers_size(), 0);  // nothing before a NodeManager heartbeats
  std::set<std::string> nodes;
  for (int beat = 0; beat < 4; ++beat) {
    auto placed = double_->NodeHeartbeatForTest(beat % 2);
    ASSERT_OK(placed);
    EXPECT_EQ(*placed, 1) << "heartbeat " << beat;
    auto r = am->Allocate({}, {}, 0);
    ASSERT_OK(r);
    ASSERT_EQ(r->allocated_containers_size(), 1) << "heartbeat " << beat;
    nodes.insert(hadoop::NodeIdString(r->allocated_containers(0).nodeid()));
    // One NMToken per node, with the first container there.
    EXPECT_EQ(r->nm_tokens_size(), beat < 2 ? 1 : 0);
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"localhost:" + std::to_string(double_->nm_port(0)),
                                          "127.0.0.2:" + std::to_string(double_->nm_port(1))}));
  auto none = double_->NodeHeartbeatForTest(0);
  ASSERT_OK(none);
  EXPECT_EQ(*none, 0);
}

TEST_F(SchedulerTest, NodeLocalAsksAreAllPlacedInOneHeartbeat) {
  Start(Options(2, -1));
  ypb::ApplicationIdProto app = Submit(128);
  std::unique_ptr<hadoop::AmRmClient> am;
  ASSERT_NO_FATAL_FAILURE(PlayAmOf(app, &am));
  const std::string host1 = double_->node_host(1);
  EXPECT_EQ(host1, "127.0.0.2");
  std::vector<ypb::ResourceRequestProto> asks = LocalAsksOfTasks(host1, 4, 2048);
  ASSERT_OK(am->Allocate(asks, {}, 0));
  // Node 0 heartbeats first: nothing goes there while the asks wait for their host.
  auto on0 = double_->NodeHeartbeatForTest(0);
  ASSERT_OK(on0);
  EXPECT_EQ(*on0, 0);
  auto on1 = double_->NodeHeartbeatForTest(1);
  ASSERT_OK(on1);
  EXPECT_EQ(*on1, 4);  // 4 x 2048 MB fill node 1 in one heartbeat
  auto r = am->Allocate({}, {}, 0);
  ASSERT_OK(r);
  ASSERT_EQ(r->allocated_containers_size(), 4);
  std::set<int64_t> ids;
  for (const auto& c : r->allocated_containers()) {
    EXPECT_EQ(hadoop::NodeIdString(c.nodeid()), host1 + ":" + std::to_string(double_->nm_port(1)));
    ids.insert(c.allocation_request_id());
  }
  EXPECT_EQ(ids, (std::set<int64_t>{1, 2, 3, 4}));
  ASSERT_EQ(r->nm_tokens_size(), 1);
  EXPECT_EQ(r->nm_tokens(0).nodeid().host(), host1);
  EXPECT_EQ(r->nm_tokens(0).token().service(), "127.0.0.2:" + std::to_string(double_->nm_port(1)));
}

// A full node: after as many missed opportunities as there are nodes the task goes rack-local.
TEST_F(SchedulerTest, AskForAFullNodeGoesRackLocalAfterTheLocalityDelay) {
  Start(Options(2, -1));
  ypb::ApplicationIdProto app = Submit(128);
  std::unique_ptr<hadoop::AmRmClient> am;
  ASSERT_NO_FATAL_FAILURE(PlayAmOf(app, &am));  // the AM on node 0
  const std::string host0 = double_->node_host(0);
  std::vector<ypb::ResourceRequestProto> asks = LocalAsks(host0, 1, 8192);  // never fits beside the AM
  for (auto& a : LocalAsks(host0, 2, 8192)) asks.push_back(a);
  ASSERT_OK(am->Allocate(asks, {}, 0));
  EXPECT_EQ(*double_->NodeHeartbeatForTest(1), 0);  // missed 1
  EXPECT_EQ(*double_->NodeHeartbeatForTest(0), 0);  // missed 2: no room there
  EXPECT_EQ(*double_->NodeHeartbeatForTest(1), 1);  // missed 3 > 2 nodes: rack-local on node 1
  auto r = am->Allocate({}, {}, 0);
  ASSERT_OK(r);
  ASSERT_EQ(r->allocated_containers_size(), 1);
  EXPECT_EQ(r->allocated_containers(0).nodeid().host(), "127.0.0.2");
}

TEST_F(SchedulerTest, QueueMaximumCapacityCapsWhatItsApplicationsGet) {
  YarnTestDouble::Options o = Options(2, -1);
  o.queues = {{"small", 0.5f, 0.5f, 0.5f}};  // 8192 of 16384 MB
  Start(o);
  ypb::ApplicationIdProto app = Submit(1024, "exec sleep 300", "small");
  std::unique_ptr<hadoop::AmRmClient> am;
  ASSERT_NO_FATAL_FAILURE(PlayAmOf(app, &am));
  std::vector<ypb::ResourceRequestProto> asks = LocalAsksOfTasks(double_->node_host(1), 3, 3072);
  auto first = am->Allocate(asks, {}, 0);
  ASSERT_OK(first);
  EXPECT_EQ(first->limit().memory(), 8192 - 1024);  // headroom within the queue's maximum
  EXPECT_EQ(*double_->NodeHeartbeatForTest(1), 2);  // 1024 + 2 x 3072 = 7168; a third would pass 8192
  EXPECT_EQ(*double_->NodeHeartbeatForTest(1), 0);
}

// The CapacityScheduler goes through an application's scheduler keys in order and ends its turn
// on a heartbeat at the first key whose container may not go to that node yet (its asks name
// other hosts, the locality delay has not passed: LOCALITY_SKIPPED). Measured on a real 2-node
// cluster: 4 workers asked under a key each on h1, h2, h1, h2 got one container per heartbeat;
// a control run with consecutive keys for one node got 3 in one heartbeat. One key holding a
// gang's totals per host gives each node its share in one heartbeat.
TEST_F(SchedulerTest, AnApplicationsTurnEndsAtItsFirstKeyForAnotherNode) {
  YarnTestDouble::Options o = Options(2, -1);
  o.node_vcores = 16;  // room for the AM and every gang
  Start(o);
  ypb::ApplicationIdProto app = Submit(128);
  std::unique_ptr<hadoop::AmRmClient> am;
  ASSERT_NO_FATAL_FAILURE(PlayAmOf(app, &am));
  const std::string h0 = double_->node_host(0), h1 = double_->node_host(1);

  std::vector<ypb::ResourceRequestProto> alternate;  // a key per task, on h0, h1, h0, h1
  for (int64_t id = 1; id <= 4; ++id) {
    for (auto& a : LocalAsks(id % 2 ? h0 : h1, id, 512)) alternate.push_back(a);
  }
  ASSERT_OK(am->Allocate(alternate, {}, 0));
  for (int beat = 0; beat < 4; ++beat) EXPECT_EQ(*double_->NodeHeartbeatForTest(beat % 2), 1) << "heartbeat " << beat;
  EXPECT_EQ(AllocateUntil(*am, 4).size(), 4u);

  std::vector<ypb::ResourceRequestProto> consecutive;  // the control: three keys, all on h1
  for (int64_t id = 20; id <= 22; ++id) {
    for (auto& a : LocalAsks(h1, id, 512)) consecutive.push_back(a);
  }
  ASSERT_OK(am->Allocate(consecutive, {}, 0));
  EXPECT_EQ(*double_->NodeHeartbeatForTest(1), 3);
  EXPECT_EQ(AllocateUntil(*am, 3).size(), 3u);

  // One key for a gang of 4: 2 on each host, 4 on the rack and anywhere.
  ASSERT_OK(am->Allocate({Ask(h0, 30, 512, 2), Ask(h1, 30, 512, 2), Ask("/default-rack", 30, 512, 4),
                          Ask("*", 30, 512, 4)},
                         {}, 0));
  EXPECT_EQ(*double_->NodeHeartbeatForTest(1), 2);
  EXPECT_EQ(*double_->NodeHeartbeatForTest(0), 2);
  EXPECT_EQ(AllocateUntil(*am, 4).size(), 4u);
}

// Hadoop 2.8 (yarn-captures hadoop2/h285-am-rm-allocate-failing): two tasks asked at priority 1,
// told apart only by allocation_request_id 1 and 2. The RM drops the field, the second task's
// asks replace the first's, and the one container comes back without a request id.
TEST_F(SchedulerTest, Hadoop28KeepsOneAskPerPriorityAndLocation) {
  YarnTestDouble::Options o = Options(1, -1);
  o.hadoop_2_8 = true;
  Start(o);
  ypb::ApplicationIdProto app = Submit(128);
  std::unique_ptr<hadoop::AmRmClient> am;
  ASSERT_NO_FATAL_FAILURE(PlayAmOf(app, &am));
  std::vector<ypb::ResourceRequestProto> asks = LocalAsksOfTasks(double_->node_host(0), 2, 1024);
  ASSERT_OK(am->Allocate(asks, {}, 0));
  EXPECT_EQ(double_->AskedForTest(app.id(), "*"), 1);
  EXPECT_EQ(*double_->NodeHeartbeatForTest(0), 1);
  auto got = AllocateUntil(*am, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].has_allocation_request_id());
  EXPECT_EQ(got[0].priority().priority(), 1);
}

// ---- several NodeManagers ----------------------------------------------------------------------

TEST_F(SchedulerTest, EachNodeManagerRunsItsOwnContainers) {
  Start(Options(2, -1));
  OnNode1 placed;
  ASSERT_NO_FATAL_FAILURE(PlaceOnNode1(&placed));
  auto& am = placed.am;
  const ypb::ContainerProto& c = placed.container;
  std::string node = hadoop::NodeIdString(c.nodeid());
  auto token = am->NmToken(node);
  ASSERT_TRUE(token.has_value());
  std::string out = work_.string() + "/env.txt";
  ypb::ContainerLaunchContextProto clc;
  clc.add_command("env > " + out + "; exec sleep 300");
  ASSERT_OK(hadoop::NmClient::StartContainer(c, *token, clc));
  ASSERT_TRUE(
      Eventually([&] { return PathExists(out) && ReadFile(out).value_or("").find("PWD=") != std::string::npos; }));
  std::string env = ReadFile(out).value_or("");
  EXPECT_THAT(env, HasSubstr("NM_HOST=127.0.0.2\n"));
  EXPECT_THAT(env, HasSubstr("NM_PORT=" + std::to_string(double_->nm_port(1)) + "\n"));
  EXPECT_THAT(env, HasSubstr("PWD=" + work_.string() + "/yarn/nm1/nm-local/usercache/root/appcache/"));
  EXPECT_THAT(env, HasSubstr("LOG_DIRS=" + work_.string() + "/yarn/nm1/logs/"));
  // Node 0's NodeManager does not know it.
  ypb::ContainerProto elsewhere = c;
  elsewhere.mutable_nodeid()->set_host("localhost");
  elsewhere.mutable_nodeid()->set_port(double_->nm_port(0));
  EXPECT_STATUS(hadoop::NmClient::GetContainerStatus(elsewhere, *token), kAborted,
                HasSubstr("is not handled by this NodeManager"));
  for (const auto& info : double_->Containers()) {
    if (info.id == hadoop::ContainerIdString(c.id())) {
      EXPECT_EQ(info.node, 1);
    }
  }
}

// ---- a NodeManager that disappears -------------------------------------------------------------

TEST_F(SchedulerTest, LostNodeIsReportedAndItsContainersEndAborted) {
  YarnTestDouble::Options o = Options(2, -1);
  o.nm_liveness_expiry_ms = 300;
  Start(o);
  OnNode1 placed;
  ASSERT_NO_FATAL_FAILURE(PlaceOnNode1(&placed));
  const ypb::ApplicationIdProto& app = placed.app;
  auto& am = placed.am;
  const ypb::ContainerProto& c = placed.container;
  ASSERT_OK(hadoop::NmClient::StartContainer(c, *am->NmToken(hadoop::NodeIdString(c.nodeid())), [] {
    ypb::ContainerLaunchContextProto clc;
    clc.add_command("exec sleep 300");
    return clc;
  }()));
  std::string id = hadoop::ContainerIdString(c.id());
  pid_t pid = -1;
  ASSERT_TRUE(Eventually([&] {
    for (const auto& c : double_->Containers()) {
      if (c.id == id) pid = c.pid;
    }
    return pid > 0;
  }));

  auto lost_at = std::chrono::steady_clock::now();
  ASSERT_OK(double_->LoseNodeForTest(1));
  EXPECT_TRUE(Eventually([&] { return ::kill(pid, 0) != 0; }));  // its processes are gone at once
  EXPECT_STATUS(double_->NodeHeartbeatForTest(1), kFailedPrecondition, HasSubstr("lost"));
  // Until the liveness expiry the RM still counts the node and the container.
  ypb::ContainerStatusProto ended;
  std::vector<ypb::NodeReportProto> updated;
  ASSERT_TRUE(Eventually([&] {
    auto r = am->Allocate({}, {}, 0);
    EXPECT_OK(r);
    if (!r.ok()) return false;
    updated.insert(updated.end(), r->updated_nodes().begin(), r->updated_nodes().end());
    for (const auto& s : r->completed_container_statuses()) ended = s;
    return ended.has_container_id();
  }));
  EXPECT_GE(std::chrono::steady_clock::now() - lost_at, 300ms);
  EXPECT_EQ(hadoop::ContainerIdString(ended.container_id()), id);
  EXPECT_EQ(ended.state(), ypb::C_COMPLETE);
  EXPECT_EQ(ended.exit_status(), -100);  // ContainerExitStatus.ABORTED
  EXPECT_EQ(ended.diagnostics(), "Container released on a *lost* node");
  ASSERT_EQ(updated.size(), 1u);
  EXPECT_EQ(updated[0].nodeid().host(), "127.0.0.2");
  EXPECT_EQ(updated[0].node_state(), ypb::NS_LOST);

  auto running = rm_->GetClusterNodes();
  ASSERT_OK(running);
  ASSERT_EQ(running->size(), 1u);
  EXPECT_EQ((*running)[0].nodeid().host(), "localhost");
  auto all = rm_->GetClusterNodes({});
  ASSERT_OK(all);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].node_state(), ypb::NS_LOST);
  auto metrics = rm_->GetClusterMetrics();
  ASSERT_OK(metrics);
  EXPECT_EQ(metrics->num_active_nms(), 1);
  EXPECT_EQ(metrics->num_lost_nms(), 1);
  EXPECT_EQ(Report(app).yarn_application_state(), ypb::RUNNING);  // its AM is on node 0
}

TEST_F(SchedulerTest, AmOnALostNodeFailsItsApplication) {
  YarnTestDouble::Options o = Options(1, -1);
  o.nm_liveness_expiry_ms = 200;
  Start(o);
  ypb::ApplicationIdProto app = Submit(128);
  ASSERT_TRUE(Eventually([&] { return Report(app).yarn_application_state() == ypb::ACCEPTED; }));
  ASSERT_EQ(*double_->NodeHeartbeatForTest(0), 1);
  ASSERT_TRUE(Eventually([&] { return !double_->LiveContainerProcesses().empty(); }));
  ASSERT_OK(double_->LoseNodeForTest(0));
  ASSERT_OK(double_->WaitForAppEnd(hadoop::ApplicationIdString(app), 10s));
  ypb::ApplicationReportProto r = Report(app);
  EXPECT_EQ(r.yarn_application_state(), ypb::FAILED);
  EXPECT_THAT(r.diagnostics(), HasSubstr("exited with  exitCode: -100\nFailing this attempt.Diagnostics: Container "
                                         "released on a *lost* nodeFor more detailed output"));
}

// ---- getApplications -----------------------------------------------------------------------------

TEST_F(SchedulerTest, ApplicationsByStateAndTag) {
  Start(Options(1, -1));
  ypb::ApplicationIdProto tagged = Submit(128, "exec sleep 300", "default", "Loom-Job:job_1");
  ypb::ApplicationIdProto other = Submit(128, "exec sleep 300", "default", "loom-job:job_2");
  ASSERT_OK(rm_->KillApplication(other, ""));
  auto by_tag = rm_->GetApplications({}, {"loom-job:job_1"});
  ASSERT_OK(by_tag);
  ASSERT_EQ(by_tag->size(), 1u);
  EXPECT_EQ(hadoop::ApplicationIdString((*by_tag)[0].applicationid()), hadoop::ApplicationIdString(tagged));
  // Not yet ended: an application just submitted may still be SUBMITTED for a moment, as on YARN.
  auto live = rm_->GetApplications({ypb::NEW, ypb::NEW_SAVING, ypb::SUBMITTED, ypb::ACCEPTED, ypb::RUNNING});
  ASSERT_OK(live);
  ASSERT_EQ(live->size(), 1u);
  EXPECT_EQ(hadoop::ApplicationIdString((*live)[0].applicationid()), hadoop::ApplicationIdString(tagged));
  auto all = rm_->GetApplications();
  ASSERT_OK(all);
  EXPECT_EQ(all->size(), 2u);
}

}  // namespace
}  // namespace loom::yarn_double
