// MPI without ssh (loom.application.framework=mpi): real mpirun (Open MPI) and mpi4py, on the
// local backend and on the YARN test double. The launcher task's mpirun starts Open MPI's
// daemons in the worker tasks through `loom mpi-rsh`, relayed by the AM; no ssh anywhere.

#include <signal.h>

#include <cmath>

#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include <gmock/gmock.h>

#include "core/strings.h"
#include "core/testing.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

// `--src_dir scripts --executes mpi_allreduce.py` as an MPI job of `workers` tasks x 2 ranks.
std::vector<std::string> MpiJobArgs(int workers, const std::string& params = "", std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--src_dir",
                                   MiniLoom::Source(kScripts),
                                   "--executes",
                                   "mpi_allreduce.py",
                                   "--python_binary_path",
                                   "/usr/bin/python3",
                                   "--conf",
                                   "loom.application.framework=mpi",
                                   "--conf",
                                   "loom.worker.instances=" + std::to_string(workers),
                                   "--conf",
                                   "loom.worker.processes=2",
                                   "--conf",
                                   "loom.worker.memory=512m",
                                   "--conf",
                                   "loom.am.memory=512m",
                                   "--conf",
                                   "loom.task.stop-grace-ms=2000"};
  if (!params.empty()) args.insert(args.end(), {"--task_params", params});
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

struct Rank {
  int size = 0;
  std::string task;
  int64_t allreduce = 0;
  std::string workdir;
};

// The lines mpi_allreduce.py prints, by rank.
std::map<int, Rank> ParseRanks(const std::string& out) {
  static const std::regex kLine(R"(rank (\d+) of (\d+) in (\S+) \(pid \d+\): allreduce=(\d+) workdir=(\S+))");
  std::map<int, Rank> ranks;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), kLine); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    ranks[std::stoi(m[1])] = {std::stoi(m[2]), m[3], std::stoll(m[4]), m[5]};
  }
  return ranks;
}

// Every rank of a world of `tasks` x 2 reported the right sum, and each task hosted 2 of them.
void ExpectAllreduce(const std::map<int, Rank>& ranks, int tasks, const std::string& out) {
  const int world = tasks * 2;
  ASSERT_EQ(ranks.size(), static_cast<size_t>(world)) << out;
  int64_t expected = 0;
  for (int r = 0; r < world; ++r) expected += r + 1;  // what each rank contributed
  std::map<std::string, int> per_task;
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(ranks.count(r)) << "rank " << r << " missing:\n" << out;
    const Rank& rank = ranks.at(r);
    EXPECT_EQ(rank.size, world) << out;
    EXPECT_EQ(rank.allreduce, expected) << "rank " << r;
    ++per_task[rank.task];
  }
  for (int t = 0; t < tasks; ++t) EXPECT_EQ(per_task["worker:" + std::to_string(t)], 2) << out;
  EXPECT_EQ(per_task.size(), static_cast<size_t>(tasks)) << out;  // never in the launcher
}

// The scratch dirs the rank-holding tasks' executors named (TMPDIR of their daemons).
std::vector<std::string> ScratchDirs(const std::string& executor_logs) {
  static const std::regex kScratch(R"(scratch: ([^)\s]+)\))");
  std::vector<std::string> dirs;
  for (auto it = std::sregex_iterator(executor_logs.begin(), executor_logs.end(), kScratch);
       it != std::sregex_iterator(); ++it) {
    dirs.push_back((*it)[1]);
  }
  return dirs;
}

std::string ExecutorLogs(const MiniLoom& loom, const std::string& id, int workers) {
  std::string all;
  for (int i = 0; i < workers; ++i) {
    all += ReadFile(loom.Dir(id).task_dir({"worker", i}) + "/executor.log").value_or("");
  }
  return all;
}

// `text` without Open MPI's own warning of a race in its rsh launcher: mpirun's parent calls
// setpgid() on the agent it forked, which fails with EACCES when the child has already exec'd
// ("plm:rsh: Warning: setpgid(PID,PID) failed in parent with errno=Permission denied(13)"). It
// says nothing about Loom's agent, and came in 2 of 8 runs under load.
std::string WithoutOpenMpiSetpgidRace(const std::string& text) {
  std::string kept;
  for (const std::string& line : Split(text, '\n')) {
    if (line.empty() || (line.find("plm:rsh: Warning: setpgid(") != std::string::npos &&
                         line.find("failed in parent with errno=Permission denied") != std::string::npos)) {
      continue;
    }
    kept += line + "\n";
  }
  return kept;
}

// `loom submit` of that job.
std::vector<std::string> MpiSubmitArgs(int workers, const std::string& params = "", std::vector<std::string> extra = {}) {
  std::vector<std::string> args = MpiJobArgs(workers, params, std::move(extra));
  args.insert(args.begin(), "submit");
  return args;
}

TEST(MpiJob, AllreduceAcrossThreeTasksOfTwoRanks) {
  MiniLoom loom;
  RunResult r = loom.Run(MpiSubmitArgs(3));
  std::string id = loom.OnlyJobId();
  std::string out = loom.TaskOutput(id, {"launcher", 0});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << loom.TaskOutput(id, {"launcher", 0}, true);
  ExpectAllreduce(ParseRanks(out), 3, out);
  // Each rank ran in the working dir of the task that hosts it, where the job's files are.
  for (const auto& [rank, info] : ParseRanks(out)) {
    auto task = ParseTaskId(info.task);
    ASSERT_OK(task);
    EXPECT_EQ(std::filesystem::weakly_canonical(info.workdir), std::filesystem::weakly_canonical(loom.Dir(id).task_work(*task)))
        << "rank " << rank;
  }
  history::JobView view = loom.View(id);
  EXPECT_EQ(view.state, "SUCCEEDED");
  for (const auto& t : view.tasks) EXPECT_EQ(t.state, t.id == "launcher:0" ? TaskState::kSucceeded : TaskState::kKilled) << t.id;
  // The launcher's stderr has nothing from the agent: every daemon ended with mpirun.
  EXPECT_EQ(WithoutOpenMpiSetpgidRace(loom.TaskOutput(id, {"launcher", 0}, true)), "");
  EXPECT_TRUE(MiniLoom::ProcessesEndWithin(id, 5s));
  std::vector<std::string> scratch = ScratchDirs(ExecutorLogs(loom, id, 3));
  EXPECT_EQ(scratch.size(), 3u);
  for (const std::string& dir : scratch) EXPECT_FALSE(PathExists(dir)) << dir;
  EXPECT_FALSE(PathExists(loom.Dir(id).task_work({"launcher", 0}) + "/.loom-mpi"));
}

TEST(MpiJob, ACrashingRankFailsTheJobAndLeavesNothingBehind) {
  MiniLoom loom;
  auto start = std::chrono::steady_clock::now();
  RunResult r = loom.Run(MpiSubmitArgs(3, "--crash-rank 3 --code 7"));
  std::string id = loom.OnlyJobId();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  history::JobView view = loom.View(id);
  EXPECT_EQ(view.state, "FAILED");
  // The launcher's mpirun failed, and its diagnostics say which rank and how.
  EXPECT_THAT(view.diagnostics, HasSubstr("task launcher:0 failed: exit code 7"));
  EXPECT_THAT(r.out, HasSubstr("rank 3: crashing with exit code 7"));
  EXPECT_THAT(r.out, HasSubstr("mpirun detected that one or more processes exited with non-zero status"));
  for (const auto& t : view.tasks) EXPECT_EQ(t.state, t.id == "launcher:0" ? TaskState::kFailed : TaskState::kKilled) << t.id;
  EXPECT_TRUE(MiniLoom::ProcessesEndWithin(id, 5s));
  for (const std::string& dir : ScratchDirs(ExecutorLogs(loom, id, 3))) EXPECT_FALSE(PathExists(dir)) << dir;
}

TEST(MpiJob, KillStopsTheRanksEverywhere) {
  MiniLoom loom;
  std::vector<std::string> args = MpiSubmitArgs(2, "--sleep 120");
  Subprocess submit = loom.Start(args, "submit");
  std::string id = loom.WaitUntilRunning(3, 30s);
  ASSERT_FALSE(id.empty());
  // Up once every rank has printed: then they sleep in the worker tasks.
  ASSERT_TRUE(loom::testing::Eventually([&] { return ParseRanks(loom.TaskOutput(id, {"launcher", 0})).size() == 4; }, 20s))
      << loom.TaskOutput(id, {"launcher", 0}, true);
  RunResult kill = loom.Run({"kill", id});
  EXPECT_EQ(kill.exit_code, 0) << kill.out << kill.err;
  RunResult r = loom.Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(loom.View(id).state, "KILLED");
  EXPECT_TRUE(MiniLoom::ProcessesEndWithin(id, 10s));
  for (const std::string& dir : ScratchDirs(ExecutorLogs(loom, id, 2))) EXPECT_FALSE(PathExists(dir)) << dir;
}

TEST(MpiJob, ATaskThatHoldsRanksEndingFirstFailsTheJob) {
  MiniLoom loom;
  Subprocess submit = loom.Start(MpiSubmitArgs(2, "--sleep 120"), "submit");
  std::string id = loom.WaitUntilRunning(3, 30s);
  ASSERT_FALSE(id.empty());
  // Once every rank is up (they then sleep), worker:1's executor dies: its daemon and ranks go
  // with it.
  ASSERT_TRUE(loom::testing::Eventually([&] { return ParseRanks(loom.TaskOutput(id, {"launcher", 0})).size() == 4; }, 20s))
      << loom.TaskOutput(id, {"launcher", 0}, true);
  std::vector<pid_t> executor = MiniLoom::TaskProcesses(id, "worker:1", /*executor=*/true);
  ASSERT_EQ(executor.size(), 1u) << MiniLoom::DescribeProcesses(MiniLoom::JobProcesses(id));
  ::kill(executor[0], SIGKILL);
  RunResult r = loom.Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  history::JobView view = loom.View(id);
  EXPECT_EQ(view.state, "FAILED");
  EXPECT_THAT(view.diagnostics, HasSubstr("MPI task worker:1 ended before the launcher"));
  EXPECT_TRUE(MiniLoom::ProcessesEndWithin(id, 10s));
}

TEST(MpiJob, TheAgentRunsCommandsInTheNamedTaskOnlyAndRefusesUnknownHosts) {
  MiniLoom loom;
  // The launcher's own command calls the agent as mpirun would.
  RunResult r = loom.Run({"submit", "--src_dir", MiniLoom::Source(kScripts), "--conf",
                          "loom.application.framework=mpi", "--conf", "loom.worker.instances=2", "--conf",
                          "loom.launcher.command=/usr/bin/python3 mpi_agent_probe.py 'nosuch-0.loom.invalid=true' "
                          "'worker-1.loom.invalid=echo guest in $LOOM_TASK_ID at $(pwd); exit 3'"});
  std::string id = loom.OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string out = loom.TaskOutput(id, {"launcher", 0});
  EXPECT_THAT(out, HasSubstr("hostfile: worker-0.loom.invalid slots=1 | worker-1.loom.invalid slots=1"));
  EXPECT_THAT(out, HasSubstr("nosuch-0.loom.invalid: exit 255 stderr=\"loom mpi-rsh: unknown host "
                             "'nosuch-0.loom.invalid': the hosts of this MPI job are worker-0.loom.invalid, "
                             "worker-1.loom.invalid"));
  // The command's exit status comes back as the agent's, as through ssh.
  EXPECT_THAT(out, HasSubstr("worker-1.loom.invalid: exit 3 stderr=''"));
  std::string daemon_log = ReadFile(loom.Dir(id).task_dir({"worker", 1}) + "/mpi-daemon.log").value_or("");
  EXPECT_THAT(daemon_log, HasSubstr("guest in worker:1 at " + loom.Dir(id).task_work({"worker", 1})));
  EXPECT_EQ(ReadFile(loom.Dir(id).task_dir({"worker", 0}) + "/mpi-daemon.log").value_or(""), "");
  EXPECT_TRUE(MiniLoom::ProcessesEndWithin(id, 5s));
}

TEST(MpiJob, TheExampleRunsAsTheReadmeSays) {
  MiniLoom loom;
  RunResult r = loom.Run({"submit", "--src_dir", MiniLoom::Source("examples/mpi"), "--executes", "allreduce.py",
                          "--python_binary_path", "/usr/bin/python3", "--conf_file",
                          MiniLoom::Source("examples/mpi/loom.xml")});
  std::string id = loom.OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << loom.TaskOutput(id, {"launcher", 0}, true);
  std::string out = loom.TaskOutput(id, {"launcher", 0});
  std::string pi = LineAfter(out, "pi ~ ");
  ASSERT_FALSE(pi.empty()) << out;
  EXPECT_NEAR(std::stod(pi), M_PI, 1e-9) << out;
  EXPECT_THAT(pi, HasSubstr("from 6 ranks"));
  for (int rank = 0; rank < 6; ++rank) EXPECT_THAT(out, HasSubstr("rank " + std::to_string(rank) + "/6 in worker:"));
}

TEST(MpiJob, BadMpiConfigurationStartsNothing) {
  MiniLoom loom;
  RunResult r = loom.Run(MpiSubmitArgs(2, "", {"--conf", "tony.launcher.instances=2"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("runs exactly 1 launcher (it runs mpirun), but tony.launcher.instances=2"));
  EXPECT_TRUE(loom.JobIds().empty());
}

TEST(MpiJob, AllreduceOnYarn) {
  YarnDoubleCluster cluster;
  RunResult r = cluster.Submit(MpiJobArgs(3));
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("am.log") << cluster.ContainerLogs("stderr")
                            << cluster.ContainerLogs("executor.log");
  std::string out = cluster.ContainerLogs("stdout");
  ExpectAllreduce(ParseRanks(out), 3, out);
  history::JobView view = cluster.loom().View(id);
  EXPECT_EQ(view.state, "SUCCEEDED");
  EXPECT_EQ(cluster.Report(id).final_application_status(), ::hadoop::yarn::APP_SUCCEEDED);
  EXPECT_TRUE(MiniLoom::ProcessesEndWithin(id, 10s));
}

TEST(MpiJob, ACrashingRankFailsTheApplicationOnYarn) {
  YarnDoubleCluster cluster;
  RunResult r = cluster.Submit(MpiJobArgs(3, "--crash-rank 3"));
  std::string id = cluster.loom().OnlyJobId();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(cluster.Report(id).final_application_status(), ::hadoop::yarn::APP_FAILED);
  EXPECT_THAT(cluster.Report(id).diagnostics(), HasSubstr("launcher:0"));
  EXPECT_TRUE(MiniLoom::ProcessesEndWithin(id, 10s));
}

}  // namespace
}  // namespace loom::testing
