#include "executor/task_processes.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>

#include "core/eventually.h"
#include "core/testing.h"

namespace loom::executor {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

control::ClusterSpecResponse SpecOf(int processes, int gpus_per_process) {
  control::ClusterSpecResponse spec;
  spec.set_command("python3 train.py");
  for (int i = 0; i < processes; ++i) (*spec.add_processes()->mutable_env())["LOCAL_RANK"] = std::to_string(i);
  spec.set_gpus_per_process(gpus_per_process);
  return spec;
}

SpawnOptions Base() {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "true"};
  o.env = {{"PATH", "/usr/bin:/bin"}};
  return o;
}

TEST(PlanMembers, OneProcessIsTheTaskItselfWithItsPlainLogs) {
  MembersPlan plan = PlanMembers(Base(), SpecOf(0, 0), "/logs", "worker:1", std::nullopt);
  ASSERT_EQ(plan.members.size(), 1u);
  EXPECT_EQ(plan.members[0].label, "worker:1");
  EXPECT_EQ(plan.members[0].options.stdout_path, "/logs/stdout");
  EXPECT_EQ(plan.members[0].options.stderr_path, "/logs/stderr");
  EXPECT_FALSE(plan.members[0].options.env.count("OMP_NUM_THREADS"));
  EXPECT_TRUE(plan.notes.empty());
}

TEST(PlanMembers, EachProcessGetsItsRankItsLogsAndOneThreadUnlessTheUserSaid) {
  MembersPlan plan = PlanMembers(Base(), SpecOf(3, 0), "/logs", "worker:0", std::nullopt);
  ASSERT_EQ(plan.members.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const SpawnOptions& o = plan.members[i].options;
    EXPECT_EQ(o.env.at("LOCAL_RANK"), std::to_string(i));
    EXPECT_EQ(o.env.at("OMP_NUM_THREADS"), "1");
    EXPECT_EQ(o.stdout_path, i == 0 ? "/logs/stdout" : "/logs/stdout." + std::to_string(i));
  }
  EXPECT_EQ(plan.members[2].label, "process 2 of 3 (LOCAL_RANK 2)");
  SpawnOptions mine = Base();
  mine.env["OMP_NUM_THREADS"] = "4";
  EXPECT_EQ(PlanMembers(mine, SpecOf(2, 0), "/l", "w:0", std::nullopt).members[1].options.env.at("OMP_NUM_THREADS"), "4");
}

TEST(PlanMembers, SplitGivesProcessIItsSliceOfTheDevices) {
  MembersPlan plan = PlanMembers(Base(), SpecOf(2, 2), "/l", "w:0", std::string("3, 5,6,7"));
  ASSERT_EQ(plan.members.size(), 2u);
  EXPECT_EQ(plan.members[0].options.env.at("CUDA_VISIBLE_DEVICES"), "3,5");
  EXPECT_EQ(plan.members[1].options.env.at("CUDA_VISIBLE_DEVICES"), "6,7");
  EXPECT_TRUE(plan.warnings.empty());
}

TEST(PlanMembers, TooFewDevicesOrNoneLeaveEveryProcessSeeingAll) {
  MembersPlan few = PlanMembers(Base(), SpecOf(2, 2), "/l", "w:0", std::string("0,1,2"));
  for (const MemberPlan& m : few.members) EXPECT_FALSE(m.options.env.count("CUDA_VISIBLE_DEVICES"));
  ASSERT_EQ(few.warnings.size(), 1u);
  EXPECT_THAT(few.warnings[0], HasSubstr("fewer than 2 processes x 2 GPUs"));
  MembersPlan unset = PlanMembers(Base(), SpecOf(2, 1), "/l", "w:0", std::nullopt);
  for (const MemberPlan& m : unset.members) EXPECT_FALSE(m.options.env.count("CUDA_VISIBLE_DEVICES"));
  EXPECT_THAT(unset.notes, ::testing::Contains(HasSubstr("CUDA_VISIBLE_DEVICES is not set")));
}

// Reaps every child of this test process until `processes` has seen all its members end.
void ReapAll(TaskProcesses& processes) {
  while (!processes.AllEnded()) {
    int wstatus = 0;
    pid_t pid = ::waitpid(-1, &wstatus, 0);
    ASSERT_GT(pid, 0);
    processes.OnReaped(pid, wstatus);
  }
}

TEST(TaskProcesses, TheFirstMemberToFailDecidesTheTasksExit) {
  const std::string fifo = ::testing::TempDir() + "/task_processes_go_" + std::to_string(::getpid());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  TaskProcesses processes;
  SpawnOptions ok = Base(), failing = Base(), slow = Base();
  failing.argv = {"/bin/sh", "-c", "exit 3"};
  // Fails too, but only once told to: after member 1, whatever the machine's load.
  slow.argv = {"/bin/sh", "-c", "read go < " + fifo + "; exit 5"};
  ASSERT_OK(processes.Start(ok, "process 0"));
  ASSERT_OK(processes.Start(failing, "process 1"));
  ASSERT_OK(processes.Start(slow, "process 2"));
  EXPECT_FALSE(processes.AllEnded());
  EXPECT_EQ(processes.LiveGroups().size(), 3u);
  while (!processes.members()[1].exit) {
    int wstatus = 0;
    pid_t pid = ::waitpid(-1, &wstatus, 0);
    ASSERT_GT(pid, 0);
    processes.OnReaped(pid, wstatus);
  }
  {
    std::ofstream go(fifo);  // opens once member 2's shell has opened its end
    go << "go\n";
  }
  ReapAll(processes);
  std::filesystem::remove(fifo);
  ASSERT_NE(processes.FirstFailed(), nullptr);
  EXPECT_EQ(processes.FirstFailed()->label, "process 1");
  EXPECT_EQ(processes.Decisive().exit->exit_code, 3);
  EXPECT_EQ(HowItEnded(*processes.Decisive().exit), "exited with code 3");
  EXPECT_TRUE(processes.LiveGroups().empty());
  EXPECT_FALSE(processes.OnReaped(1, 0));  // not a member
}

TEST(TaskProcesses, WithoutAFailureMemberZeroDecides) {
  TaskProcesses processes;
  ASSERT_OK(processes.Start(Base(), "process 0"));
  ReapAll(processes);
  EXPECT_EQ(processes.FirstFailed(), nullptr);
  EXPECT_TRUE(processes.Decisive().exit->success());
}

// SIGTERM first; a group that ignores it is SIGKILLed once the grace is over.
TEST(TaskProcesses, TerminatingEscalatesToSigkillForEveryGroup) {
  const std::string dir = ::testing::TempDir() + "/task_processes_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  TaskProcesses processes;
  for (int i = 0; i < 3; ++i) {
    SpawnOptions stubborn = Base();
    // Ready only once SIGTERM is ignored: sent earlier, it would end the shell at once.
    stubborn.argv = {"/bin/sh", "-c", "trap '' TERM; touch " + dir + "/" + std::to_string(i) +
                                          "; while :; do sleep 0.05; done"};
    ASSERT_OK(processes.Start(stubborn, "p" + std::to_string(i)));
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(testing::Eventually([&] { return std::filesystem::exists(dir + "/" + std::to_string(i)); }));
  }
  TerminateProcessGroups(processes.LiveGroups(), 200ms);
  ReapAll(processes);
  for (const auto& m : processes.members()) EXPECT_EQ(m.exit->signal, SIGKILL) << m.label;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace loom::executor
