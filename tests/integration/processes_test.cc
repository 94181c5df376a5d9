// Several processes per task (loom.<type>.processes, torchrun's --nproc_per_node): the real
// `loom` binary on the local backend and on the YARN test double, real PyTorch DDP across the
// processes of two tasks, a process that fails, the logs of one process, the GPUs split among
// the processes, and the values refused at submit.

#include <map>
#include <regex>
#include <set>

#include <gmock/gmock.h>

#include "core/testing.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

// The DDP example as 2 tasks x 2 processes, a few epochs.
std::vector<std::string> DdpTwoByTwo() {
  return PythonSubmitArgs("examples/pytorch", "train_ddp.py",
                    {"--conf_file", MiniLoom::Source("examples/pytorch/tony.xml"), "--conf", "tony.worker.processes=2",
                     "--task_params", "--epochs 4"});
}

// What one DDP process said about itself: its variables (the "ranks:" line) and its final
// parameter digest.
struct DdpProcess {
  std::map<std::string, std::string> vars;
  std::string digest;
  bool agree = false;
};

DdpProcess ParseDdp(const std::string& out) {
  DdpProcess p;
  static const std::regex kVar(R"((\w+)=(\S*))");
  std::string ranks = LineAfter(out, "] ranks: ");
  for (std::sregex_iterator it(ranks.begin(), ranks.end(), kVar), end; it != end; ++it) {
    p.vars[(*it)[1]] = (*it)[2];
  }
  p.digest = LineAfter(out, "] parameter digest: ");
  p.agree = out.find("parameters agree across 4 ranks") != std::string::npos;
  return p;
}

// Checks the four processes of a 2x2 DDP job, given each one's stdout by (task, LOCAL_RANK).
void ExpectFourAgreeingRanks(const std::map<std::pair<int, int>, std::string>& outs) {
  ASSERT_EQ(outs.size(), 4u);
  std::set<std::string> ranks, digests;
  for (const auto& [where, out] : outs) {
    auto [task, local] = where;
    DdpProcess p = ParseDdp(out);
    SCOPED_TRACE("worker:" + std::to_string(task) + " process " + std::to_string(local) + ":\n" + out);
    EXPECT_EQ(p.vars["LOCAL_RANK"], std::to_string(local));
    EXPECT_EQ(p.vars["GROUP_RANK"], std::to_string(task));
    EXPECT_EQ(p.vars["LOCAL_WORLD_SIZE"], "2");
    EXPECT_EQ(p.vars["WORLD_SIZE"], "4");
    EXPECT_EQ(p.vars["RANK"], std::to_string(task * 2 + local));
    ranks.insert(p.vars["RANK"]);
    EXPECT_FALSE(p.digest.empty());
    digests.insert(p.digest);
    EXPECT_TRUE(p.agree);
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(digests.size(), 1u) << "the final parameters differ between the ranks";
}

TEST(Processes, DdpRunsAsTwoTasksOfTwoProcessesLocally) {
  MiniLoom loom;
  RunResult r = loom.Run(DdpTwoByTwo());
  std::string id = loom.OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << loom.TaskOutput(id, {"worker", 0}, true);
  std::map<std::pair<int, int>, std::string> outs;
  for (int task = 0; task < 2; ++task) {
    std::string dir = loom.Dir(id).task_dir({"worker", task});
    outs[{task, 0}] = ReadFile(dir + "/stdout").value_or("");
    outs[{task, 1}] = ReadFile(dir + "/stdout.1").value_or("");
    EXPECT_TRUE(PathExists(dir + "/stderr.1"));
  }
  ExpectFourAgreeingRanks(outs);
  EXPECT_EQ(loom.View(id).tasks.size(), 2u);  // tasks, not processes

  // `loom logs --process 1` is process 1's output alone; a process the task lacks is a usage error.
  RunResult one = loom.Run({"logs", id, "--task", "worker:0", "--process", "1"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_THAT(one.out, HasSubstr("[rank 1] ranks: RANK=1 LOCAL_RANK=1"));
  EXPECT_THAT(one.out, Not(HasSubstr("[rank 0]")));
  RunResult both = loom.Run({"logs", id, "--task", "worker:1"});
  EXPECT_EQ(both.exit_code, 0) << both.err;
  EXPECT_THAT(both.out, HasSubstr("==> worker:1/1 stdout.1 <=="));
  EXPECT_THAT(both.out, HasSubstr("[rank 2] ranks:"));
  EXPECT_THAT(both.out, HasSubstr("[rank 3] ranks:"));
  // Followed, the processes' lines are interleaved, each labelled with its task and process.
  RunResult followed = loom.Run({"logs", id, "--task", "worker:0", "-f"});
  EXPECT_EQ(followed.exit_code, 0) << followed.err;
  EXPECT_THAT(followed.out, HasSubstr("[worker:0/0] [rank 0] ranks:"));
  EXPECT_THAT(followed.out, HasSubstr("[worker:0/1] [rank 1] ranks:"));
  RunResult beyond = loom.Run({"logs", id, "--task", "worker:0", "--process", "2"});
  EXPECT_EQ(beyond.exit_code, 2);
  EXPECT_THAT(beyond.err, HasSubstr("--process 2: task worker:0 has 2 processes (tony.worker.processes=2)"));
  // Below 0 is no process either (not "every process").
  for (const char* negative : {"-1", "-5"}) {
    RunResult below = loom.Run({"logs", id, "--task", "worker:0", "--process", negative});
    EXPECT_EQ(below.exit_code, 2) << below.out;
    EXPECT_THAT(below.err, HasSubstr("--process " + std::string(negative) + ": a LOCAL_RANK, 0 or more"));
    EXPECT_EQ(below.out, "");
  }
}

TEST(Processes, DdpRunsAsTwoTasksOfTwoProcessesOnYarn) {
  YarnDoubleCluster cluster;
  std::vector<std::string> args = DdpTwoByTwo();
  args.erase(args.begin());  // Submit adds `submit --cluster yarn`
  for (const char* kv : {"tony.am.memory=512m", "tony.worker.memory=1g"}) {
    args.push_back("--conf");
    args.push_back(kv);
  }
  RunResult r = cluster.Submit(args);
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("executor.log") << cluster.ContainerLogs("stderr.1");
  // Each container's log dir holds its two processes' logs; read them as a user would.
  std::map<std::pair<int, int>, std::string> outs;
  for (int task = 0; task < 2; ++task) {
    for (int p = 0; p < 2; ++p) {
      RunResult logs = cluster.loom().Run(
          {"logs", id, "--task", "worker:" + std::to_string(task), "--process", std::to_string(p)}, cluster.Env());
      EXPECT_EQ(logs.exit_code, 0) << logs.err;
      outs[{task, p}] = logs.out;
    }
  }
  ExpectFourAgreeingRanks(outs);
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s));
}

// worker:0's process 1 fails on the first attempt; the other processes sleep `others_sleep` s.
std::vector<std::string> OneProcessFails(const std::string& others_sleep, std::vector<std::string> extra) {
  std::vector<std::string> args = {"--task_params",
                                   "--task worker:0 --process 1 --code 3 --delay 0.5 --others-sleep " + others_sleep,
                                   "--conf",
                                   "loom.worker.instances=2", "--conf", "loom.worker.processes=2", "--conf",
                                   "loom.application.framework=pytorch", "--conf", "loom.task.stop-grace-ms=1000"};
  args.insert(args.end(), extra.begin(), extra.end());
  return PythonSubmitArgs(kScripts, "process_fail.py", args);
}

TEST(Processes, OneFailingProcessFailsItsTaskAndStopsTheOthers) {
  MiniLoom loom;
  auto start = std::chrono::steady_clock::now();
  RunResult r = loom.Run(OneProcessFails("120", {}));
  std::string id = loom.OnlyJobId();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  // The other processes would sleep two minutes: they were stopped instead.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 60s);
  history::JobView view = loom.View(id);
  EXPECT_EQ(view.state, "FAILED");
  const history::TaskView* w0 = view.FindTask("worker:0");
  ASSERT_NE(w0, nullptr);
  EXPECT_EQ(w0->exit_code, 3);
  EXPECT_THAT(w0->diagnostics, HasSubstr("process 1 of 2 (LOCAL_RANK 1) exited with code 3"));
  // The stderr tail is the failed process's own.
  EXPECT_THAT(w0->diagnostics, HasSubstr("worker:0/1 failing with code 3"));
  std::string dir = loom.Dir(id).task_dir({"worker", 0});
  EXPECT_THAT(ReadFile(dir + "/stdout").value_or(""), HasSubstr("worker:0/0 started"));
  EXPECT_THAT(ReadFile(dir + "/stdout").value_or(""), Not(HasSubstr("done")));
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 5s))
      << MiniLoom::JobProcesses(id).size() << " processes left";
}

TEST(Processes, AFailedProcessRestartsItsTaskUnderTheRestartPolicy) {
  MiniLoom loom;
  // worker:1 is done after 3 s; worker:0 restarts and succeeds.
  RunResult r = loom.Run(OneProcessFails("3", {"--conf", "loom.worker.restart-policy=on-failure"}));
  std::string id = loom.OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  history::JobView view = loom.View(id);
  EXPECT_EQ(view.FindTask("worker:0")->restarts, 1);
  EXPECT_EQ(view.FindTask("worker:1")->restarts, 0);
  std::string dir = loom.Dir(id).task_dir({"worker", 0});
  EXPECT_THAT(ReadFile(dir + "/stdout.1").value_or(""), HasSubstr("worker:0/1 attempt 1 ok"));
  EXPECT_THAT(ReadFile(dir + "/stdout").value_or(""), HasSubstr("worker:0/0 attempt 1 ok"));
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 5s));
}

TEST(Processes, LoomKillStopsEveryProcess) {
  MiniLoom loom;
  Subprocess submit = loom.Start(
      SleepersWithChildren({"loom.worker.instances=1", "loom.worker.processes=3", "loom.task.stop-grace-ms=500"}), "submit");
  // The AM, the executor and three processes with a child each.
  std::string id = loom.WaitUntilRunningWithProcesses(1, 8);
  ASSERT_FALSE(id.empty());
  RunResult kill = loom.Run({"kill", id});
  EXPECT_EQ(kill.exit_code, 0) << kill.err;
  RunResult r = loom.Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(loom.View(id).state, "KILLED");
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 5s))
      << MiniLoom::JobProcesses(id).size() << " processes left";
}

// Each process's CUDA_VISIBLE_DEVICES, by LOCAL_RANK, of worker:0 of a job on 4 fake GPUs.
std::vector<std::string> VisibleGpus(const std::vector<std::string>& extra) {
  MiniLoom loom;
  // No GPU here: loom.local.gpus declares four, which is all the local backend needs to pin them.
  std::vector<std::string> args = {"submit", "--conf", "loom.local.gpus=4", "--conf", "loom.worker.instances=1",
                                   "--conf", "loom.worker.gpus=4", "--conf", "loom.worker.processes=2", "--conf",
                                   "loom.containers.command=/bin/sh -c 'echo \"CVD=[$CUDA_VISIBLE_DEVICES]\"'"};
  args.insert(args.end(), extra.begin(), extra.end());
  RunResult r = loom.Run(args);
  std::string id = loom.OnlyJobId();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string dir = loom.Dir(id).task_dir({"worker", 0});
  return {LineAfter(ReadFile(dir + "/stdout").value_or(""), "CVD="),
          LineAfter(ReadFile(dir + "/stdout.1").value_or(""), "CVD=")};
}

TEST(Processes, GpusAreSplitAmongTheProcessesOrShared) {
  EXPECT_EQ(VisibleGpus({}), (std::vector<std::string>{"[0,1]", "[2,3]"}));
  EXPECT_EQ(VisibleGpus({"--conf", "loom.worker.process-gpus=all"}),
            (std::vector<std::string>{"[0,1,2,3]", "[0,1,2,3]"}));
}

TEST(Processes, BadValuesAreRefusedBeforeAnythingStarts) {
  MiniLoom loom;
  auto submit = [&](std::vector<std::string> conf) {
    std::vector<std::string> args = {"submit", "--conf", "tony.worker.instances=2", "--conf",
                                     "tony.containers.command=true"};
    for (const std::string& kv : conf) {
      args.push_back("--conf");
      args.push_back(kv);
    }
    return loom.Run(args);
  };
  for (const std::string bad : {"0", "-1", "two"}) {
    RunResult r = submit({"tony.worker.processes=" + bad});
    EXPECT_EQ(r.exit_code, 2) << bad << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr("tony.worker.processes='" + bad + "': expected an integer >= 1"));
  }
  RunResult mode = submit({"tony.worker.process-gpus=some"});
  EXPECT_EQ(mode.exit_code, 2);
  EXPECT_THAT(mode.err, HasSubstr("tony.worker.process-gpus='some': expected one of split, all"));
  RunResult uneven = submit({"tony.worker.processes=3", "tony.worker.gpus=4", "tony.local.gpus=8"});
  EXPECT_EQ(uneven.exit_code, 2);
  EXPECT_THAT(uneven.err, HasSubstr("4 GPUs over 3 processes cannot be split evenly: set tony.worker.process-gpus=all"));
  EXPECT_TRUE(loom.JobIds().empty());
}

}  // namespace
}  // namespace loom::testing
