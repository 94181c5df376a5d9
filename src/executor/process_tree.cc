#include "executor/process_tree.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/subprocess.h"

namespace loom::executor {

int64_t ProcessGroupRssBytes(pid_t pgid) { return ProcessGroupsRssBytes({pgid}); }

std::vector<ProcStat> ReadProcStats() {
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
    long rss_pages = 0;
    // Fields after the command: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
    // cmajflt utime stime cutime cstime priority nice num_threads itrealvalue starttime vsize rss
    if (std::sscanf(rp + 2, "%c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %*u %*u %ld",
                    &state, &ppid, &pg, &rss_pages) != 4 || state == 'Z') {
      continue;
    }
    procs.push_back({pid, ppid, pg, static_cast<int64_t>(rss_pages) * kPage});
  }
  return procs;
}

int64_t RssBytesOf(const std::vector<ProcStat>& procs, const std::vector<pid_t>& pgids, std::set<pid_t> roots) {
  // Descendants of the roots, to a fixed point (a child may be listed before its parent).
  for (bool grew = !roots.empty(); grew;) {
    grew = false;
    for (const ProcStat& p : procs) {
      if (!roots.count(p.pid) && roots.count(p.ppid)) grew = roots.insert(p.pid).second || grew;
    }
  }
  int64_t total = 0;
  for (const ProcStat& p : procs) {
    bool member = std::find(pgids.begin(), pgids.end(), p.pgrp) != pgids.end();
    if (member || roots.count(p.pid)) total += p.rss_bytes;
  }
  return total;
}

int64_t ProcessGroupsRssBytes(const std::vector<pid_t>& pgids) {
  if (pgids.empty()) return 0;
  return RssBytesOf(ReadProcStats(), pgids, {});
}

}  // namespace loom::executor
