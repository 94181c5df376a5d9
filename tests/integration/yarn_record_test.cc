// The job's record on YARN is always true: the AM's copy in HDFS is the truth, a client that
// cannot reach the AM follows that copy, and nothing writes over it with less. On the YARN test
// double (or a real cluster, see yarn_double_cluster.h).

#include <gmock/gmock.h>

#include "cluster/yarn/yarn_job_submitter.h"
#include "core/files.h"
#include "core/testing.h"
#include "hadoop/hdfs/webhdfs.h"
#include "history/event_log.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A gateway that cannot resolve or reach the AM's node (measured on a real multi-host cluster:
// every task row ended KILLED with no address, `loom logs` found no container, and the client's
// partial copy of 8 events replaced the AM's 11 in HDFS). The double's application reports name
// a TEST-NET address for the AM, which no machine answers; the executors still reach the AM.
TEST(YarnRecord, ClientThatCannotReachTheAmFollowsItsRecordInHdfs) {
  LOOM_REQUIRE_YARN_DOUBLE("application reports that name an AM host the client cannot reach");
  YarnDoubleCluster cluster([](yarn_double::YarnTestDouble::Options& o) { o.am_host_in_reports = "192.0.2.1"; });
  RunResult r = cluster.Submit({"--src_dir", MiniLoom::Source(kScripts), "--executes",
                                "fail_with.py", "--python_binary_path", "/usr/bin/python3", "--task_params",
                                "--task nobody:0 --others-sleep 3 --lines 2", "--conf", "loom.worker.instances=2",
                                "--conf", "loom.am.memory=512m", "--conf", "loom.worker.memory=512m"});
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  EXPECT_EQ(Count(r.out + r.err, "does not answer from here"), 1u) << r.out << r.err;  // said once

  history::JobView view = cluster.loom().View(id);
  EXPECT_EQ(view.state, "SUCCEEDED");
  ASSERT_EQ(view.tasks.size(), 2u);
  for (const history::TaskView& t : view.tasks) {
    EXPECT_EQ(t.state, TaskState::kSucceeded) << t.id << ": " << t.diagnostics;
    EXPECT_FALSE(t.address.empty()) << t.id;
    EXPECT_FALSE(t.container.empty()) << t.id;
  }

  // The record in HDFS holds every line of the AM's, and more of it never went missing: each
  // task registered and succeeded there, and the AM's own end is in it.
  auto record = cluster::yarn::YarnJobRecord::Read(history::JobDir(cluster.loom().home() + "/jobs/" + id));
  ASSERT_OK(record.status());
  auto in_hdfs = hadoop::WebHdfs(cluster.namenode(), cluster.user()).Open(record->staging_dir + "/history/events.jsonl");
  ASSERT_OK(in_hdfs.status());
  for (const std::string task : {"worker:0", "worker:1"}) {
    EXPECT_THAT(*in_hdfs, HasSubstr("\"state\":\"REGISTERED\",\"task\":\"" + task + "\"")) << *in_hdfs;
    EXPECT_THAT(*in_hdfs, HasSubstr("\"state\":\"SUCCEEDED\",\"task\":\"" + task + "\"")) << *in_hdfs;
  }
  EXPECT_THAT(*in_hdfs, HasSubstr("\"event\":\"JOB_FINISHED\"")) << *in_hdfs;
  EXPECT_GT(record->am_events_offset, 0) << "the AM's events never reached the client";

  // `loom logs` finds each task's container from that record.
  RunResult logs = cluster.loom().Run({"logs", id, "--task", "worker:1"}, cluster.Env());
  EXPECT_EQ(logs.exit_code, 0) << logs.out << logs.err;
  EXPECT_THAT(logs.out, HasSubstr("worker:1 stdout line 2/2")) << logs.err;
  EXPECT_THAT(logs.err, Not(HasSubstr("has no container yet")));
  // A log that exists nowhere is not a success (it exited 0).
  RunResult none = cluster.loom().Run({"logs", id, "--task", "worker:1", "--file", "no-such.log"}, cluster.Env());
  EXPECT_EQ(none.exit_code, 1) << none.out << none.err;
  EXPECT_THAT(none.err, HasSubstr("worker:1 no-such.log"));
}

// `loom logs APP -f` from another $LOOM_HOME right after submit (measured on a real cluster: no
// task output for the whole job, 3 of 3 runs): the job found there knows no task yet, and the
// follower has to take up each task as the record names it.
TEST(YarnRecord, LogsFollowFromAnotherHomeRightAfterSubmitPrintsEveryTask) {
  YarnDoubleCluster cluster;
  Subprocess submit = cluster.loom().Start(
      {"submit", "--cluster", "yarn", "--src_dir", MiniLoom::Source(kScripts), "--executes",
       "fail_with.py", "--python_binary_path", "/usr/bin/python3", "--task_params",
       "--task nobody:0 --others-sleep 4 --lines 2", "--conf", "loom.worker.instances=2", "--conf",
       "loom.am.memory=512m", "--conf", "loom.worker.memory=512m"},
      "submit", cluster.Env());
  std::string app;
  ASSERT_TRUE(loom::testing::Eventually(
      [&] {
        auto ids = cluster.loom().JobIds();
        if (ids.empty()) return false;
        auto record = cluster::yarn::YarnJobRecord::Read(cluster.loom().Dir(ids[0]));
        if (!record.ok() || !record->submitted || record->application_id.empty()) return false;
        app = record->application_id;
        return true;
      },
      std::chrono::seconds(60)));
  MiniLoom elsewhere;
  RunResult follow = elsewhere.Run({"logs", app, "-f"}, cluster.Env());
  RunResult r = cluster.loom().Collect(submit, "submit");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(follow.exit_code, 0) << follow.out << follow.err;
  for (const std::string task : {"worker:0", "worker:1"}) {
    EXPECT_THAT(follow.out, HasSubstr("[" + task + "] " + task + " stdout line 2/2")) << follow.out << follow.err;
  }
}

// A ResourceManager restarted without a state store forgets every application, while HDFS
// keeps the job's record and its aggregated logs (measured on a real cluster: `status` and
// `logs APP` from another home failed; `yarn logs` still showed them).
TEST(YarnRecord, AnApplicationTheResourceManagerForgotIsFoundByItsRecordInHdfs) {
  LOOM_REQUIRE_YARN_DOUBLE("a ResourceManager restart without a state store");
  YarnDoubleCluster cluster([](yarn_double::YarnTestDouble::Options& o) { o.log_aggregation = "TFile"; });
  RunResult r = cluster.Submit({"--conf", "loom.worker.instances=1", "--conf", "loom.worker.memory=256m", "--conf",
                                "loom.worker.command=/bin/sh -c 'echo before the restart'"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string app = cluster.ApplicationId(cluster.loom().OnlyJobId());
  ASSERT_OK(cluster.WaitForAppEnd(cluster.loom().OnlyJobId(), std::chrono::seconds(30)));
  ASSERT_TRUE(loom::testing::Eventually([&] { return !cluster.hdfs().ListRecursive("/tmp/logs").empty(); }, std::chrono::seconds(30)));
  ASSERT_OK(cluster.yarn().ForgetEndedApplicationsForTest());

  MiniLoom elsewhere;
  RunResult status = elsewhere.Run({"status", app}, cluster.Env());
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_THAT(status.out, HasSubstr("SUCCEEDED"));
  EXPECT_THAT(status.out, HasSubstr("worker:0  SUCCEEDED"));
  RunResult logs = elsewhere.Run({"logs", app, "--task", "worker:0"}, cluster.Env());
  EXPECT_EQ(logs.exit_code, 0) << logs.out << logs.err;
  EXPECT_THAT(logs.out, HasSubstr("before the restart"));
  RunResult unknown = elsewhere.Run({"status", "application_1795000000000_0077"}, cluster.Env());
  EXPECT_EQ(unknown.exit_code, 2) << unknown.out << unknown.err;
  EXPECT_THAT(unknown.err, HasSubstr("YARN does not know application_1795000000000_0077, and HDFS has no record of it"));
}

// A gang restart (loom.am.retry-count) runs every task in a new container: `loom logs` shows the
// earlier attempt's output too, as `yarn logs` does (it showed only the last attempt).
TEST(YarnRecord, LogsOfARestartedGangShowEveryAttempt) {
  YarnDoubleCluster cluster;
  // worker:1 fails in the first attempt only, which its restart count tells it on any cluster.
  RunResult r = cluster.Submit(
      {"--conf", "loom.am.retry-count=1", "--conf", "loom.worker.instances=2", "--conf", "loom.worker.memory=256m",
       "--conf",
       "loom.worker.command=/bin/sh -c 'echo \"attempt $LOOM_RESTART_COUNT of $TASK_INDEX\"; if [ \"$TASK_INDEX\" = 1 ] "
       "&& [ \"$LOOM_RESTART_COUNT\" = 0 ]; then exit 3; fi'"});
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  ASSERT_EQ(cluster.loom().View(id).attempt, 1);
  RunResult logs = cluster.loom().Run({"logs", id, "--task", "worker:1"}, cluster.Env());
  EXPECT_EQ(logs.exit_code, 0) << logs.out << logs.err;
  size_t first = logs.out.find("attempt 0 of 1"), second = logs.out.find("attempt 1 of 1");
  EXPECT_NE(first, std::string::npos) << logs.out << logs.err;
  EXPECT_NE(second, std::string::npos) << logs.out << logs.err;
  EXPECT_LT(first, second) << logs.out;  // oldest first
  EXPECT_THAT(logs.out, HasSubstr("worker:1 (earlier container container_")) << logs.out;
}

// `loom submit` right after a ResourceManager restart, before the NodeManagers registered again
// (it exited 2, "no running NodeManager"): it waits for them, bounded, and says so.
TEST(YarnRecord, SubmitRightAfterAnRmRestartWaitsForTheNodeManagers) {
  LOOM_REQUIRE_YARN_DOUBLE("NodeManagers that register late, as after an RM restart");
  YarnDoubleCluster cluster([](yarn_double::YarnTestDouble::Options& o) { o.nodes_register_after_ms = 2000; });
  RunResult r = cluster.Submit(Confs({"loom.worker.instances=1", "loom.worker.memory=256m", "loom.worker.command=true"}));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("has no running NodeManager (just restarted?); waiting up to 60 s for them to register"));
}

// `loom status` of a running YARN job whose ResourceManager does not answer, and of an
// application id that only that ResourceManager could name: exit 1, "the cluster could not be
// reached" as the README says (it was 2, a usage error, and 0 for a job last seen running).
TEST(YarnRecord, StatusExitsOneWhenTheResourceManagerCannotBeAsked) {
  MiniLoom loom;
  history::JobDir dir(loom.home() + "/jobs/job_20261126000000_dead");
  ASSERT_OK(MakeDirs(dir.tasks_dir()));
  ASSERT_OK(WriteFileAtomic(dir.job_json(), R"({"job_id": "job_20261126000000_dead", "backend": "yarn", "name": "n"})"));
  history::EventLog log(dir.events());
  ASSERT_OK(log.Append("JOB_SUBMITTED", {{"job_id", "job_20261126000000_dead"}, {"tasks", {"worker:0"}}}));
  ASSERT_OK(log.Append("TASK_STATE", {{"task", "worker:0"}, {"state", "RUNNING"}}));
  cluster::yarn::YarnJobRecord record{"application_1795000000000_0001", "127.0.0.1:1", "root",
                                      "/user/root/.loom/application_1795000000000_0001", "http://127.0.0.1:1"};
  record.last_state = "RUNNING";
  ASSERT_OK(record.Write(dir));
  RunResult status = loom.Run({"status", "job_20261126000000_dead"});
  EXPECT_EQ(status.exit_code, 1) << status.out << status.err;
  EXPECT_THAT(status.err, HasSubstr("cannot ask the yarn backend"));
  EXPECT_THAT(status.out, HasSubstr("RUNNING"));  // what was last seen, still shown

  std::string conf = loom.home() + "/conf";
  ASSERT_OK(MakeDirs(conf));
  ASSERT_OK(WriteFileAtomic(conf + "/yarn-site.xml",
                            "<configuration><property><name>yarn.resourcemanager.address</name>"
                            "<value>127.0.0.1:1</value></property></configuration>\n"));
  ASSERT_OK(WriteFileAtomic(conf + "/core-site.xml",
                            "<configuration><property><name>fs.defaultFS</name>"
                            "<value>hdfs://127.0.0.1:1</value></property></configuration>\n"));
  RunResult by_app = loom.Run({"status", "application_1795000000000_0002"}, {{"HADOOP_CONF_DIR", conf}});
  EXPECT_EQ(by_app.exit_code, 1) << by_app.out << by_app.err;
  EXPECT_THAT(by_app.err, HasSubstr("127.0.0.1:1"));
}

}  // namespace
}  // namespace loom::testing
