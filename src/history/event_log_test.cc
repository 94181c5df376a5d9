#include "history/event_log.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>

namespace loom::history {
namespace {

class EventLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("loom_event_log_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "events.jsonl").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& text) { std::ofstream(path_, std::ios::app | std::ios::binary) << text; }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(EventLogTest, AHalfWrittenLineIsNotAnEventYet) {
  Write("{\"event\":\"A\"}\n{\"event\":\"B\"");
  EventLines lines = ReadEventLines(path_, 0);
  EXPECT_EQ(lines.text, "{\"event\":\"A\"}\n");
  EXPECT_EQ(lines.end, 14);
  EXPECT_EQ(ReadEventLines(path_, lines.end).end, lines.end);  // nothing complete after it
  EXPECT_EQ(ReadEvents(path_).size(), 1u);
  Write("}\n");
  EXPECT_EQ(ReadEvents(path_).size(), 2u);
}

TEST_F(EventLogTest, TheTailGivesEachEventOnceAsTheFileGrows) {
  EventLog log(path_);
  EventTail tail(path_);
  EXPECT_TRUE(tail.Next().empty());  // no file yet
  ASSERT_TRUE(log.Append("A").ok());
  ASSERT_TRUE(log.Append("B").ok());
  auto first = tail.Next();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[1]["event"], "B");
  EXPECT_TRUE(tail.Next().empty());
  Write("not json\n");
  ASSERT_TRUE(log.Append("C").ok());
  auto second = tail.Next();
  ASSERT_EQ(second.size(), 1u);  // the malformed line skipped, not stuck on
  EXPECT_EQ(second[0]["event"], "C");
}

TEST_F(EventLogTest, ALineLongerThanOneReadIsStillReadWhole) {
  const std::string big(10000, 'x');
  Write("{\"event\":\"A\",\"d\":\"" + big + "\"}\n{\"event\":\"B\"}\n");
  EventLines lines = ReadEventLines(path_, 0, 100);
  auto events = ParseEvents(lines.text);
  ASSERT_GE(events.size(), 1u);
  EXPECT_EQ(events[0]["d"], big);
  int skipped = -1;
  EXPECT_EQ(ReadEvents(path_, &skipped).size(), 2u);
  EXPECT_EQ(skipped, 0);
}

}  // namespace
}  // namespace loom::history
