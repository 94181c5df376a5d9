// The YARN TEST DOUBLE's GPU resource endpoint against the recordings of a real NodeManager
// (tests/data/yarn-captures/gpu/), read through Loom's own client (cluster/yarn/gpu_pinning.h).
// Assignment under the LinuxContainerExecutor is exercised by whole jobs in
// tests/integration/yarn_gpu_test.cc.

#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cluster/yarn/gpu_pinning.h"
#include "core/files.h"
#include "core/testing.h"
#include "hadoop/hdfs/curl_library.h"
#include "hadoop/testing/captures.h"
#include "yarn_test_double.h"

namespace loom::yarn_double {
namespace {

using json = nlohmann::json;

const std::string kGpu = hadoop::testing::CaptureDir() + "gpu/";

// A JSON value with every leaf replaced by its type and every list by its first element's
// shape: what must match between the double and the recording.
json Shape(const json& v) {
  if (v.is_object()) {
    json out = json::object();
    for (const auto& [k, e] : v.items()) out[k] = Shape(e);
    return out;
  }
  if (v.is_array()) return v.empty() ? json::array() : json::array({Shape(v.front())});
  return v.type_name();
}

class NmGpusTest : public ::testing::Test {
 protected:
  void Start(bool lce, int held_elsewhere) {
    work_ = std::filesystem::temp_directory_path() / ("loom_nm_gpus_" + std::to_string(::getpid()));
    std::filesystem::remove_all(work_);
    YarnTestDouble::Options o;
    o.work_dir = (work_ / "yarn").string();
    o.node_gpus = 2;
    o.linux_container_executor = lce;
    o.gpus_held_elsewhere = held_elsewhere;
    double_ = std::make_unique<YarnTestDouble>(std::move(o));
    ASSERT_OK(double_->Start());
  }
  void TearDown() override {
    if (double_) double_->Stop();
    std::filesystem::remove_all(work_);
  }
  hadoop::HttpResponse Get(const std::string& path, const std::string& accept = "application/json") {
    hadoop::HttpRequest r;
    r.url = "http://127.0.0.1:" + std::to_string(double_->nm_http_port()) + path;
    r.headers = {"Accept: " + accept};
    auto a = hadoop::HttpExchange(r);
    EXPECT_OK(a);
    return a.ok() ? *a : hadoop::HttpResponse{};
  }
  json Recorded(const std::string& file) { return json::parse(ReadFile(kGpu + file).value_or("null")); }
  // The GPU resource endpoint answers with the shape of the recorded `file`.
  void ExpectShapeAsRecorded(const std::string& file) {
    hadoop::HttpResponse a = Get("/ws/v1/node/resources/yarn.io%2Fgpu");
    ASSERT_EQ(a.code, 200);
    EXPECT_EQ(Shape(json::parse(a.body)), Shape(Recorded(file)));
  }
  // What Loom's client (cluster/yarn/gpu_pinning.h) reads there.
  Result<cluster::yarn::NmGpuResources> Fetch() {
    return cluster::yarn::FetchNmGpuResources("127.0.0.1:" + std::to_string(double_->nm_http_port()));
  }

  std::filesystem::path work_;
  std::unique_ptr<YarnTestDouble> double_;
};

TEST_F(NmGpusTest, UnderTheDefaultContainerExecutorTheListsStayEmptyAsRecorded) {
  Start(/*lce=*/false, /*held_elsewhere=*/1);
  ASSERT_NO_FATAL_FAILURE(ExpectShapeAsRecorded("01-nm-8042-resources-gpu-idle.json"));
  auto r = Fetch();
  ASSERT_OK(r);
  EXPECT_FALSE(r->assigns);
  EXPECT_THAT(r->assigned, ::testing::IsEmpty());
  EXPECT_EQ(r->uuids.size(), 2u);
}

TEST_F(NmGpusTest, UnderTheLinuxContainerExecutorItListsEveryDeviceAndWhoHoldsIt) {
  Start(/*lce=*/true, /*held_elsewhere=*/1);
  // One assigned device: still a list (gpu/46).
  ASSERT_NO_FATAL_FAILURE(ExpectShapeAsRecorded("46-lce-nm-8042-resources-gpu-third-container-running.json"));
  auto r = Fetch();
  ASSERT_OK(r);
  EXPECT_TRUE(r->assigns);
  ASSERT_EQ(r->assigned.size(), 1u);
  EXPECT_THAT(r->assigned.begin()->second, ::testing::ElementsAre(0));
}

TEST_F(NmGpusTest, AnUnencodedSlashXmlAndAnUnknownPluginAnswerAsRecorded) {
  Start(/*lce=*/true, /*held_elsewhere=*/0);
  EXPECT_EQ(Get("/ws/v1/node/resources/yarn.io/gpu").code, 404);  // gpu/03
  hadoop::HttpResponse xml = Get("/ws/v1/node/resources/yarn.io%2Fgpu", "application/xml");
  EXPECT_EQ(xml.code, 500);  // gpu/02
  EXPECT_THAT(xml.body, ::testing::HasSubstr("A message body writer for Java class"));
  hadoop::HttpResponse fpga = Get("/ws/v1/node/resources/yarn.io%2Ffpga");
  EXPECT_EQ(fpga.code, 200);  // gpu/04
  EXPECT_EQ(json::parse(fpga.body), Recorded("04-nm-8042-resources-unknown-plugin.json"));
}

}  // namespace
}  // namespace loom::yarn_double
