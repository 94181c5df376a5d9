#include "cli/am_probe.h"

#include <grpcpp/grpcpp.h>

#include "control/auth.h"
#include "control/control_client.h"
#include "core/files.h"
#include "core/strings.h"

namespace loom::cli {

using Clock = std::chrono::steady_clock;

AmProbe::AmProbe(history::JobDir dir, std::chrono::milliseconds interval, std::chrono::milliseconds limit)
    : dir_(std::move(dir)), interval_(interval), limit_(limit), thread_([this] { Loop(); }) {}

AmProbe::~AmProbe() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void AmProbe::Loop() {
  std::unique_ptr<control::ControlClient> am;
  auto last_ok = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval_, [this] { return stop_; })) {
    lock.unlock();
    if (!am) {  // the AM writes its address once its server is up
      auto addr = ReadFile(dir_.am_addr());
      auto s = control::ReadSecretFile(dir_.secret());
      if (addr.ok() && s.ok()) {
        if (auto client = control::ControlClient::Connect(Trim(*addr), *s); client.ok()) am = std::move(*client);
      }
      // No address yet (a YARN AM still queued) is not silence: the clock starts with one.
      last_ok = Clock::now();
    }
    if (am) {
      grpc::ClientContext ctx;
      am->Prepare(ctx, std::max(interval_, std::chrono::milliseconds(1000)));
      control::JobStateRequest req;
      req.set_events_offset(-1);  // liveness only
      control::JobStateResponse resp;
      if (am->stub().JobState(&ctx, req, &resp).ok()) last_ok = Clock::now();
    }
    if (Clock::now() - last_ok > limit_) lost_ = true;
    lock.lock();
  }
}

}  // namespace loom::cli
