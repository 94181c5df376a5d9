#pragma once
// What the two halves of YarnJobSubmitter share: yarn_job_submitter.cc (check, stage, submit,
// kill, logs) and yarn_job_follower.cc (following the job to its end).

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "cluster/yarn/yarn_job_submitter.h"
#include "control/control_client.h"
#include "history/job_dir.h"

namespace loom::cluster::yarn {

// Holds flock(2) on the job's yarn.json lock file: one Sync at a time across clients.
class DirLock {
 public:
  explicit DirLock(const history::JobDir& dir) {
    fd_ = ::open((dir.root() + "/yarn.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~DirLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_ = -1;
};

struct YarnJobSubmitter::AmChannel {
  std::string address;  // host:port, as the RM reports the AM
  std::unique_ptr<control::ControlClient> client;
  bool failed = false;  // a call failed: the next one waits until the channel is up again
  std::chrono::steady_clock::time_point resolve_again;  // without a client: the name did not resolve
};

}  // namespace loom::cluster::yarn
