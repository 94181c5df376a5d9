// A YARN job's record written to its history location in HDFS (the HDFS test double): whole,
// status.json last, the AM's first and the client's over it, and nothing but the record.

#include "cluster/yarn/history_publish.h"

#include <unistd.h>

#include "core/eventually.h"
#include "core/files.h"
#include "core/testing.h"
#include "fake_hdfs.h"
#include "hadoop/hdfs/webhdfs.h"
#include "history/event_log.h"

namespace loom::cluster::yarn {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

class HistoryPublishTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/history_publish_test." + std::to_string(::getpid()) + "." +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    (void)RemoveTree(dir_);
    hdfs_ = std::make_unique<yarn_double::FakeHdfs>(dir_ + "/hdfs");
    ASSERT_OK(hdfs_->Start());
    job_ = history::JobDir(dir_ + "/loom-job");  // the AM's, in its container
    ASSERT_OK(MakeDirs(job_.tasks_dir()));
    for (const auto& [name, text] : std::map<std::string, std::string>{
             {"job.json", "{\"job_id\":\"job_7\"}\n"}, {"config.xml", "<configuration/>\n"},
             {"events.jsonl", "am 1\nam 2\n"}, {"metrics.jsonl", "m1\nm2\n"}, {"status.json", "{\"state\":\"FAILED\"}\n"},
             {"secret", "s3cr3t\n"}, {"kill_cause", "x\n"}, {"am.log", "log\n"}}) {
      ASSERT_OK(WriteFileAtomic(job_.root() + "/" + name, text));
    }
  }
  void TearDown() override {
    hdfs_->Stop();
    (void)RemoveTree(dir_);
  }
  HistoryPublish Am() const {
    HistoryPublish p;
    p.webhdfs = "http://127.0.0.1:" + std::to_string(hdfs_->namenode_http_port());
    p.user = "alice";
    p.location = "/shared/loom-history";
    p.job_id = "job_7";
    return p;
  }
  std::string Read(const std::string& name) {
    auto bytes = hadoop::WebHdfs(Am().webhdfs, "alice").Open("/shared/loom-history/job_7/" + name);
    return bytes.ok() ? *bytes : "<" + bytes.status().ToString() + ">";
  }

  std::string dir_;
  std::unique_ptr<yarn_double::FakeHdfs> hdfs_;
  history::JobDir job_;
};

TEST_F(HistoryPublishTest, TheRecordAndNothingElseGoesUnderTheJobId) {
  ASSERT_OK(PublishHistory(Am(), job_));
  EXPECT_THAT(hdfs_->ListRecursive("/shared"),
              UnorderedElementsAre("/shared/loom-history/job_7/job.json", "/shared/loom-history/job_7/config.xml",
                                   "/shared/loom-history/job_7/events.jsonl", "/shared/loom-history/job_7/metrics.jsonl",
                                   "/shared/loom-history/job_7/status.json"));
  // status.json was created last of them (each under a temporary name, renamed into place).
  std::vector<std::string> created = hdfs_->CreatedFiles();
  ASSERT_FALSE(created.empty());
  EXPECT_THAT(created.back(), HasSubstr("/job_7/.status.json.tmp-"));
  auto root = hdfs_->Stat("/shared/loom-history");
  ASSERT_OK(root.status());
  EXPECT_EQ(root->permission, "1777");  // every user's jobs add their records there
  auto status = hdfs_->Stat("/shared/loom-history/job_7/status.json");
  ASSERT_OK(status.status());
  EXPECT_EQ(status->permission, "644");
}

TEST_F(HistoryPublishTest, TheAmsRecordStandsUntilTheClientWritesItsOwnOverIt) {
  ASSERT_OK(PublishHistory(Am(), job_));
  // An AM (another attempt) after it changes nothing.
  ASSERT_OK(WriteFileAtomic(job_.status(), "{\"state\":\"second\"}\n"));
  ASSERT_OK(PublishHistory(Am(), job_));
  EXPECT_EQ(Read("status.json"), "{\"state\":\"FAILED\"}\n");

  // The client that killed the job: its status.json is the record; its events hold every line.
  history::JobDir client(dir_ + "/client/job_7");
  ASSERT_OK(MakeDirs(client.root()));
  ASSERT_OK(WriteFileAtomic(client.job_json(), "{\"job_id\":\"job_7\"}\n"));
  ASSERT_OK(WriteFileAtomic(client.events(), "am 1\nam 2\nclient 3\n"));
  ASSERT_OK(WriteFileAtomic(client.metrics(), "m1\n"));  // fewer samples than the AM's
  ASSERT_OK(WriteFileAtomic(client.status(), "{\"state\":\"KILLED\",\"diagnostics\":\"killed by loom kill\"}\n"));
  HistoryPublish p = Am();
  p.replace = true;
  ASSERT_OK(PublishHistory(p, client));
  EXPECT_EQ(Read("status.json"), "{\"state\":\"KILLED\",\"diagnostics\":\"killed by loom kill\"}\n");
  EXPECT_EQ(Read("events.jsonl"), "am 1\nam 2\nclient 3\n");
  EXPECT_EQ(Read("metrics.jsonl"), "m1\nm2\n");  // the AM's, never replaced with less
  EXPECT_EQ(Read("config.xml"), "<configuration/>\n");  // the client had none: the AM's stays
  // No temporary name is left behind.
  for (const std::string& f : hdfs_->ListRecursive("/shared")) EXPECT_EQ(f.find("/."), std::string::npos) << f;
}

TEST_F(HistoryPublishTest, AClientThatMissedTheAmsEventsTakesTheAmsCopy) {
  ASSERT_OK(hdfs_->PutFile("/user/alice/.loom/app_1/history/events.jsonl", "am 1\nam 2\nam 3\n", "alice", "600"));
  history::JobDir client(dir_ + "/client/job_7");
  ASSERT_OK(MakeDirs(client.root()));
  ASSERT_OK(WriteFileAtomic(client.events(), "am 1\n"));
  ASSERT_OK(WriteFileAtomic(client.status(), "{\"state\":\"KILLED\"}\n"));
  HistoryPublish p = Am();
  p.replace = true;
  p.events_from_hdfs = "/user/alice/.loom/app_1/history/events.jsonl";
  ASSERT_OK(PublishHistory(p, client));
  EXPECT_EQ(Read("events.jsonl"), "am 1\nam 2\nam 3\n");
  EXPECT_EQ(Read("status.json"), "{\"state\":\"KILLED\"}\n");
}

TEST_F(HistoryPublishTest, NothingBeforeTheEndAndNoJobIdThatLeadsElsewhere) {
  ::unlink(job_.status().c_str());
  EXPECT_STATUS(PublishHistory(Am(), job_), kFailedPrecondition, HasSubstr("no final status"));
  ASSERT_OK(WriteFileAtomic(job_.status(), "{}\n"));
  for (const char* bad : {"..", "../x", ".hidden", "a/b", ""}) {
    HistoryPublish p = Am();
    p.job_id = bad;
    SCOPED_TRACE(bad);
    EXPECT_STATUS(PublishHistory(p, job_), kInvalidArgument, HasSubstr("is not a job id"));
  }
  EXPECT_TRUE(hdfs_->ListRecursive("/").empty());
}

TEST(CheckHistoryLocation, OnYarnAnHdfsPathOnFsDefaultFs) {
  hadoop::HadoopConf conf;
  conf.default_fs = "hdfs://nn.example.com:8020";
  auto location = [](const std::string& v) {
    config::Config c;
    c.Set("tony.history.location", v, "tony.xml");
    return ParseHistoryLocation(c).value();
  };
  for (const char* ok : {"hdfs:///h", "/h", "hdfs://nn.example.com:8020/h", "/path/to/tony-history"}) {
    SCOPED_TRACE(ok);
    EXPECT_OK(CheckHistoryLocation(location(ok), conf, "tony.history.location"));
  }
  EXPECT_STATUS(CheckHistoryLocation(location("file:///h"), conf, "tony.history.location"), kInvalidArgument,
                HasSubstr("tony.history.location='file:///h': a directory on this machine"));
  EXPECT_STATUS(CheckHistoryLocation(location("hdfs://other:8020/h"), conf, "tony.history.location"), kInvalidArgument,
                HasSubstr("through fs.defaultFS's WebHDFS (hdfs://nn.example.com:8020)"));
}

}  // namespace
}  // namespace loom::cluster::yarn
