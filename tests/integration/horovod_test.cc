// Horovod with gloo (loom.application.framework=horovod): the AM serves the rendezvous store that
// horovodrun would, and every process gets horovodrun's variables. Horovod is not packaged here,
// so the processes are scripts/gloo_rendezvous_client.py, which performs the PUT/GET/DELETE
// sequence of a Horovod gloo context (global, local and cross communicators) over a real TCP mesh
// and checks what it read. The expected ranks are computed here from horovod's own rules
// (horovod/runner/common/util/hosts.py, get_host_assignments), not by Loom's code.

#include <map>
#include <set>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "history/events.h"
#include "yarn_double_cluster.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using namespace std::chrono_literals;

std::vector<std::string> HorovodArgs(std::vector<std::string> extra) {
  std::vector<std::string> args = {"submit", "--src_dir", MiniLoom::Source(kScripts), "--executes",
                                   "gloo_rendezvous_client.py", "--python_binary_path", "/usr/bin/python3",
                                   "--conf", "loom.application.framework=horovod"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// horovodrun's slot plan for `hosts` (name, slots), in host order: hosts.py's get_host_assignments.
struct Slot {
  std::string host;
  int rank, local_rank, cross_rank, size, local_size, cross_size;
};
std::vector<Slot> HorovodAssignments(const std::vector<std::pair<std::string, int>>& hosts) {
  std::map<int, std::map<std::string, int>> cross_ranks;  // local rank -> host -> cross rank
  std::vector<std::pair<std::string, std::vector<int>>> host_ranks;
  int rank = 0;
  for (const auto& [host, slots] : hosts) {
    std::vector<int> ranks;
    for (int local = 0; local < slots; ++local) {
      ranks.push_back(rank++);
      int next = static_cast<int>(cross_ranks[local].size());
      cross_ranks[local][host] = next;
    }
    host_ranks.emplace_back(host, ranks);
  }
  std::vector<Slot> plan;
  for (const auto& [host, ranks] : host_ranks) {
    for (int local = 0; local < static_cast<int>(ranks.size()); ++local) {
      plan.push_back({host, ranks[local], local, cross_ranks[local][host], rank, static_cast<int>(ranks.size()),
                      static_cast<int>(cross_ranks[local].size())});
    }
  }
  return plan;
}

// The GLOO_RENDEZVOUS line of one process's stdout (the last one: a restarted task appends).
json Report(const std::string& out) {
  size_t pos = out.rfind("GLOO_RENDEZVOUS ");
  if (pos == std::string::npos) return json();
  return json::parse(LineAfter(out.substr(pos), "GLOO_RENDEZVOUS "), nullptr, /*allow_exceptions=*/false);
}

std::string HostOf(const std::string& address) { return address.substr(0, address.rfind(':')); }

// Each task is one of horovodrun's hosts, its processes that host's slots: checks every
// process's report against horovod's plan for the tasks' layout. `outs`: (task id, process) ->
// stdout; `processes`: the slots of each task, in the job's rank order.
void ExpectHorovodPlan(history::JobView view, const std::vector<std::pair<std::string, int>>& tasks,
                       const std::map<std::pair<std::string, int>, std::string>& outs) {
  std::vector<std::pair<std::string, int>> hosts;
  std::map<std::string, std::string> task_of_host;
  for (const auto& [task, slots] : tasks) {
    const history::TaskView* t = view.FindTask(task);
    ASSERT_NE(t, nullptr) << task;
    // Loom's documented name: "<type>-<index>.<host>", one horovod host per task.
    std::string name = task.substr(0, task.find(':')) + "-" + task.substr(task.find(':') + 1) + "." + HostOf(t->address);
    hosts.emplace_back(name, slots);
    task_of_host[name] = task;
  }
  std::set<std::string> distinct;
  for (const auto& [h, s] : hosts) distinct.insert(h);
  EXPECT_EQ(distinct.size(), hosts.size()) << "two tasks would share a local scope";
  std::set<int> ranks;
  for (const Slot& slot : HorovodAssignments(hosts)) {
    std::string task = task_of_host[slot.host];
    auto it = outs.find({task, slot.local_rank});
    ASSERT_NE(it, outs.end()) << task << " process " << slot.local_rank;
    json r = Report(it->second);
    SCOPED_TRACE(task + " process " + std::to_string(slot.local_rank) + ": " + it->second);
    ASSERT_TRUE(r.is_object());
    EXPECT_EQ(r.value("ok", false), true);
    EXPECT_EQ(r.value("hostname", ""), slot.host);
    EXPECT_EQ(r.value("rank", -1), slot.rank);
    EXPECT_EQ(r.value("size", -1), slot.size);
    EXPECT_EQ(r.value("local_rank", -1), slot.local_rank);
    EXPECT_EQ(r.value("local_size", -1), slot.local_size);
    EXPECT_EQ(r.value("cross_rank", -1), slot.cross_rank);
    EXPECT_EQ(r.value("cross_size", -1), slot.cross_size);
    EXPECT_EQ(r.value("controller", ""), "gloo");
    EXPECT_EQ(r.value("cpu_operations", ""), "gloo");
    // What it found in the store: every rank in global, its host's in local, its slot's in cross.
    std::vector<int> all(slot.size), local, cross;
    for (int i = 0; i < slot.size; ++i) all[i] = i;
    for (const Slot& other : HorovodAssignments(hosts)) {
      if (other.host == slot.host) local.push_back(other.rank);
      if (other.local_rank == slot.local_rank) cross.push_back(other.rank);
    }
    EXPECT_EQ(r["global"], json(all));
    EXPECT_EQ(r["local"], json(local));
    EXPECT_EQ(r["cross"], json(cross));
    ranks.insert(r.value("rank", -1));
  }
  EXPECT_EQ(static_cast<int>(ranks.size()), static_cast<int>(HorovodAssignments(hosts).size()));
}

// The AM's store, as its AM_STARTED event names it, and the address every process was given.
std::string StoreAddress(const MiniLoom& loom, const std::string& id) {
  std::string events = ReadFile(loom.Dir(id).events()).value_or("");
  for (const std::string& line : Split(events, '\n')) {
    json e = json::parse(line, nullptr, false);
    if (e.is_object() && e.value("event", "") == history::events::kAmStarted) return e.value("rendezvous", "");
  }
  return "";
}

std::map<std::pair<std::string, int>, std::string> LocalOutputs(const MiniLoom& loom, const std::string& id,
                                                                const std::vector<std::pair<std::string, int>>& tasks) {
  std::map<std::pair<std::string, int>, std::string> outs;
  for (const auto& [task, slots] : tasks) {
    TaskId t{task.substr(0, task.find(':')), std::stoi(task.substr(task.find(':') + 1))};
    std::string dir = loom.Dir(id).task_dir(t);
    for (int p = 0; p < slots; ++p) {
      outs[{task, p}] = ReadFile(dir + (p == 0 ? "/stdout" : "/stdout." + std::to_string(p))).value_or("");
    }
  }
  return outs;
}

TEST(Horovod, EveryProcessOfTwoTasksOfTwoCompletesTheGlooRendezvous) {
  MiniLoom loom;
  RunResult r = loom.Run(HorovodArgs({"--conf", "loom.worker.instances=2", "--conf", "loom.worker.processes=2"}));
  std::string id = loom.OnlyJobId();
  std::vector<std::pair<std::string, int>> tasks = {{"worker:0", 2}, {"worker:1", 2}};
  auto outs = LocalOutputs(loom, id, tasks);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << loom.TaskOutput(id, {"worker", 0}, true)
                            << loom.TaskOutput(id, {"worker", 1}, true);
  ExpectHorovodPlan(loom.View(id), tasks, outs);

  // The store is the AM's, on a port of the job's range (loom.task.port-range, 20000-32000).
  std::string store = StoreAddress(loom, id);
  ASSERT_FALSE(store.empty());
  int port = std::stoi(store.substr(store.rfind(':') + 1));
  EXPECT_GE(port, 20000);
  EXPECT_LE(port, 32000);
  for (const auto& [where, out] : outs) {
    json rep = Report(out);
    EXPECT_EQ(rep.value("gloo_rendezvous_addr", "") + ":" + std::to_string(rep.value("gloo_rendezvous_port", 0)), store);
  }
  EXPECT_TRUE(MiniLoom::JobProcesses(id).empty());
}

TEST(Horovod, UnevenTasksFollowHorovodsCrossCommunicators) {
  // A chief of one process and two workers of two: cross_0 spans three hosts, cross_1 two.
  MiniLoom loom;
  RunResult r = loom.Run(HorovodArgs({"--conf", "loom.chief.instances=1", "--conf", "loom.worker.instances=2",
                                      "--conf", "loom.worker.processes=2"}));
  std::string id = loom.OnlyJobId();
  std::vector<std::pair<std::string, int>> tasks = {{"chief:0", 1}, {"worker:0", 2}, {"worker:1", 2}};
  auto outs = LocalOutputs(loom, id, tasks);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << loom.TaskOutput(id, {"chief", 0}, true)
                            << loom.TaskOutput(id, {"worker", 1}, true);
  ExpectHorovodPlan(loom.View(id), tasks, outs);
}

TEST(Horovod, AGangRestartNeverReadsTheFailedAttemptsKeys) {
  // Attempt 0: rank 3 crashes right after its PUT in "global", leaving keys behind; attempt 1
  // must rendezvous on fresh keys only (the script rejects a record of another attempt).
  MiniLoom loom;
  RunResult r = loom.Run(HorovodArgs({"--task_params", "--fail-rank 3 --fail-attempt 0", "--conf",
                                      "loom.worker.instances=2", "--conf", "loom.worker.processes=2", "--conf",
                                      "loom.am.retry-count=1", "--conf", "loom.task.stop-grace-ms=1000"}));
  std::string id = loom.OnlyJobId();
  std::vector<std::pair<std::string, int>> tasks = {{"worker:0", 2}, {"worker:1", 2}};
  auto outs = LocalOutputs(loom, id, tasks);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << loom.TaskOutput(id, {"worker", 0}, true)
                            << ReadFile(loom.Dir(id).task_dir({"worker", 1}) + "/stderr.1").value_or("");
  EXPECT_EQ(loom.View(id).attempt, 1);
  for (const auto& [where, out] : outs) EXPECT_EQ(Report(out).value("attempt", -1), 1) << out;
  ExpectHorovodPlan(loom.View(id), tasks, outs);
}

TEST(Horovod, EveryProcessCompletesTheGlooRendezvousOnYarn) {
  YarnDoubleCluster cluster;
  std::vector<std::string> args = HorovodArgs({"--conf", "loom.worker.instances=2", "--conf", "loom.worker.processes=2",
                                               "--conf", "loom.am.memory=512m", "--conf", "loom.worker.memory=512m"});
  args.erase(args.begin());  // Submit adds `submit --cluster yarn`
  RunResult r = cluster.Submit(args);
  std::string id = cluster.loom().OnlyJobId();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.ContainerLogs("executor.log") << cluster.ContainerLogs("stderr");
  std::vector<std::pair<std::string, int>> tasks = {{"worker:0", 2}, {"worker:1", 2}};
  std::map<std::pair<std::string, int>, std::string> outs;
  for (const auto& [task, slots] : tasks) {
    for (int p = 0; p < slots; ++p) {
      RunResult logs = cluster.loom().Run({"logs", id, "--task", task, "--process", std::to_string(p)}, cluster.Env());
      EXPECT_EQ(logs.exit_code, 0) << logs.err;
      outs[{task, p}] = logs.out;
    }
  }
  ExpectHorovodPlan(cluster.loom().View(id), tasks, outs);
}

}  // namespace
}  // namespace loom::testing
