// Queues and capacity on YARN (issue "YARN in daily use", items 7-10): an unknown queue or a
// gang that can never fit is refused before anything is staged; the AM asks little, so that
// concurrent jobs fit a stock queue's AM share; a job held by that share shows YARN's reason;
// a gang lands in few NodeManager heartbeats. The real `loom` binary against the YARN test
// double (tests/yarn_double), which models the recorded CapacityScheduler.

#include <signal.h>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "core/testing.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
namespace ypb = ::hadoop::yarn;

std::vector<std::string> SleepJob(int workers, const std::string& worker_memory, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"submit", "--cluster", "yarn", "--quiet", "--src_dir", MiniLoom::Source(kScripts),
                                   "--executes", "sleep_forever.py", "--python_binary_path", "/usr/bin/python3",
                                   "--conf", "loom.worker.instances=" + std::to_string(workers), "--conf",
                                   "loom.worker.memory=" + worker_memory, "--conf", "loom.task.stop-grace-ms=500"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Interrupts the client of the job started as "first" (which ends it: exit 1), then waits for the
// one started as "second", which must succeed; the second's result.
RunResult EndFirstThenCollectSecond(YarnDoubleCluster& cluster, Subprocess& first, Subprocess& second) {
  ::kill(first.pid(), SIGINT);
  EXPECT_EQ(cluster.loom().Collect(first, "first").exit_code, 1);
  RunResult r = cluster.loom().Collect(second, "second");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return r;
}

TEST(YarnQueue, UnknownQueueIsRefusedBeforeAnythingIsStaged) {
  YarnDoubleCluster cluster;
  RunResult r = cluster.loom().Run(SleepJob(1, "512m", {"--conf", "tony.yarn.queue=nosuch"}), cluster.Env());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("unknown YARN queue 'nosuch'"));
  EXPECT_THAT(r.err, HasSubstr("default"));  // the queues there are
  EXPECT_TRUE(cluster.loom().JobIds().empty());
  EXPECT_TRUE(cluster.JobStagingFiles().empty()) << cluster.JobStagingFiles().front();
  if (!cluster.real()) {
    EXPECT_TRUE(cluster.yarn().ApplicationIds().empty());
  }
}

TEST(YarnQueue, GangThatCanNeverFitIsRefusedAtSubmit) {
  // Sized to the cluster: workers of half its largest node each fit a node, but one more of
  // them than its memory holds can never run all at once (the double: two 16 GiB nodes).
  YarnDoubleCluster cluster;
  int64_t total_mb = 0, largest_mb = 0;
  for (const auto& n : cluster.RunningNodes()) {
    total_mb += n.capability().memory();
    largest_mb = std::max<int64_t>(largest_mb, n.capability().memory());
  }
  ASSERT_GT(largest_mb, 0);
  const int64_t each_mb = largest_mb / 2;
  const int workers = static_cast<int>(total_mb / each_mb) + 1;
  RunResult r = cluster.loom().Run(SleepJob(workers, std::to_string(each_mb) + "m"), cluster.Env());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr(std::to_string(workers) + " worker"));
  EXPECT_THAT(r.err, HasSubstr("its tasks would wait forever"));
  EXPECT_TRUE(cluster.loom().JobIds().empty());
  EXPECT_TRUE(cluster.JobStagingFiles().empty());
  if (!cluster.real()) {
    EXPECT_TRUE(cluster.yarn().ApplicationIds().empty());
  }
}

TEST(YarnQueue, FourJobsRunAtOnceOnAStockQueue) {
  LOOM_REQUIRE_YARN_DOUBLE("the recorded cluster: one 8 GiB node, an AM share of 10%");
  // The recorded cluster: one 8 GiB node, the default queue's AM share 10% (896 MiB).
  YarnDoubleCluster cluster([](auto& o) {
    o.node_memory_mb = 8192;
    o.nm_heartbeat_ms = 100;
  });
  std::vector<Subprocess> submits;
  for (int i = 0; i < 4; ++i) {
    submits.push_back(cluster.loom().Start(SleepJob(1, "512m"), "submit" + std::to_string(i), cluster.Env()));
  }
  ASSERT_TRUE(loom::testing::Eventually(
      [&] {
        auto ids = cluster.loom().JobIds();
        if (ids.size() < 4) return false;
        for (const auto& id : ids) {
          if (cluster.loom().View(id).state != "RUNNING") return false;
        }
        return true;
      },
      60s))
      << cluster.ContainerLogs("am.log");
  for (const auto& id : cluster.loom().JobIds()) {
    EXPECT_EQ(cluster.Report(id).yarn_application_state(), ypb::RUNNING) << id;
  }
  for (size_t i = 0; i < submits.size(); ++i) {
    ::kill(submits[i].pid(), SIGINT);
    EXPECT_EQ(cluster.loom().Collect(submits[i], "submit" + std::to_string(i)).exit_code, 1);
  }
}

TEST(YarnQueue, JobHeldByTheQueueAmShareShowsYarnsReason) {
  LOOM_REQUIRE_YARN_DOUBLE("one 8 GiB node whose queue AM share is 896 MiB");
  YarnDoubleCluster cluster([](auto& o) {
    o.node_memory_mb = 8192;
    o.nm_heartbeat_ms = 100;
  });
  // The first application is always activated; the second waits while 1 GiB + 1 GiB > 896 MiB.
  Subprocess first = cluster.loom().Start(SleepJob(1, "512m", {"--conf", "loom.am.memory=1g"}), "first", cluster.Env());
  std::string first_id = cluster.loom().WaitUntilRunning(1, 60s);
  ASSERT_FALSE(first_id.empty()) << cluster.ContainerLogs("am.log");
  Subprocess second = cluster.loom().Start(
      {"submit", "--cluster", "yarn", "--src_dir", MiniLoom::Source(kScripts), "--executes", "fail_with.py",
       "--python_binary_path", "/usr/bin/python3", "--task_params", "--task worker:9", "--conf",
       "loom.worker.instances=1", "--conf", "loom.worker.memory=512m", "--conf", "loom.am.memory=1g"},
      "second", cluster.Env());
  std::string second_id;
  ASSERT_TRUE(loom::testing::Eventually(
      [&] {
        for (const auto& id : cluster.loom().JobIds()) {
          if (id != first_id && cluster.loom().View(id).backend_state.find("AM resource limit") != std::string::npos) {
            second_id = id;
          }
        }
        return !second_id.empty();
      },
      30s));
  RunResult status = cluster.loom().Run({"status", second_id}, cluster.Env());
  EXPECT_THAT(status.out, HasSubstr("ACCEPTED"));
  EXPECT_THAT(status.out, HasSubstr("Queue's AM resource limit exceeded"));
  // Once the first job ends, the second runs, and its client showed the reason as it waited.
  RunResult r = EndFirstThenCollectSecond(cluster, first, second);
  EXPECT_THAT(r.out, HasSubstr("Queue's AM resource limit exceeded"));
}

TEST(YarnQueue, EightTasksLandInOneHeartbeatPerNode) {
  LOOM_REQUIRE_YARN_DOUBLE("NodeManager heartbeats driven by the test");
  // The NodeManagers heartbeat only when the test says so. The CapacityScheduler places one
  // OFF_SWITCH container per heartbeat; node-local asks let each node take all it can at once.
  YarnDoubleCluster cluster([](auto& o) {
    o.node_count = 2;
    o.node_memory_mb = 8192;
    o.nm_heartbeat_ms = -1;
  });
  Subprocess submit = cluster.loom().Start(SleepJob(8, "256m"), "submit", cluster.Env());
  auto heartbeat_all = [&] {
    for (int n = 0; n < cluster.yarn().node_count(); ++n) (void)cluster.yarn().NodeHeartbeatForTest(n);
  };
  auto task_containers = [&] {
    int n = 0;
    for (const auto& c : cluster.yarn().Containers()) n += !c.is_am;
    return n;
  };
  auto allocates = [&] {
    int n = 0;
    for (const auto& m : cluster.yarn().ServedMethods()) n += m == "allocate";
    return n;
  };
  // Heartbeats until the AM's container is placed; then none until the AM has sent its asks.
  ASSERT_TRUE(loom::testing::Eventually(
      [&] {
        heartbeat_all();
        for (const auto& c : cluster.yarn().Containers()) {
          if (c.is_am) return true;
        }
        return false;
      },
      30s));
  ASSERT_TRUE(loom::testing::Eventually([&] { return allocates() >= 3; }, 30s)) << cluster.ContainerLogs("am.log");
  ASSERT_EQ(task_containers(), 0);
  heartbeat_all();
  EXPECT_EQ(task_containers(), 8) << "one heartbeat per node should place the whole gang";
  std::string id = cluster.loom().JobIds().empty() ? "" : cluster.loom().JobIds().front();
  EXPECT_TRUE(loom::testing::Eventually([&] { return cluster.loom().View(id).state == "RUNNING"; }, 30s));
  ::kill(submit.pid(), SIGINT);
  cluster.loom().Collect(submit, "submit");
}

TEST(YarnQueue, GangWaitingForCapacitySaysWhichTasksArePendingAndWhy) {
  LOOM_REQUIRE_YARN_DOUBLE("one 8 GiB node");
  YarnDoubleCluster cluster([](auto& o) {
    o.node_memory_mb = 8192;
    o.nm_heartbeat_ms = 100;
  });
  Subprocess first = cluster.loom().Start(SleepJob(1, "6g"), "first", cluster.Env());
  std::string first_id = cluster.loom().WaitUntilRunning(1, 60s);
  ASSERT_FALSE(first_id.empty()) << cluster.ContainerLogs("am.log");
  // Fits the cluster on its own, not beside the first job: it waits, and says so.
  Subprocess second = cluster.loom().Start(
      {"submit", "--cluster", "yarn", "--src_dir", MiniLoom::Source(kScripts), "--executes", "fail_with.py",
       "--python_binary_path", "/usr/bin/python3", "--task_params", "--task worker:9", "--conf",
       "loom.worker.instances=1", "--conf", "loom.worker.memory=4g"},
      "second", cluster.Env());
  std::string second_id;
  RunResult status;
  ASSERT_TRUE(loom::testing::Eventually(
      [&] {
        for (const auto& id : cluster.loom().JobIds()) {
          if (id != first_id) second_id = id;
        }
        if (second_id.empty()) return false;
        status = cluster.loom().Run({"status", second_id}, cluster.Env());
        return status.out.find("worker:0 waiting") != std::string::npos;
      },
      30s))
      << status.out << cluster.ContainerLogs("am.log");
  EXPECT_THAT(status.out, HasSubstr("4g"));
  RunResult r = EndFirstThenCollectSecond(cluster, first, second);
  EXPECT_THAT(r.out, HasSubstr("waiting for containers:"));
  EXPECT_THAT(r.out, HasSubstr("worker:0 ("));
}

}  // namespace
}  // namespace loom::testing
