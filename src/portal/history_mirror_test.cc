// HistoryMirror against the HDFS test double (tests/yarn_double/fake_hdfs.h): finished records
// copied whole and once, unfinished ones left, names that are not job ids never followed, the
// work of one call bounded, and a status.json written over (the client's, after the AM's) seen.

#include "portal/history_mirror.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/eventually.h"
#include "core/files.h"
#include "core/testing.h"
#include "fake_hdfs.h"
#include "hadoop/hdfs/webhdfs.h"
#include "history/event_log.h"
#include "history/job_view.h"

namespace loom::portal {
namespace {

using ::testing::HasSubstr, ::testing::UnorderedElementsAre;

constexpr char kLocation[] = "/loom-history";

class HistoryMirrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/history_mirror_test." + std::to_string(::getpid()) + "." +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    (void)RemoveTree(dir_);
    ASSERT_OK(MakeDirs(dir_));
    hdfs_ = std::make_unique<yarn_double::FakeHdfs>(dir_ + "/hdfs");
    ASSERT_OK(hdfs_->Start());
    cache_ = dir_ + "/cache/mirror";
  }
  void TearDown() override {
    hdfs_->Stop();
    (void)RemoveTree(dir_);
  }
  std::string NameNode() const { return "http://127.0.0.1:" + std::to_string(hdfs_->namenode_http_port()); }
  HistoryMirror Mirror(HistoryMirrorOptions o = {}) { return HistoryMirror(NameNode(), "alice", kLocation, cache_, o); }
  void Put(const std::string& rel, const std::string& text) {
    ASSERT_OK(hdfs_->PutFile(std::string(kLocation) + "/" + rel, text, "alice", "644"));
  }
  // A finished record as the writers leave it (status.json last).
  void PutRecord(const std::string& id, const std::string& state = "SUCCEEDED") {
    Put(id + "/job.json", "{\"job_id\":\"" + id + "\",\"name\":\"mnist\",\"backend\":\"yarn\",\"user\":\"alice\"}\n");
    Put(id + "/config.xml", "<configuration/>\n");
    Put(id + "/events.jsonl",
        "{\"ts\":1,\"event\":\"TASK_STATE\",\"task\":\"worker:0\",\"state\":\"" + state + "\",\"exit_code\":0}\n");
    Put(id + "/metrics.jsonl", "");
    Put(id + "/status.json", "{\"job_id\":\"" + id + "\",\"state\":\"" + state + "\",\"diagnostics\":\"\"}\n");
  }
  // The names in `dir` (none where it is missing).
  static std::vector<std::string> Entries(const std::string& dir) {
    std::vector<std::string> names;
    if (!IsDirectory(dir)) return names;
    for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
    return names;
  }
  std::vector<std::string> CacheEntries() { return Entries(cache_); }

  std::string dir_, cache_;
  std::unique_ptr<yarn_double::FakeHdfs> hdfs_;
};

TEST_F(HistoryMirrorTest, FinishedRecordsAreCopiedWholeAsJobDirsAndOnce) {
  HistoryMirror mirror = Mirror();
  auto none = mirror.SyncOnce();  // no location yet: nothing, and no error
  ASSERT_OK(none.status());
  EXPECT_EQ(none->listed, 0);

  PutRecord("job_1");
  PutRecord("job_2", "KILLED");
  Put("job_3/job.json", "{\"job_id\":\"job_3\"}\n");  // still being written: no status.json
  auto first = mirror.SyncOnce();
  ASSERT_OK(first.status());
  EXPECT_EQ(first->listed, 3);
  EXPECT_EQ(first->copied, 2);
  EXPECT_EQ(first->pending, 1);
  EXPECT_THAT(CacheEntries(), UnorderedElementsAre("job_1", "job_2"));
  EXPECT_THAT(Entries(cache_ + "/job_1"),
              UnorderedElementsAre("job.json", "config.xml", "events.jsonl", "metrics.jsonl", "status.json"));

  // A job dir's layout: the history reader takes it as it is.
  auto view = history::LoadJobView(history::JobDir(cache_ + "/job_2"));
  ASSERT_OK(view.status());
  EXPECT_EQ(view->state, "KILLED");
  EXPECT_TRUE(view->final);
  EXPECT_EQ(view->name, "mnist");
  // The copy's status.json carries HDFS's time: what the mirror (or a new one) compares.
  auto hdfs_status = hdfs_->Stat(std::string(kLocation) + "/job_1/status.json");
  ASSERT_OK(hdfs_status.status());
  struct stat st {};
  ASSERT_EQ(::stat((cache_ + "/job_1/status.json").c_str(), &st), 0);
  EXPECT_EQ(int64_t{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1000000, hdfs_status->mtime_ms);

  // Nothing changed: nothing copied again, and a mirror that starts over on the same cache
  // knows what it has.
  auto second = mirror.SyncOnce();
  ASSERT_OK(second.status());
  EXPECT_EQ(second->copied, 0);
  HistoryMirror restarted = Mirror();
  auto third = restarted.SyncOnce();
  ASSERT_OK(third.status());
  EXPECT_EQ(third->copied, 0);

  // job_3 ends; the mirror waits out its back-off (5 s at first), so a fresh one looks now.
  Put("job_3/status.json", "{\"job_id\":\"job_3\",\"state\":\"FAILED\"}\n");
  auto fourth = Mirror().SyncOnce();
  ASSERT_OK(fourth.status());
  EXPECT_EQ(fourth->copied, 1);
  EXPECT_TRUE(PathExists(cache_ + "/job_3/status.json"));
}

TEST_F(HistoryMirrorTest, NamesThatAreNotJobIdsAreNeverFollowed) {
  PutRecord("job_ok");
  PutRecord(".tmp-job_x-1-2");  // a writer's temporary dir
  PutRecord("%2e%2e");
  PutRecord("with space");
  Put("loose-file", "x");  // a file, not a record
  ASSERT_OK(hdfs_->PutFile(std::string(kLocation) + "/job_ok/secret", "s3cr3t", "alice", "600"));
  ASSERT_OK(hdfs_->PutFile(std::string(kLocation) + "/job_ok/.status.json.tmp-9", "{}", "alice", "644"));
  auto r = Mirror().SyncOnce();
  ASSERT_OK(r.status());
  EXPECT_EQ(r->listed, 1);
  EXPECT_THAT(CacheEntries(), UnorderedElementsAre("job_ok"));
  EXPECT_FALSE(PathExists(cache_ + "/job_ok/secret"));  // only the record's own files
  EXPECT_FALSE(PathExists(cache_ + "/job_ok/.status.json.tmp-9"));
  EXPECT_THAT(Entries(std::filesystem::path(cache_).parent_path().string()), UnorderedElementsAre("mirror"));
}

TEST_F(HistoryMirrorTest, EachCallCopiesAtMostItsShare) {
  for (int i = 0; i < 5; ++i) PutRecord("job_" + std::to_string(i));
  HistoryMirrorOptions o;
  o.max_copies_per_sync = 2;
  HistoryMirror mirror = Mirror(o);
  std::vector<int> copied;
  for (int round = 0; round < 4; ++round) {
    auto r = mirror.SyncOnce();
    ASSERT_OK(r.status());
    copied.push_back(r->copied);
  }
  EXPECT_EQ(copied, (std::vector<int>{2, 2, 1, 0}));
  EXPECT_EQ(CacheEntries().size(), 5u);
}

TEST_F(HistoryMirrorTest, TheClientsStatusWrittenOverTheAmsIsCopiedAgain) {
  PutRecord("job_k", "FAILED");  // the AM's end: SIGTERM from outside
  HistoryMirror mirror = Mirror();
  ASSERT_OK(mirror.SyncOnce().status());
  auto before = history::LoadJobView(history::JobDir(cache_ + "/job_k"));
  ASSERT_OK(before.status());
  EXPECT_EQ(before->state, "FAILED");
  // The client's record: status.json removed first, then written anew, later.
  hadoop::WebHdfs client(NameNode(), "alice");
  ASSERT_OK(client.Delete(std::string(kLocation) + "/job_k/status.json", false).status());
  auto during = mirror.SyncOnce();  // meanwhile the copy here stands
  ASSERT_OK(during.status());
  EXPECT_EQ(during->copied, 0);
  EXPECT_TRUE(PathExists(cache_ + "/job_k/status.json"));
  // The next millisecond at least, as the client writes moments after the AM.
  auto am_status = hdfs_->Stat(std::string(kLocation) + "/job_k/events.jsonl");
  ASSERT_OK(am_status.status());
  ASSERT_TRUE(loom::testing::Eventually([&] { return history::NowMillis() > am_status->mtime_ms; },
                                        std::chrono::seconds(2)));
  Put("job_k/status.json", "{\"job_id\":\"job_k\",\"state\":\"KILLED\",\"diagnostics\":\"killed by loom kill\"}\n");
  auto after_sync = mirror.SyncOnce();
  ASSERT_OK(after_sync.status());
  EXPECT_EQ(after_sync->copied, 1);
  auto after = history::LoadJobView(history::JobDir(cache_ + "/job_k"));
  ASSERT_OK(after.status());
  EXPECT_EQ(after->state, "KILLED");
  EXPECT_EQ(after->diagnostics, "killed by loom kill");
  EXPECT_THAT(CacheEntries(), UnorderedElementsAre("job_k"));  // the old copy gone, no temporary left

  // Past the window a finished record is not looked at again.
  HistoryMirrorOptions o;
  o.recheck_window = std::chrono::milliseconds(0);
  HistoryMirror settled = Mirror(o);
  Put("job_k/status.json", "{\"job_id\":\"job_k\",\"state\":\"SUCCEEDED\"}\n");
  auto r = settled.SyncOnce();
  ASSERT_OK(r.status());
  EXPECT_EQ(r->copied, 0);
}

TEST_F(HistoryMirrorTest, ARecordTooLargeOrNotARecordIsLeftOut) {
  PutRecord("job_big");
  Put("job_big/events.jsonl", std::string(4096, 'x'));
  PutRecord("job_bad");
  Put("job_bad/status.json", "not json");
  HistoryMirrorOptions o;
  o.max_file_bytes = 1024;
  auto r = Mirror(o).SyncOnce();
  ASSERT_OK(r.status());
  EXPECT_EQ(r->copied, 0);
  EXPECT_EQ(r->pending, 2);
  EXPECT_TRUE(CacheEntries().empty());
}

TEST(HistoryMirrorForCluster, TakesWhatAJobWouldGiveOnFsDefaultFs) {
  hadoop::HadoopConf conf;
  conf.default_fs = "hdfs://nn.example.com:8020";
  conf.namenode_web_urls = {"http://nn.example.com:9870"};
  for (const char* ok : {"hdfs:///h", "/h", "hdfs://NN.example.com:8020/h/"}) {
    auto m = HistoryMirror::ForCluster(conf, "alice", ok, "/tmp/x");
    ASSERT_OK(m.status());
    EXPECT_EQ((*m)->location(), "/h");
  }
  EXPECT_STATUS(HistoryMirror::ForCluster(conf, "alice", "s3://b/h", "/tmp/x"), kInvalidArgument, HasSubstr("not s3"));
  EXPECT_STATUS(HistoryMirror::ForCluster(conf, "alice", "file:///h", "/tmp/x"), kInvalidArgument,
                HasSubstr("a local directory"));
  EXPECT_STATUS(HistoryMirror::ForCluster(conf, "alice", "hdfs://other:8020/h", "/tmp/x"), kInvalidArgument,
                HasSubstr("not on fs.defaultFS"));
  EXPECT_STATUS(HistoryMirror::ForCluster(conf, "alice", "", "/tmp/x"), kInvalidArgument, HasSubstr("no HDFS"));
}

}  // namespace
}  // namespace loom::portal
