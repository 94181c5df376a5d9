#include "history/metrics_log.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>

#include "core/testing.h"

namespace loom::history {
namespace {

using ::testing::ElementsAre;

class MetricsLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("loom_metrics_log_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "metrics.jsonl").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& text) { std::ofstream(path_, std::ios::app | std::ios::binary) << text; }
  static TaskSample Sample(int64_t ms, const std::string& task, int64_t rss, std::optional<double> cpu = std::nullopt) {
    TaskSample s;
    s.ms = ms;
    s.task = task;
    s.rss_bytes = rss;
    s.cpu_cores = cpu;
    return s;
  }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(MetricsLogTest, ALineIsCompactAndReadsBack) {
  TaskSample s = Sample(1764412345678, "worker:0", 524288000, 1.0199999809265137);  // a float's value
  s.gpus = {{0, 87, int64_t{16} << 30}, {3, 0, 0}};
  EXPECT_EQ(SampleLine(s),
            R"({"ms":1764412345678,"task":"worker:0","cpu":1.02,"rss":524288000,)"
            R"("gpus":[{"i":0,"util":87,"mem":17179869184},{"i":3,"util":0,"mem":0}]})"
            "\n");
  std::optional<TaskSample> back = ParseSampleLine(SampleLine(s));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->task, "worker:0");
  EXPECT_EQ(back->ms, s.ms);
  EXPECT_DOUBLE_EQ(*back->cpu_cores, 1.02);
  EXPECT_EQ(back->rss_bytes, 524288000);
  EXPECT_THAT(back->gpus, ElementsAre(GpuValue{0, 87, int64_t{16} << 30}, GpuValue{3, 0, 0}));
  // The first sample has no CPU yet: the key is absent, not a 0.
  EXPECT_EQ(SampleLine(Sample(5, "ps:0", 7)), R"({"ms":5,"task":"ps:0","rss":7})" "\n");
  EXPECT_FALSE(ParseSampleLine(SampleLine(Sample(5, "ps:0", 7)))->cpu_cores);
}

TEST_F(MetricsLogTest, MalformedLinesAreNoSamples) {
  for (const char* bad : {"", "[]", "{\"ms\":1,\"rss\":2}", R"({"ms":1,"task":"w:0","rss":-2})",
                          R"({"ms":1,"task":"w:0","rss":2,"cpu":"fast"})", R"({"ms":1,"task":"w:0","rss":2,"cpu":-1})",
                          R"({"ms":1,"task":"w:0","rss":2,"gpus":[{"i":0,"util":101,"mem":0}]})",
                          R"({"ms":1,"task":"w:0","rss":2,"gpus":{}})", R"({"ms":1e300,"task":"w:0","rss":2})",
                          R"({"ms":1,"task":"w:0","rss":2)"}) {
    EXPECT_FALSE(ParseSampleLine(bad)) << bad;
  }
}

TEST_F(MetricsLogTest, TheLatestSampleOfEachTaskSkippingATruncatedLastLineAndOtherTasks) {
  MetricsLog log(path_);
  ASSERT_OK(log.Append(Sample(1000, "worker:0", 100)));
  ASSERT_OK(log.Append(Sample(1000, "worker:1", 200)));
  ASSERT_OK(log.Append(Sample(2000, "worker:0", 300, 1.5)));
  ASSERT_OK(log.Append(Sample(2000, "ps:0", 400, 0.25)));
  Write(R"({"ms":3000,"task":"worker:0","cpu":9.0,"rss":9)");  // a crash cut the last line
  auto latest = ReadLatestSamples(path_, {"worker:0", "worker:1", "chief:0"});
  ASSERT_EQ(latest.size(), 2u);  // chief:0 has none; ps:0 was not asked for
  EXPECT_EQ(latest["worker:0"].ms, 2000);
  EXPECT_EQ(latest["worker:0"].rss_bytes, 300);
  EXPECT_DOUBLE_EQ(*latest["worker:0"].cpu_cores, 1.5);
  EXPECT_EQ(latest["worker:1"].rss_bytes, 200);
  EXPECT_TRUE(ReadLatestSamples(path_, {}).empty());
  EXPECT_TRUE(ReadLatestSamples((dir_ / "none.jsonl").string(), {"worker:0"}).empty());
  int skipped = -1;
  EXPECT_EQ(ReadSamples(path_, &skipped).size(), 4u);
  EXPECT_EQ(skipped, 0);  // the unfinished line is not a line yet
}

TEST_F(MetricsLogTest, ReadsBackAcrossChunksAndLinesLongerThanOne) {
  MetricsLog log(path_);
  ASSERT_OK(log.Append(Sample(1, "early:0", 11)));
  TaskSample wide = Sample(2, "wide:0", 22);
  for (int i = 0; i < 3000; ++i) wide.gpus.push_back({i, 50, 1});  // ~90 KiB: more than a chunk
  ASSERT_OK(log.Append(wide));
  for (int i = 0; i < 5000; ++i) ASSERT_OK(log.Append(Sample(100 + i, "worker:" + std::to_string(i % 10), i)));
  Write("garbage line\n");
  auto latest = ReadLatestSamples(path_, {"early:0", "wide:0", "worker:3"});
  ASSERT_EQ(latest.size(), 3u);
  EXPECT_EQ(latest["early:0"].rss_bytes, 11);
  EXPECT_EQ(latest["wide:0"].gpus.size(), 3000u);
  EXPECT_EQ(latest["worker:3"].rss_bytes, 4993);
  // A scan limited to the last 4 KiB finds only what is that recent.
  auto recent = ReadLatestSamples(path_, {"early:0", "worker:3"}, 4096);
  EXPECT_EQ(recent.count("early:0"), 0u);
  EXPECT_EQ(recent["worker:3"].rss_bytes, 4993);
}

TEST_F(MetricsLogTest, TheWriterStopsAtItsLimit) {
  const int64_t line = static_cast<int64_t>(SampleLine(Sample(1000, "worker:0", 100)).size());
  {
    MetricsLog log(path_, 3 * line);
    for (int i = 0; i < 3; ++i) ASSERT_OK(log.Append(Sample(1000, "worker:0", 100)));
    EXPECT_EQ(log.Append(Sample(1000, "worker:0", 100)).code(), StatusCode::kResourceExhausted);
  }
  // A later writer (another AM attempt) counts what is there.
  MetricsLog again(path_, 3 * line);
  EXPECT_EQ(again.Append(Sample(1000, "worker:0", 100)).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(std::filesystem::file_size(path_), static_cast<uintmax_t>(3 * line));
}

}  // namespace
}  // namespace loom::history
