// Local jobs sharing one machine through the resource ledger (issue 9 item 1): real `loom`
// binaries, real AMs and tasks, fake GPUs declared with loom.local.gpus. Each task records
// its own CUDA_VISIBLE_DEVICES and when it started and ended, so the tests judge from what the
// tasks saw, not from Loom's bookkeeping.

#include <signal.h>

#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "history/event_log.h"
#include "mini_loom.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using namespace std::chrono_literals;

// What one run of a task saw.
struct TaskRun {
  std::string job;
  std::string task;
  std::string gpus;  // CUDA_VISIBLE_DEVICES
  double start = 0, end = 0;
};

// The task every job runs, with the records it writes. Modes:
//   sleep S          sleep S seconds
//   hold NAME        wait until the file NAME (in the shared dir) exists
//   fail-once NAME   wait for NAME; the job's first run exits 1, later ones succeed after 0.3 s
//   slow-stop        run until SIGTERM, then take 1 s more to stop (a task still on its GPU)
class TaskScript {
 public:
  explicit TaskScript(const std::string& dir) : dir_(dir) {
    std::filesystem::create_directories(dir_ + "/rec");
    std::ofstream(dir_ + "/task.sh") << R"(#!/bin/sh
d=$(dirname "$0")
s=$(date +%s.%N)
code=0
record() {
  e=$(date +%s.%N)
  echo "$LOOM_JOB_ID $LOOM_TASK_ID ${CUDA_VISIBLE_DEVICES-unset} $s $e" > "$d/rec/$LOOM_JOB_ID.$LOOM_TASK_ID.$$"
}
case "$1" in
  slow-stop)
    trap 'sleep 1; record; exit 143' TERM
    while true; do sleep 0.02; done ;;
  sleep) sleep "$2" ;;
  hold) while [ ! -e "$d/$2" ]; do sleep 0.02; done ;;
  fail-once)
    while [ ! -e "$d/$2" ]; do sleep 0.02; done
    if [ ! -e "$d/failed.$LOOM_JOB_ID" ]; then touch "$d/failed.$LOOM_JOB_ID"; code=1; else sleep 0.3; fi ;;
esac
record
exit $code
)";
  }
  std::string Command(const std::string& mode, const std::string& arg) const {
    return "/bin/sh " + dir_ + "/task.sh " + mode + " " + arg;
  }
  void Release(const std::string& name) const { std::ofstream(dir_ + "/" + name) << "go\n"; }

  std::vector<TaskRun> Runs() const {
    std::vector<TaskRun> runs;
    for (const auto& e : std::filesystem::directory_iterator(dir_ + "/rec")) {
      std::istringstream in(ReadFile(e.path().string()).value_or(""));
      TaskRun r;
      if (in >> r.job >> r.task >> r.gpus >> r.start >> r.end) runs.push_back(r);
    }
    std::sort(runs.begin(), runs.end(), [](const TaskRun& a, const TaskRun& b) { return a.start < b.start; });
    return runs;
  }
  std::vector<TaskRun> RunsOf(const std::string& job) const {
    std::vector<TaskRun> out;
    for (const auto& r : Runs()) {
      if (r.job == job) out.push_back(r);
    }
    return out;
  }

 private:
  std::string dir_;
};

// Fails the test for every GPU index that two different jobs held at overlapping times.
void ExpectNoGpuSharedAtOnce(const std::vector<TaskRun>& runs) {
  for (size_t i = 0; i < runs.size(); ++i) {
    for (size_t j = i + 1; j < runs.size(); ++j) {
      const TaskRun &a = runs[i], &b = runs[j];
      if (a.job == b.job) continue;
      std::set<std::string> ga, shared;
      for (const auto& g : Split(a.gpus, ',')) ga.insert(g);
      for (const auto& g : Split(b.gpus, ',')) {
        if (ga.count(g)) shared.insert(g);
      }
      bool overlap = a.start < b.end && b.start < a.end;
      EXPECT_FALSE(overlap && !shared.empty())
          << "GPU " << *shared.begin() << " held at once by " << a.job << " [" << std::fixed << a.start << ", "
          << a.end << "] and " << b.job << " [" << b.start << ", " << b.end << "]";
    }
  }
}

// The row of `loom list` for job `id`.
std::string RowOf(const std::string& list, const std::string& id) {
  for (const auto& line : Split(list, '\n')) {
    if (StartsWith(line, id)) return line;
  }
  return "";
}

// A one-worker job of `memory` (and `gpus` GPUs) running `command`, on a host of `host_gpus`.
std::vector<std::string> Job(const std::string& command, int gpus, const std::string& host_gpus = "2",
                             std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"submit",
                                   "--conf", "loom.local.gpus=" + host_gpus,
                                   "--conf", "loom.worker.instances=1",
                                   "--conf", "loom.worker.gpus=" + std::to_string(gpus),
                                   "--conf", "loom.worker.memory=128m",
                                   "--conf", "loom.containers.command=" + command};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// A submitted job: its client and its id.
struct Submitted {
  Subprocess client;
  std::string id;
  std::string name;
};

// Submits and waits until the job's directory exists, so that jobs are entered in a known order.
Submitted SubmitOne(MiniLoom& loom, const std::vector<std::string>& args, const std::string& name,
                    const std::map<std::string, std::string>& env = {}) {
  auto before = loom.JobIds();
  Submitted s{loom.Start(args, name, env), "", name};
  loom::testing::Eventually(
      [&] {
        for (const auto& id : loom.JobIds()) {
          if (std::find(before.begin(), before.end(), id) == before.end()) s.id = id;
        }
        return !s.id.empty();
      },
      10s);
  EXPECT_FALSE(s.id.empty()) << name;
  return s;
}

bool WaitForState(MiniLoom& loom, const std::string& id, const std::string& state, int position = 0,
                  std::chrono::milliseconds timeout = 15s) {
  return loom::testing::Eventually(
      [&] {
        auto v = loom.View(id);
        return v.state == state && (position == 0 || v.queue_position == position);
      },
      timeout);
}

bool AllRunning(MiniLoom& loom, const std::string& id) {
  return loom::testing::Eventually(
      [&] {
        auto v = loom.View(id);
        return !v.tasks.empty() &&
               std::all_of(v.tasks.begin(), v.tasks.end(), [](const auto& t) { return t.state == TaskState::kRunning; });
      },
      15s);
}

// Waits for `s`'s client and expects the job to have succeeded.
void ExpectSucceeded(MiniLoom& loom, Submitted& s) {
  RunResult r = loom.Collect(s.client, s.name);
  EXPECT_EQ(r.exit_code, 0) << s.name << r.out << r.err;
}

// A MiniLoom with the task script in its home.
class LocalQueue : public ::testing::Test {
 protected:
  // a holds the only GPU until "release-a"; b and c queue behind it, at positions 1 and 2.
  struct QueueOfThree {
    Submitted a, b, c;
  };
  void SubmitQueueOfThree(QueueOfThree* q) {
    q->a = SubmitOne(loom_, Job(task_.Command("hold", "release-a"), 1, "1"), "a");
    ASSERT_TRUE(AllRunning(loom_, q->a.id));
    q->b = SubmitOne(loom_, Job(task_.Command("sleep", "0.1"), 1, "1"), "b");
    ASSERT_TRUE(WaitForState(loom_, q->b.id, "QUEUED", 1));
    q->c = SubmitOne(loom_, Job(task_.Command("sleep", "0.1"), 1, "1"), "c");
    ASSERT_TRUE(WaitForState(loom_, q->c.id, "QUEUED", 2));
  }

  MiniLoom loom_;
  TaskScript task_{loom_.home() + "/shared"};
};

TEST_F(LocalQueue, SixJobsOnTwoGpusNeverShareOneAndAllFinish) {
  std::vector<Subprocess> clients;
  for (int i = 0; i < 6; ++i) clients.push_back(loom_.Start(Job(task_.Command("sleep", "0.5"), 1), "submit" + std::to_string(i)));
  for (int i = 0; i < 6; ++i) {
    RunResult r = loom_.Collect(clients[i], "submit" + std::to_string(i));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("SUCCEEDED"));
  }
  auto ids = loom_.JobIds();
  ASSERT_EQ(ids.size(), 6u);
  for (const auto& id : ids) EXPECT_EQ(loom_.View(id).state, "SUCCEEDED") << id;
  auto runs = task_.Runs();
  ASSERT_EQ(runs.size(), 6u);
  std::set<std::string> jobs;
  for (const auto& r : runs) {
    jobs.insert(r.job);
    EXPECT_TRUE(r.gpus == "0" || r.gpus == "1") << r.job << " saw CUDA_VISIBLE_DEVICES=" << r.gpus;
  }
  EXPECT_EQ(jobs.size(), 6u);
  ExpectNoGpuSharedAtOnce(runs);
  // Four of them had to wait, and said so.
  int queued = 0;
  for (const auto& id : ids) {
    for (const json& e : history::ReadEvents(loom_.Dir(id).events())) queued += e.value("state", "") == "ADMITTED";
  }
  EXPECT_GE(queued, 4);
}

TEST_F(LocalQueue, QueuedJobsShowTheirPositionAndWhatTheyWaitFor) {
  QueueOfThree q;
  ASSERT_NO_FATAL_FAILURE(SubmitQueueOfThree(&q));
  auto& [a, b, c] = q;

  std::string reason = "waiting for 1 GPU held by " + a.id;
  RunResult status = loom_.Run({"status", b.id});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(LineAfter(status.out, "Job " + b.id), HasSubstr("  QUEUED  "));
  EXPECT_THAT(status.out, HasSubstr("queued, position 1: " + reason));
  RunResult as_json = loom_.Run({"status", c.id, "--json"});
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  json j = json::parse(as_json.out);
  EXPECT_EQ(j["state"], "QUEUED");
  EXPECT_EQ(j["queue_position"], 2);
  EXPECT_EQ(j["queue_reason"], reason);
  RunResult list = loom_.Run({"list"});
  EXPECT_THAT(RowOf(list.out, b.id), ::testing::AllOf(HasSubstr("QUEUED #1"), HasSubstr(reason)));
  EXPECT_THAT(RowOf(list.out, c.id), HasSubstr("QUEUED #2"));
  EXPECT_THAT(RowOf(list.out, a.id), HasSubstr("RUNNING"));
  // The queue time is not run time: none of them has a running task yet.
  EXPECT_TRUE(task_.RunsOf(b.id).empty());

  task_.Release("release-a");
  for (Submitted* s : {&a, &b, &c}) ExpectSucceeded(loom_, *s);
  // The submit output told the story as it happened.
  std::string c_out = ReadFile(loom_.home() + "/c.out").value_or("");
  EXPECT_THAT(c_out, HasSubstr("QUEUED, position 2: " + reason));
  EXPECT_THAT(c_out, HasSubstr("QUEUED, position 1: "));
  EXPECT_THAT(c_out, HasSubstr("ADMITTED after"));
  ExpectNoGpuSharedAtOnce(task_.Runs());
}

TEST_F(LocalQueue, KillingAQueuedJobEndsItAtOnceAndMovesTheNextUp) {
  QueueOfThree q;
  ASSERT_NO_FATAL_FAILURE(SubmitQueueOfThree(&q));
  auto& [a, b, c] = q;

  auto start = std::chrono::steady_clock::now();
  RunResult kill = loom_.Run({"kill", b.id});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_EQ(kill.exit_code, 0) << kill.out << kill.err;
  EXPECT_THAT(kill.out, HasSubstr("KILLED"));
  RunResult b_end = loom_.Collect(b.client, "b");
  EXPECT_EQ(b_end.exit_code, 1);
  history::JobView vb = loom_.View(b.id);
  EXPECT_EQ(vb.state, "KILLED");
  EXPECT_THAT(vb.diagnostics, HasSubstr("while queued"));
  for (const auto& t : vb.tasks) EXPECT_EQ(t.state, TaskState::kKilled) << t.id;
  EXPECT_TRUE(MiniLoom::JobProcesses(b.id).empty());
  EXPECT_TRUE(task_.RunsOf(b.id).empty());  // it never ran
  ASSERT_TRUE(WaitForState(loom_, c.id, "QUEUED", 1, 5s));  // moved up

  task_.Release("release-a");
  ExpectSucceeded(loom_, c);
  ExpectSucceeded(loom_, a);
}

TEST_F(LocalQueue, TwoLoomHomesNeverGetTheSameGpu) {
  MiniLoom& home1 = loom_;
  MiniLoom home2;
  // One machine: both homes use the same ledger, as the host-wide default does.
  std::map<std::string, std::string> env = {{"LOOM_LEDGER_DIR", home1.home() + "/ledger"}};
  std::vector<Subprocess> c1, c2;
  for (int i = 0; i < 2; ++i) {
    c1.push_back(home1.Start(Job(task_.Command("sleep", "0.5"), 1), "s" + std::to_string(i), env));
    c2.push_back(home2.Start(Job(task_.Command("sleep", "0.5"), 1), "s" + std::to_string(i), env));
  }
  for (int i = 0; i < 2; ++i) {
    RunResult r1 = home1.Collect(c1[i], "s" + std::to_string(i));
    RunResult r2 = home2.Collect(c2[i], "s" + std::to_string(i));
    EXPECT_EQ(r1.exit_code, 0) << r1.out << r1.err;
    EXPECT_EQ(r2.exit_code, 0) << r2.out << r2.err;
  }
  auto runs = task_.Runs();
  ASSERT_EQ(runs.size(), 4u);
  ExpectNoGpuSharedAtOnce(runs);
}

TEST_F(LocalQueue, MemoryOfOneHomeIsShared) {
  auto job = [&](const std::string& command) {
    return std::vector<std::string>{"submit", "--conf", "loom.local.memory=4g", "--conf", "loom.worker.instances=1",
                                    "--conf", "loom.worker.memory=3g", "--conf", "loom.containers.command=" + command};
  };
  // a holds its memory until released: b must find it taken however slowly it is submitted.
  Submitted a = SubmitOne(loom_, job(task_.Command("hold", "release-a")), "a");
  Submitted b = SubmitOne(loom_, job(task_.Command("sleep", "0.1")), "b");
  ASSERT_TRUE(WaitForState(loom_, b.id, "QUEUED", 1));
  EXPECT_THAT(loom_.View(b.id).queue_reason, HasSubstr("waiting for 3.0 GiB of memory (1.0 GiB free) held by " + a.id));
  task_.Release("release-a");
  ExpectSucceeded(loom_, a);
  ExpectSucceeded(loom_, b);
  auto ra = task_.RunsOf(a.id), rb = task_.RunsOf(b.id);
  ASSERT_EQ(ra.size(), 1u);
  ASSERT_EQ(rb.size(), 1u);
  EXPECT_GT(rb[0].start, ra[0].end);  // one after the other
}

TEST_F(LocalQueue, AJobWhoseAmIsKilledGivesItsGpuBack) {
  Submitted a = SubmitOne(loom_, Job(task_.Command("slow-stop", ""), 1, "1"), "a");
  ASSERT_TRUE(AllRunning(loom_, a.id));
  Submitted b = SubmitOne(loom_, Job(task_.Command("sleep", "0.1"), 1, "1"), "b");
  ASSERT_TRUE(WaitForState(loom_, b.id, "QUEUED", 1));
  int am_pid = std::stoi(ReadFile(loom_.Dir(a.id).am_pid()).value_or("0"));
  ASSERT_GT(am_pid, 1);
  // No clean-up at all: a's client is gone first (it would kill the leftovers at once), then
  // its AM; only the kernel drops their holds, and a's task takes 1 s to stop on its GPU.
  ::kill(a.client.pid(), SIGKILL);
  ::kill(am_pid, SIGKILL);
  ExpectSucceeded(loom_, b);
  auto runs = task_.RunsOf(b.id);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].gpus, "0");
  ASSERT_TRUE(loom::testing::Eventually([&] { return task_.RunsOf(a.id).size() == 1u; }, 10s))
      << "a's task never recorded its stop";
  // GPU 0 went to b only once the last process of a was gone, not when a's AM died.
  ExpectNoGpuSharedAtOnce(task_.Runs());
  (void)loom_.Collect(a.client, "a");
  (void)loom_.Run({"status", a.id});  // whoever looks next ends its record
  EXPECT_EQ(loom_.View(a.id).state, "FAILED");
}

TEST_F(LocalQueue, AGangRestartKeepsItsGpus) {
  // x holds GPU 0, so the job under test gets GPU 1, and b waits behind both.
  Submitted x = SubmitOne(loom_, Job(task_.Command("hold", "release-x"), 1), "x");
  ASSERT_TRUE(AllRunning(loom_, x.id));
  Submitted a = SubmitOne(loom_, Job(task_.Command("fail-once", "go-a"), 1, "2", {"--conf", "loom.am.retry-count=1"}), "a");
  ASSERT_TRUE(AllRunning(loom_, a.id));
  Submitted b = SubmitOne(loom_, Job(task_.Command("sleep", "0.1"), 1), "b");
  ASSERT_TRUE(WaitForState(loom_, b.id, "QUEUED", 1));

  task_.Release("go-a");  // the first attempt fails, the gang restarts, the second succeeds
  ExpectSucceeded(loom_, a);
  EXPECT_EQ(loom_.View(a.id).attempt, 1);
  task_.Release("release-x");
  ExpectSucceeded(loom_, b);
  ExpectSucceeded(loom_, x);

  auto attempts = task_.RunsOf(a.id);
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(task_.RunsOf(x.id).at(0).gpus, "0");
  EXPECT_EQ(attempts[0].gpus, "1");
  EXPECT_EQ(attempts[1].gpus, "1");  // the same GPU in the second attempt
  auto rbs = task_.RunsOf(b.id);
  ASSERT_EQ(rbs.size(), 1u);
  EXPECT_GT(rbs[0].start, attempts[1].end);  // b did not take it between the attempts
  ExpectNoGpuSharedAtOnce(task_.Runs());
}

TEST_F(LocalQueue, QueueTimeDoesNotCountTowardsTheApplicationTimeout) {
  Submitted a = SubmitOne(loom_, Job(task_.Command("hold", "release-a"), 1, "1"), "a");
  ASSERT_TRUE(AllRunning(loom_, a.id));
  Submitted b = SubmitOne(loom_, Job(task_.Command("sleep", "0.2"), 1, "1", {"--conf", "loom.application.timeout=1000"}), "b");
  ASSERT_TRUE(WaitForState(loom_, b.id, "QUEUED", 1));
  // The timeout runs on real time in the AM: b stays queued past it, however slow its submit was.
  std::this_thread::sleep_for(1500ms);
  task_.Release("release-a");
  ExpectSucceeded(loom_, b);
  int64_t waited_ms = -1;
  for (const json& e : history::ReadEvents(loom_.Dir(b.id).events())) {
    if (e.value("state", "") == "ADMITTED") waited_ms = e.value("waited_ms", int64_t{-1});
  }
  EXPECT_GT(waited_ms, 1000);  // queued longer than its timeout, and still not timed out
  ExpectSucceeded(loom_, a);
}

TEST_F(LocalQueue, AJobThatCanNeverFitIsStillRefusedAtSubmit) {
  RunResult r = loom_.Run(Job("/bin/true", 2, "1"));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("can never run"));
  EXPECT_TRUE(loom_.JobIds().empty());
}

}  // namespace
}  // namespace loom::testing
