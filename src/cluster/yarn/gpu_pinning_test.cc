#include "cluster/yarn/gpu_pinning.h"

#include "core/files.h"
#include "core/testing.h"
#include "hadoop/testing/captures.h"

namespace loom::cluster::yarn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::string kGpu = hadoop::testing::CaptureDir() + "gpu/";
constexpr char kUuid0[] = "GPU-5f8c2a1e-93b4-7d06-e1a2-4c7b9d03f6a8";
constexpr char kUuid1[] = "GPU-b31d7e94-0c6a-58f2-a7d9-e26f1b8c4053";

NmGpuResources Recorded(const std::string& file) {
  Result<std::string> body = ReadFile(kGpu + file);
  EXPECT_OK(body);
  Result<NmGpuResources> r = ParseNmGpuResources(body.ok() ? *body : "");
  EXPECT_OK(r);
  return r.ok() ? *r : NmGpuResources{};
}

TEST(GpuPlan, GivesEachContainerTheLowestDevicesNoneOfTheJobsHoldsOnItsNode) {
  GpuPlan plan;
  EXPECT_THAT(plan.Assign("h1", "c2", 1, 4), ElementsAre(0));
  EXPECT_THAT(plan.Assign("h1", "c3", 2, 4), ElementsAre(1, 2));
  EXPECT_THAT(plan.Assign("h2", "c4", 1, 4), ElementsAre(0));  // another node, its own devices
  plan.Free("c2");
  EXPECT_THAT(plan.Assign("h1", "c5", 2, 4), ElementsAre(0, 3));
  plan.Free("never-held");  // no-op
  bool overlap = true;
  EXPECT_THAT(plan.Assign("h2", "c6", 3, 4, &overlap), ElementsAre(1, 2, 3));
  EXPECT_FALSE(overlap);
}

TEST(GpuPlan, ANodeWithFewerFreeDevicesThanAskedStillGetsDistinctOnesAndSaysSo) {
  GpuPlan plan;
  plan.Assign("h1", "c2", 2, 2);
  bool overlap = false;
  // A node report behind the scheduler: YARN granted a third GPU on a node the plan thinks full.
  EXPECT_THAT(plan.Assign("h1", "c3", 1, 2, &overlap), ElementsAre(0));
  EXPECT_TRUE(overlap);
  // Unknown node size (0): the container's own count.
  EXPECT_THAT(plan.Assign("h9", "c4", 2, 0, &overlap), ElementsAre(0, 1));
  EXPECT_FALSE(overlap);
}

TEST(NmGpuResources, TheDefaultContainerExecutorOnlyCounts) {
  NmGpuResources r = Recorded("01-nm-8042-resources-gpu-idle.json");  // the same while GPU containers ran
  EXPECT_FALSE(r.assigns);
  EXPECT_THAT(r.assigned, IsEmpty());
  EXPECT_THAT(r.uuids, ElementsAre(kUuid0, kUuid1));
}

TEST(NmGpuResources, TheLinuxContainerExecutorListsEachContainersDevices) {
  NmGpuResources r = Recorded("41-lce-nm-8042-resources-gpu-running.json");
  EXPECT_TRUE(r.assigns);
  EXPECT_THAT(r.assigned["container_1795692180232_0002_01_000002"], ElementsAre(0));
  EXPECT_THAT(r.assigned["container_1795692180232_0002_01_000003"], ElementsAre(1));
  NmGpuResources one = Recorded("46-lce-nm-8042-resources-gpu-third-container-running.json");
  EXPECT_EQ(one.assigned.size(), 1u);
  EXPECT_THAT(one.assigned["container_1795692180232_0002_01_000004"], ElementsAre(0));
}

TEST(NmGpuResources, ANodeWithoutTheGpuPluginOrAMalformedAnswerIsAnError) {
  Result<std::string> none = ReadFile(kGpu + "04-nm-8042-resources-unknown-plugin.json");
  ASSERT_OK(none);
  EXPECT_STATUS(ParseNmGpuResources(*none), kNotFound, HasSubstr("no GPU plugin"));
  EXPECT_STATUS(ParseNmGpuResources("<html>"), kInvalidArgument, HasSubstr("not a JSON object"));
  EXPECT_STATUS(ParseNmGpuResources(R"({"totalGpuDevices":{}})"), kInvalidArgument, HasSubstr("totalGpuDevices is not a list"));
  EXPECT_STATUS(ParseNmGpuResources(R"({"totalGpuDevices":[{"index":0}],"assignedGpuDevices":[{"index":0}]})"),
                kInvalidArgument, HasSubstr("lacks index or containerId"));
  // Manual allowed-gpu-devices: no device information, so no UUIDs, still the assignment.
  Result<NmGpuResources> manual = ParseNmGpuResources(
      R"({"gpuDeviceInformation":null,"totalGpuDevices":[{"index":0,"minorNumber":0}],)"
      R"("assignedGpuDevices":[{"index":0,"minorNumber":0,"containerId":"c2"}]})");
  ASSERT_OK(manual);
  EXPECT_THAT(manual->uuids, IsEmpty());
  EXPECT_THAT(manual->assigned["c2"], ElementsAre(0));
}

TEST(DecideGpuPinning, YarnsAssignmentWinsOverThePlanAndNamesDevicesByUuid) {
  NmGpuResources r = Recorded("41-lce-nm-8042-resources-gpu-running.json");
  // The AM planned device 0 for _000003; YARN gave it device 1, the one its cgroup lets it open.
  GpuPinning p = DecideGpuPinning(r, "container_1795692180232_0002_01_000003", "n1", 1, {0}, "");
  EXPECT_EQ(p.visible_devices, kUuid1);
  EXPECT_FALSE(p.by_index);
  EXPECT_TRUE(p.fenced);
  EXPECT_EQ(p.note, "");
}

TEST(DecideGpuPinning, WhereYarnOnlyCountsThePlanStandsAndTheTaskSaysOthersAreNotFencedOff) {
  NmGpuResources r = Recorded("01-nm-8042-resources-gpu-idle.json");
  GpuPinning p = DecideGpuPinning(r, "container_1795692180232_0002_01_000003", "n1", 2, {0, 1}, "");
  EXPECT_EQ(p.visible_devices, std::string(kUuid0) + "," + kUuid1);
  EXPECT_FALSE(p.fenced);
  EXPECT_THAT(p.note, HasSubstr("YARN only counts GPUs on n1"));
  EXPECT_THAT(p.note, HasSubstr("other applications' containers on that node are not fenced off"));
}

TEST(DecideGpuPinning, ANodeManagerThatCannotBeAskedLeavesThePlanByIndex) {
  GpuPinning p = DecideGpuPinning(Status::Unavailable("GET http://n1:8042/...: HTTP 401"), "c2", "n1", 1, {1}, "");
  EXPECT_EQ(p.visible_devices, "1");
  EXPECT_TRUE(p.by_index);  // the executor adds CUDA_DEVICE_ORDER=PCI_BUS_ID
  EXPECT_THAT(p.note, HasSubstr("could not ask the NodeManager of n1 which GPUs YARN assigned (GET http://n1:8042/...: HTTP 401)"));
  // Manual device lists name no UUIDs: YARN's indices, in nvidia-smi's order.
  Result<NmGpuResources> manual = ParseNmGpuResources(
      R"({"totalGpuDevices":[{"index":0,"minorNumber":0},{"index":1,"minorNumber":1}],)"
      R"("assignedGpuDevices":[{"index":1,"minorNumber":1,"containerId":"c2"}]})");
  ASSERT_OK(manual);
  p = DecideGpuPinning(*manual, "c2", "n1", 1, {0}, "");
  EXPECT_EQ(p.visible_devices, "1");
  EXPECT_TRUE(p.by_index);
  EXPECT_TRUE(p.fenced);
}

TEST(DecideGpuPinning, AnAssignmentThatLeavesTheContainerOutFallsBackToThePlanAndSaysSo) {
  NmGpuResources r = Recorded("46-lce-nm-8042-resources-gpu-third-container-running.json");
  GpuPinning p = DecideGpuPinning(r, "container_1795692180232_0002_01_000009", "n1", 1, {1}, "");
  EXPECT_EQ(p.visible_devices, kUuid1);
  EXPECT_FALSE(p.fenced);
  EXPECT_THAT(p.note, HasSubstr("listed none of 1 for container_1795692180232_0002_01_000009"));
}

TEST(DecideGpuPinning, NvidiaDockerV2ShowsTheContainerItsDevicesAloneFromZero) {
  NmGpuResources r = Recorded("41-lce-nm-8042-resources-gpu-running.json");
  GpuPinning p = DecideGpuPinning(r, "container_1795692180232_0002_01_000003", "n1", 2, {0, 1}, "3,1");
  EXPECT_EQ(p.visible_devices, "0,1");
  EXPECT_TRUE(p.fenced);
}

TEST(PinContainerGpus, NothingPlannedChangesNothing) {
  control::ExecutorEnv wiring;
  std::map<std::string, std::string> env = {{"CUDA_VISIBLE_DEVICES", "7"}};
  EXPECT_EQ(PinContainerGpus(wiring, env), "");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "7");
  EXPECT_EQ(env.count("CUDA_DEVICE_ORDER"), 0u);
}

TEST(PinContainerGpus, WithoutANodeManagerAddressThePlanIsPinnedByIndex) {
  control::ExecutorEnv wiring;
  wiring.planned_gpus = {2, 3};
  std::map<std::string, std::string> env = {{"NM_HOST", "n1"}, {"CONTAINER_ID", "c2"}};
  EXPECT_THAT(PinContainerGpus(wiring, env), HasSubstr("could not ask the NodeManager of n1"));
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "2,3");
  EXPECT_EQ(env["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
}

}  // namespace
}  // namespace loom::cluster::yarn
