// GPUs on YARN: every task is pinned to the devices YARN assigned its container, and where
// YARN only counts them (the DefaultContainerExecutor) to distinct devices among the job's own
// containers, with a warning that other applications are not fenced off. Before, the tasks got
// no CUDA_VISIBLE_DEVICES at all and every one saw every GPU of its node.
// The test double's NodeManagers answer the GPU resource endpoint as Hadoop 3.3.6's did
// (yarn-captures gpu/); their devices are made up, so nothing here needs a GPU.

#include <gmock/gmock.h>

#include <set>

#include "core/strings.h"
#include "core/testing.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

// The double's device names (nm_gpus.cc): node 0's device i.
std::string Uuid(int index) { return "GPU-00000001-0000-4000-8000-00000000000" + std::to_string(index); }

const char kPrintGpus[] = "loom.worker.command=/bin/sh -c 'echo \"CVD=[$CUDA_VISIBLE_DEVICES] ORDER=[$CUDA_DEVICE_ORDER]\"'";

// What `loom logs` shows of one task's stdout: its CVD=... line.
std::string GpuLine(YarnDoubleCluster& cluster, const std::string& id, const std::string& task, int process = -1) {
  std::vector<std::string> args = {"logs", id, "--task", task};
  if (process >= 0) args.insert(args.end(), {"--process", std::to_string(process)});
  RunResult r = cluster.loom().Run(args, cluster.Env());
  for (const std::string& line : Split(r.out, '\n')) {
    if (line.find("CVD=") != std::string::npos) return line.substr(line.find("CVD="));
  }
  return "(none in: " + r.out + r.err + ")";
}

// Job `id`'s two workers saw one device each, `first` and `second` (in either order).
void ExpectWorkersSee(YarnDoubleCluster& cluster, const std::string& id, const std::string& first,
                      const std::string& second) {
  std::set<std::string> lines = {GpuLine(cluster, id, "worker:0"), GpuLine(cluster, id, "worker:1")};
  EXPECT_EQ(lines, (std::set<std::string>{"CVD=[" + first + "] ORDER=[]", "CVD=[" + second + "] ORDER=[]"}));
}

TEST(YarnGpus, WhereYarnOnlyCountsTheJobsTasksGetDistinctDevicesAndAreToldOthersAreNotFencedOff) {
  LOOM_REQUIRE_YARN_DOUBLE("NodeManagers with GPUs under the DefaultContainerExecutor");
  YarnDoubleCluster cluster([](yarn_double::YarnTestDouble::Options& o) { o.node_gpus = 2; });
  RunResult r = cluster.Submit(Confs({"loom.worker.instances=2", "loom.worker.gpus=1", "loom.worker.memory=256m", kPrintGpus}));
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  ExpectWorkersSee(cluster, id, Uuid(0), Uuid(1));
  // Said once, where the user looks: the submit's lines and `loom status`.
  const std::string warning = "warning: YARN only counts GPUs on localhost (no LinuxContainerExecutor assigns them)";
  EXPECT_THAT(r.out, HasSubstr(warning));
  EXPECT_EQ(r.out.find(warning), r.out.rfind(warning)) << r.out;
  RunResult status = cluster.loom().Run({"status", id}, cluster.Env());
  EXPECT_THAT(status.out, HasSubstr(warning));
  EXPECT_THAT(status.out, HasSubstr("other applications' containers on that node are not fenced off"));
  history::JobView view = cluster.loom().View(id);
  std::set<std::string> gpus;
  for (const auto& t : view.tasks) gpus.insert(t.gpus);
  EXPECT_EQ(gpus, (std::set<std::string>{Uuid(0), Uuid(1)}));
}

// Another application holds device 0: under the LinuxContainerExecutor YARN gives the job's
// containers 1 and 2, and the tasks use those, not the AM's own plan (0 and 1), which the
// devices cgroup would refuse them.
TEST(YarnGpus, UnderTheLinuxContainerExecutorEachTaskGetsTheDevicesYarnAssignedIt) {
  LOOM_REQUIRE_YARN_DOUBLE("NodeManagers with GPUs under the LinuxContainerExecutor; another application's GPU");
  YarnDoubleCluster cluster([](yarn_double::YarnTestDouble::Options& o) {
    o.node_gpus = 3;
    o.linux_container_executor = true;
    o.gpus_held_elsewhere = 1;
  });
  RunResult r = cluster.Submit(Confs({"loom.worker.instances=2", "loom.worker.gpus=1", "loom.worker.memory=256m", kPrintGpus}));
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  ExpectWorkersSee(cluster, id, Uuid(1), Uuid(2));
  EXPECT_THAT(r.out, Not(HasSubstr("warning:")));
  EXPECT_THAT(r.out, HasSubstr("GPUs " + Uuid(1)));  // the RUNNING line names them
}

// loom.worker.processes=2 over a container of 2 GPUs: each process gets one of them, as on the
// local backend.
TEST(YarnGpus, SeveralProcessesSplitTheirContainersDevices) {
  LOOM_REQUIRE_YARN_DOUBLE("NodeManagers with GPUs under the LinuxContainerExecutor");
  YarnDoubleCluster cluster([](yarn_double::YarnTestDouble::Options& o) {
    o.node_gpus = 2;
    o.linux_container_executor = true;
  });
  RunResult r = cluster.Submit({"--conf", "loom.worker.instances=1", "--conf", "loom.worker.gpus=2", "--conf",
                                "loom.worker.processes=2", "--conf", "loom.worker.memory=256m", "--conf", kPrintGpus});
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  EXPECT_EQ(GpuLine(cluster, id, "worker:0", 0), "CVD=[" + Uuid(0) + "] ORDER=[]");
  EXPECT_EQ(GpuLine(cluster, id, "worker:0", 1), "CVD=[" + Uuid(1) + "] ORDER=[]");
}

}  // namespace
}  // namespace loom::testing
