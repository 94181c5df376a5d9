// YarnContainerBroker against the YARN test double's CapacityScheduler: a gang spread over the
// nodes of the manifest's snapshot with node-local asks arrives in one heartbeat round (asking
// for "*" it needs one heartbeat per container), pending tasks say why they wait, and tasks
// asked for on a node that is lost are asked for elsewhere.

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>
#include <mutex>

#include "cluster/recording_container_events.h"
#include "cluster/yarn/yarn_container_broker.h"
#include "core/eventually.h"
#include "core/test_dir.h"
#include "core/testing.h"
#include "hadoop/ipc/yarn_clients.h"
#include "yarn_test_double.h"

using ::loom::testing::Eventually;

namespace loom::cluster::yarn {
namespace {

namespace ypb = ::hadoop::yarn;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

class BrokerLocalityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = loom::testing::MakeTestDir("loom-locality");
  }
  void TearDown() override {
    broker_.reset();
    if (double_) double_->Stop();
    double_.reset();
    std::filesystem::remove_all(work_);
  }

  // A double with `nodes` NodeManagers and an application whose AM container runs a sleep:
  // the test's broker acts as that application's AM.
  void StartCluster(int nodes, int heartbeat_ms, int64_t node_mb = 8192, int liveness_ms = 2000,
                    bool hadoop_2_8 = false) {
    yarn_double::YarnTestDouble::Options o;
    o.hadoop_2_8 = hadoop_2_8;
    o.work_dir = work_.string() + "/yarn";
    o.node_memory_mb = node_mb;
    o.node_vcores = 16;
    o.node_count = nodes;
    o.nm_heartbeat_ms = heartbeat_ms;
    o.nm_liveness_expiry_ms = liveness_ms;
    double_ = std::make_unique<yarn_double::YarnTestDouble>(o);
    ASSERT_OK(double_->Start());
    rm_ = std::make_unique<hadoop::ApplicationClient>("127.0.0.1", double_->rm_port(), "root");
    app_ = SubmitApp(heartbeat_ms < 0);
  }

  // An application whose AM container (on a heartbeat; `beat`: the test's, on node 0) runs a sleep.
  ypb::ApplicationIdProto SubmitApp(bool beat) {
    auto fresh = rm_->GetNewApplication();
    EXPECT_OK(fresh);
    ypb::ApplicationIdProto app = fresh.value_or(ypb::GetNewApplicationResponseProto{}).application_id();
    ypb::ApplicationSubmissionContextProto asc;
    *asc.mutable_application_id() = app;
    asc.mutable_resource()->set_memory(128);
    asc.mutable_resource()->set_virtual_cores(1);
    asc.mutable_am_container_spec()->add_command("exec sleep 300");
    EXPECT_OK(rm_->SubmitApplication(asc));
    std::string am = "container_" + hadoop::ApplicationIdString(app).substr(12) + "_01_000001";
    auto has_am = [&] {
      for (const auto& c : double_->Containers()) {
        if (c.id == am) return true;
      }
      return false;
    };
    if (beat) {
      EXPECT_TRUE(Eventually([&] {
        auto r = rm_->GetApplicationReport(app);
        return r.ok() && r->yarn_application_state() == ypb::ACCEPTED;
      }));
      EXPECT_OK(double_->NodeHeartbeatForTest(0));  // the AM container, on node 0
    }
    EXPECT_TRUE(Eventually(has_am));
    return app;
  }

  YarnBrokerOptions Options(bool with_nodes) { return Options(app_, with_nodes); }
  YarnBrokerOptions Options(const ypb::ApplicationIdProto& app, bool with_nodes) {
    YarnBrokerOptions o;
    o.manifest.scheduler = "127.0.0.1:" + std::to_string(double_->scheduler_port());
    o.manifest.application_id = hadoop::ApplicationIdString(app);
    if (with_nodes) {
      auto nodes = rm_->GetClusterNodes();
      EXPECT_OK(nodes);
      o.manifest.nodes = ManifestNodes(nodes.value_or(std::vector<ypb::NodeReportProto>{}));
    }
    auto token = double_->AmRmToken(hadoop::ApplicationIdString(app));
    EXPECT_OK(token);
    o.amrm_token = token.value_or(hadoop::Token{});
    o.nm_host = "localhost";
    o.heartbeat = 100ms;
    o.fast_heartbeat = 10ms;
    return o;
  }

  void StartBroker(YarnBrokerOptions o) {
    broker_ = std::make_unique<YarnContainerBroker>(std::move(o));
    ASSERT_OK(broker_->Start(&events_));
  }

  // Shutdown's wait for the containers' release runs on the broker's clock: on a FakeClock,
  // the clock moves until the broker is gone.
  void ShutDownTicking(FakeClock& clock) {
    std::atomic<bool> done{false};
    std::thread ticker([&] {
      while (!done) {
        clock.Advance(10ms);
        std::this_thread::yield();
      }
    });
    broker_.reset();
    done = true;
    ticker.join();
  }

  void RequestWorkers(int n, Resources r) {
    for (int i = 0; i < n; ++i) ASSERT_OK(broker_->Request({TaskId{"worker", i}, r, ""}));
  }

  std::filesystem::path work_;
  std::unique_ptr<yarn_double::YarnTestDouble> double_;
  std::unique_ptr<hadoop::ApplicationClient> rm_;
  ypb::ApplicationIdProto app_;
  RecordingContainerEvents events_;
  std::unique_ptr<YarnContainerBroker> broker_;
};

TEST(ManifestNodes, RunningNodesRoundTripThroughTheManifest) {
  ypb::NodeReportProto running, lost;
  running.mutable_nodeid()->set_host("n1");
  running.mutable_nodeid()->set_port(45454);
  running.set_rackname("/rack-a");
  running.mutable_capability()->set_memory(8192);
  running.mutable_capability()->set_virtual_cores(4);
  running.mutable_used()->set_memory(2048);
  running.mutable_used()->set_virtual_cores(1);
  running.set_node_state(ypb::NS_RUNNING);
  lost = running;
  lost.mutable_nodeid()->set_host("n2");
  lost.set_node_state(ypb::NS_LOST);
  StagingManifest m;
  m.fs_scheme = "hdfs";
  m.scheduler = "rm:8030";
  m.nodes = ManifestNodes({running, lost});
  ASSERT_EQ(m.nodes.size(), 1u);
  auto back = StagingManifest::FromJson(m.ToJson().dump());
  ASSERT_OK(back);
  ASSERT_EQ(back->nodes.size(), 1u);
  EXPECT_EQ(back->nodes[0].host, "n1");
  EXPECT_EQ(back->nodes[0].rack, "/rack-a");
  EXPECT_EQ(back->nodes[0].memory_mb, 8192);
  EXPECT_EQ(back->nodes[0].used_memory_mb, 2048);
  // A manifest without nodes (an older client) still reads.
  StagingManifest none = m;
  none.nodes.clear();
  auto old = StagingManifest::FromJson(none.ToJson().dump());
  ASSERT_OK(old);
  EXPECT_TRUE(old->nodes.empty());
}

// The tests below on a Hadoop 2.9+ ResourceManager and on a 2.8 one (no allocation_request_id:
// one ask per priority and location), issue 22.
class OnEveryHadoopTest : public BrokerLocalityTest, public ::testing::WithParamInterface<bool> {};

// Issue 8 item 10: 8 tasks asked for "*" arrive one per NodeManager heartbeat; spread over the
// nodes with node-local asks, each node takes its share in its next heartbeat.
TEST_P(OnEveryHadoopTest, GangSpreadOverTheNodesArrivesInOneHeartbeatRound) {
  constexpr int kBeatMs = 250;
  StartCluster(2, kBeatMs, 8192, 2000, /*hadoop_2_8=*/GetParam());
  StartBroker(Options(/*with_nodes=*/true));
  auto start = std::chrono::steady_clock::now();
  RequestWorkers(8, {1024, 1, 0});
  std::vector<Container> got = events_.WaitAllocated(8);
  auto local_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  ASSERT_EQ(got.size(), 8u);
  std::map<std::string, int> per_host;
  for (const Container& c : got) ++per_host[c.host];
  EXPECT_EQ(per_host, (std::map<std::string, int>{{"127.0.0.2", 4}, {"localhost", 4}}));
  EXPECT_TRUE(broker_->PendingRequests().empty());
  broker_.reset();

  // The same gang of another application asking for "*" only (no node snapshot): one
  // container per heartbeat.
  RecordingContainerEvents any_events;
  auto o = Options(SubmitApp(false), /*with_nodes=*/false);
  broker_ = std::make_unique<YarnContainerBroker>(std::move(o));
  ASSERT_OK(broker_->Start(&any_events));
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < 8; ++i) ASSERT_OK(broker_->Request({TaskId{"worker", i}, {1024, 1, 0}, ""}));
  size_t any_count = any_events.WaitAllocated(8).size();
  auto any_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  broker_.reset();  // before `any_events` goes
  EXPECT_EQ(any_count, 8u);
  EXPECT_GE(any_ms.count(), 3 * kBeatMs);  // 4 rounds of 2 heartbeats, the first possibly at once
  EXPECT_LT(local_ms.count(), 3 * kBeatMs);
  EXPECT_LT(local_ms, any_ms);
}

// Issue 18 item 5: the gang is asked for in the AM's first allocate after registering, not in a
// second one behind an empty first (an RPC round trip, and on a busy RM more). On a FakeClock
// that stands still until the asks are in: a first allocate that waited for a heartbeat
// instead of the asks would go out empty or never.
TEST_P(OnEveryHadoopTest, TheFirstAllocateCarriesTheWholeGang) {
  StartCluster(2, 50, 8192, 2000, /*hadoop_2_8=*/GetParam());
  FakeClock clock;
  YarnBrokerOptions o = Options(/*with_nodes=*/true);
  o.clock = &clock;
  o.heartbeat = 1s;  // a cluster's default
  StartBroker(std::move(o));
  std::vector<ContainerRequest> gang;
  for (int i = 0; i < 4; ++i) gang.push_back({TaskId{"worker", i}, {1024, 1, 0}, ""});
  ASSERT_OK(broker_->RequestAll(gang));
  auto allocates = [&] {  // what each allocate asked for, in order
    std::vector<int64_t> asked;
    for (const auto& call : double_->ServedCalls()) {
      if (call.server == "scheduler" && call.method == "allocate") asked.push_back(call.any_asked);
    }
    return asked;
  };
  ASSERT_TRUE(Eventually([&] { return !allocates().empty(); })) << "no allocate while the clock stood still";
  EXPECT_EQ(allocates().front(), 4) << "allocates' asks for \"*\": " << ::testing::PrintToString(allocates());
  // The fast heartbeat (10 ms on the clock) brings the containers the NodeManagers took.
  ASSERT_TRUE(Eventually([&] {
    clock.Advance(10ms);
    return events_.WaitFor([&] { return events_.allocated.size() == 4; }, 2ms);
  }));
  ShutDownTicking(clock);
}

// The tasks' waiting times and the pending reports on a FakeClock: the heartbeat runs when the
// test moves the clock, and the times are exactly what it moved.
TEST_P(OnEveryHadoopTest, PendingTasksSayWhatTheyWaitFor) {
  StartCluster(2, 50, /*node_mb=*/4096, 2000, /*hadoop_2_8=*/GetParam());
  FakeClock clock;
  std::mutex mu;
  std::vector<std::vector<PendingRequest>> reports;
  YarnBrokerOptions o = Options(true);
  o.clock = &clock;
  o.pending_report_interval = 10s;  // the default
  o.on_pending = [&](const std::vector<PendingRequest>& p) {
    std::lock_guard<std::mutex> lock(mu);
    reports.push_back(p);
  };
  StartBroker(std::move(o));
  const Clock::TimePoint asked = clock.Now();
  // Node 1 takes one 4096 MB worker; node 0 holds the 128 MB AM, so nothing else fits. The
  // fast heartbeat (10 ms) comes as the clock moves.
  RequestWorkers(3, {4096, 1, 0});
  auto tick = [&] {
    clock.Advance(10ms);
    return events_.WaitFor([&] { return !events_.allocated.empty(); }, 2ms);
  };
  ASSERT_TRUE(Eventually(tick));
  std::vector<PendingRequest> waiting;
  ASSERT_TRUE(Eventually([&] {
    clock.Advance(10ms);
    waiting = broker_->PendingRequests();
    return waiting.size() == 2 && waiting[0].reason.find("headroom") != std::string::npos;
  })) << (waiting.empty() ? "" : waiting[0].ToString());
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(clock.Now() - asked);
  EXPECT_EQ(waiting[0].task.type, "worker");
  EXPECT_EQ(waiting[0].resources.memory_mib, 4096);
  EXPECT_THAT(waiting[0].reason, HasSubstr("the queue's headroom is 3968 MiB"));  // 8192 - 128 - 4096
  EXPECT_THAT(waiting[0].ToString(), HasSubstr("worker:"));
  EXPECT_EQ(waiting[0].waited, waited);  // both asked at once, and only the clock's time counts
  EXPECT_EQ(waiting[1].waited, waited);
  ASSERT_LT(waited, 10s);
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(reports.empty()) << "a report before its interval";
  }
  // The interval passes: the next heartbeat reports both, with the time waited so far.
  clock.Advance(10s);
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return !reports.empty();
  }));
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(reports[0].size(), 2u);
    EXPECT_EQ(reports[0][0].waited, waited + 10s);
  }
  ShutDownTicking(clock);
}

// Issue 18 item 3: 4 workers of 1 GiB spread over 2 NodeManagers. The CapacityScheduler stops
// an application's turn at its first scheduler key with nothing for the heartbeating node, so
// with a key per task (asked on h1, h2, h1, h2) each heartbeat placed one container. One key
// for the gang: each node's first heartbeat places its whole share, whichever beats first.
class GangHeartbeatTest : public BrokerLocalityTest, public ::testing::WithParamInterface<bool> {};

TEST_P(GangHeartbeatTest, EachNodeTakesItsShareOfTheGangInItsFirstHeartbeat) {
  StartCluster(2, /*heartbeat_ms=*/-1, 8192, 2000, /*hadoop_2_8=*/GetParam());
  StartBroker(Options(true));
  RequestWorkers(4, {1024, 1, 0});
  // Wait until the RM holds the asks (the broker sends them on its next allocate).
  ASSERT_TRUE(Eventually([&] {
    return double_->AskedForTest(app_.id(), "localhost") == 2 && double_->AskedForTest(app_.id(), "127.0.0.2") == 2;
  })) << double_->AskedForTest(app_.id(), "*") << " asked in all";
  EXPECT_EQ(double_->AskedForTest(app_.id(), "*"), 4);
  auto second = double_->NodeHeartbeatForTest(1);  // the node asked for second beats first
  ASSERT_OK(second);
  EXPECT_EQ(*second, 2);
  auto first = double_->NodeHeartbeatForTest(0);
  ASSERT_OK(first);
  EXPECT_EQ(*first, 2);
  std::vector<Container> got = events_.WaitAllocated(4);
  ASSERT_EQ(got.size(), 4u);
  std::map<std::string, int> per_host;
  for (const Container& c : got) ++per_host[c.host];
  EXPECT_EQ(per_host, (std::map<std::string, int>{{"127.0.0.2", 2}, {"localhost", 2}}));
  std::set<std::string> tasks;
  for (const Container& c : got) tasks.insert(c.task.ToString());
  EXPECT_EQ(tasks.size(), 4u);  // one container per task
  // Nothing is asked any more: the totals went down with each container.
  EXPECT_TRUE(Eventually([&] { return double_->AskedForTest(app_.id(), "*") == 0; }));
  EXPECT_TRUE(broker_->PendingRequests().empty());
}

// Tasks of two shapes: each container goes to a task of its own size, also from an RM that
// knows no allocation_request_id (Hadoop 2.8: containers come back with their priority alone).
TEST_P(GangHeartbeatTest, ContainersOfTwoShapesReachTasksOfTheirShape) {
  StartCluster(2, /*heartbeat_ms=*/-1, 8192, 2000, /*hadoop_2_8=*/GetParam());
  StartBroker(Options(true));
  ASSERT_OK(broker_->Request({TaskId{"worker", 0}, {1024, 1, 0}, ""}));
  ASSERT_OK(broker_->Request({TaskId{"ps", 0}, {2048, 1, 0}, ""}));
  ASSERT_OK(broker_->Request({TaskId{"worker", 1}, {1024, 1, 0}, ""}));
  ASSERT_TRUE(Eventually([&] { return double_->AskedForTest(app_.id(), "*") == 3; }));
  ASSERT_OK(double_->NodeHeartbeatForTest(0));
  ASSERT_OK(double_->NodeHeartbeatForTest(1));
  ASSERT_OK(double_->NodeHeartbeatForTest(0));
  ASSERT_OK(double_->NodeHeartbeatForTest(1));
  std::vector<Container> got = events_.WaitAllocated(3);
  ASSERT_EQ(got.size(), 3u);
  std::map<std::string, int64_t> memory;
  for (const auto& c : double_->Containers()) memory[c.id] = c.memory_mb;
  for (const Container& c : got) {
    EXPECT_EQ(memory[c.id], c.task.type == "ps" ? 2048 : 1024) << c.task.ToString() << " got " << c.id;
  }
  EXPECT_TRUE(Eventually([&] { return double_->AskedForTest(app_.id(), "*") == 0; }));
  EXPECT_TRUE(events_.Errors().empty());
}


TEST_P(GangHeartbeatTest, TasksAskedOnALostNodeAreAskedForElsewhere) {
  StartCluster(2, /*heartbeat_ms=*/-1, 8192, /*liveness_ms=*/100, /*hadoop_2_8=*/GetParam());
  StartBroker(Options(true));
  RequestWorkers(2, {1024, 1, 0});
  // Spread: one on each node (node 1 has the most room, then node 0).
  ASSERT_TRUE(Eventually([&] {
    auto p = broker_->PendingRequests();
    return p.size() == 2 && p[0].node != p[1].node;
  }));
  ASSERT_OK(double_->LoseNodeForTest(1));
  // The RM reports node 1 LOST through allocate; the broker moves its task to node 0.
  ASSERT_TRUE(Eventually([&] {
    auto p = broker_->PendingRequests();
    return p.size() == 2 && p[0].node == "localhost" && p[1].node == "localhost";
  }));
  ASSERT_TRUE(Eventually([&] { return double_->AskedForTest(app_.id(), "localhost") == 2; }));  // asked again
  auto placed = double_->NodeHeartbeatForTest(0);
  ASSERT_OK(placed);
  EXPECT_EQ(*placed, 2);  // both node-local, in one heartbeat
  std::vector<Container> got = events_.WaitAllocated(2);
  ASSERT_EQ(got.size(), 2u);
  for (const Container& c : got) EXPECT_EQ(c.host, "localhost");
  EXPECT_TRUE(events_.Errors().empty());
}

std::string HadoopName(const ::testing::TestParamInfo<bool>& info) {
  return info.param ? std::string("2_8") : std::string("2_9_and_later");
}
INSTANTIATE_TEST_SUITE_P(Hadoop, GangHeartbeatTest, ::testing::Bool(), HadoopName);
INSTANTIATE_TEST_SUITE_P(Hadoop, OnEveryHadoopTest, ::testing::Bool(), HadoopName);

}  // namespace
}  // namespace loom::cluster::yarn
