#include "web/job_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/testing.h"

namespace loom::web {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class JobFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("job_files_test." + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "job_1" / "tasks" / "worker-0");
    outside_ = root_.string() + ".outside";
    fs::create_directories(outside_);
  }
  void TearDown() override {
    fs::remove_all(root_);
    fs::remove_all(outside_);
  }
  void Write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
  int Open(const std::string& relative) {
    auto fd = OpenBelow(root_.string(), relative);
    EXPECT_TRUE(fd.ok()) << fd.status().ToString();
    return fd.ok() ? *fd : -1;
  }
  fs::path root_;
  std::string outside_;  // a directory beside the root, which links point into
};

TEST_F(JobFilesTest, OpensPlainFilesBelowTheRootOnly) {
  Write(root_ / "job_1" / "events.jsonl", "{}\n");
  int fd = Open("job_1/events.jsonl");
  ASSERT_GE(fd, 0);
  ::close(fd);
  EXPECT_STATUS(OpenBelow(root_.string(), "job_1/../job_1/events.jsonl"), kInvalidArgument, HasSubstr("bad path"));
  EXPECT_STATUS(OpenBelow(root_.string(), "../x"), kInvalidArgument, HasSubstr("bad path"));
  EXPECT_STATUS(OpenBelow(root_.string(), "job_1//events.jsonl"), kInvalidArgument, HasSubstr("bad path"));
  EXPECT_STATUS(OpenBelow(root_.string(), "job_1/nothing"), kNotFound, HasSubstr("no such file"));
  EXPECT_STATUS(OpenBelow(root_.string(), "job_1/tasks"), kPermissionDenied, HasSubstr("not a plain file"));
}

TEST_F(JobFilesTest, RefusesLinksAnywhereOnThePath) {
  Write(outside_ + "/secret", "outside\n");
  fs::create_symlink(outside_ + "/secret", root_ / "job_1" / "tasks" / "worker-0" / "stdout");
  fs::create_directory_symlink(outside_, root_ / "job_2");
  fs::create_directory_symlink(outside_, root_ / "job_1" / "tasks" / "worker-1");
  EXPECT_STATUS(OpenBelow(root_.string(), "job_1/tasks/worker-0/stdout"), kPermissionDenied, HasSubstr("link"));
  EXPECT_STATUS(OpenBelow(root_.string(), "job_2/secret"), kPermissionDenied, HasSubstr("link"));
  EXPECT_STATUS(OpenBelow(root_.string(), "job_1/tasks/worker-1/secret"), kPermissionDenied, HasSubstr("link"));
  EXPECT_OK(CheckRecordHasNoLinks(root_.string(), "job_1"));
  fs::create_symlink(outside_ + "/secret", root_ / "job_1" / "job.json");
  EXPECT_STATUS(CheckRecordHasNoLinks(root_.string(), "job_1"), kPermissionDenied, HasSubstr("job.json"));
}

TEST_F(JobFilesTest, EventsFromACursorLeaveAnUnfinishedLineForLater) {
  const std::string first = "{\"event\":\"A\"}\n", junk = "not json\n", second = "{\"event\":\"B\"}\n";
  Write(root_ / "job_1" / "events.jsonl", first + junk + second + "{\"event\":\"C\"");
  EventsChunk all = ReadEventsFrom(Open("job_1/events.jsonl"), 0, 100);
  ASSERT_EQ(all.events.size(), 2u);
  EXPECT_EQ(all.events[1]["event"], "B");
  EXPECT_EQ(all.next, static_cast<int64_t>((first + junk + second).size()));
  EXPECT_FALSE(all.more);
  // The rest of the line arrives: only it is new.
  std::ofstream(root_ / "job_1" / "events.jsonl", std::ios::app) << "}\n";
  EventsChunk later = ReadEventsFrom(Open("job_1/events.jsonl"), all.next, 100);
  ASSERT_EQ(later.events.size(), 1u);
  EXPECT_EQ(later.events[0]["event"], "C");
  // Capped: the cursor stops after the last one given.
  EventsChunk one = ReadEventsFrom(Open("job_1/events.jsonl"), 0, 1);
  EXPECT_EQ(one.events.size(), 1u);
  EXPECT_TRUE(one.more);
  EXPECT_EQ(one.next, static_cast<int64_t>(first.size()));
  // A cursor past the end (the file was replaced) starts again.
  EXPECT_EQ(ReadEventsFrom(Open("job_1/events.jsonl"), 1 << 20, 100).events.size(), 3u);
}

TEST_F(JobFilesTest, LogWindowsFromEitherEnd) {
  Write(root_ / "job_1" / "tasks" / "worker-0" / "stdout", "0123456789");
  LogChunk head = ReadLogChunk(Open("job_1/tasks/worker-0/stdout"), 0, 4);
  EXPECT_EQ(head.data, "0123");
  EXPECT_EQ(head.size, 10);
  EXPECT_FALSE(head.eof);
  LogChunk tail = ReadLogChunk(Open("job_1/tasks/worker-0/stdout"), -3, 100);
  EXPECT_EQ(tail.offset, 7);
  EXPECT_EQ(tail.data, "789");
  EXPECT_TRUE(tail.eof);
  LogChunk past = ReadLogChunk(Open("job_1/tasks/worker-0/stdout"), 50, 100);
  EXPECT_EQ(past.offset, 10);
  EXPECT_EQ(past.data, "");
  EXPECT_TRUE(past.eof);
  EXPECT_EQ(ReadLogChunk(Open("job_1/tasks/worker-0/stdout"), -50, 2).data, "01");
}

TEST(ConfigEntries, SortedWithSourcesAndSecretsMasked) {
  auto entries = ConfigEntries(
      "<configuration>"
      "<property><name>loom.worker.instances</name><value>2</value><source>--conf</source></property>"
      "<property><name>loom.application.name</name><value>&lt;script&gt;</value><source>loom.xml</source></property>"
      "<property><name>fs.s3a.secret.key</name><value>hunter2</value><source>core-site.xml</source></property>"
      "<property><name>my.DB_Password</name><value>hunter2</value></property>"
      "</configuration>",
      "config.xml");
  ASSERT_OK(entries);
  ASSERT_EQ(entries->size(), 4u);
  EXPECT_EQ((*entries)[0]["key"], "fs.s3a.secret.key");
  EXPECT_EQ((*entries)[0]["value"], "<redacted>");
  EXPECT_EQ((*entries)[1]["value"], "<script>");
  EXPECT_EQ((*entries)[1]["source"], "loom.xml");
  EXPECT_EQ((*entries)[3]["key"], "my.DB_Password");
  EXPECT_EQ((*entries)[3]["value"], "<redacted>");
  EXPECT_EQ(entries->dump().find("hunter2"), std::string::npos);
  EXPECT_STATUS(ConfigEntries("<configuration><property>", "config.xml"), kInvalidArgument, HasSubstr("config.xml"));
}

}  // namespace
}  // namespace loom::web
