#include "cluster/local/resource_ledger.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/strings.h"

namespace loom::cluster::local {
namespace {

using nlohmann::json;

constexpr char kLockName[] = "ledger.lock";
constexpr char kRecordSuffix[] = ".rec";

// Another job's record, as read under the ledger lock.
struct Record {
  std::string job_id;
  std::string home;
  int64_t seq = 0;
  bool running = false;
  int64_t memory_mib = 0;
  int gpus_wanted = 0;
  std::vector<int> gpus;  // held, when running
};

// Holds the ledger-wide flock for one critical section.
class LedgerLock {
 public:
  explicit LedgerLock(int fd) : fd_(fd) {
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~LedgerLock() { ::flock(fd_, LOCK_UN); }

 private:
  int fd_;
};

std::string FormatMemory(int64_t mib) {
  char buf[32];
  if (mib >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f GiB", mib / 1024.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%lld MiB", static_cast<long long>(mib));
  }
  return buf;
}

std::string Plural(int n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// Opens `path` without O_CREAT when it exists: in a sticky world-writable directory,
// fs.protected_regular refuses O_CREAT on another user's file even when it only opens it.
int OpenOrCreateReadOnly(const std::string& path) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0 || errno != ENOENT) return fd;
    fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd >= 0) {
      ::fchmod(fd, 0644);  // whatever the umask: every user of the ledger opens it
      return fd;
    }
    if (errno != EEXIST) return fd;
  }
  return -1;
}

Result<std::string> ReadAll(int fd) {
  std::string out;
  char buf[4096];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("read", errno);
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

std::optional<Record> ParseRecord(const std::string& text) {
  try {
    json j = json::parse(text);
    Record r;
    r.job_id = j.at("job_id").get<std::string>();
    r.home = j.at("home").get<std::string>();
    r.seq = j.at("seq").get<int64_t>();
    r.running = j.at("state").get<std::string>() == "running";
    r.memory_mib = j.at("memory_mib").get<int64_t>();
    r.gpus_wanted = j.at("gpus_wanted").get<int>();
    r.gpus = j.at("gpus").get<std::vector<int>>();
    return r;
  } catch (const json::exception&) {
    return std::nullopt;  // not a record this version understands: it holds nothing we know of
  }
}

// The live records of the ledger but `own`; removes stale ones (their holder is gone) where
// the directory lets us. Call under the ledger lock.
std::vector<Record> ReadLive(const std::string& dir, const std::string& own) {
  std::vector<Record> live;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return live;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == own || !EndsWith(name, kRecordSuffix)) continue;
    std::string path = dir + "/" + name;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;  // gone meanwhile, or not a file we may read
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      // Nobody holds it: its job died without cleaning up. Its resources are free again.
      ::unlink(path.c_str());  // EPERM for another user's in a sticky dir: ignored all the same
      ::close(fd);
      continue;
    }
    if (errno != EWOULDBLOCK) {
      ::close(fd);
      continue;
    }
    auto text = ReadAll(fd);
    ::close(fd);
    if (!text.ok()) continue;
    if (auto r = ParseRecord(*text)) live.push_back(std::move(*r));
  }
  ::closedir(d);
  std::sort(live.begin(), live.end(), [](const Record& a, const Record& b) { return a.seq < b.seq; });
  return live;
}

bool Competes(const LedgerRequest& req, const Record& other) {
  return other.home == req.home || (req.gpus > 0 && other.gpus_wanted > 0);
}

std::string JoinIds(const std::vector<std::string>& ids) {
  constexpr size_t kShown = 4;
  if (ids.size() <= kShown) return Join(ids, ", ");
  std::vector<std::string> head(ids.begin(), ids.begin() + kShown);
  return Join(head, ", ") + " and " + std::to_string(ids.size() - kShown) + " more";
}

// The decision, from the other live records alone.
Admission Decide(const LedgerRequest& req, int64_t seq, const std::vector<Record>& others) {
  std::set<int> held;
  std::vector<std::string> gpu_holders, memory_holders;
  int64_t memory_used = 0;
  std::vector<const Record*> ahead;
  for (const Record& r : others) {
    if (r.running) {
      bool holds_ours = false;
      for (int g : r.gpus) {
        held.insert(g);
        holds_ours |= std::find(req.gpu_indices.begin(), req.gpu_indices.end(), g) != req.gpu_indices.end();
      }
      if (holds_ours) gpu_holders.push_back(r.job_id);
      if (r.home == req.home) {
        memory_used += r.memory_mib;
        memory_holders.push_back(r.job_id);
      }
    } else if (r.seq < seq && Competes(req, r)) {
      ahead.push_back(&r);
    }
  }
  std::vector<int> free_gpus;
  for (int g : req.gpu_indices) {
    if (!held.count(g)) free_gpus.push_back(g);
  }
  std::sort(free_gpus.begin(), free_gpus.end());
  const bool gpus_short = req.gpus > static_cast<int>(free_gpus.size());
  const int64_t memory_free = std::max<int64_t>(0, req.memory_capacity_mib - memory_used);
  const bool memory_short = req.memory_mib > memory_free;

  Admission a;
  if (!gpus_short && !memory_short && ahead.empty()) {
    a.admitted = true;
    a.gpus.assign(free_gpus.begin(), free_gpus.begin() + req.gpus);
    return a;
  }
  a.position = static_cast<int>(ahead.size()) + 1;
  std::vector<std::string> why;
  if (gpus_short) {
    std::string line = "waiting for " + Plural(req.gpus, "GPU");
    if (!free_gpus.empty()) line += " (" + std::to_string(free_gpus.size()) + " free)";
    why.push_back(line + " held by " + JoinIds(gpu_holders));
  }
  if (memory_short) {
    std::string line = "waiting for " + FormatMemory(req.memory_mib) + " of memory";
    if (memory_free > 0) line += " (" + FormatMemory(memory_free) + " free)";
    why.push_back(line + " held by " + JoinIds(memory_holders));
  }
  if (why.empty()) why.push_back("behind " + ahead.front()->job_id + ", which was queued first");
  a.reason = Join(why, "; ");
  return a;
}

Status WriteRecord(int fd, const LedgerRequest& req, int64_t seq, const Admission& a) {
  json j = {{"job_id", req.job_id},
            {"home", req.home},
            {"pid", ::getpid()},
            {"uid", ::getuid()},
            {"seq", seq},
            {"state", a.admitted ? "running" : "queued"},
            {"memory_mib", req.memory_mib},
            {"vcores", req.vcores},
            {"gpus_wanted", req.gpus},
            {"gpus", a.gpus}};
  std::string text = j.dump() + "\n";
  // Rewritten in place, under the ledger lock: the flock belongs to this inode.
  if (::ftruncate(fd, 0) != 0) return Status::FromErrno("truncating the ledger record", errno);
  if (::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return Status::FromErrno("writing the ledger record", errno);
  }
  return Status::Ok();
}

}  // namespace

std::string ResourceLedger::DefaultDir() {
  if (const char* d = std::getenv("LOOM_LEDGER_DIR"); d && *d) return d;
  if (::access("/run/lock", W_OK) == 0) return "/run/lock/loom";
  return "/tmp/loom-ledger";
}

namespace {
Status LedgerUnusable(const std::string& dir, const std::string& what, int err) {
  return Status::FailedPrecondition("the resource ledger " + dir + " cannot be used (" + what + ": " +
                                    std::strerror(err) + "); set LOOM_LEDGER_DIR to a directory every job of " +
                                    "this machine can write");
}

// The ledger dir, made if missing (shared like /tmp), and writable.
Status PrepareDir(const std::string& dir) {
  if (!IsDirectory(dir)) {
    size_t slash = dir.find_last_of('/');
    if (slash != std::string::npos && slash > 0) (void)MakeDirs(dir.substr(0, slash));
    if (::mkdir(dir.c_str(), 0777) == 0) {
      ::chmod(dir.c_str(), 01777);  // shared by every user of the machine, as /tmp is
    } else if (errno != EEXIST) {
      return LedgerUnusable(dir, "mkdir", errno);
    }
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return LedgerUnusable(dir, "access", errno);
  return Status::Ok();
}
}  // namespace

Status ResourceLedger::CheckUsable(const std::string& dir) {
  LOOM_RETURN_IF_ERROR(PrepareDir(dir));
  int lock = OpenOrCreateReadOnly(dir + "/" + kLockName);
  if (lock < 0) return LedgerUnusable(dir, kLockName, errno);
  ::close(lock);
  return Status::Ok();
}

Result<std::unique_ptr<ResourceLedger>> ResourceLedger::Open(const std::string& dir) {
  auto fail = [&](const std::string& what, int err) { return LedgerUnusable(dir, what, err); };
  LOOM_RETURN_IF_ERROR(PrepareDir(dir));
  std::unique_ptr<ResourceLedger> ledger(new ResourceLedger(dir));
  ledger->lock_fd_ = OpenOrCreateReadOnly(dir + "/" + kLockName);
  if (ledger->lock_fd_ < 0) return fail(kLockName, errno);
  ledger->inotify_fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (ledger->inotify_fd_ < 0) return fail("inotify_init1", errno);
  // Only changes that can free something or move the queue: a removed record, a closed
  // writer's descriptor (its holder ended, perhaps by dying), a record rewritten. Readers open
  // records read-only, so their looks wake nobody.
  if (::inotify_add_watch(ledger->inotify_fd_, dir.c_str(), IN_CLOSE_WRITE | IN_DELETE | IN_MODIFY | IN_MOVED_FROM) < 0) {
    return fail("inotify_add_watch", errno);
  }
  return ledger;
}

ResourceLedger::~ResourceLedger() {
  Release();
  if (lock_fd_ >= 0) ::close(lock_fd_);
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
}

std::string ResourceLedger::record_path() const { return record_fd_ >= 0 ? dir_ + "/" + record_name_ : ""; }

Result<Admission> ResourceLedger::Join(const LedgerRequest& request) {
  if (record_fd_ >= 0) return Status::FailedPrecondition("job " + request_.job_id + " already joined the ledger");
  if (request.job_id.empty() || request.job_id.find('/') != std::string::npos || request.job_id[0] == '.') {
    return Status::InvalidArgument("bad job id for the ledger: '" + request.job_id + "'");
  }
  request_ = request;
  return Look(/*first=*/true);
}

Result<Admission> ResourceLedger::Retry() {
  if (record_fd_ < 0) return Status::FailedPrecondition("not in the ledger");
  if (standing_.admitted) return standing_;
  return Look(/*first=*/false);
}

Result<Admission> ResourceLedger::Look(bool first) {
  LedgerLock lock(lock_fd_);
  std::string own = first ? request_.job_id + "." + std::to_string(::getpid()) + kRecordSuffix : record_name_;
  std::vector<Record> others = ReadLive(dir_, own);
  if (first) {
    seq_ = 1;
    for (const Record& r : others) seq_ = std::max(seq_, r.seq + 1);
  }
  Admission a = Decide(request_, seq_, others);
  if (first) {
    std::string path = dir_ + "/" + own;
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 && errno == EEXIST) {
      // A dead process of the same pid left a record of the same job: stale, unless it is
      // another live instance of ours (its flock says so).
      int old = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
      if (old >= 0 && ::flock(old, LOCK_EX | LOCK_NB) == 0) ::unlink(path.c_str());
      if (old >= 0) ::close(old);
      fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    }
    if (fd < 0) return Status::FromErrno("creating the ledger record " + path, errno);
    ::fchmod(fd, 0644);  // other users' jobs read it
    // Nobody else can have it: it was created just now, under the ledger lock.
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      ::unlink(path.c_str());
      ::close(fd);
      return Status::FromErrno("locking the ledger record " + path, err);
    }
    record_fd_ = fd;
    record_name_ = own;
  }
  if (first || a.admitted) {
    if (Status s = WriteRecord(record_fd_, request_, seq_, a); !s.ok()) {
      Release();
      return s;
    }
  }
  standing_ = a;
  return a;
}

void ResourceLedger::Release() {
  if (record_fd_ < 0) return;
  {
    LedgerLock lock(lock_fd_);
    ::unlink((dir_ + "/" + record_name_).c_str());
    ::close(record_fd_);
  }
  record_fd_ = -1;
  record_name_.clear();
  standing_ = {};
}

void ResourceLedger::DrainChanges() {
  char buf[4096];
  while (::read(inotify_fd_, buf, sizeof(buf)) > 0) {
  }
}

}  // namespace loom::cluster::local
