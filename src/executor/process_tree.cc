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

int64_t ProcessGroupsRssBytes(const std::vector<pid_t>& pgids) {
  if (pgids.empty()) return 0;
  static const long kPage = ::sysconf(_SC_PAGESIZE);
  int64_t total = 0;
  for (pid_t pid : ListPids()) {
    std::string dir = "/proc/" + std::to_string(pid);
    int fd = ::open((dir + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[1024];
    ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = 0;
    const char* rp = std::strrchr(buf, ')');
    if (!rp) continue;
    char state;
    int ppid, pg;
    long rss_pages = 0;
    // Fields after the command: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
    // cmajflt utime stime cutime cstime priority nice num_threads itrealvalue starttime vsize rss
    if (std::sscanf(rp + 2, "%c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %*u %*u %ld",
                    &state, &ppid, &pg, &rss_pages) != 4) {
      continue;
    }
    bool member = std::find(pgids.begin(), pgids.end(), pg) != pgids.end();
    if (member && state != 'Z') total += static_cast<int64_t>(rss_pages) * kPage;
  }
  return total;
}

}  // namespace loom::executor
