#include "cli/retention.h"

#include "core/testing.h"

namespace loom::cli {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kDay = 86400000;

TEST(ParseAge, ReadsDaysHoursMinutesSecondsAndZero) {
  EXPECT_EQ(*ParseAge("7d"), 7 * kDay);
  EXPECT_EQ(*ParseAge("12h"), 12 * 3600000);
  EXPECT_EQ(*ParseAge(" 30m "), 30 * 60000);
  EXPECT_EQ(*ParseAge("45s"), 45000);
  EXPECT_EQ(*ParseAge("0"), 0);
  EXPECT_EQ(*ParseAge("0d"), 0);
}

TEST(ParseAge, RefusesWhatIsNotAnAge) {
  for (const char* bad : {"", "d", "7", "-1d", "1.5h", "7w", "seven days", "99999999999d"}) {
    SCOPED_TRACE(bad);
    EXPECT_STATUS(ParseAge(bad), kInvalidArgument, HasSubstr("expected an age such as 7d, 12h, 30m, 45s or 0"));
  }
  EXPECT_STATUS(ParseAge("7"), kInvalidArgument, HasSubstr("'7' has no unit: expected an age such as 7d"));
}

TEST(FormatAge, UsesTheLargestWholeUnit) {
  EXPECT_EQ(FormatAge(7 * kDay), "7d");
  EXPECT_EQ(FormatAge(3 * kDay + 5 * 3600000), "3d");
  EXPECT_EQ(FormatAge(3600000), "1h");
  EXPECT_EQ(FormatAge(90000), "90s");
  EXPECT_EQ(FormatAge(0), "0s");
}

// A job goes only when its record says it ended AND nothing of it runs AND it is old enough.
TEST(WhyKept, OnlyEndedJobsWithNoProcessLeftAndOldEnoughGo) {
  const int64_t now = 100 * kDay;
  JobLiveness running{false, "RUNNING", 0, {4242}};
  EXPECT_EQ(WhyKept(running, 0, now), "still RUNNING (pid 4242)");
  JobLiveness no_end{false, "RUNNING", 0, {}};
  EXPECT_EQ(WhyKept(no_end, 0, now), "still RUNNING: its record has no end yet");
  // The record says it ended, but its AM still runs (writing its last events, stopping tasks).
  JobLiveness finishing{true, "KILLED", now - 30 * kDay, {10, 11}};
  EXPECT_EQ(WhyKept(finishing, 7 * kDay, now), "ended KILLED, but pids 10, 11 of it still run");
  JobLiveness young{true, "SUCCEEDED", now - 2 * kDay, {}};
  EXPECT_EQ(WhyKept(young, 7 * kDay, now), "ended 2d ago, younger than 7d");
  EXPECT_EQ(WhyKept(young, 2 * kDay, now), std::nullopt);
  EXPECT_EQ(WhyKept(young, 0, now), std::nullopt);
  JobLiveness old{true, "FAILED", now - 8 * kDay, {}};
  EXPECT_EQ(WhyKept(old, 7 * kDay, now), std::nullopt);
}

TEST(FormatBytes, ReadsAsDfDoes) {
  EXPECT_EQ(FormatBytes(1500), "1.5 kB");
  EXPECT_EQ(FormatBytes(246100000), "246.1 MB");
  EXPECT_EQ(FormatBytes(int64_t{3} * 1000 * 1000 * 1000), "3.00 GB");
}

}  // namespace
}  // namespace loom::cli
