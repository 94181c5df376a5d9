#include "executor/gpu_metrics.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>

#include "core/testing.h"

namespace loom::executor {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

TEST(GpuMetrics, ParsesOneLinePerGpu) {
  auto s = ParseNvidiaSmi("37, 1024\n92, 30000\n");
  ASSERT_OK(s);
  EXPECT_EQ(s->gpus, 2);
  EXPECT_EQ(s->max_utilization_percent, 92);
  EXPECT_EQ(s->memory_used_bytes, int64_t{31024} * 1024 * 1024);
  auto mig = ParseNvidiaSmi("[N/A], 512\n");  // MIG instances have no utilisation
  ASSERT_OK(mig);
  EXPECT_EQ(mig->max_utilization_percent, 0);
  EXPECT_EQ(mig->memory_used_bytes, int64_t{512} << 20);
  EXPECT_THAT(s->devices, ::testing::ElementsAre(GpuDevice{0, 37, int64_t{1024} << 20}, GpuDevice{1, 92, int64_t{30000} << 20}));
  // With the index asked for (the query's third field): the devices' own numbers.
  auto indexed = ParseNvidiaSmi("12, 100, 2\n[N/A], 200, 7\n");
  ASSERT_OK(indexed);
  EXPECT_THAT(indexed->devices, ::testing::ElementsAre(GpuDevice{2, 12, int64_t{100} << 20}, GpuDevice{7, 0, int64_t{200} << 20}));
  EXPECT_EQ(indexed->memory_used_bytes, int64_t{300} << 20);
  EXPECT_FALSE(ParseNvidiaSmi("1, 2, 3, 4\n").ok());
  EXPECT_FALSE(ParseNvidiaSmi("").ok());
  EXPECT_FALSE(ParseNvidiaSmi("No devices were found\n").ok());
}

class FakeSmi : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("loom_smi_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // An nvidia-smi that runs `body` (sh), with its arguments in "$@".
  void Write(const std::string& body) {
    std::string path = (dir_ / "nvidia-smi").string();
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
  }
  std::string Path() const { return dir_.string() + ":/usr/bin:/bin"; }
  std::filesystem::path dir_;
};

TEST_F(FakeSmi, AsksOnlyAboutTheTasksGpus) {
  Write("echo \"$@\" > " + (dir_ / "args").string() + "; echo '50, 100'");
  auto s = SampleGpus("nvidia-smi", "1,3", Path(), 5s);
  ASSERT_OK(s);
  EXPECT_EQ(s->max_utilization_percent, 50);
  std::ifstream args(dir_ / "args");
  std::string line;
  std::getline(args, line);
  EXPECT_THAT(line, HasSubstr("--query-gpu=utilization.gpu,memory.used,index"));
  EXPECT_THAT(line, HasSubstr("--id=1,3"));
}

TEST_F(FakeSmi, AHangingNvidiaSmiIsKilledAtTheTimeout) {
  Write("exec sleep 30");
  auto start = std::chrono::steady_clock::now();
  auto s = SampleGpus("nvidia-smi", "", Path(), 300ms);
  EXPECT_EQ(s.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_F(FakeSmi, FailuresAreErrors) {
  Write("echo 'NVIDIA-SMI has failed' >&2; exit 9");
  EXPECT_THAT(SampleGpus("nvidia-smi", "", Path(), 5s).status().message(), HasSubstr("exit code 9"));
  EXPECT_FALSE(SampleGpus("no-such-smi", "", Path(), 5s).ok());
}

}  // namespace
}  // namespace loom::executor
