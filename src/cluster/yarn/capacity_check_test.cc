// CheckJobFits against the recorded cluster (one 8192 MB / 4 vcore node, queue "default" as
// ipc-queue/06 reported it) and against made-up clusters and queues.

#include "cluster/yarn/capacity_check.h"

#include "core/files.h"
#include "core/testing.h"
#include "hadoop/testing/captures.h"
#include "hadoop/wire/ipc_frame.h"

namespace loom::cluster::yarn {
namespace {

namespace ypb = ::hadoop::yarn;
using ::testing::HasSubstr;

const std::string kCaptures = hadoop::testing::CaptureDir();

ypb::NodeReportProto Node(const std::string& host, int64_t mb, int vcores, int64_t gpus = 0,
                          ypb::NodeStateProto state = ypb::NS_RUNNING) {
  ypb::NodeReportProto n;
  n.mutable_nodeid()->set_host(host);
  n.mutable_nodeid()->set_port(45454);
  n.mutable_capability()->set_memory(mb);
  n.mutable_capability()->set_virtual_cores(vcores);
  if (gpus > 0) {
    auto* g = n.mutable_capability()->add_resource_value_map();
    g->set_key("yarn.io/gpu");
    g->set_value(gpus);
  }
  n.set_node_state(state);
  return n;
}

// The queue the recorded RM described in ipc-queue/06 (idle, capacity 1, maximum 1).
ypb::QueueInfoProto RecordedDefaultQueue() {
  Result<std::string> bytes = ReadFile(kCaptures + "ipc-queue/06-cli-rm-8032-queue-status-default-idle.s2c.bin");
  EXPECT_OK(bytes);
  hadoop::FrameReader reader;
  reader.Feed(bytes.value_or(""));
  Result<std::optional<std::string>> frame = reader.Next();
  EXPECT_TRUE(frame.ok() && frame->has_value());
  if (!frame.ok() || !frame->has_value()) return {};
  Result<std::vector<std::string_view>> parts = hadoop::SplitDelimited(**frame);
  EXPECT_TRUE(parts.ok() && parts->size() == 2);
  ypb::GetQueueInfoResponseProto resp;
  EXPECT_TRUE(parts.ok() && resp.ParseFromString(std::string((*parts)[1])));
  return resp.queueinfo();
}

ypb::QueueInfoProto Queue(const std::string& name, float max, int64_t effective_max_mb = 0) {
  ypb::QueueInfoProto q;
  q.set_queuename(name);
  q.set_capacity(max);
  q.set_maximumcapacity(max);
  q.set_state(ypb::Q_RUNNING);
  auto* c = q.add_queueconfigurationsmap();
  c->set_partitionname("");
  c->mutable_queueconfigurations()->set_absolutemaxcapacity(max);
  if (effective_max_mb > 0)
    c->mutable_queueconfigurations()->mutable_effectivemaxcapacity()->set_memory(effective_max_mb);
  return q;
}

JobSpec Job(Resources am, std::vector<std::tuple<std::string, int, Resources>> types) {
  JobSpec spec;
  spec.name = "j";
  spec.am_resources = am;
  for (auto& [name, n, r] : types) {
    TaskTypeSpec t;
    t.name = name;
    t.instances = n;
    t.resources = r;
    spec.types.push_back(t);
  }
  return spec;
}

TEST(CapacityCheck, RecordedQueueIsWholeClusterWithTenPercentForAms) {
  ypb::QueueInfoProto q = RecordedDefaultQueue();
  EXPECT_EQ(q.queuename(), "default");
  EXPECT_EQ(QueueMaxMemoryMb(q, 8192), 8192);  // effectiveMaxCapacity
  EXPECT_EQ(QueueMaxMemoryMb(Queue("half", 0.5f), 16384), 8192);  // absoluteMaxCapacity
}

// rm-rest/08: a 2048 MB AM and two 4096 MB workers on the 8192 MB node never all ran.
TEST(CapacityCheck, GangLargerThanTheClusterIsRefused) {
  JobSpec spec = Job({2048, 1, 0}, {{"worker", 2, {4096, 1, 0}}});
  EXPECT_STATUS(CheckJobFits(spec, {Node("localhost", 8192, 4)}, RecordedDefaultQueue()), kResourceExhausted,
                "the job needs 10240 MiB at once (AM 2048 MiB + 2 worker x 4096 MiB) but the YARN cluster has 8192 "
                "MiB in all (1 running node): its tasks would wait forever");
  // With the 128 MB AM it fits exactly.
  spec.am_resources.memory_mib = 128;
  spec.types[0].resources.memory_mib = 4000;  // rounded up to 4096 (32 x 128)
  EXPECT_STATUS(CheckJobFits(spec, {Node("localhost", 8192, 4)}, RecordedDefaultQueue()), kResourceExhausted,
                HasSubstr("8320 MiB at once"));
  spec.types[0].resources.memory_mib = 3968;
  EXPECT_OK(CheckJobFits(spec, {Node("localhost", 8192, 4)}, RecordedDefaultQueue()));
}

TEST(CapacityCheck, EachContainerMustFitSomeNode) {
  std::vector<ypb::NodeReportProto> nodes = {Node("a", 4096, 8), Node("b", 8192, 2)};
  EXPECT_STATUS(CheckJobFits(Job({128, 1, 0}, {{"worker", 1, {8192, 4, 0}}}), nodes, Queue("default", 1)),
                kResourceExhausted,
                "a worker task needs 8g memory, 4 vcores but no YARN node is that large (a:45454 4096 MiB/8 "
                "vcores/0 GPUs, b:45454 8192 MiB/2 vcores/0 GPUs)");
  EXPECT_STATUS(CheckJobFits(Job({16384, 1, 0}, {}), nodes, Queue("default", 1)), kResourceExhausted,
                HasSubstr("the AM needs 16g memory, 1 vcores but no YARN node is that large"));
  EXPECT_STATUS(CheckJobFits(Job({128, 1, 0}, {{"worker", 1, {1024, 1, 1}}}), nodes, Queue("default", 1)),
                kResourceExhausted, HasSubstr("a worker task needs"));
  EXPECT_OK(CheckJobFits(Job({128, 1, 0}, {{"worker", 2, {4096, 2, 0}}}), nodes, Queue("default", 1)));
}

TEST(CapacityCheck, GangLargerThanTheQueuesMaximumIsRefused) {
  std::vector<ypb::NodeReportProto> nodes = {Node("a", 8192, 8), Node("b", 8192, 8)};
  JobSpec spec = Job({128, 1, 0}, {{"worker", 3, {3072, 1, 0}}});
  EXPECT_OK(CheckJobFits(spec, nodes, Queue("default", 1)));
  EXPECT_STATUS(CheckJobFits(spec, nodes, Queue("small", 0.5f, 8192)), kResourceExhausted,
                "the job needs 9344 MiB at once (AM 128 MiB + 3 worker x 3072 MiB) but YARN queue 'small' may use "
                "at most 8192 MiB (maximum capacity 50% of the cluster's 16384 MiB): its tasks would wait forever");
  // Only maximumCapacity known (an RM without queueConfigurationsMap).
  ypb::QueueInfoProto bare;
  bare.set_queuename("bare");
  bare.set_maximumcapacity(0.25f);
  EXPECT_STATUS(CheckJobFits(spec, nodes, bare), kResourceExhausted, HasSubstr("may use at most 4096 MiB"));
}

TEST(CapacityCheck, NodesThatAreNotRunningDoNotCount) {
  std::vector<ypb::NodeReportProto> nodes = {Node("a", 8192, 8), Node("lost", 65536, 64, 0, ypb::NS_LOST)};
  EXPECT_STATUS(CheckJobFits(Job({128, 1, 0}, {{"worker", 1, {16384, 1, 0}}}), nodes, Queue("default", 1)),
                kResourceExhausted, HasSubstr("(a:45454 8192 MiB/8 vcores/0 GPUs)"));
  EXPECT_STATUS(CheckJobFits(Job({128, 1, 0}, {}), {Node("lost", 8192, 8, 0, ypb::NS_LOST)}, Queue("default", 1)),
                kFailedPrecondition, "the YARN cluster has no running NodeManager");
}

TEST(CapacityCheck, StoppedQueueIsRefused) {
  ypb::QueueInfoProto q = Queue("old", 1);
  q.set_state(ypb::Q_STOPPED);
  EXPECT_STATUS(CheckJobFits(Job({128, 1, 0}, {}), {Node("a", 8192, 8)}, q), kFailedPrecondition,
                "YARN queue 'old' is STOPPED: it accepts no applications");
}

TEST(CapacityCheck, GpusAlwaysCountVcoresOnlyWithTheDominantResourceCalculator) {
  std::vector<ypb::NodeReportProto> nodes = {Node("a", 65536, 4, 2), Node("b", 65536, 4, 2)};
  JobSpec spec = Job({128, 1, 0}, {{"worker", 5, {1024, 2, 1}}});
  EXPECT_STATUS(CheckJobFits(spec, nodes, Queue("default", 1)), kResourceExhausted,
                HasSubstr("the job needs 5248 MiB, 5 GPUs at once"));
  spec.types[0].instances = 4;  // 9 vcores on 8: fine for memory-only scheduling
  EXPECT_OK(CheckJobFits(spec, nodes, Queue("default", 1)));
  EXPECT_STATUS(CheckJobFits(spec, nodes, Queue("default", 1), {.min_allocation_mb = 128, .count_vcores = true}),
                kResourceExhausted, HasSubstr("but the YARN cluster has 131072 MiB, 8 vcores, 4 GPUs in all"));
}

TEST(CapacityCheck, FcfsJobsNeedOnlyEachContainerToFit) {
  JobSpec spec = Job({128, 1, 0}, {{"worker", 10, {4096, 1, 0}}});
  spec.gang = false;
  EXPECT_OK(CheckJobFits(spec, {Node("a", 8192, 8)}, Queue("default", 1)));
  spec.gang = true;
  EXPECT_STATUS(CheckJobFits(spec, {Node("a", 8192, 8)}, Queue("default", 1)), kResourceExhausted,
                HasSubstr("41088 MiB at once"));
}

}  // namespace
}  // namespace loom::cluster::yarn
