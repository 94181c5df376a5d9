// loom.history.location (TonY's tony.history.location): every job's final record at
// <location>/<job id>/ once it ended, on the YARN test double (HDFS, written by the AM and
// then by the client that followed or killed the job) and on the local backend (a local
// directory), and what `loom portal`'s mirror makes of it. Bad values stop `loom submit`.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "core/eventually.h"
#include "core/files.h"
#include "core/strings.h"
#include "hadoop/hdfs/webhdfs.h"
#include "history/job_view.h"
#include "kerberized_cluster.h"
#include "mini_loom.h"
#include "portal/history_mirror.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

using ::testing::UnorderedElementsAre;
using nlohmann::json;

const std::vector<std::string> kRecord = {"config.xml", "events.jsonl", "job.json", "metrics.jsonl", "status.json"};

// The record's files, and only those: metrics.jsonl where a task was sampled (a job of a moment
// may have no sample), the rest always.
void ExpectRecord(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    EXPECT_TRUE(std::find(kRecord.begin(), kRecord.end(), name) != kRecord.end()) << name;
  }
  for (const char* always : {"config.xml", "events.jsonl", "job.json", "status.json"}) {
    EXPECT_TRUE(std::find(names.begin(), names.end(), always) != names.end()) << always << " missing";
  }
}

std::vector<std::string> HdfsNames(hadoop::WebHdfs& fs, const std::string& dir) {
  std::vector<std::string> names;
  if (auto list = fs.ListStatus(dir); list.ok()) {
    for (const auto& e : *list) names.push_back(e.path_suffix);
  }
  return names;
}

std::vector<std::string> LocalNames(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  return names;
}

json StatusOf(const std::string& text) { return json::parse(text, nullptr, false); }

TEST(HistoryLocation, AYarnJobsRecordIsInTheLocationAndTheMirrorReadsIt) {
  YarnDoubleCluster cluster;
  const std::string location = "/user/" + cluster.user() + "/loom-history-" + std::to_string(::getpid());
  RunResult r = cluster.Submit({"--conf", "loom.worker.instances=1", "--conf", "loom.worker.memory=256m", "--conf",
                                "loom.worker.command=/bin/sh -c 'echo recorded'", "--conf",
                                "tony.history.location=hdfs://" + location});
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");

  hadoop::WebHdfs fs(cluster.namenode(), cluster.user());
  // Written before `loom submit` returned: the AM's, then the client's over it.
  EXPECT_THAT(HdfsNames(fs, location), UnorderedElementsAre(id));
  ExpectRecord(HdfsNames(fs, location + "/" + id));
  auto status = fs.Open(location + "/" + id + "/status.json");
  ASSERT_OK(status.status());
  EXPECT_EQ(StatusOf(*status).value("state", ""), "SUCCEEDED") << *status;
  EXPECT_EQ(StatusOf(*status).value("job_id", ""), id) << *status;
  auto events = fs.Open(location + "/" + id + "/events.jsonl");
  ASSERT_OK(events.status());
  EXPECT_THAT(*events, HasSubstr("\"event\":\"JOB_FINISHED\""));
  if (!cluster.real()) {
    // Two writers: the AM as it ended, then the client, each status.json under its own name.
    int statuses = 0;
    for (const std::string& f : cluster.hdfs().CreatedFiles()) {
      if (f.find(location + "/" + id + "/.status.json.tmp-") == 0) ++statuses;
    }
    EXPECT_EQ(statuses, 2) << Join(cluster.hdfs().CreatedFiles(), "\n");
  }
  // No secret of the job is there: the record's files only, and none holds the job secret.
  std::string secret = ReadFile(cluster.loom().Dir(id).secret()).value_or("");
  EXPECT_TRUE(secret.empty()) << "the client keeps no secret of an ended job";

  // The portal's mirror: a job dir that the history reader takes as it is.
  const std::string cache = cluster.root() + "/portal-cache";
  portal::HistoryMirror mirror(cluster.namenode(), cluster.user(), location, cache);
  auto synced = mirror.SyncOnce();
  ASSERT_OK(synced.status());
  EXPECT_EQ(synced->copied, 1);
  auto view = history::LoadJobView(history::JobDir(cache + "/" + id));
  ASSERT_OK(view.status());
  EXPECT_EQ(view->state, "SUCCEEDED");
  ASSERT_EQ(view->tasks.size(), 1u);
  EXPECT_EQ(view->tasks[0].state, TaskState::kSucceeded);
}

TEST(HistoryLocation, AKilledYarnJobsRecordIsTheClients) {
  YarnDoubleCluster cluster;
  const std::string location = "/user/" + cluster.user() + "/loom-history-kill-" + std::to_string(::getpid());
  Subprocess submit = cluster.loom().Start(
      {"submit", "--cluster", "yarn", "--conf", "loom.worker.instances=1", "--conf", "loom.worker.memory=256m",
       "--conf", "loom.worker.command=sleep 600", "--conf", "loom.task.stop-grace-ms=1000", "--conf",
       "loom.history.location=" + location},
      "submit", cluster.Env());
  std::string id = cluster.loom().WaitUntilRunning(1, 60s);
  ASSERT_FALSE(id.empty()) << cluster.ContainerLogs("am.log");
  RunResult kill = cluster.loom().Run({"kill", id}, cluster.Env());
  EXPECT_EQ(kill.exit_code, 0) << kill.out << kill.err;
  RunResult r = cluster.loom().Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  history::JobView local = cluster.loom().View(id);
  ASSERT_EQ(local.state, "KILLED");

  hadoop::WebHdfs fs(cluster.namenode(), cluster.user());
  std::string text;
  ASSERT_TRUE(loom::testing::Eventually(
      [&] {
        auto status = fs.Open(location + "/" + id + "/status.json");
        if (status.ok()) text = *status;
        return status.ok();
      },
      10s));
  // The client's status.json, which knows why the job was killed.
  EXPECT_EQ(StatusOf(text).value("state", ""), "KILLED") << text;
  EXPECT_EQ(StatusOf(text).value("diagnostics", ""), local.diagnostics) << text;
  EXPECT_THAT(local.diagnostics, HasSubstr("loom kill"));
  // The AM may still be writing its own copy (a temporary file it then drops, since the
  // client's end is there): the record settles to its files alone.
  std::vector<std::string> names;
  EXPECT_TRUE(loom::testing::Eventually(
      [&] {
        names = HdfsNames(fs, location + "/" + id);
        return std::all_of(names.begin(), names.end(), [](const std::string& n) {
          return std::find(kRecord.begin(), kRecord.end(), n) != kRecord.end();
        });
      },
      10s))
      << ::testing::PrintToString(names);
  ExpectRecord(names);
}

TEST(HistoryLocation, ABadValueStopsTheSubmissionNamingTheKey) {
  MiniLoom loom;
  auto submit = [&](const std::string& key_value, const std::vector<std::string>& backend) {
    std::vector<std::string> args = {"submit"};
    args.insert(args.end(), backend.begin(), backend.end());
    for (std::string& arg : Confs({"loom.worker.instances=1", "loom.worker.command=true", key_value})) args.push_back(arg);
    return loom.Run(args);
  };
  RunResult s3 = submit("tony.history.location=s3://bucket/history", {});
  EXPECT_EQ(s3.exit_code, 2) << s3.out << s3.err;
  EXPECT_THAT(s3.err, HasSubstr("tony.history.location='s3://bucket/history' (from --conf): Loom writes job records to "
                                "HDFS or a local directory, not s3"));
  RunResult hdfs = submit("loom.history.location=hdfs:///history", {"--cluster", "local"});
  EXPECT_EQ(hdfs.exit_code, 2) << hdfs.out << hdfs.err;
  EXPECT_THAT(hdfs.err, HasSubstr("loom.history.location='hdfs:///history': an HDFS directory is for --cluster yarn"));
  EXPECT_TRUE(loom.JobIds().empty() || loom.View(loom.JobIds()[0]).state != "SUCCEEDED");

  YarnDoubleCluster cluster;
  RunResult file =
      cluster.Submit(Confs({"loom.worker.instances=1", "loom.worker.command=true", "loom.history.location=file:///tmp/history"}));
  EXPECT_EQ(file.exit_code, 2) << file.out << file.err;
  EXPECT_THAT(file.err, HasSubstr("loom.history.location='file:///tmp/history': a directory on this machine"));
}

TEST(HistoryLocation, ALocalJobsRecordIsCopiedWholeToALocalDirectory) {
  MiniLoom loom;
  const std::string location = loom.home() + "/shared/history";
  RunResult r = loom.Run({"submit", "--conf", "loom.worker.instances=1", "--conf",
                          "loom.worker.command=/bin/sh -c 'echo recorded'", "--conf",
                          "tony.history.location=file://" + location});
  std::string id = loom.OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(LocalNames(location), UnorderedElementsAre(id));  // no temporary dir left
  ExpectRecord(LocalNames(location + "/" + id));
  auto view = history::LoadJobView(history::JobDir(location + "/" + id));
  ASSERT_OK(view.status());
  EXPECT_EQ(view->state, "SUCCEEDED");
  EXPECT_EQ(view->tasks.size(), 1u);
  struct stat st {};
  ASSERT_EQ(::stat(location.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);
}

TEST(HistoryLocation, AKilledLocalJobsRecordIsCopied) {
  MiniLoom loom;
  const std::string location = loom.home() + "/history";
  Subprocess submit = loom.Start({"submit", "--conf", "loom.worker.instances=1", "--conf",
                                  "loom.worker.command=sleep 600", "--conf", "loom.task.stop-grace-ms=1000", "--conf",
                                  "loom.history.location=" + location},
                                 "submit");
  std::string id = loom.WaitUntilRunning(1, 60s);
  ASSERT_FALSE(id.empty());
  RunResult kill = loom.Run({"kill", id});
  EXPECT_EQ(kill.exit_code, 0) << kill.out << kill.err;
  RunResult r = loom.Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto text = ReadFile(location + "/" + id + "/status.json");
  ASSERT_OK(text.status());
  EXPECT_EQ(StatusOf(*text).value("state", ""), "KILLED") << *text;
  EXPECT_EQ(StatusOf(*text).value("diagnostics", ""), loom.View(id).diagnostics);
  ExpectRecord(LocalNames(location + "/" + id));  // no secret, no kill_cause
}

// Last: it changes this process's environment for the double's containers.
// On a Kerberized cluster the AM has no ticket: it writes with its HDFS delegation token (the
// WebHDFS of the double then refuses anything else), and the client with its own login.
TEST(HistoryLocation, OnAKerberizedClusterBothWritersGetThrough) {
  LOOM_REQUIRE_YARN_DOUBLE("runs the double in Kerberos mode");
  KerberosRealm realm("root", /*kinit=*/true);
  ASSERT_TRUE(realm.ok());
  YarnDoubleCluster cluster([&](yarn_double::YarnTestDouble::Options& o) { realm.Configure(o); });
  KerberosContainerEnvironment(cluster);
  const std::string location = "/user/root/loom-history";
  RunResult r = cluster.loom().Run({"submit", "--cluster", "yarn", "--conf", "loom.worker.instances=1", "--conf",
                                    "loom.worker.memory=256m", "--conf", "loom.worker.command=/bin/sh -c 'echo ok'",
                                    "--conf", "loom.history.location=hdfs://" + location},
                                   realm.Env(cluster));
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  EXPECT_THAT(cluster.ContainerLogs("am.log"), ::testing::Not(HasSubstr("history location")));
  int statuses = 0;
  for (const std::string& f : cluster.hdfs().CreatedFiles()) {
    if (f.find(location + "/" + id + "/.status.json.tmp-") == 0) ++statuses;
  }
  EXPECT_EQ(statuses, 2) << Join(cluster.hdfs().CreatedFiles(), "\n");
  auto status = cluster.hdfs().Stat(location + "/" + id + "/status.json");
  ASSERT_OK(status.status());
  auto text = ReadFile(cluster.hdfs().LocalPath(location + "/" + id + "/status.json"));
  ASSERT_OK(text.status());
  EXPECT_EQ(StatusOf(*text).value("state", ""), "SUCCEEDED") << *text;
}

}  // namespace
}  // namespace loom::testing
