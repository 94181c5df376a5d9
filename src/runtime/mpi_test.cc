#include "runtime/mpi.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/testing.h"
#include "runtime/framework_env.h"

namespace loom::runtime {
namespace {

using ::testing::HasSubstr;

JobSpec MpiSpec() {
  JobSpec spec;
  spec.framework = Framework::kMpi;
  TaskTypeSpec worker;
  worker.name = "worker";
  worker.instances = 3;
  worker.processes = 2;
  worker.role = TaskRole::kUntracked;
  TaskTypeSpec launcher;
  launcher.name = "launcher";
  launcher.instances = 1;
  TaskTypeSpec server;
  server.name = "server";
  server.instances = 1;
  server.role = TaskRole::kUntracked;
  TaskTypeSpec tensorboard;
  tensorboard.name = "tensorboard";
  tensorboard.instances = 1;
  tensorboard.role = TaskRole::kSidecar;
  spec.types = {worker, launcher, server, tensorboard};
  return spec;
}

TEST(Mpi, HostfileHasOneLinePerRankHoldingTaskWithItsProcessesAsSlots) {
  EXPECT_EQ(MpiHostfile(MpiSpec()),
            "worker-0.loom.invalid slots=2\n"
            "worker-1.loom.invalid slots=2\n"
            "worker-2.loom.invalid slots=2\n"
            "server-0.loom.invalid slots=1\n");
  EXPECT_EQ(MpiSlots(MpiSpec()), 7);
  auto hosts = ParseMpiHostfile(MpiHostfile(MpiSpec()));
  ASSERT_OK(hosts);
  ASSERT_EQ(hosts->size(), 4u);
  EXPECT_EQ((*hosts)[1].alias, "worker-1.loom.invalid");
  EXPECT_EQ((*hosts)[1].slots, 2);
  EXPECT_EQ((*hosts)[3].slots, 1);
}

TEST(Mpi, WhoHoldsRanks) {
  JobSpec spec = MpiSpec();
  EXPECT_TRUE(HoldsMpiRanks(spec, "worker"));
  EXPECT_TRUE(HoldsMpiRanks(spec, "server"));
  EXPECT_FALSE(HoldsMpiRanks(spec, "launcher"));
  EXPECT_FALSE(HoldsMpiRanks(spec, "tensorboard"));  // a sidecar
  EXPECT_FALSE(HoldsMpiRanks(spec, "ps"));           // not a type of the job
  EXPECT_TRUE(IsMpiLauncher(spec, {"launcher", 0}));
  spec.framework = Framework::kPyTorch;
  EXPECT_FALSE(HoldsMpiRanks(spec, "worker"));
  EXPECT_FALSE(IsMpiLauncher(spec, {"launcher", 0}));
}

TEST(Mpi, HostAliasesNameTheirTask) {
  EXPECT_EQ(MpiHostAlias({"worker", 12}), "worker-12.loom.invalid");
  for (const TaskId& id : {TaskId{"worker", 0}, TaskId{"my-type", 3}, TaskId{"a_b", 10}}) {
    auto back = ParseMpiHostAlias(MpiHostAlias(id));
    ASSERT_OK(back);
    EXPECT_EQ(*back, id);
  }
  // As Open MPI passes it when orte_keep_fqdn_hostnames is off.
  auto bare = ParseMpiHostAlias("worker-2");
  ASSERT_OK(bare);
  EXPECT_EQ(*bare, (TaskId{"worker", 2}));
  for (const char* bad : {"", "worker", "worker-", "-1", "worker-x.loom.invalid", "worker-1.example.com",
                          "worker-99999999999.loom.invalid"}) {
    SCOPED_TRACE(bad);
    EXPECT_STATUS(ParseMpiHostAlias(bad), kInvalidArgument, HasSubstr("is not a host of this MPI job"));
  }
}

TEST(Mpi, BadHostfileLinesAreNamed) {
  EXPECT_STATUS(ParseMpiHostfile("a slots=1\nb\n"), kInvalidArgument, HasSubstr("hostfile line 2: 'b'"));
  EXPECT_STATUS(ParseMpiHostfile("a slots=0\n"), kInvalidArgument, HasSubstr("line 1"));
  EXPECT_STATUS(ParseMpiHostfile("a slots=1 max_slots=2\n"), kInvalidArgument, HasSubstr("line 1"));
  auto ok = ParseMpiHostfile("# hosts\n\na slots=3  # the first\n");
  ASSERT_OK(ok);
  ASSERT_EQ(ok->size(), 1u);
  EXPECT_EQ((*ok)[0].slots, 3);
}

TEST(Mpi, OnlyTheLauncherGetsOpenMpisSettings) {
  JobSpec spec = MpiSpec();
  ClusterSpec cluster;
  auto launcher = BuildFrameworkEnv(spec, cluster, {{"launcher", 0}, "job_1"});
  EXPECT_EQ(launcher["OMPI_MCA_plm_rsh_no_tree_spawn"], "1");
  EXPECT_EQ(launcher["OMPI_MCA_orte_keep_fqdn_hostnames"], "1");
  EXPECT_EQ(launcher["LOOM_TASK_ID"], "launcher:0");
  auto worker = BuildFrameworkEnv(spec, cluster, {{"worker", 1}, "job_1"});
  EXPECT_EQ(worker.count("OMPI_MCA_plm_rsh_no_tree_spawn"), 0u);
  // Each rank's local rank is Open MPI's (OMPI_COMM_WORLD_LOCAL_RANK), never a shared 0.
  EXPECT_EQ(worker.count("LOCAL_RANK"), 0u);
  EXPECT_EQ(worker.count("LOCAL_WORLD_SIZE"), 0u);
  EXPECT_EQ(worker["LOOM_JOB_ID"], "job_1");
}

}  // namespace
}  // namespace loom::runtime
