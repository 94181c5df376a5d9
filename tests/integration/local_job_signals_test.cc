// How a local job ends when a signal stops it, and how its record names who sent it: loom kill,
// a signal to loom submit, Ctrl-C at a terminal, SIGTERM to the AM from outside Loom.

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "history/event_log.h"
#include "mini_loom.h"

namespace loom::testing {
namespace {

using nlohmann::json;

// `loom submit` of `workers` tasks that sleep until stopped, each given 0.5 s to stop.
std::vector<std::string> SleepingJob(int workers) {
  return PythonSubmitArgs(kScripts, "sleep_forever.py",
                          {"--conf", "loom.worker.instances=" + std::to_string(workers), "--conf", "loom.task.stop-grace-ms=500"});
}

TEST(LocalJob, KillWithoutUserVariablesNamesTheLoginNotTheUid) {
  MiniLoom loom;
  Subprocess submit = loom.Start(SleepingJob(1), "submit");
  std::string id = loom.WaitUntilRunning(1, 30s);
  ASSERT_FALSE(id.empty());
  const passwd* pw = ::getpwuid(::getuid());
  ASSERT_NE(pw, nullptr);
  RunResult kill = loom.Run({"kill", id}, {{"USER", ""}, {"LOGNAME", ""}});
  EXPECT_EQ(kill.exit_code, 0) << kill.err;
  RunResult r = loom.Collect(submit, "submit");
  const std::string cause = std::string("killed by loom kill (user ") + pw->pw_name + ")";
  EXPECT_EQ(loom.View(id).diagnostics, cause);
  EXPECT_THAT(r.out, HasSubstr(cause));
  EXPECT_THAT(r.out, Not(HasSubstr("(user " + std::to_string(::getuid()) + ")")));
}

class SignalToSubmit : public ::testing::TestWithParam<int> {};

TEST_P(SignalToSubmit, KillsTheJobAndSaysWhoSentIt) {
  MiniLoom loom;
  Subprocess submit = loom.Start(SleepingJob(2), "submit");
  std::string id = loom.WaitUntilRunning(2, 30s);
  ASSERT_FALSE(id.empty());
  ::kill(submit.pid(), GetParam());
  RunResult r = loom.Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 1);
  history::JobView view = loom.View(id);
  EXPECT_EQ(view.state, "KILLED");
  // A kill(2) from this test: the signal, and its sender by pid and name.
  std::string cause = "killed: " + SignalName(GetParam()) + " to loom submit (from pid " + std::to_string(::getpid());
  EXPECT_THAT(view.diagnostics, HasSubstr(cause));
  EXPECT_THAT(r.out, HasSubstr(cause));
  EXPECT_THAT(view.diagnostics, Not(HasSubstr("loom kill")));
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 2s));
}

INSTANTIATE_TEST_SUITE_P(LocalJob, SignalToSubmit, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const auto& info) { return SignalName(info.param); });

// `loom ARGS...` on a pseudo-terminal of its own, as typed at a shell: Type("\x03") is a Ctrl-C.
class OnTerminal {
 public:
  OnTerminal(const MiniLoom& loom, const std::vector<std::string>& args) {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    EXPECT_GE(master_, 0);
    EXPECT_EQ(::grantpt(master_), 0);
    EXPECT_EQ(::unlockpt(master_), 0);
    std::string slave = ::ptsname(master_);
    // Everything the child needs is made before fork(): it only calls async-signal-safe functions.
    std::vector<std::string> argv = {MiniLoom::Binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env;
    for (const auto& [k, v] : loom.Env()) env.push_back(k + "=" + v);
    env.push_back("TERM=xterm");
    std::vector<char*> argv_p, env_p;
    for (auto& a : argv) argv_p.push_back(a.data());
    for (auto& e : env) env_p.push_back(e.data());
    argv_p.push_back(nullptr);
    env_p.push_back(nullptr);
    std::string home = loom.home();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setsid();
      int tty = ::open(slave.c_str(), O_RDWR);  // a session leader's first terminal: its controlling one
      if (tty < 0 || ::chdir(home.c_str()) != 0) ::_exit(127);
      ::dup2(tty, 0);
      ::dup2(tty, 1);
      ::dup2(tty, 2);
      if (tty > 2) ::close(tty);
      ::execve(argv_p[0], argv_p.data(), env_p.data());
      ::_exit(127);
    }
    reader_ = std::thread([this] {
      char buf[4096];
      while (!done_) {
        pollfd p{master_, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        ssize_t n = ::read(master_, buf, sizeof(buf));
        if (n <= 0) break;  // EIO: the terminal's last user is gone
        std::lock_guard<std::mutex> l(mu_);
        screen_.append(buf, static_cast<size_t>(n));
      }
    });
  }
  ~OnTerminal() {
    if (pid_ > 0 && !waited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    done_ = true;
    if (reader_.joinable()) reader_.join();
    if (master_ >= 0) ::close(master_);
  }
  void Type(const std::string& keys) { EXPECT_EQ(::write(master_, keys.data(), keys.size()), (ssize_t)keys.size()); }
  // Waits for the command; returns its exit code (shell convention).
  int Wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    waited_ = true;
    std::this_thread::sleep_for(200ms);  // the last screen still in the terminal
    return ExitInfo::FromWaitStatus(status).ShellCode();
  }
  std::string screen() {
    std::lock_guard<std::mutex> l(mu_);
    return screen_;
  }

 private:
  int master_ = -1;
  pid_t pid_ = -1;
  bool waited_ = false;
  std::atomic<bool> done_{false};
  std::thread reader_;
  std::mutex mu_;
  std::string screen_;
};

TEST(LocalJob, CtrlCAtTheTerminalIsNamedAsSuch) {
  MiniLoom loom;
  OnTerminal tty(loom, SleepingJob(1));
  std::string id = loom.WaitUntilRunning(1, 30s);
  ASSERT_FALSE(id.empty()) << tty.screen();
  tty.Type("\x03");  // the terminal sends SIGINT to its foreground process group: loom submit
  EXPECT_EQ(tty.Wait(), 1) << tty.screen();
  EXPECT_EQ(loom.View(id).state, "KILLED");
  EXPECT_EQ(loom.View(id).diagnostics, "killed: Ctrl-C (SIGINT) to loom submit");
  EXPECT_THAT(tty.screen(), HasSubstr("killed: Ctrl-C (SIGINT) to loom submit"));
  EXPECT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 2s));
}

TEST(LocalJob, SigtermToTheAmFromOutsideLoomIsNamedAsSuch) {
  MiniLoom loom;
  Subprocess submit = loom.Start(SleepingJob(1), "submit");
  std::string id = loom.WaitUntilRunning(1, 30s);
  ASSERT_FALSE(id.empty());
  int am_pid = std::stoi(ReadFile(loom.Dir(id).am_pid()).value_or("0"));
  ASSERT_GT(am_pid, 1);
  ::kill(am_pid, SIGTERM);  // not through Loom: no cause was recorded
  RunResult r = loom.Collect(submit, "submit");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(loom.View(id).state, "KILLED");
  EXPECT_EQ(loom.View(id).diagnostics, "killed: the AM received SIGTERM from outside Loom");
  // The first cause wins: a later `loom kill` of the ended job changes nothing.
  EXPECT_THAT(loom.Run({"kill", id}).out, HasSubstr("already ended"));
  EXPECT_EQ(loom.View(id).diagnostics, "killed: the AM received SIGTERM from outside Loom");
}

}  // namespace
}  // namespace loom::testing
