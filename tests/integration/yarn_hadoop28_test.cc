// Whole jobs on a Hadoop 2.8 ResourceManager, as the YARN test double models it from the
// recording (yarn-captures hadoop2/h285-*): it knows no allocation_request_id, keeps one ask per
// priority and location, and sends containers without a request id. There, before, no job
// ever started: the AM released the one container it got and waited for ever.

#include <gmock/gmock.h>

#include "core/files.h"
#include "core/testing.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

// The double as a ResourceManager that behaves as Hadoop 2.8's, over two NodeManagers.
void TwoHadoop28Nodes(yarn_double::YarnTestDouble::Options& o) {
  o.hadoop_2_8 = true;
  o.node_count = 2;
}

// The AM released no container it got (before, it released the one it got and waited for ever).
void ExpectNoContainerReleased(YarnDoubleCluster& cluster, const std::string& id) {
  EXPECT_THAT(ReadFile(cluster.loom().Dir(id).events()).value_or(""), Not(HasSubstr("CONTAINER_RELEASED")));
}

// Two task shapes over two NodeManagers, one task failing once and restarted alone: each
// container reaches a task of its shape, the restart gets a new one, the job SUCCEEDS. (Before,
// the AM waited for ever; the allocation timeout bounds that.)
TEST(YarnHadoop28, TwoShapesAndARestartRunToSuccess) {
  LOOM_REQUIRE_YARN_DOUBLE("a ResourceManager that behaves as Hadoop 2.8's");
  YarnDoubleCluster cluster(TwoHadoop28Nodes);
  const std::string py =
      "python3 -c 'import os, sys; "
      "first = os.environ[\"TASK_INDEX\"] == \"1\" and os.environ[\"LOOM_RESTART_COUNT\"] == \"0\"; "
      "sys.exit(3 if first else 0)'";
  RunResult r = cluster.Submit({"--conf", "loom.container.allocation.timeout=60000", "--conf", "loom.shell.instances=2", "--conf", "loom.shell.memory=256m", "--conf",
                                "loom.shell.command=/bin/sh -c 'echo shell $TASK_INDEX'", "--conf",
                                "loom.py.instances=2", "--conf", "loom.py.memory=512m", "--conf",
                                "loom.py.restart-policy=on-failure", "--conf", "loom.py.max-restarts=2", "--conf",
                                "loom.py.command=" + py});
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  EXPECT_THAT(r.out, HasSubstr("py:1 failed (exit 3); restarting it alone, restart 1"));
  history::JobView view = cluster.loom().View(id);
  EXPECT_EQ(view.state, "SUCCEEDED");
  ASSERT_EQ(view.tasks.size(), 4u);
  for (const auto& t : view.tasks) EXPECT_EQ(t.state, TaskState::kSucceeded) << t.id << ": " << t.diagnostics;
  // Each task ran in a container of its own size.
  std::map<std::string, int64_t> memory;
  for (const auto& c : cluster.yarn().Containers()) memory[c.id] = c.memory_mb;
  for (const auto& t : view.tasks) {
    EXPECT_EQ(memory[t.container], t.id.rfind("py:", 0) == 0 ? 512 : 256) << t.id << " in " << t.container;
  }
  ExpectNoContainerReleased(cluster, id);
}

// A gang restart (loom.am.retry-count) asks for every container again under the same keys:
// worker:1 fails in the first attempt only (a marker file the double's containers share on
// this machine), and the second attempt's gang lands and SUCCEEDS.
TEST(YarnHadoop28, GangRestartGetsAWholeNewGang) {
  LOOM_REQUIRE_YARN_DOUBLE("a ResourceManager that behaves as Hadoop 2.8's; containers that share this machine");
  YarnDoubleCluster cluster(TwoHadoop28Nodes);
  const std::string marker = cluster.root() + "/first-attempt-failed";
  RunResult r = cluster.Submit(
      {"--conf", "loom.container.allocation.timeout=60000", "--conf", "loom.am.retry-count=1", "--conf",
       "loom.worker.instances=2", "--conf", "loom.worker.memory=256m", "--conf",
       "loom.worker.command=/bin/sh -c 'if [ \"$TASK_INDEX\" = 1 ] && [ ! -e " + marker + " ]; then touch " + marker +
           "; exit 3; fi; sleep 1'",
       "--conf", "loom.ps.instances=1", "--conf", "loom.ps.memory=512m", "--conf", "loom.ps.command=sleep 1"});
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  EXPECT_THAT(r.out, HasSubstr("attempt 2"));
  history::JobView view = cluster.loom().View(id);
  EXPECT_EQ(view.state, "SUCCEEDED");
  EXPECT_EQ(view.attempt, 1);
  EXPECT_TRUE(PathExists(marker));
  ExpectNoContainerReleased(cluster, id);
}

// The DDP example end to end, over two NodeManagers of a 2.8 ResourceManager: real PyTorch
// training across containers whose asks and matches go by priority alone.
TEST(YarnHadoop28, PyTorchDdpTrainsAcrossTwoNodes) {
  LOOM_REQUIRE_YARN_DOUBLE("a ResourceManager that behaves as Hadoop 2.8's");
  YarnDoubleCluster cluster(TwoHadoop28Nodes);
  RunResult r = cluster.Submit({"--src_dir", MiniLoom::Source("examples/pytorch"), "--executes", "train_ddp.py",
                                "--python_binary_path", "/usr/bin/python3", "--conf_file",
                                MiniLoom::Source("examples/pytorch/tony.xml"), "--conf", "tony.am.memory=1g"});
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log");
  history::JobView view = cluster.loom().View(id);
  EXPECT_EQ(view.state, "SUCCEEDED");
  for (const auto& t : view.tasks) EXPECT_EQ(t.state, TaskState::kSucceeded) << t.id;
  std::string out = cluster.ContainerLogs("stdout");
  size_t at = out.find("test accuracy: ");
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_GE(std::stod(out.substr(at + 15, 8)), 0.9) << out;
  ExpectNoContainerReleased(cluster, id);
}

}  // namespace
}  // namespace loom::testing
