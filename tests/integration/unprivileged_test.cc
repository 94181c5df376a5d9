// Local jobs of a user who is not root. A local executor makes itself non-dumpable (to keep the
// job secret from user code of the same uid), and the kernel then lets root alone read its
// /proc/PID/environ: a scan for LOOM_JOB_ID=<id> run by anyone else misses every executor.
// `loom gc|rm`, the local backend's removal of a dead AM's leftovers and MiniLoom must still
// find them. CI runs as root, which sees every environ, so each test drops to an unprivileged
// uid first.

#include <grp.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include <gmock/gmock.h>

#include "core/strings.h"
#include "mini_loom.h"

namespace loom::testing {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

// nobody:nogroup on Debian; no passwd entry is needed to run as it.
constexpr uid_t kUnprivilegedUid = 65534;
constexpr gid_t kUnprivilegedGid = 65534;

std::vector<std::string> SleepingJob() {
  return {"submit", "--src_dir", MiniLoom::Source(kScripts), "--python_binary_path",
          "/usr/bin/python3", "--conf", "loom.worker.instances=1", "--conf", "loom.task.stop-grace-ms=500",
          "--executes", "sleep_forever.py"};
}

// /proc/PID/stat's ppid; -1 when the process is gone. Readable for any process, dumpable or not.
pid_t ParentOf(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat").value_or("");
  size_t rp = stat.rfind(')');
  char state;
  int ppid = -1;
  if (rp == std::string::npos || std::sscanf(stat.c_str() + rp + 1, " %c %d", &state, &ppid) != 2) return -1;
  return ppid;
}

// The AM's `loom executor` children, found from what /proc shows everyone (ppid and cmdline),
// not from Loom's own records, which are what is under test.
std::vector<pid_t> ExecutorsOf(pid_t am) {
  std::vector<pid_t> out;
  for (pid_t p : ListPids()) {
    if (ParentOf(p) == am && MiniLoom::CountRole({p}, "executor") == 1) out.push_back(p);
  }
  return out;
}

class Unprivileged : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() == 0) {
      // The MiniLoom's home goes in a directory of that uid's own: /tmp may be root's alone.
      char scratch[] = "/tmp/loom_unprivileged_XXXXXX";
      ASSERT_NE(::mkdtemp(scratch), nullptr) << std::strerror(errno);
      scratch_ = scratch;
      ASSERT_EQ(::chown(scratch, kUnprivilegedUid, kUnprivilegedGid), 0) << std::strerror(errno);
      if (const char* tmpdir = std::getenv("TMPDIR")) old_tmpdir_ = tmpdir;
      ::setenv("TMPDIR", scratch, 1);
      // Groups and gid, then uid: real, effective and fs ids are that user's and the
      // effective capabilities are gone, so /proc answers as it does to that user; the saved
      // uid stays 0 for TearDown alone. What this test starts execs as that user, nothing else.
      if (::setgroups(0, nullptr) != 0 || ::setresgid(kUnprivilegedGid, kUnprivilegedGid, kUnprivilegedGid) != 0 ||
          ::setresuid(kUnprivilegedUid, kUnprivilegedUid, 0) != 0) {
        GTEST_SKIP() << "running as root and cannot drop to uid " << kUnprivilegedUid
                     << " (no CAP_SETUID?): " << std::strerror(errno);
      }
    }
    loom_.emplace();
  }
  void TearDown() override {
    // A stopped executor that Loom failed to find would otherwise outlive the test.
    for (pid_t p : stopped_) ::kill(p, SIGKILL);
    loom_.reset();
    if (!scratch_.empty()) {
      (void)::setresuid(0, 0, 0);
      std::error_code ec;
      fs::remove_all(scratch_, ec);
      if (old_tmpdir_) ::setenv("TMPDIR", old_tmpdir_->c_str(), 1);
      else ::unsetenv("TMPDIR");
    }
  }

  // Starts a one-worker job and leaves only its executor, SIGSTOPped (so that it cannot follow
  // its AM out): the client, the AM and the user process are SIGKILLed. Returns the job's id
  // and the executor's pid through the out-params (gtest's ASSERT needs a void function).
  void LeaveOnlyAStoppedExecutor(std::string* id, pid_t* executor) {
    Subprocess submit = loom_->Start(SleepingJob(), "sleeping");
    *id = loom_->WaitUntilRunning(1, 30s);
    ASSERT_FALSE(id->empty()) << ReadFile(loom_->home() + "/sleeping.err").value_or("");
    auto am = ParseInt(ReadFile(loom_->Dir(*id).am_pid()).value_or(""));
    ASSERT_TRUE(am.ok());
    std::vector<pid_t> executors = ExecutorsOf(static_cast<pid_t>(*am));
    ASSERT_EQ(executors.size(), 1u) << MiniLoom::DescribeProcesses(ListPids());
    *executor = executors[0];
    stopped_.push_back(*executor);
    // The premise: no environment scan by this uid finds the executor.
    ASSERT_THAT(FindProcessesWithEnv("LOOM_JOB_ID=" + *id), Not(Contains(*executor)))
        << "the executor's environ is readable by uid " << ::geteuid() << ": this test shows nothing";
    EXPECT_THAT(MiniLoom::JobProcesses(*id), Contains(*executor));

    ::kill(submit.pid(), SIGKILL);
    (void)submit.Wait();
    ASSERT_EQ(::kill(*executor, SIGSTOP), 0);
    ::kill(static_cast<pid_t>(*am), SIGKILL);
    for (pid_t p : FindProcessesWithEnv("LOOM_JOB_ID=" + *id)) ::kill(p, SIGKILL);  // the user process
    ASSERT_TRUE(loom::testing::Eventually([&] { return FindProcessesWithEnv("LOOM_JOB_ID=" + *id).empty(); }, 10s));
    ASSERT_TRUE(ProcessAlive(*executor));
  }

  std::string scratch_;
  std::optional<std::string> old_tmpdir_;
  std::optional<MiniLoom> loom_;
  std::vector<pid_t> stopped_;
};

// A job whose record says it ended is kept while its executor still runs, by gc and by rm.
TEST_F(Unprivileged, GcAndRmKeepAJobWhoseExecutorStillRuns) {
  std::string id;
  pid_t executor = -1;
  ASSERT_NO_FATAL_FAILURE(LeaveOnlyAStoppedExecutor(&id, &executor));
  ASSERT_TRUE(WriteFileAtomic(loom_->Dir(id).status(),
                              R"({"job_id": ")" + id + R"(", "state": "KILLED", "finished_ms": 1})" "\n").ok());

  RunResult gc = loom_->Run({"gc", "--older-than", "0"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  const std::string pid = std::to_string(executor);
  EXPECT_THAT(gc.out, HasSubstr("kept " + id + ": ended KILLED, but pid " + pid + " of it still run"));
  EXPECT_TRUE(fs::exists(loom_->Dir(id).job_json()));
  RunResult rm = loom_->Run({"rm", id});
  EXPECT_EQ(rm.exit_code, 2);
  EXPECT_THAT(rm.err, HasSubstr("pid " + pid));
  EXPECT_TRUE(fs::exists(loom_->Dir(id).job_json()));
  EXPECT_THAT(MiniLoom::JobProcesses(id), Contains(executor));

  // Once it is gone, nothing of the job runs and gc takes it.
  ::kill(executor, SIGKILL);
  ASSERT_TRUE(loom::testing::Eventually([&] { return !ProcessAlive(executor); }, 10s));
  EXPECT_TRUE(MiniLoom::JobProcesses(id).empty());
  RunResult after = loom_->Run({"gc", "--older-than", "0"});
  EXPECT_THAT(after.out, HasSubstr("removed " + id + " (KILLED, ended "));
}

// An AM gone without a final status: the next command that looks at the job ends it FAILED and
// SIGKILLs what is left of it, the executor included.
TEST_F(Unprivileged, TheLeftoversOfADeadAmIncludeItsExecutors) {
  std::string id;
  pid_t executor = -1;
  ASSERT_NO_FATAL_FAILURE(LeaveOnlyAStoppedExecutor(&id, &executor));

  RunResult status = loom_->Run({"status", id});
  EXPECT_THAT(status.out + status.err, HasSubstr("FAILED"));
  EXPECT_TRUE(loom::testing::Eventually([&] { return !ProcessAlive(executor); }, 10s))
      << "the executor (pid " << executor << ") of a job ended FAILED still runs";
  EXPECT_TRUE(MiniLoom::JobProcesses(id).empty());
}

}  // namespace
}  // namespace loom::testing
