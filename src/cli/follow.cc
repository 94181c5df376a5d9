#include "cli/follow.h"

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "cli/am_probe.h"
#include "cli/am_startup.h"
#include "cli/event_lines.h"
#include "core/files.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "history/event_log.h"
#include "history/job_view.h"
#include "history/events.h"

namespace loom::cli {
namespace {

using nlohmann::json;

// The job's final diagnostics when `si` stops `loom submit`: Ctrl-C and a closed terminal
// come from the kernel (SI_KERNEL); a kill(2) names its sender.
std::string KillCauseOf(const signalfd_siginfo& si) {
  int sig = static_cast<int>(si.ssi_signo);
  bool from_terminal = si.ssi_code == SI_KERNEL;
  if (sig == SIGINT && from_terminal) return "killed: Ctrl-C (SIGINT) to loom submit";
  if (sig == SIGHUP && from_terminal) return "killed: SIGHUP to loom submit (its terminal closed)";
  std::string cause = "killed: " + SignalName(sig) + " to loom submit";
  if ((si.ssi_code == SI_USER || si.ssi_code == SI_QUEUE) && si.ssi_pid > 0) {
    std::string comm = ReadFile("/proc/" + std::to_string(si.ssi_pid) + "/comm").value_or("");
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    cause += " (from pid " + std::to_string(si.ssi_pid) + (comm.empty() ? "" : ", " + comm) + ")";
  }
  return cause;
}

}  // namespace

sigset_t BlockStopSignals() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, s);
  ::pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  return mask;
}

int FollowJob(const history::JobDir& dir, cluster::Backend& backend, FollowMode mode,
              std::chrono::milliseconds probe_interval, std::chrono::milliseconds am_silence_limit) {
  const bool live_table = mode == FollowMode::kTable;
  sigset_t mask = BlockStopSignals();  // already blocked by the caller before any thread
  int sig_fd = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  int ino = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  int watch = ::inotify_add_watch(ino, dir.root().c_str(), IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE);
  int am_fd = backend.AmExitFd(dir);

  history::EventTail tail(dir.events());
  history::JobView view;
  view.id = dir.job_id();
  int drawn_lines = 0;
  std::string last_table;
  bool killing = false;
  auto render = [&] {
    for (const json& e : tail.Next()) {
      view.Apply(e);
      try {
        if (mode == FollowMode::kLines) std::printf("%s\n", DescribeEvent(e).c_str());
      } catch (const json::exception&) {
        // an event of the wrong shape: nothing to show
      }
    }
    if (live_table) {
      int64_t now = history::NowMillis();
      std::string state = view.state;
      if (!view.final && !view.backend_state.empty() && state == "SUBMITTED") state = view.backend_state;
      if (state == "QUEUED") state = "QUEUED, position " + std::to_string(view.queue_position) + ": " + view.queue_reason;
      std::string header = "job " + view.id + "  " + state + "  " + history::FormatDuration(now - view.submitted_ms) +
                           (view.attempt ? "  (restart " + std::to_string(view.attempt) + ")" : "") +
                           (killing ? "  (killing)" : "") + "\n";
      if (!view.backend_id.empty()) {
        header += "  " + view.backend + " " + view.backend_id +
                  (view.tracking_url.empty() ? "" : "  " + view.tracking_url) + "\n";
      }
      if (!view.dashboard_url.empty() && view.tracking_url.empty()) header += "  Dashboard: " + view.dashboard_url + "\n";
      if (!view.tensorboard_url.empty()) header += "  TensorBoard: " + view.tensorboard_url + "\n";
      std::string table = header + history::RenderTaskTable(view);
      if (table == last_table) return;  // a burst of file events changed nothing visible
      last_table = table;
      if (drawn_lines) std::printf("\033[%dA\033[J", drawn_lines);
      drawn_lines = static_cast<int>(std::count(table.begin(), table.end(), '\n'));
      std::fputs(table.c_str(), stdout);
    }
    std::fflush(stdout);
  };

  int64_t am_gone_at = 0;
  AmProbe probe(dir, probe_interval, am_silence_limit);
  bool am_hung = false;
  const int64_t startup_timeout_ms = AmStartupTimeoutOf(dir);  // loom.am.startup-timeout (cli/am_startup.h)
  while (!PathExists(dir.status())) {
    render();
    pollfd fds[3] = {{ino, POLLIN, 0}, {sig_fd, POLLIN, 0}, {am_fd, POLLIN, 0}};
    ::poll(fds, am_fd >= 0 ? 3 : 2, live_table ? 500 : 1000);
    if (fds[0].revents & POLLIN) {
      char buf[4096];
      while (::read(ino, buf, sizeof(buf)) > 0) {
      }
    }
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo si{};
      signalfd_siginfo next;
      bool first = true;
      while (::read(sig_fd, &next, sizeof(next)) == sizeof(next)) {
        if (first) si = next;  // the first signal is the cause
        first = false;
      }
      std::fprintf(stderr, "\nloom: %s (%s); killing job %s\n", killing ? "killing again" : "interrupted",
                   SignalName(static_cast<int>(si.ssi_signo)).c_str(), view.id.c_str());
      killing = true;
      if (Status s = backend.Kill(dir, std::chrono::milliseconds(10000), KillCauseOf(si)); !s.ok()) {
        std::fprintf(stderr, "loom: %s\n", s.ToString().c_str());
      }
    }
    if (am_fd >= 0 && (fds[2].revents & POLLIN)) {
      // The AM has exited; its status.json (if it wrote one) is already on disk.
      ::close(am_fd);
      am_fd = -1;
      am_gone_at = history::NowMillis();
    }
    if (!am_gone_at && !am_hung && probe.Lost()) {
      // Alive but silent (stopped, deadlocked): it will never finish the job. End it.
      am_hung = true;
      std::fprintf(stderr, "loom: the AM has not answered for %lld ms; killing it\n",
                   static_cast<long long>(am_silence_limit.count()));
      // The cause is recorded first: the kill's own record must not win.
      std::string why = "the ApplicationMaster stopped answering for " + std::to_string(am_silence_limit.count()) +
                        " ms and was killed";
      // The AM reads the kill's cause as it stops: Loom killed it, not someone outside.
      (void)history::RecordKillCause(dir, why);
      (void)history::EndJob(dir, "FAILED", why);
      (void)backend.Kill(dir, std::chrono::milliseconds(0), why);
    }
    // Until the AM has started: one that did not in time ends the job (FAILED, naming why).
    if (startup_timeout_ms > 0 && !killing && (view.state == "SUBMITTED" || view.state == "QUEUED") &&
        EnforceAmStartupTimeout(dir, backend, startup_timeout_ms)) {
      killing = true;
    }
    if (am_gone_at && !PathExists(dir.status())) {
      if (killing || am_hung) {
        std::string why = killing ? "killed; the AM ended before writing a final status"
                                  : "the ApplicationMaster stopped answering for " +
                                        std::to_string(am_silence_limit.count()) + " ms and was killed";
        (void)history::EndJob(dir, killing ? "KILLED" : "FAILED", why);
      }
      // The backend records an unexpected end, and none of the job's tasks may outlive it.
      (void)backend.Sync(dir);
      (void)backend.Kill(dir, std::chrono::milliseconds(0), "");  // the end is recorded: no cause
    }
  }
  // No more file events are needed. The watch goes now: the kernel frees it after a grace
  // period, which close() would otherwise wait out (10-20 ms at the very end of `loom submit`).
  if (watch >= 0) ::inotify_rm_watch(ino, watch);
  // The job is over only when its AM is gone too: wait for it (it is stopping its last
  // containers and its server), and end it if it lingers.
  if (am_fd >= 0) {
    pollfd pfd{am_fd, POLLIN, 0};
    if (::poll(&pfd, 1, 10000) == 0) {
      std::fprintf(stderr, "loom: the AM did not exit after the job ended; killing it\n");
      (void)backend.Kill(dir, std::chrono::milliseconds(0), "");  // the job has its end already
    }
  }
  (void)backend.Sync(dir);  // the backend's clean-up after the end
  auto final_view = history::LoadJobView(dir);
  std::string state = final_view.ok() ? final_view->state : "UNKNOWN";
  view.state = state;
  render();
  std::string diagnostics = final_view.ok() ? final_view->diagnostics : "";
  std::printf("\nJob %s %s", view.id.c_str(), state.c_str());
  if (final_view.ok() && final_view->submitted_ms && final_view->finished_ms) {
    std::printf(" after %s", history::FormatDuration(final_view->finished_ms - final_view->submitted_ms).c_str());
  }
  std::printf("\n");
  if (!diagnostics.empty()) std::printf("  %s\n", diagnostics.c_str());
  for (const std::string& line : backend.Describe(dir)) std::printf("  %s\n", line.c_str());
  std::printf("  logs: loom logs %s [--task TYPE:INDEX|am] [--stderr]\n", view.id.c_str());
  std::fflush(stdout);
  if (am_fd >= 0) ::close(am_fd);
  ::close(ino);
  ::close(sig_fd);
  return state == "SUCCEEDED" ? 0 : 1;
}

}  // namespace loom::cli
