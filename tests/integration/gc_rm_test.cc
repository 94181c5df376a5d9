// Retention of ended jobs (issue 20 §6): `loom gc` and `loom rm` with the real `loom` binary on
// the local backend. They remove ended jobs' directories (with their unpacked venvs) by age or
// by id, and never anything of a job that may still run: its record must say it ended AND no
// process of it may be left.

#include <signal.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>

#include "mini_loom.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::vector<std::string> Job(std::vector<std::string> extra, const std::string& python = "/usr/bin/python3") {
  std::vector<std::string> args = {"submit", "--src_dir", MiniLoom::Source(kScripts), "--python_binary_path",
                                   python, "--conf", "loom.worker.instances=1", "--conf", "loom.task.stop-grace-ms=500"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// A job that succeeds at once (fail_with.py fails only the task it names: none here).
std::vector<std::string> QuickJob() { return Job({"--executes", "fail_with.py", "--task_params", "--task worker:9"}); }
std::vector<std::string> SleepingJob() { return Job({"--executes", "sleep_forever.py"}); }

// The job ids that appeared since `before`.
std::string NewJob(const MiniLoom& loom, const std::vector<std::string>& before) {
  for (const auto& id : loom.JobIds()) {
    if (std::find(before.begin(), before.end(), id) == before.end()) return id;
  }
  return "";
}

TEST(Gc, RemovesEndedJobsOldEnoughAndNeverARunningOne) {
  MiniLoom loom;
  RunResult quick = loom.Run(QuickJob());
  ASSERT_EQ(quick.exit_code, 0) << quick.out << quick.err;
  const std::string ended = loom.OnlyJobId();
  Subprocess submit = loom.Start(SleepingJob(), "sleeping");
  ASSERT_TRUE(loom::testing::Eventually([&] {
    std::string id = NewJob(loom, {ended});
    return !id.empty() && loom.View(id).state == "RUNNING";
  }, 30s));
  const std::string running = NewJob(loom, {ended});

  // The default age (7 days) keeps a job that ended a moment ago; so does --older-than 1h.
  RunResult by_default = loom.Run({"gc"});
  EXPECT_EQ(by_default.exit_code, 0) << by_default.err;
  EXPECT_THAT(by_default.out, HasSubstr("removed 0 jobs"));
  EXPECT_THAT(by_default.out, HasSubstr("kept 1 that ended less than 7d ago (the default 7d)"));
  EXPECT_THAT(loom.Run({"gc", "--older-than", "1h"}).out, HasSubstr("kept 1 that ended less than 1h ago"));
  // A dry run names it and removes nothing.
  RunResult dry = loom.Run({"gc", "--older-than", "0", "--dry-run"});
  EXPECT_THAT(dry.out, HasSubstr("would remove " + ended + " (SUCCEEDED, ended "));
  EXPECT_TRUE(fs::exists(loom.Dir(ended).root()));

  // The age from the environment: 0, every ended job. The running one is kept, saying why.
  RunResult gc = loom.Run({"gc"}, {{"LOOM_GC_OLDER_THAN", "0"}});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_THAT(gc.out, HasSubstr("removed " + ended + " (SUCCEEDED, ended "));
  EXPECT_THAT(gc.out, HasSubstr("kept " + running + ": still RUNNING (pid"));
  EXPECT_THAT(gc.out, HasSubstr("removed 1 job, "));
  EXPECT_FALSE(fs::exists(loom.Dir(ended).root()));
  EXPECT_TRUE(fs::exists(loom.Dir(running).root()));
  EXPECT_EQ(loom.View(running).state, "RUNNING");
  EXPECT_FALSE(MiniLoom::JobProcesses(running).empty());

  // Bad ages are refused, naming where they came from.
  RunResult bad = loom.Run({"gc", "--older-than", "7"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("gc: --older-than '7' has no unit: expected an age such as 7d, 12h, 30m, 45s or 0"));
  RunResult bad_env = loom.Run({"gc"}, {{"LOOM_GC_OLDER_THAN", "soon"}});
  EXPECT_EQ(bad_env.exit_code, 2);
  EXPECT_THAT(bad_env.err, HasSubstr("gc: $LOOM_GC_OLDER_THAN 'soon'"));

  ::kill(submit.pid(), SIGINT);
  EXPECT_EQ(loom.Collect(submit, "sleeping").exit_code, 1);
  ASSERT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(running).empty(); }, 10s));
  RunResult after = loom.Run({"gc", "--older-than", "0"});
  EXPECT_THAT(after.out, HasSubstr("removed " + running + " (KILLED, ended "));
  EXPECT_TRUE(loom.JobIds().empty());
}

// The record alone is not trusted: a job whose status.json says it ended while a process of it
// still runs (an AM still stopping its tasks) is kept, by gc and by rm, until none is left.
TEST(Gc, AnEndedRecordWithProcessesLeftIsKept) {
  MiniLoom loom;
  Subprocess submit = loom.Start(SleepingJob(), "sleeping");
  std::string id = loom.WaitUntilRunning(1, 30s);
  ASSERT_FALSE(id.empty());
  // No client follows it any more; then its record says it ended, while its AM and task run.
  ::kill(submit.pid(), SIGKILL);
  (void)submit.Wait();
  ASSERT_TRUE(history::WriteFinalStatus(loom.Dir(id), "KILLED", "", {{"finished_ms", 1}}).ok());
  ASSERT_FALSE(MiniLoom::JobProcesses(id).empty());

  RunResult gc = loom.Run({"gc", "--older-than", "0"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_THAT(gc.out, HasSubstr("kept " + id + ": ended KILLED, but pid"));
  EXPECT_THAT(gc.out, HasSubstr("of it still run"));
  RunResult rm = loom.Run({"rm", id});
  EXPECT_EQ(rm.exit_code, 2);
  EXPECT_THAT(rm.err, HasSubstr("rm: job " + id + " ended KILLED, but pid"));
  EXPECT_THAT(rm.err, HasSubstr("try again once they have exited"));
  EXPECT_TRUE(fs::exists(loom.Dir(id).root()));

  // Once nothing of it is left, the same record goes.
  KillProcessesWithEnv("LOOM_JOB_ID=" + id);
  ASSERT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s));
  RunResult again = loom.Run({"rm", id});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("removed " + id + " (KILLED): "));
  EXPECT_FALSE(fs::exists(loom.Dir(id).root()));
}

TEST(Rm, RefusesARunningJobAndRemovesItOnceKilled) {
  MiniLoom loom;
  Subprocess submit = loom.Start(SleepingJob(), "sleeping");
  std::string id = loom.WaitUntilRunning(1, 30s);
  ASSERT_FALSE(id.empty());
  RunResult refused = loom.Run({"rm", id});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr("rm: job " + id + " still RUNNING (pid"));
  EXPECT_THAT(refused.err, HasSubstr("stop it first: loom kill " + id));
  EXPECT_TRUE(fs::exists(loom.Dir(id).root()));
  EXPECT_EQ(loom.View(id).state, "RUNNING");
  EXPECT_FALSE(MiniLoom::JobProcesses(id).empty());

  EXPECT_EQ(loom.Run({"kill", id}).exit_code, 0);
  EXPECT_EQ(loom.Collect(submit, "sleeping").exit_code, 1);
  ASSERT_TRUE(loom::testing::Eventually([&] { return MiniLoom::JobProcesses(id).empty(); }, 10s));
  RunResult rm = loom.Run({"rm", id});
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_THAT(rm.out, HasSubstr("removed " + id + " (KILLED): "));
  EXPECT_FALSE(fs::exists(loom.Dir(id).root()));
  EXPECT_EQ(loom.Run({"status", id}).exit_code, 2);

  // Nothing that is not a job of this $LOOM_HOME.
  RunResult unknown = loom.Run({"rm", "job_20000101000000_beef"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("no job job_20000101000000_beef under " + loom.home() + "/jobs"));
  fs::create_directories(loom.home() + "/not-a-job");
  RunResult not_job = loom.Run({"rm", loom.home() + "/not-a-job"});
  EXPECT_EQ(not_job.exit_code, 2);
  EXPECT_THAT(not_job.err, HasSubstr("is not a job directory"));
  EXPECT_TRUE(fs::exists(loom.home() + "/not-a-job"));
}

// `loom rm PATH` takes only a directory right under $LOOM_HOME/jobs whose record is its own: not
// a copy of an ended job elsewhere, not a symlink to one, not a job dir renamed.
TEST(Rm, RemovesOnlyThisHomesJobsAndNeverHalfway) {
  MiniLoom loom;
  RunResult quick = loom.Run(QuickJob());
  ASSERT_EQ(quick.exit_code, 0) << quick.out << quick.err;
  const std::string id = loom.OnlyJobId();
  const std::string root = loom.Dir(id).root();

  const std::string copy = loom.home() + "/backup/" + id;
  fs::create_directories(copy);
  fs::copy(root, copy, fs::copy_options::recursive);
  RunResult elsewhere = loom.Run({"rm", copy});
  EXPECT_EQ(elsewhere.exit_code, 2);
  EXPECT_THAT(elsewhere.err, HasSubstr(copy + " is not a job directory under " + loom.home() + "/jobs"));
  EXPECT_TRUE(fs::exists(copy + "/job.json"));

  const std::string link = loom.home() + "/jobs/job_20000101000000_1ink";
  fs::create_directory_symlink(copy, link);
  RunResult through_link = loom.Run({"rm", "job_20000101000000_1ink"});
  EXPECT_EQ(through_link.exit_code, 2);
  EXPECT_THAT(through_link.err, HasSubstr("is not a job directory under"));
  EXPECT_TRUE(fs::exists(copy + "/job.json"));
  fs::remove(link);

  const std::string renamed = loom.home() + "/jobs/job_20000101000000_0copy";
  fs::copy(copy, renamed, fs::copy_options::recursive);
  RunResult other_record = loom.Run({"rm", renamed});
  EXPECT_EQ(other_record.exit_code, 2);
  EXPECT_THAT(other_record.err, HasSubstr(renamed + " holds job " + id + "'s record, not job job_20000101000000_0copy's"));
  EXPECT_TRUE(fs::exists(renamed + "/job.json"));
  fs::remove_all(renamed);

  // The job itself goes, out of jobs/ in one rename, and nothing of it stays parked.
  RunResult rm = loom.Run({"rm", root});
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_FALSE(fs::exists(root));
  EXPECT_TRUE(fs::is_empty(loom.home() + "/.removing"));

  // A removal cut short (a parked dir left behind) is finished by the next gc.
  fs::create_directories(loom.home() + "/.removing/job_20000101000000_dead/tasks");
  EXPECT_EQ(loom.Run({"gc", "--older-than", "0"}).exit_code, 0);
  EXPECT_TRUE(fs::is_empty(loom.home() + "/.removing"));
}

// The reported case: each task's unpacked venv stays in its work dir. --work-only removes the
// work dirs alone; the record and the logs stay readable.
TEST(Gc, WorkOnlyRemovesTheUnpackedVenvsAndKeepsTheLogs) {
  MiniLoom loom;
  std::string venv = loom.home() + "/venv";
  fs::create_directories(venv + "/bin");
  ASSERT_TRUE(WriteFileAtomic(venv + "/bin/python", "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n", 0755).ok());
  ASSERT_TRUE(WriteFileAtomic(venv + "/lib.bin", std::string(3 << 20, 'x')).ok());  // compresses, unpacks to 3 MiB
  SpawnOptions zip;
  zip.argv = {"zip", "-q", "-r", loom.home() + "/venv.zip", "bin", "lib.bin"};
  zip.env = CurrentEnvironment();
  zip.cwd = venv;
  auto z = Subprocess::Spawn(zip);
  ASSERT_TRUE(z.ok()) << z.status().ToString();
  ASSERT_TRUE(z->Wait()->success());
  RunResult r = loom.Run(Job({"--executes", "fail_with.py", "--task_params", "--task worker:9 --lines 2",
                              "--python_venv", loom.home() + "/venv.zip"},
                             "bin/python"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string id = loom.OnlyJobId();
  const std::string work = loom.Dir(id).task_work({"worker", 0});
  ASSERT_TRUE(fs::exists(work + "/venv/lib.bin"));

  RunResult gc = loom.Run({"gc", "--older-than", "0", "--work-only"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_THAT(gc.out, HasSubstr("removed " + id + "'s work dirs (SUCCEEDED, ended "));
  EXPECT_THAT(gc.out, HasSubstr(" MB\n"));
  EXPECT_FALSE(fs::exists(work));
  EXPECT_EQ(loom.View(id).state, "SUCCEEDED");
  RunResult logs = loom.Run({"logs", id, "--task", "worker:0"});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_THAT(logs.out, HasSubstr("worker:0 stdout line 1/2"));
  // A second pass finds nothing more to take.
  EXPECT_THAT(loom.Run({"gc", "--older-than", "0", "--work-only"}).out, HasSubstr("removed 0 jobs' work dirs"));
}

}  // namespace
}  // namespace loom::testing
