// A local job's final record copied to its history location: whole or not at all, only the
// record's files, the first copy standing.

#include "history/history_copy.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gmock/gmock.h>

#include "core/config/config.h"
#include "core/files.h"
#include "core/testing.h"
#include "history/job_record.h"

namespace loom::history {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class HistoryCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("loom_history_copy_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    dir_ = JobDir((root_ / "home" / "jobs" / "job_1").string());
    fs::create_directories(dir_.tasks_dir());
    location_ = (root_ / "shared" / "history").string();
    JobRecord job;
    job.job_id = "job_1";
    job.backend = "local";
    ASSERT_OK(job.Write(dir_));
    for (const auto& [name, text] : std::map<std::string, std::string>{{"events.jsonl", "{\"event\":\"X\"}\n"},
                                                                       {"metrics.jsonl", "{}\n"},
                                                                       {"secret", "s3cr3t\n"},
                                                                       {"kill_cause", "killed\n"},
                                                                       {"am.log", "log\n"}}) {
      ASSERT_OK(WriteFileAtomic(dir_.root() + "/" + name, text));
    }
    config::Config conf;
    conf.Set("tony.history.location", location_, "tony.xml");
    ASSERT_OK(WriteFileAtomic(dir_.config(), conf.ToXml()));
  }
  void TearDown() override { fs::remove_all(root_); }
  std::vector<std::string> Names(const std::string& path) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path root_;
  JobDir dir_;
  std::string location_;
};

TEST_F(HistoryCopyTest, TheRecordGoesWholeOnceTheJobEndedAndNothingElseOfTheJobDir) {
  // No status.json yet: not a record.
  EXPECT_STATUS(CopyRecordToHistoryLocation(dir_), kFailedPrecondition, HasSubstr("no final status"));
  EXPECT_FALSE(PathExists(location_ + "/job_1"));
  ASSERT_OK(WriteFileAtomic(dir_.status(), "{\"state\":\"SUCCEEDED\"}\n", 0600));
  ASSERT_OK(CopyRecordToHistoryLocation(dir_));
  EXPECT_THAT(Names(location_), ElementsAre("job_1"));  // no temporary dir left behind
  EXPECT_THAT(Names(location_ + "/job_1"),
              ElementsAre("config.xml", "events.jsonl", "job.json", "metrics.jsonl", "status.json"));
  EXPECT_EQ(ReadFile(location_ + "/job_1/status.json").value_or(""), "{\"state\":\"SUCCEEDED\"}\n");
  struct stat st {};
  ASSERT_EQ(::stat((location_ + "/job_1/status.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);  // readable by the portal, whoever runs it
  ASSERT_EQ(::stat(location_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);  // made here: every user's jobs may add theirs
}

TEST_F(HistoryCopyTest, TheFirstRecordStands) {
  ASSERT_OK(WriteFileAtomic(dir_.status(), "{\"state\":\"KILLED\"}\n"));
  ASSERT_OK(CopyRecordToHistoryLocation(dir_));
  ASSERT_OK(WriteFileAtomic(dir_.status(), "{\"state\":\"other\"}\n"));
  ASSERT_OK(CopyRecordToHistoryLocation(dir_));
  EXPECT_EQ(ReadFile(location_ + "/job_1/status.json").value_or(""), "{\"state\":\"KILLED\"}\n");
  EXPECT_THAT(Names(location_), ElementsAre("job_1"));
}

TEST_F(HistoryCopyTest, ALinkInTheJobDirIsNotFollowed) {
  ASSERT_OK(WriteFileAtomic(dir_.status(), "{}\n"));
  fs::remove(dir_.events());
  fs::create_symlink(dir_.secret(), dir_.events());
  ASSERT_OK(CopyRecordToHistoryLocation(dir_));
  EXPECT_FALSE(PathExists(location_ + "/job_1/events.jsonl"));
}

TEST_F(HistoryCopyTest, TheJobIdIsTheRecordsAndMustBeAPlainName) {
  ASSERT_OK(WriteFileAtomic(dir_.status(), "{}\n"));
  EXPECT_EQ(RecordJobId(dir_), "job_1");
  JobRecord job;
  job.job_id = "../escape";
  ASSERT_OK(job.Write(dir_));
  EXPECT_STATUS(CopyRecordToHistoryLocation(dir_), kInvalidArgument, HasSubstr("'../escape' is not a job id"));
  EXPECT_FALSE(PathExists(root_ / "shared" / "escape"));
  EXPECT_STATUS(CopyRecordToDirectory(dir_, location_, ".."), kInvalidArgument, HasSubstr("not a job id"));
}

TEST_F(HistoryCopyTest, FileUrisAreLocalAndHdfsOrNoneAreNotThisBackends) {
  ASSERT_OK(WriteFileAtomic(dir_.status(), "{}\n"));
  config::Config conf;
  conf.Set("loom.history.location", "file://" + location_ + "/", "--conf");
  ASSERT_OK(WriteFileAtomic(dir_.config(), conf.ToXml()));
  ASSERT_OK(CopyRecordToHistoryLocation(dir_));
  EXPECT_TRUE(PathExists(location_ + "/job_1/status.json"));
  for (const char* other : {"hdfs:///history", "/path/to/tony-history", ""}) {
    conf.Set("loom.history.location", other, "--conf");
    ASSERT_OK(WriteFileAtomic(dir_.config(), conf.ToXml()));
    auto loc = HistoryLocationOf(dir_);
    ASSERT_OK(loc.status());
    EXPECT_OK(CopyRecordToHistoryLocation(dir_));
  }
  EXPECT_FALSE(PathExists("/history"));
  EXPECT_FALSE(PathExists("/path/to/tony-history"));
}

}  // namespace
}  // namespace loom::history
