#include "executor/process_tree.h"

#include <unistd.h>

#include <gmock/gmock.h>

namespace loom::executor {
namespace {

// /proc readings as the tests inject them: 100 ticks a second, times in seconds since boot.
constexpr int64_t kHz = 100;

ProcStat Proc(pid_t pid, pid_t ppid, uint64_t own_ticks, uint64_t children_ticks = 0, uint64_t start_ticks = 0) {
  ProcStat p;
  p.pid = pid;
  p.ppid = ppid;
  p.pgrp = pid;
  p.cpu_ticks = own_ticks;
  p.children_cpu_ticks = children_ticks;
  p.start_ticks = start_ticks;
  return p;
}

TEST(CpuMeter, TheFirstSampleHasNothingToMeasureOver) {
  CpuMeter meter(kHz);
  // A process that used 5 s of CPU since it started at 0 says nothing of its use now.
  EXPECT_FALSE(meter.Update({Proc(10, 1, 500)}, 100.0));
  // Nor does a second reading at the same moment.
  EXPECT_FALSE(meter.Update({Proc(10, 1, 500)}, 100.0));
}

TEST(CpuMeter, CoresAreTheTicksUsedOverTheWallTimeBetweenSamples) {
  CpuMeter meter(kHz);
  ASSERT_FALSE(meter.Update({Proc(10, 1, 500), Proc(11, 10, 100)}, 100.0));
  // In 2 s: 10 used 2 s of CPU (one core busy), 11 used 1 s (half a core).
  auto r = meter.Update({Proc(10, 1, 700), Proc(11, 10, 200)}, 102.0);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->cores, 1.5);
  EXPECT_DOUBLE_EQ(r->interval_s, 2.0);
  // Idle: 0 cores, a real measurement (not "none").
  r = meter.Update({Proc(10, 1, 700), Proc(11, 10, 200)}, 104.0);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->cores, 0.0);
}

TEST(CpuMeter, AProcessBornSinceCountsAllItsTimeOneThatJoinedCountsFromNowOn) {
  CpuMeter meter(kHz);
  ASSERT_FALSE(meter.Update({Proc(10, 1, 0)}, 100.0));
  // 12 started at 100.5 s and used 1 s; 13 started long ago (it joined the tree: no telling
  // when its 50 s were used) and is only a baseline.
  auto r = meter.Update({Proc(10, 1, 0), Proc(12, 10, 100, 0, 10050), Proc(13, 1, 5000, 0, 100)}, 101.0);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->cores, 1.0);
  r = meter.Update({Proc(10, 1, 0), Proc(12, 10, 100, 0, 10050), Proc(13, 1, 5050, 0, 100)}, 102.0);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->cores, 0.5);  // 13's half second since
}

TEST(CpuMeter, AReapedChildIsCountedOnceWhenItsTimeMovesToItsParent) {
  CpuMeter meter(kHz);
  // bash (10) runs python (11), which has used 3 s.
  ASSERT_FALSE(meter.Update({Proc(10, 1, 1), Proc(11, 10, 300)}, 100.0));
  // python used 1 more second, ended, and bash reaped it: bash's cutime now holds all 4 s.
  // Only the second it used since the last sample counts, not a 4-core spike.
  auto r = meter.Update({Proc(10, 1, 1, 400)}, 101.0);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->cores, 1.0);
  // A zombie, not reaped yet, still counts as itself; its reaping then adds nothing.
  ProcStat zombie = Proc(12, 10, 50, 0, 10100);
  zombie.zombie = true;
  r = meter.Update({Proc(10, 1, 1, 400), zombie}, 102.0);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->cores, 0.5);
  r = meter.Update({Proc(10, 1, 1, 450)}, 103.0);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->cores, 0.0);
}

TEST(CpuMeter, AReusedPidIsANewProcess) {
  CpuMeter meter(kHz);
  ASSERT_FALSE(meter.Update({Proc(10, 1, 900, 0, 50)}, 100.0));
  // Pid 10 again, started at 100.5 s: 0.2 s of its own, never a negative delta off the old one.
  auto r = meter.Update({Proc(10, 1, 20, 0, 10050)}, 101.0);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->cores, 0.2);
}

TEST(ProcessTree, ThisProcessReadsWithItsCpuAndStart) {
  std::vector<ProcStat> me = MembersOf(ReadProcStats(), {}, {::getpid()});
  ASSERT_EQ(me.size(), 1u);
  EXPECT_GT(me[0].rss_bytes, 0);
  EXPECT_GT(me[0].start_ticks, 0u);
  EXPECT_LE(static_cast<double>(me[0].start_ticks) / ::sysconf(_SC_CLK_TCK), SecondsSinceBoot() + 1);
}

}  // namespace
}  // namespace loom::executor
