#include "executor/process_tree.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/subprocess.h"

namespace loom::executor {

int64_t ProcessGroupRssBytes(pid_t pgid) { return ProcessGroupsRssBytes({pgid}); }

std::vector<ProcStat> ReadProcStats(bool with_zombies) {
  static const long kPage = ::sysconf(_SC_PAGESIZE);
  std::vector<ProcStat> procs;
  for (pid_t pid : ListPids()) {
    int fd = ::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[1024];
    ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = 0;
    const char* rp = std::strrchr(buf, ')');  // the command may hold spaces and parens
    if (!rp) continue;
    char state;
    int ppid, pg;
    unsigned long long utime = 0, stime = 0, start = 0;
    long long cutime = 0, cstime = 0;
    long rss_pages = 0;
    // Fields after the command: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
    // cmajflt utime stime cutime cstime priority nice num_threads itrealvalue starttime vsize rss
    if (std::sscanf(rp + 2, "%c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld %*d %*d %*d %*d %llu %*u %ld",
                    &state, &ppid, &pg, &utime, &stime, &cutime, &cstime, &start, &rss_pages) != 9) {
      continue;
    }
    const bool zombie = state == 'Z';
    if (zombie && !with_zombies) continue;
    ProcStat p{pid, ppid, pg, static_cast<int64_t>(rss_pages) * kPage};
    p.cpu_ticks = utime + stime;
    p.children_cpu_ticks = static_cast<uint64_t>(std::max<long long>(0, cutime + cstime));
    p.start_ticks = start;
    p.zombie = zombie;
    procs.push_back(p);
  }
  return procs;
}

std::vector<ProcStat> MembersOf(const std::vector<ProcStat>& procs, const std::vector<pid_t>& pgids, std::set<pid_t> roots) {
  // Descendants of the roots, to a fixed point (a child may be listed before its parent).
  for (bool grew = !roots.empty(); grew;) {
    grew = false;
    for (const ProcStat& p : procs) {
      if (!roots.count(p.pid) && roots.count(p.ppid)) grew = roots.insert(p.pid).second || grew;
    }
  }
  std::vector<ProcStat> members;
  for (const ProcStat& p : procs) {
    bool member = std::find(pgids.begin(), pgids.end(), p.pgrp) != pgids.end();
    if (member || roots.count(p.pid)) members.push_back(p);
  }
  return members;
}

int64_t SumRssBytes(const std::vector<ProcStat>& procs) {
  int64_t total = 0;
  for (const ProcStat& p : procs) total += p.rss_bytes;
  return total;
}

int64_t RssBytesOf(const std::vector<ProcStat>& procs, const std::vector<pid_t>& pgids, std::set<pid_t> roots) {
  return SumRssBytes(MembersOf(procs, pgids, std::move(roots)));
}

int64_t ProcessGroupsRssBytes(const std::vector<pid_t>& pgids) {
  if (pgids.empty()) return 0;
  return RssBytesOf(ReadProcStats(), pgids, {});
}

double SecondsSinceBoot() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

CpuMeter::CpuMeter(int64_t ticks_per_second) : ticks_per_second_(static_cast<double>(std::max<int64_t>(1, ticks_per_second))) {}
CpuMeter::CpuMeter() : CpuMeter(::sysconf(_SC_CLK_TCK)) {}

std::optional<CpuReading> CpuMeter::Update(const std::vector<ProcStat>& members, double now_s) {
  std::map<pid_t, Seen> now;
  for (const ProcStat& p : members) now[p.pid] = {p.start_ticks, p.cpu_ticks, p.children_cpu_ticks, p.ppid};
  std::optional<CpuReading> reading;
  if (last_s_ && now_s > *last_s_) {
    // What each parent has reaped since: its children seen last time and gone now (or the pid
    // reused), whose last seen time is counted already.
    std::map<pid_t, uint64_t> reaped;
    for (const auto& [pid, seen] : last_) {
      auto it = now.find(pid);
      if (it == now.end() || it->second.start_ticks != seen.start_ticks) {
        reaped[seen.ppid] += seen.own_ticks + seen.children_ticks;
      }
    }
    const double born_after = *last_s_ * ticks_per_second_;
    double ticks = 0;
    for (const auto& [pid, p] : now) {
      auto was = last_.find(pid);
      if (was != last_.end() && was->second.start_ticks == p.start_ticks) {
        auto r = reaped.find(pid);
        const double already = r == reaped.end() ? 0 : static_cast<double>(r->second);
        // Each term at least 0: a child reaped outside what we saw cannot take time back.
        ticks += std::max(0.0, static_cast<double>(p.own_ticks) - static_cast<double>(was->second.own_ticks));
        ticks += std::max(0.0, static_cast<double>(p.children_ticks) - static_cast<double>(was->second.children_ticks) - already);
      } else if (static_cast<double>(p.start_ticks) >= born_after) {
        ticks += static_cast<double>(p.own_ticks + p.children_ticks);
      }
    }
    const double interval = now_s - *last_s_;
    reading = CpuReading{ticks / ticks_per_second_ / interval, interval};
  }
  if (!last_s_ || now_s > *last_s_) {
    last_ = std::move(now);
    last_s_ = now_s;
  }
  return reading;
}

}  // namespace loom::executor
