#include "history/job_dir.h"

#include <sys/random.h>

#include <cstdlib>
#include <ctime>

#include "core/files.h"

namespace loom::history {

std::string LoomHome() {
  if (const char* h = std::getenv("LOOM_HOME"); h && *h) return h;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.loom";
}

JobDir JobDir::ForJob(const std::string& job_id) { return JobDir(LoomHome() + "/jobs/" + job_id); }

Result<JobDir> JobDir::Find(const std::string& id_or_path) {
  if (id_or_path.find('/') != std::string::npos) {
    if (IsDirectory(id_or_path)) return JobDir(AbsolutePath(id_or_path));
    return Status::NotFound("no job directory at " + id_or_path);
  }
  JobDir dir = ForJob(id_or_path);
  if (!IsDirectory(dir.root())) {
    return Status::NotFound("no job " + id_or_path + " under " + LoomHome() + "/jobs");
  }
  return dir;
}

std::string JobDir::job_id() const {
  size_t slash = root_.find_last_of('/');
  return slash == std::string::npos ? root_ : root_.substr(slash + 1);
}

std::string NewJobId() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
  unsigned short r = 0;
  (void)!::getrandom(&r, sizeof(r), 0);
  char suffix[8];
  std::snprintf(suffix, sizeof(suffix), "%04x", r);
  return std::string("job_") + stamp + "_" + suffix;
}

}  // namespace loom::history
