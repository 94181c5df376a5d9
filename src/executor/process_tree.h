#pragma once
// Resident memory and CPU of a task's processes, read from /proc.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace loom::executor {

// One process, from /proc/<pid>/stat.
struct ProcStat {
  pid_t pid = 0, ppid = 0, pgrp = 0;
  int64_t rss_bytes = 0;
  // CPU in clock ticks (sysconf(_SC_CLK_TCK)): its own (utime + stime, all its threads) and its
  // reaped children's (cutime + cstime); when it started, in ticks since boot.
  uint64_t cpu_ticks = 0, children_cpu_ticks = 0;
  uint64_t start_ticks = 0;
  bool zombie = false;  // ended, not yet reaped: its CPU is still there to read
};

// Every process in one pass over /proc; zombies only `with_zombies` (the CPU meter's: a child
// that ended is still counted until its parent reaps it, and then in the parent's cutime).
std::vector<ProcStat> ReadProcStats(bool with_zombies = false);

// The processes of `procs` in one of `pgids` or descending from one of `roots` (roots
// included): a daemon's children may leave its group, not its tree.
std::vector<ProcStat> MembersOf(const std::vector<ProcStat>& procs, const std::vector<pid_t>& pgids, std::set<pid_t> roots);
int64_t SumRssBytes(const std::vector<ProcStat>& procs);

// Sum of RSS of MembersOf(procs, pgids, roots).
int64_t RssBytesOf(const std::vector<ProcStat>& procs, const std::vector<pid_t>& pgids, std::set<pid_t> roots);

// Sum of RSS of every live process in process group `pgid`, in bytes.
int64_t ProcessGroupRssBytes(pid_t pgid);
// The same over several groups (a task's processes), in one pass over /proc.
int64_t ProcessGroupsRssBytes(const std::vector<pid_t>& pgids);

// Seconds since boot, on the clock /proc's start times count on (CLOCK_BOOTTIME).
double SecondsSinceBoot();

// The CPU a task's processes used between two samples, in cores.
struct CpuReading {
  double cores = 0;
  double interval_s = 0;  // what it was measured over
};

// Measures a process tree's CPU from one sample to the next. /proc gives each process's CPU
// time since it started, so a rate needs two readings:
// - the first Update has nothing to compare with and gives nothing (not a misleading 0, nor
//   the CPU since start over the moment since the task started);
// - a process seen last time counts what it used since (its utime + stime delta), plus what
//   its children used before it reaped them, less what was already counted of those children
//   (each child seen last time and gone now was reaped by its parent: its whole time moved
//   into the parent's cutime);
// - a process born since the last sample counts all of its CPU (all of it falls in between);
// - one that started earlier but was not seen (it joined the tree: a member's group changed)
//   counts from the next sample on.
// What a process used between its last sample and its end is lost only when something outside
// the tree reaps it (an orphan's end, reaped by init). Not thread-safe.
class CpuMeter {
 public:
  explicit CpuMeter(int64_t ticks_per_second);
  CpuMeter();  // the system's clock ticks

  // `members`: the tree now, zombies included (ReadProcStats(true)); `now_s`: SecondsSinceBoot,
  // read before /proc was. Nothing on the first call, or when no time has passed.
  std::optional<CpuReading> Update(const std::vector<ProcStat>& members, double now_s);

 private:
  struct Seen {
    uint64_t start_ticks = 0, own_ticks = 0, children_ticks = 0;
    pid_t ppid = 0;
  };
  double ticks_per_second_;
  std::map<pid_t, Seen> last_;
  std::optional<double> last_s_;
};

}  // namespace loom::executor
