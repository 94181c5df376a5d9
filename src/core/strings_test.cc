#include "core/strings.h"

#include "core/testing.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

TEST(ParseMemoryMib, UnitsAndPlainNumbers) {
  EXPECT_EQ(*ParseMemoryMib("2g"), 2048);
  EXPECT_EQ(*ParseMemoryMib("2G"), 2048);
  EXPECT_EQ(*ParseMemoryMib("512m"), 512);
  EXPECT_EQ(*ParseMemoryMib("512mb"), 512);
  EXPECT_EQ(*ParseMemoryMib("1.5g"), 1536);
  EXPECT_EQ(*ParseMemoryMib("2048"), 2048);
  EXPECT_EQ(*ParseMemoryMib(" 1t "), 1024 * 1024);
}

TEST(ParseMemoryMib, RejectsGarbage) {
  for (const char* bad : {"4x", "", "g", "-1g", "2gg", "abc", "1.2.3m"}) {
    SCOPED_TRACE(bad);
    EXPECT_STATUS(ParseMemoryMib(bad), kInvalidArgument, HasSubstr("memory size"));
  }
}

TEST(FormatSeconds, AsTheUserWouldWriteThem) {
  EXPECT_EQ(FormatSeconds(0), "0");
  EXPECT_EQ(FormatSeconds(2000), "2");
  EXPECT_EQ(FormatSeconds(1500), "1.5");
  EXPECT_EQ(FormatSeconds(1050), "1.05");
  EXPECT_EQ(FormatSeconds(1), "0.001");
}

TEST(ParseInt, StrictWholeString) {
  EXPECT_EQ(*ParseInt("42"), 42);
  EXPECT_EQ(*ParseInt("-3"), -3);
  EXPECT_FALSE(ParseInt("4x").ok());
  EXPECT_FALSE(ParseInt("").ok());
  EXPECT_FALSE(ParseInt("two").ok());
}

TEST(EditDistance, Basics) {
  EXPECT_EQ(EditDistance("instances", "instnaces"), 2u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("same", "same"), 0u);
}

TEST(Split, SkipsEmptyAndTrims) {
  EXPECT_EQ(Split(" a, b ,,c", ','), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Split("a::b", ':', false), (std::vector<std::string>{"a", "", "b"}));
}

TEST(ShellQuote, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(ShellQuote("train.py"), "train.py");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

TEST(Status, ContextIsPrepended) {
  Status s = Status::NotFound("open /x").WithContext("staging");
  EXPECT_EQ(s.message(), "staging: open /x");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace loom
