#include "runtime/framework_env.h"

#include <nlohmann/json.hpp>
#include <initializer_list>
#include <set>

#include "core/testing.h"

namespace loom::runtime {
namespace {

using nlohmann::json;

// Checks the variables `env` must hold, naming each that differs or is missing.
void ExpectVars(const std::map<std::string, std::string>& env,
                std::initializer_list<std::pair<const char*, const char*>> want) {
  for (const auto& [name, value] : want) {
    auto it = env.find(name);
    if (it == env.end()) {
      ADD_FAILURE() << name << " is not set";
    } else {
      EXPECT_EQ(it->second, value) << name;
    }
  }
}

JobSpec Spec(Framework fw, std::vector<std::pair<std::string, int>> types) {
  JobSpec spec;
  spec.framework = fw;
  for (auto& [name, n] : types) {
    TaskTypeSpec t;
    t.name = name;
    t.instances = n;
    if (name == "ps") t.role = TaskRole::kUntracked;
    if (name == "tensorboard") t.role = TaskRole::kSidecar;
    spec.types.push_back(t);
  }
  return spec;
}

ClusterSpec Cluster(const JobSpec& spec) {
  ClusterSpec c;
  int port = 20000;
  for (const auto& t : spec.types) {
    std::vector<std::string> addrs;
    for (int i = 0; i < t.instances; ++i) addrs.push_back("h" + t.name + ":" + std::to_string(port++));
    c.Add(t.name, addrs);
  }
  return c;
}

TEST(TfConfig, EvaluatorAndTensorboardKeptOutOfOthers) {
  JobSpec spec = Spec(Framework::kTensorFlow, {{"chief", 1}, {"worker", 2}, {"evaluator", 1}, {"ps", 1}, {"tensorboard", 1}});
  ClusterSpec c = Cluster(spec);
  auto w = BuildFrameworkEnv(spec, c, {{"worker", 1}, "job1", 0});
  json tf = json::parse(w.at("TF_CONFIG"));
  EXPECT_EQ(tf["task"]["type"], "worker");
  EXPECT_EQ(tf["task"]["index"], 1);
  EXPECT_FALSE(tf["cluster"].contains("evaluator"));
  EXPECT_FALSE(tf["cluster"].contains("tensorboard"));
  EXPECT_EQ(tf["cluster"]["ps"].size(), 1u);
  EXPECT_EQ(tf["cluster"]["worker"][1], "hworker:20002");
  json cs = json::parse(w.at("CLUSTER_SPEC"));
  EXPECT_TRUE(cs.contains("evaluator"));
  EXPECT_TRUE(cs.contains("tensorboard"));
  EXPECT_EQ(w.at("IS_CHIEF"), "false");
  EXPECT_EQ(w.at("TASK_NUM"), "4");  // chief + 2 workers + evaluator: ps and tensorboard are not tracked

  auto e = BuildFrameworkEnv(spec, c, {{"evaluator", 0}, "job1", 0});
  json etf = json::parse(e.at("TF_CONFIG"));
  EXPECT_TRUE(etf["cluster"].contains("evaluator"));
  EXPECT_FALSE(etf["cluster"].contains("tensorboard"));

  auto chief = BuildFrameworkEnv(spec, c, {{"chief", 0}, "job1", 0});
  EXPECT_EQ(chief.at("IS_CHIEF"), "true");
}

TEST(TfConfig, Worker0IsChiefWithoutChiefType) {
  JobSpec spec = Spec(Framework::kTensorFlow, {{"worker", 2}, {"ps", 1}});
  ClusterSpec c = Cluster(spec);
  EXPECT_EQ(BuildFrameworkEnv(spec, c, {{"worker", 0}, "j", 0}).at("IS_CHIEF"), "true");
  EXPECT_EQ(BuildFrameworkEnv(spec, c, {{"worker", 1}, "j", 0}).at("IS_CHIEF"), "false");
}

TEST(TfConfig, FcfsHasNoClusterSpec) {
  JobSpec spec = Spec(Framework::kTensorFlow, {{"worker", 2}});
  spec.gang = false;
  auto env = BuildFrameworkEnv(spec, Cluster(spec), {{"worker", 0}, "j", 0});
  EXPECT_EQ(env.count("TF_CONFIG"), 0u);
  EXPECT_EQ(env.at("DISTRIBUTED_MODE"), "FCFS");
}

TEST(TorchEnv, RanksAreGlobalAndUniqueAcrossTypes) {
  JobSpec spec = Spec(Framework::kPyTorch, {{"chief", 1}, {"worker", 2}, {"evaluator", 1}, {"tensorboard", 1}});
  ClusterSpec c = Cluster(spec);
  std::set<int> ranks;
  for (const TaskId& id : spec.AllTasks()) {
    auto env = BuildFrameworkEnv(spec, c, {id, "j", 2});
    if (id.type == "tensorboard") {
      EXPECT_EQ(env.count("RANK"), 0u);
      continue;
    }
    ExpectVars(env, {
        {"WORLD_SIZE", "4"}, {"WORLD", "4"}, {"MASTER_ADDR", "hchief"}, {"MASTER_PORT", "20000"},
        {"INIT_METHOD", "tcp://hchief:20000"}, {"LOCAL_RANK", "0"}, {"TORCHELASTIC_RESTART_COUNT", "2"},
    });
    ranks.insert(std::stoi(env.at("RANK")));
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(GlobalRank(spec, {"worker", 1}), 2);
  EXPECT_EQ(GlobalRank(spec, {"evaluator", 0}), 3);
}

TEST(MxnetEnv, DmlcVariables) {
  JobSpec spec = Spec(Framework::kMXNet, {{"scheduler", 1}, {"server", 2}, {"worker", 3}});
  ClusterSpec c;
  c.Add("scheduler", {"127.0.0.1:20001"});
  c.Add("server", {"127.0.0.1:20002", "127.0.0.1:20003"});
  c.Add("worker", {"127.0.0.1:20004", "127.0.0.1:20005", "127.0.0.1:20006"});
  auto env = BuildFrameworkEnv(spec, c, {{"server", 1}, "j", 0});
  ExpectVars(env, {
      {"DMLC_ROLE", "server"}, {"DMLC_PS_ROOT_URI", "127.0.0.1"}, {"DMLC_PS_ROOT_PORT", "20001"},
      {"DMLC_NUM_SERVER", "2"}, {"DMLC_NUM_WORKER", "3"},
  });
}

TEST(ClusterSpec, JsonRoundTripKeepsOrder) {
  ClusterSpec c;
  c.Add("worker", {"a:1", "b:2"});
  c.Add("ps", {"c:3"});
  auto back = ClusterSpec::FromJson(c.ToJson(), {"worker", "ps"});
  ASSERT_OK(back);
  EXPECT_EQ(back->AddressOf({"worker", 1}), "b:2");
  EXPECT_EQ(back->types()[1].first, "ps");
  EXPECT_FALSE(ClusterSpec::FromJson("[1,2", {}).ok());
}


TEST(TensorBoard, PortGoesToTheSidecarWhenThereIsOneElseToTheChief) {
  JobSpec spec = Spec(Framework::kTensorFlow, {{"chief", 1}, {"worker", 2}, {"tensorboard", 1}});
  EXPECT_TRUE(ReservesTbPort(spec, {"chief", 0}));
  EXPECT_FALSE(ReservesTbPort(spec, {"tensorboard", 0}));
  spec.tensorboard_log_dir = "/logs/tb";
  EXPECT_FALSE(ReservesTbPort(spec, {"chief", 0}));
  EXPECT_FALSE(ReservesTbPort(spec, {"worker", 0}));
  EXPECT_TRUE(ReservesTbPort(spec, {"tensorboard", 0}));
  JobSpec workers = Spec(Framework::kPyTorch, {{"worker", 2}});
  EXPECT_TRUE(ReservesTbPort(workers, {"worker", 0}));  // worker:0 is the chief
  EXPECT_FALSE(ReservesTbPort(workers, {"worker", 1}));

  ClusterSpec c = Cluster(spec);
  auto tb = BuildFrameworkEnv(spec, c, {{"tensorboard", 0}, "job1", 0, 24555});
  EXPECT_EQ(tb.at("TB_PORT"), "24555");
  EXPECT_EQ(tb.at("TB_LOG_DIR"), "/logs/tb");
  auto w = BuildFrameworkEnv(spec, c, {{"worker", 0}, "job1", 0});
  EXPECT_EQ(w.count("TB_PORT"), 0u);
  EXPECT_EQ(w.count("TB_LOG_DIR"), 0u);
}

TEST(TorchEnv, TypesOutsideTheWorldHoldNoRank) {
  // A reader next to the workers (loom.application.world.jobtypes leaves it out): the workers'
  // world is theirs alone, so DDP never waits for a rank nobody takes.
  JobSpec spec = Spec(Framework::kPyTorch, {{"worker", 2}, {"reader", 1}});
  spec.types[1].holds_rank = false;
  ClusterSpec c = Cluster(spec);
  for (int i = 0; i < 2; ++i) {
    auto w = BuildFrameworkEnv(spec, c, {{"worker", i}, "job1", 0});
    EXPECT_EQ(w.at("RANK"), std::to_string(i));
    EXPECT_EQ(w.at("WORLD_SIZE"), "2");
    EXPECT_EQ(w.at("GROUP_WORLD_SIZE"), "2");
    EXPECT_EQ(w.at("MASTER_ADDR"), "hworker");
  }
  auto r = BuildFrameworkEnv(spec, c, {{"reader", 0}, "job1", 0});
  EXPECT_EQ(r.count("RANK"), 0u);  // init_process_group fails at once instead of hanging the others
  EXPECT_EQ(r.count("GROUP_RANK"), 0u);
  EXPECT_EQ(r.at("WORLD_SIZE"), "2");

  // horovod: the same world, and the reader is no host of it.
  spec.framework = Framework::kHorovod;
  auto h = BuildProcessEnvs(spec, c, {{"worker", 1}, "job1", 0});
  EXPECT_EQ(h[0].at("HOROVOD_SIZE"), "2");
  EXPECT_EQ(h[0].at("HOROVOD_CROSS_SIZE"), "2");
  EXPECT_EQ(BuildProcessEnvs(spec, c, {{"reader", 0}, "job1", 0})[0].count("HOROVOD_RANK"), 0u);
}

TEST(Stages, AStageWithoutRankedTypesHasNoWorld) {
  JobSpec spec = Spec(Framework::kPyTorch, {{"worker", 2}, {"dbloader", 1}});
  spec.types[1].holds_rank = false;
  spec.prepare_stage = {"dbloader"};
  spec.training_stage = {"worker"};
  ClusterSpec c = Cluster(spec);
  auto loader = BuildFrameworkEnv(spec, c, {{"dbloader", 0}, "job1", 0});
  for (const char* k : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "INIT_METHOD", "WORLD"}) {
    EXPECT_EQ(loader.count(k), 0u) << k;
  }
  EXPECT_EQ(loader.at("LOCAL_RANK"), "0");
  auto w1 = BuildFrameworkEnv(spec, c, {{"worker", 1}, "job1", 0});
  EXPECT_EQ(w1.at("RANK"), "1");
  EXPECT_EQ(w1.at("WORLD_SIZE"), "2");
}

TEST(Stages, EachStageIsItsOwnCluster) {
  JobSpec spec = Spec(Framework::kPyTorch, {{"worker", 2}, {"dbloader", 1}});
  spec.prepare_stage = {"dbloader"};
  spec.training_stage = {"worker"};
  ClusterSpec c = Cluster(spec);
  auto loader = BuildFrameworkEnv(spec, c, {{"dbloader", 0}, "job1", 0});
  EXPECT_EQ(loader.at("RANK"), "0");
  EXPECT_EQ(loader.at("WORLD_SIZE"), "1");
  EXPECT_EQ(loader.at("MASTER_PORT"), "20002");
  auto w1 = BuildFrameworkEnv(spec, c, {{"worker", 1}, "job1", 0});
  ExpectVars(w1, {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "hworker"}, {"TASK_NUM", "2"}});

  spec.framework = Framework::kTensorFlow;
  auto tf = BuildFrameworkEnv(spec, c, {{"worker", 0}, "job1", 0});
  EXPECT_FALSE(json::parse(tf.at("TF_CONFIG"))["cluster"].contains("dbloader"));
  EXPECT_TRUE(json::parse(tf.at("CLUSTER_SPEC")).contains("dbloader"));  // TonY's: every known address
  EXPECT_EQ(tf.at("IS_CHIEF"), "true");
}

// Process `i`'s complete contract: the task's env with its own additions on top.
std::map<std::string, std::string> ProcessEnv(const JobSpec& spec, const ClusterSpec& c, const TaskContext& ctx,
                                              size_t i) {
  auto env = BuildFrameworkEnv(spec, c, ctx);
  auto procs = BuildProcessEnvs(spec, c, ctx);
  EXPECT_LT(i, procs.size());
  if (i < procs.size()) {
    for (const auto& [k, v] : procs[i]) env[k] = v;
  }
  return env;
}

void SetProcesses(JobSpec& spec, const std::string& type, int processes) {
  for (auto& t : spec.types) {
    if (t.name == type) t.processes = processes;
  }
}

TEST(Processes, TwoTasksOfTwoProcessesMakeAWorldOfFourRanks) {
  JobSpec spec = Spec(Framework::kPyTorch, {{"worker", 2}});
  SetProcesses(spec, "worker", 2);
  ClusterSpec c = Cluster(spec);
  std::set<int> ranks;
  for (int task = 0; task < 2; ++task) {
    TaskContext ctx{{"worker", task}, "j", 0};
    auto base = BuildFrameworkEnv(spec, c, ctx);
    auto procs = BuildProcessEnvs(spec, c, ctx);
    ASSERT_EQ(procs.size(), 2u);
    for (const auto& [k, v] : procs[0]) EXPECT_EQ(base.at(k), v) << k;  // process 0 is the task's env
    for (int p = 0; p < 2; ++p) {
      auto env = ProcessEnv(spec, c, ctx, p);
      int rank = std::stoi(env.at("RANK"));
      ranks.insert(rank);
      EXPECT_EQ(rank, task * 2 + p);
      EXPECT_EQ(env.at("LOCAL_RANK"), std::to_string(p));
      EXPECT_EQ(env.at("LOOM_PROCESS_INDEX"), std::to_string(p));
      EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "2");
      EXPECT_EQ(env.at("WORLD_SIZE"), "4");
      EXPECT_EQ(env.at("WORLD"), "4");
      EXPECT_EQ(env.at("GROUP_RANK"), std::to_string(task));
      EXPECT_EQ(env.at("GROUP_WORLD_SIZE"), "2");
      EXPECT_EQ(env.at("ROLE_RANK"), std::to_string(task * 2 + p));
      EXPECT_EQ(env.at("ROLE_WORLD_SIZE"), "4");
      EXPECT_EQ(env.at("MASTER_ADDR"), "hworker");  // one rendezvous for every process
      EXPECT_EQ(env.at("MASTER_PORT"), "20000");
    }
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(WorldProcesses(spec), 4);
  EXPECT_EQ(WorldSize(spec), 2);
}

TEST(Processes, AChiefOfOneProcessAndWorkersOfTwo) {
  JobSpec spec = Spec(Framework::kHorovod, {{"chief", 1}, {"worker", 2}, {"tensorboard", 1}});
  SetProcesses(spec, "worker", 2);
  ClusterSpec c = Cluster(spec);
  EXPECT_EQ(FirstProcessRank(spec, {"chief", 0}), 0);
  EXPECT_EQ(FirstProcessRank(spec, {"worker", 0}), 1);
  EXPECT_EQ(FirstProcessRank(spec, {"worker", 1}), 3);
  EXPECT_EQ(FirstProcessRank(spec, {"tensorboard", 0}), -1);
  EXPECT_EQ(WorldProcesses(spec), 5);

  auto chief = BuildProcessEnvs(spec, c, {{"chief", 0}, "j", 0});
  ASSERT_EQ(chief.size(), 1u);
  auto chief_env = ProcessEnv(spec, c, {{"chief", 0}, "j", 0}, 0);
  ExpectVars(chief_env, {
      {"RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"}, {"ROLE_WORLD_SIZE", "1"},
      {"HOROVOD_CROSS_RANK", "0"}, {"HOROVOD_CROSS_SIZE", "3"},  // local rank 0 is on all three tasks
  });

  auto w1p1 = ProcessEnv(spec, c, {{"worker", 1}, "j", 0}, 1);
  ExpectVars(w1p1, {
      {"RANK", "4"}, {"WORLD_SIZE", "5"}, {"GROUP_RANK", "2"},
      {"GROUP_WORLD_SIZE", "3"},  // the sidecar is no node of the world
      {"ROLE_RANK", "3"}, {"ROLE_WORLD_SIZE", "4"}, {"HOROVOD_RANK", "4"}, {"HOROVOD_SIZE", "5"},
      {"HOROVOD_LOCAL_RANK", "1"}, {"HOROVOD_LOCAL_SIZE", "2"},
      {"HOROVOD_CROSS_RANK", "1"}, {"HOROVOD_CROSS_SIZE", "2"},  // local rank 1 lives on the two workers only
  });
  auto w0p0 = ProcessEnv(spec, c, {{"worker", 0}, "j", 0}, 0);
  EXPECT_EQ(w0p0.at("HOROVOD_CROSS_RANK"), "1");
  EXPECT_EQ(w0p0.at("HOROVOD_CROSS_SIZE"), "3");

  auto tb = BuildProcessEnvs(spec, c, {{"tensorboard", 0}, "j", 0});
  ASSERT_EQ(tb.size(), 1u);
  auto tb_env = ProcessEnv(spec, c, {{"tensorboard", 0}, "j", 0}, 0);
  EXPECT_EQ(tb_env.count("RANK"), 0u);
  EXPECT_EQ(tb_env.count("HOROVOD_RANK"), 0u);
  EXPECT_EQ(tb_env.at("LOCAL_RANK"), "0");
}

TEST(Processes, EachStageCountsItsOwnProcesses) {
  JobSpec spec = Spec(Framework::kPyTorch, {{"worker", 2}, {"dbloader", 1}});
  SetProcesses(spec, "worker", 2);
  spec.prepare_stage = {"dbloader"};
  spec.training_stage = {"worker"};
  ClusterSpec c = Cluster(spec);
  auto loader = ProcessEnv(spec, c, {{"dbloader", 0}, "j", 0}, 0);
  EXPECT_EQ(loader.at("RANK"), "0");
  EXPECT_EQ(loader.at("WORLD_SIZE"), "1");
  std::set<std::string> ranks;
  for (int task = 0; task < 2; ++task) {
    for (int p = 0; p < 2; ++p) {
      auto env = ProcessEnv(spec, c, {{"worker", task}, "j", 0}, p);
      EXPECT_EQ(env.at("WORLD_SIZE"), "4");
      EXPECT_EQ(env.at("GROUP_WORLD_SIZE"), "2");
      ranks.insert(env.at("RANK"));
    }
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "2", "3"}));
}

TEST(Processes, TensorFlowKeepsOneClusterPerTask) {
  JobSpec spec = Spec(Framework::kTensorFlow, {{"chief", 1}, {"worker", 2}});
  SetProcesses(spec, "worker", 2);
  ClusterSpec c = Cluster(spec);
  TaskContext ctx{{"worker", 1}, "j", 0};
  auto p0 = ProcessEnv(spec, c, ctx, 0), p1 = ProcessEnv(spec, c, ctx, 1);
  EXPECT_EQ(p0.at("TF_CONFIG"), p1.at("TF_CONFIG"));
  EXPECT_EQ(p0.at("CLUSTER_SPEC"), p1.at("CLUSTER_SPEC"));
  EXPECT_EQ(json::parse(p1.at("TF_CONFIG"))["cluster"]["worker"].size(), 2u);  // tasks, not processes
  EXPECT_EQ(p0.at("LOCAL_RANK"), "0");
  EXPECT_EQ(p1.at("LOCAL_RANK"), "1");
  EXPECT_EQ(p1.at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(p1.at("LOOM_PROCESS_INDEX"), "1");
  EXPECT_EQ(p1.count("RANK"), 0u);
}

TEST(Processes, MxnetCountsWorkerProcesses) {
  JobSpec spec = Spec(Framework::kMXNet, {{"scheduler", 1}, {"server", 1}, {"worker", 2}});
  SetProcesses(spec, "worker", 3);
  ClusterSpec c = Cluster(spec);
  auto env = BuildFrameworkEnv(spec, c, {{"worker", 0}, "j", 0});
  EXPECT_EQ(env.at("DMLC_NUM_WORKER"), "6");
  EXPECT_EQ(env.at("DMLC_NUM_SERVER"), "1");
}

TEST(Horovod, TasksSharingAMachineAreDistinctHostsAndFindTheAmsStore) {
  JobSpec spec = Spec(Framework::kHorovod, {{"worker", 2}});
  SetProcesses(spec, "worker", 2);
  ClusterSpec c;
  c.Add("worker", {"10.0.0.5:20001", "10.0.0.5:20002"});  // one machine, two containers
  TaskContext ctx{{"worker", 1}, "j", 0};
  ctx.rendezvous_address = "10.0.0.9:21000";
  auto p1 = ProcessEnv(spec, c, ctx, 1);
  EXPECT_EQ(p1.at("HOROVOD_HOSTNAME"), "worker-1.10.0.0.5");
  EXPECT_EQ(ProcessEnv(spec, c, {{"worker", 0}, "j", 0}, 0).at("HOROVOD_HOSTNAME"), "worker-0.10.0.0.5");
  ExpectVars(p1, {
      {"HOROVOD_GLOO_RENDEZVOUS_ADDR", "10.0.0.9"}, {"HOROVOD_GLOO_RENDEZVOUS_PORT", "21000"},
      {"HOROVOD_CONTROLLER", "gloo"}, {"HOROVOD_CPU_OPERATIONS", "gloo"},
  });
  // No store, no address: Horovod would take its single-process path rather than a wrong one.
  EXPECT_EQ(ProcessEnv(spec, c, {{"worker", 0}, "j", 0}, 0).count("HOROVOD_GLOO_RENDEZVOUS_ADDR"), 0u);
}

}  // namespace
}  // namespace loom::runtime
