#pragma once
// ResourceLedger: the one book of what local jobs hold on this machine, kept by the jobs
// themselves in a directory of files with flock(2); no daemon.
//
// Each job (its AM) holds one record file `<job_id>.<pid>.rec` under an exclusive flock it
// keeps open for its whole life (O_CLOEXEC; the local broker hands the descriptor to the job's
// executors on purpose, see record_fd()). The record says what the job wants and, once
// admitted, what it holds (state queued|running, GPU indices). A record whose flock can be
// taken has lost every holder (they died: the kernel dropped the lock), so it is stale: removed
// where permitted, ignored always. A job that dies gives everything back once its last process
// is gone; no lock outlives its processes. Reads and changes of the ledger happen in short critical
// sections under the ledger-wide flock `ledger.lock`.
//
// What is shared with whom:
//   GPUs: host-wide, by device index, among every job using the same ledger directory (the
//         default one is host-wide, so two users with different $LOOM_HOMEs never share a GPU).
//   memory: among the jobs of the same $LOOM_HOME; each job's capacity is its own host
//         inventory (loom.local.memory or MemTotal).
//   vcores: recorded as a share, never waited for.
// First come, first served: a job is admitted only when its whole gang fits now and no job
// that queued before it and competes with it (same $LOOM_HOME, or both want GPUs) still waits.
//
// Not thread-safe: one owner (the AM's admission) uses an instance. Distinct instances, in one
// process or many, are distinct participants.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace loom::cluster::local {

// What one job asks for: its whole gang, and what it may use.
struct LedgerRequest {
  std::string job_id;
  std::string home;               // the job's $LOOM_HOME, absolute: memory is shared among its jobs
  int64_t memory_mib = 0;         // the gang's total
  int vcores = 0;                 // the gang's total: a share, never waited for
  int gpus = 0;                   // the gang's total
  int64_t memory_capacity_mib = 0;  // this home's memory as the job sees it
  std::vector<int> gpu_indices;     // the host's GPUs as the job sees them (loom.local.gpus)
};

// Where a job stands.
struct Admission {
  bool admitted = false;
  std::vector<int> gpus;  // once admitted: the GPU indices it holds, ascending
  int position = 0;       // while queued: 1 = next among the jobs it competes with
  std::string reason;     // while queued: why ("waiting for 1 GPU held by job_...")
};

class ResourceLedger {
 public:
  // $LOOM_LEDGER_DIR if set; else /run/lock/loom where /run/lock is writable; else
  // /tmp/loom-ledger. The defaults are host-wide and created 1777.
  static std::string DefaultDir();

  // Opens the ledger at `dir` (creating it) and starts watching it for changes. Returns
  // FailedPrecondition naming the directory when it cannot be used.
  static Result<std::unique_ptr<ResourceLedger>> Open(const std::string& dir);
  // What Open checks of `dir` (made if missing, writable), without opening anything: a closed
  // inotify instance costs the closer a kernel grace period (~10-20 ms), which `loom submit`'s
  // check before the job starts need not pay.
  static Status CheckUsable(const std::string& dir);
  ~ResourceLedger();
  ResourceLedger(const ResourceLedger&) = delete;
  ResourceLedger& operator=(const ResourceLedger&) = delete;

  // Enters the job (once per instance): admitted at once when it may be, queued otherwise.
  // FailedPrecondition if already joined.
  Result<Admission> Join(const LedgerRequest& request);
  // For a queued job: looks again (after change_fd() turned readable, or after a while).
  // An admitted job gets its standing unchanged.
  Result<Admission> Retry();
  // Gives the job's resources, or its place in the queue, back. Idempotent; also done by
  // the destructor and, should the process die, by the kernel.
  void Release();

  // Readable when the ledger may have changed (a record was removed, its holder's descriptor
  // closed, e.g. at death, or it was rewritten). Call DrainChanges() before the next wait.
  // A change can be seen shortly before the dead holder's lock is gone: look again a little
  // later too (the caller's fallback timeout).
  int change_fd() const { return inotify_fd_; }
  void DrainChanges();

  const std::string& dir() const { return dir_; }
  // The record file's path while joined, "" otherwise.
  std::string record_path() const;
  // The record's descriptor while joined, -1 otherwise. The job's processes (its executors,
  // and through them its tasks) inherit it: the flock belongs to the open file, so the record
  // stays held, and its GPUs taken, until the last of them is gone, even after the AM died.
  int record_fd() const { return record_fd_; }

 private:
  explicit ResourceLedger(std::string dir) : dir_(std::move(dir)) {}
  Result<Admission> Look(bool first);

  const std::string dir_;
  int lock_fd_ = -1;     // ledger.lock, opened read-only: flock needs no write access
  int inotify_fd_ = -1;
  int record_fd_ = -1;   // our record, flocked exclusively while joined
  std::string record_name_;
  LedgerRequest request_;
  int64_t seq_ = 0;      // our place in the order of arrival
  Admission standing_;
};

}  // namespace loom::cluster::local
