#include "executor/signal_waiter.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace loom::executor {

SignalWaiter::SignalWaiter(Clock& clock, std::function<void()> on_child)
    : clock_(clock), on_child_(std::move(on_child)) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  // A fake clock's jump may make a deadline or a beat due: the waits look again.
  clock_watch_ = clock_.Watch([this] { Wake(); });
}

SignalWaiter::~SignalWaiter() {
  clock_.Unwatch(clock_watch_);
  if (signal_fd_ >= 0) ::close(signal_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void SignalWaiter::Open() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&mask, s);
  ::pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  signal_fd_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

void SignalWaiter::Wake() {
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

int SignalWaiter::Drain() {
  int terminating = 0;
  signalfd_siginfo si;
  while (signal_fd_ >= 0 && ::read(signal_fd_, &si, sizeof(si)) == sizeof(si)) {
    if (si.ssi_signo == SIGCHLD) {
      if (on_child_) on_child_();
    } else if (!terminating) {
      terminating = static_cast<int>(si.ssi_signo);
    }
  }
  return terminating;
}

int SignalWaiter::WaitForEvent(int timeout_ms) {
  pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {signal_fd_, POLLIN, 0}};
  ::poll(fds, signal_fd_ >= 0 ? 2 : 1, clock_.IsReal() ? timeout_ms : -1);
  if (fds[0].revents & POLLIN) {
    uint64_t v;
    (void)!::read(wake_fd_, &v, sizeof(v));
  }
  return Drain();
}

int SignalWaiter::WaitUntil(Clock::TimePoint deadline) {
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_.Now());
    if (left <= std::chrono::milliseconds(0)) return 0;
    if (int sig = WaitForEvent(static_cast<int>(left.count()))) return sig;
  }
}

int SignalWaiter::CallWatchingSignals(const std::function<void()>& call, const std::function<void()>& cancel,
                                      const std::function<bool()>& also_when) {
  std::atomic<bool> done{false};
  std::thread caller([&] {
    call();
    done = true;
    Wake();
  });
  int sig = 0;
  bool cancelled = false;
  while (!done) {
    int s = WaitForEvent(1000);
    if (!cancelled && (s || (also_when && also_when()))) {
      sig = s;
      cancel();
      cancelled = true;
    }
  }
  caller.join();
  return sig;
}

}  // namespace loom::executor
