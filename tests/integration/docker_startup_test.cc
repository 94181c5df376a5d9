// Issue 9 item 2, "every key Loom accepts does what it says, or is refused": Docker on the local
// backend (refused at submit), and loom.am.startup-timeout on YARN (the test double's queue
// holding a job ACCEPTED) and locally (a job QUEUED for memory). The real `loom` binary.

#include <signal.h>

#include <gmock/gmock.h>

#include "core/testing.h"
#include "history/event_log.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
namespace ypb = ::hadoop::yarn;

// The local backend runs tasks as plain processes: a job that asks for an image is refused
// before anything starts, naming the key as the user wrote it, with or without a daemon here.
TEST(DockerOnLocal, IsRefusedAtSubmitNamingTheKeyAsWritten) {
  MiniLoom loom;
  // No daemon at this socket, whatever this machine has.
  std::map<std::string, std::string> env = {{"DOCKER_HOST", "unix://" + loom.home() + "/no-docker.sock"}};
  RunResult r = loom.Run({"submit", "--src_dir", MiniLoom::Source(kScripts), "--executes", "fail_with.py",
                          "--python_binary_path", "/usr/bin/python3", "--conf", "tony.worker.instances=1", "--conf",
                          "tony.docker.enabled=true", "--conf", "tony.docker.containers.image=repo/train:1"},
                         env);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("tony.docker.enabled=true (from --conf): no Docker daemon answers here (" +
                               loom.home() + "/no-docker.sock)"));
  EXPECT_THAT(r.err, HasSubstr("the local backend runs tasks as plain processes on this machine, never in a Docker image"));
  EXPECT_TRUE(loom.JobIds().empty());
  // Without the key the same job runs.
  RunResult plain = loom.Run({"submit", "--src_dir", MiniLoom::Source(kScripts), "--executes", "fail_with.py",
                              "--python_binary_path", "/usr/bin/python3", "--task_params", "--task worker:9", "--conf",
                              "tony.worker.instances=1"},
                             env);
  EXPECT_EQ(plain.exit_code, 0) << plain.out << plain.err;
}

std::vector<std::string> SleepJob(const std::string& am_memory, std::vector<std::string> extra) {
  std::vector<std::string> args = {"submit", "--cluster", "yarn", "--src_dir", MiniLoom::Source(kScripts),
                                   "--executes", "sleep_forever.py", "--python_binary_path", "/usr/bin/python3",
                                   "--conf", "loom.worker.instances=1", "--conf", "loom.worker.memory=512m",
                                   "--conf", "loom.am.memory=" + am_memory, "--conf", "loom.task.stop-grace-ms=500"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// One 8 GiB node whose queue's AM share is 896 MiB: a job with a 1 GiB AM runs, a second one
// waits ACCEPTED ("Queue's AM resource limit exceeded") as long as the first runs.
std::function<void(yarn_double::YarnTestDouble::Options&)> HeldByTheAmShare() {
  return [](yarn_double::YarnTestDouble::Options& o) {
    o.node_memory_mb = 8192;
    o.nm_heartbeat_ms = 100;
  };
}

// The job whose backend state says the queue holds it, once there is one.
std::string HeldJob(YarnDoubleCluster& cluster, const std::string& other) {
  std::string held;
  loom::testing::Eventually(
      [&] {
        for (const auto& id : cluster.loom().JobIds()) {
          if (id != other && cluster.loom().View(id).backend_state.find("AM resource limit") != std::string::npos) {
            held = id;
          }
        }
        return !held.empty();
      },
      30s);
  return held;
}

// The submitting client enforces it: the held job ends FAILED naming the timeout and YARN's
// reason, its application is killed and its staging cleaned; a job whose AM started in time
// (the first) is not touched by the same timeout.
TEST(AmStartupTimeout, YarnJobStillAcceptedIsEndedByItsClient) {
  LOOM_REQUIRE_YARN_DOUBLE("a queue whose AM share holds the second job");
  YarnDoubleCluster cluster(HeldByTheAmShare());
  Subprocess first =
      cluster.loom().Start(SleepJob("1g", {"--conf", "loom.am.startup-timeout=3000"}), "first", cluster.Env());
  std::string first_id = cluster.loom().WaitUntilRunning(1, 60s);
  ASSERT_FALSE(first_id.empty()) << cluster.ContainerLogs("am.log");
  Subprocess second =
      cluster.loom().Start(SleepJob("1g", {"--conf", "tony.am.startup-timeout=3000"}), "second", cluster.Env());
  std::string second_id = HeldJob(cluster, first_id);
  ASSERT_FALSE(second_id.empty());
  bool ended = loom::testing::Eventually([&] { return cluster.loom().View(second_id).final; }, 30s);
  if (!ended) ::kill(second.pid(), SIGKILL);  // it would wait for the first job forever
  RunResult r = cluster.loom().Collect(second, "second");
  ASSERT_TRUE(ended) << "the held job never ended:\n" << r.out << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  // In the user's spelling: the second job said tony.*.
  const std::string why = "the AM did not start within tony.am.startup-timeout=3000 ms (YARN: still ACCEPTED: ";
  EXPECT_THAT(r.out, HasSubstr(why));
  EXPECT_THAT(r.out, HasSubstr("Queue's AM resource limit exceeded"));
  history::JobView view = cluster.loom().View(second_id);
  EXPECT_EQ(view.state, "FAILED");
  EXPECT_THAT(view.diagnostics, HasSubstr(why));
  // The job's own record agrees (YARN's report says KILLED: the client killed the application).
  EXPECT_THAT(r.out, HasSubstr("job FAILED"));
  std::vector<std::string> finished;
  for (const auto& e : history::ReadEvents(cluster.loom().Dir(second_id).events())) {
    if (e.value("event", "") == "JOB_FINISHED") finished.push_back(e.value("state", "?"));
  }
  EXPECT_EQ(finished, std::vector<std::string>{"FAILED"});
  EXPECT_EQ(cluster.Report(second_id).yarn_application_state(), ypb::KILLED);
  std::string staging = cluster.StagingRoot() + "/" + cluster.ApplicationId(second_id) + "/";
  for (const std::string& f : cluster.StagingFiles()) {
    if (!f.starts_with(staging)) continue;
    EXPECT_TRUE(f.find("/history/") != std::string::npos || f.ends_with("/config.xml")) << f;
  }
  // The first job's AM started in time; it runs on, well past the same 3 s.
  EXPECT_EQ(cluster.loom().View(first_id).state, "RUNNING");
  EXPECT_EQ(cluster.Report(first_id).yarn_application_state(), ypb::RUNNING);
  ::kill(first.pid(), SIGINT);
  EXPECT_EQ(cluster.loom().Collect(first, "first").exit_code, 1);
}

// With no client following it (killed with -9), the next `loom status` enforces it.
TEST(AmStartupTimeout, YarnJobWithoutItsClientIsEndedByTheNextStatus) {
  LOOM_REQUIRE_YARN_DOUBLE("a queue whose AM share holds the second job");
  YarnDoubleCluster cluster(HeldByTheAmShare());
  Subprocess first = cluster.loom().Start(SleepJob("1g", {}), "first", cluster.Env());
  std::string first_id = cluster.loom().WaitUntilRunning(1, 60s);
  ASSERT_FALSE(first_id.empty()) << cluster.ContainerLogs("am.log");
  Subprocess second = cluster.loom().Start(SleepJob("1g", {"--quiet", "--conf", "loom.am.startup-timeout=2000"}),
                                           "second", cluster.Env());
  std::string second_id = HeldJob(cluster, first_id);
  ASSERT_FALSE(second_id.empty());
  ::kill(second.pid(), SIGKILL);
  (void)second.Wait();
  RunResult early = cluster.loom().Run({"status", second_id}, cluster.Env());
  // What is tested is time passing with nobody watching the job: there is no condition to wait for.
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(cluster.Report(second_id).yarn_application_state(), ypb::ACCEPTED) << "nothing ended it by itself";
  RunResult status = cluster.loom().Run({"status", second_id}, cluster.Env());
  EXPECT_EQ(status.exit_code, 1) << status.out << status.err;
  EXPECT_THAT(status.out, HasSubstr("FAILED"));
  EXPECT_THAT(status.out, HasSubstr("the AM did not start within loom.am.startup-timeout=2000 ms (YARN: still ACCEPTED: "));
  EXPECT_EQ(cluster.Report(second_id).yarn_application_state(), ypb::KILLED);
  // Before the timeout, status only looked.
  EXPECT_THAT(early.out, HasSubstr("ACCEPTED"));
  EXPECT_THAT(early.out, ::testing::Not(HasSubstr("did not start")));
  ::kill(first.pid(), SIGINT);
  EXPECT_EQ(cluster.loom().Collect(first, "first").exit_code, 1);
}

// Locally a job QUEUED for memory has not started either.
TEST(AmStartupTimeout, LocalJobStillQueuedIsEnded) {
  MiniLoom loom;
  auto job = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"submit", "--src_dir", MiniLoom::Source(kScripts), "--executes",
                                     "sleep_forever.py", "--python_binary_path", "/usr/bin/python3", "--conf",
                                     "loom.local.memory=4g", "--conf", "loom.worker.instances=1", "--conf",
                                     "loom.worker.memory=3g", "--conf", "loom.task.stop-grace-ms=500"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  Subprocess first = loom.Start(job({"--conf", "loom.am.startup-timeout=2000"}), "first");
  std::string first_id = loom.WaitUntilRunning(1, 30s);
  ASSERT_FALSE(first_id.empty());
  Subprocess second = loom.Start(job({"--conf", "loom.am.startup-timeout=2000"}), "second");
  std::string second_id;
  bool ended = loom::testing::Eventually(
      [&] {
        for (const auto& id : loom.JobIds()) {
          if (id != first_id) second_id = id;
        }
        return !second_id.empty() && loom.View(second_id).final;
      },
      30s);
  if (!ended) ::kill(second.pid(), SIGKILL);  // it would wait for the first job forever
  RunResult r = loom.Collect(second, "second");
  ASSERT_TRUE(ended) << "the queued job never ended:\n" << r.out << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("the AM did not start within loom.am.startup-timeout=2000 ms (local: still QUEUED, "
                               "position 1: waiting for 3.0 GiB of memory"));
  EXPECT_EQ(loom.View(second_id).state, "FAILED");
  // One end, the same everywhere: the follower's lines, events.jsonl and status.json.
  EXPECT_THAT(r.out, HasSubstr("job FAILED"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("job KILLED")));
  std::vector<std::string> finished;
  for (const auto& e : history::ReadEvents(loom.Dir(second_id).events())) {
    if (e.value("event", "") == "JOB_FINISHED") finished.push_back(e.value("state", "?"));
  }
  EXPECT_EQ(finished, std::vector<std::string>{"FAILED"});
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(second_id).empty(); }, 10s));
  // The first job's AM started at once; it runs on past the same timeout.
  EXPECT_EQ(loom.View(first_id).state, "RUNNING");
  ::kill(first.pid(), SIGINT);
  EXPECT_EQ(loom.Collect(first, "first").exit_code, 1);
}

}  // namespace
}  // namespace loom::testing
