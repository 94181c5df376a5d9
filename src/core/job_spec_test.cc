#include "core/job_spec.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>

#include "core/config/key_registry.h"
#include "core/files.h"
#include "core/job_world.h"
#include "core/job_spec_test_fixture.h"
#include "core/strings.h"
#include "core/testing.h"

namespace loom {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class JobSpecTest : public testing::JobSpecFixture {
 protected:
  // Sets each KEY=VALUE of `conf_text` on conf_, as `loom submit --conf KEY=VALUE` does, and
  // builds the spec from it. Pairs are apart by spaces: a value with a space needs conf_.Set.
  Result<JobSpec> Build(std::string_view conf_text = "") {
    for (const std::string& kv : Split(conf_text, ' ')) {
      auto pair = ParseKeyValue(kv);
      if (!pair.ok()) return pair.status();
      conf_.Set(pair->first, pair->second, "--conf");
    }
    return BuildJobSpec(conf_, dir_.string());
  }
};

TEST_F(JobSpecTest, TypesInRankOrderWithRoles) {
  auto spec = Build("tony.ps.instances=1 tony.worker.instances=2 tony.evaluator.instances=1 tony.chief.instances=1 "
                    "tony.tensorboard.instances=1");
  ASSERT_OK(spec);
  std::vector<std::string> names;
  for (const auto& t : spec->types) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"chief", "worker", "evaluator", "ps", "tensorboard"}));
  EXPECT_EQ(spec->FindType("ps")->role, TaskRole::kUntracked);
  EXPECT_TRUE(spec->FindType("ps")->stop_on_failure);
  EXPECT_EQ(spec->FindType("tensorboard")->role, TaskRole::kSidecar);
  EXPECT_EQ(spec->TrackedTasks(), 4);
  EXPECT_EQ(spec->TotalTasks(), 6);
  EXPECT_EQ(spec->Chief()->ToString(), "chief:0");
}

TEST_F(JobSpecTest, PerTypeCommandWins) {
  conf_.Set("loom.ps.command", "sleep 100", "--conf");
  auto spec = Build("loom.worker.instances=1 loom.ps.instances=1");
  ASSERT_OK(spec);
  EXPECT_EQ(spec->FindType("ps")->command, "sleep 100");
}

TEST(VenvFormat, ByExtension) {
  EXPECT_EQ(VenvFormatOf("/x/venv.zip").value_or(VenvFormat::kNone), VenvFormat::kZip);
  EXPECT_EQ(VenvFormatOf("env.TAR.GZ").value_or(VenvFormat::kNone), VenvFormat::kTarGz);
  EXPECT_EQ(VenvFormatOf("env.tgz").value_or(VenvFormat::kNone), VenvFormat::kTarGz);
  EXPECT_EQ(VenvFormatOf("env.pex").value_or(VenvFormat::kNone), VenvFormat::kPex);
  for (const char* bad : {"env.rar", "env.tar", "env", "env.zip.bak"}) {
    EXPECT_STATUS(VenvFormatOf(bad), kInvalidArgument, HasSubstr("--python_venv " + std::string(bad) + ": unsupported format"));
  }
}

TEST_F(JobSpecTest, VenvOfAnotherFormatOrADirectoryIsRefused) {
  conf_.Set("loom.worker.instances", "1", "f");
  std::ofstream(dir_ / "env.rar") << "x";
  conf_.Set("loom.application.python-venv", (dir_ / "env.rar").string(), "--python_venv");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("unsupported format; accepted: .zip, .tar.gz, .tgz (conda-pack) or .pex"));
  // The AM, which cannot see the file, refuses it the same way.
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string(), /*check_files=*/false), kInvalidArgument,
                HasSubstr("unsupported format"));
  std::filesystem::create_directories(dir_ / "dir.zip");
  conf_.Set("loom.application.python-venv", (dir_ / "dir.zip").string(), "--python_venv");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("is a directory"));
}

TEST_F(JobSpecTest, EnvListsAreParsed) {
  auto spec = Build("loom.worker.instances=1 loom.execution.envs=A=1,B=two");
  ASSERT_OK(spec);
  EXPECT_EQ(spec->execution_env.at("B"), "two");
}

// The group must be defined and its types be the job's: kBuildCases.
TEST_F(JobSpecTest, DependencyTimeoutOfAGroupOfTheJob) {
  auto spec = Build("loom.worker.instances=2 loom.evaluator.instances=1 "
                    "tony.application.dependency.evaluator.timeout.after.training=30 "
                    "tony.application.group.training=worker");
  ASSERT_OK(spec);
  ASSERT_EQ(spec->dependency_timeouts.size(), 1u);
  EXPECT_EQ(spec->dependency_timeouts[0].type, "evaluator");
  EXPECT_EQ(spec->dependency_timeouts[0].seconds, 30);
  EXPECT_FALSE(spec->dependency_timeouts[0].ignored);
}

// A type near a known one is refused (kBuildCases) unless declared or, as here, with a command of its own.
TEST_F(JobSpecTest, ATypeWithACommandOfItsOwnIsIntended) {
  conf_.Set("tony.workr.command", "sleep 1", "--conf");
  auto spec = Build("tony.worker.instances=2 tony.workr.instances=1");
  ASSERT_OK(spec);
  EXPECT_EQ(spec->FindType("workr")->command, "sleep 1");
}

// What the AM builds from the job directory's config.xml, as role_commands.cc does.
Result<JobSpec> RebuiltOnTheAm(const config::Config& submitted, const std::string& base_dir) {
  config::Config back;
  LOOM_RETURN_IF_ERROR(back.MergeXmlString(config::WithDefaults(submitted).ToXml(), "config.xml", /*recorded_sources=*/true));
  return BuildJobSpec(back, base_dir, /*check_files=*/false);
}

TEST_F(JobSpecTest, FailOnWorkerFailureIsTheSuccessPolicyAlias) {
  EXPECT_EQ(Build("tony.worker.instances=2")->success_policy, SuccessPolicy::kAll);  // unset: the policy
  EXPECT_EQ(Build("tony.application.success-policy=any")->success_policy, SuccessPolicy::kAny);
  conf_.Unset("tony.application.success-policy");
  EXPECT_EQ(Build("tony.application.fail-on-worker-failure-enabled=false")->success_policy, SuccessPolicy::kAny);
  EXPECT_EQ(RebuiltOnTheAm(conf_, dir_.string())->success_policy, SuccessPolicy::kAny);
  EXPECT_EQ(Build("tony.application.fail-on-worker-failure-enabled=true")->success_policy, SuccessPolicy::kAll);
  // Both set, they must agree: kBuildCases.
}

TEST_F(JobSpecTest, StagesFillTheOtherListWithTheRemainingTypes) {
  auto spec = Build("loom.worker.instances=2 loom.ps.instances=1 loom.dbloader.instances=1 loom.dbloader.command=load "
                    "loom.application.prepare-stage=dbloader");
  ASSERT_OK(spec);
  EXPECT_EQ(spec->prepare_stage, (std::vector<std::string>{"dbloader"}));
  EXPECT_EQ(spec->training_stage, (std::vector<std::string>{"worker", "ps"}));  // rank order
  conf_.Unset("loom.application.prepare-stage");
  spec = Build("loom.application.training-stage=worker");
  ASSERT_OK(spec);
  EXPECT_EQ(spec->prepare_stage, (std::vector<std::string>{"dbloader", "ps"}));
  EXPECT_EQ(spec->training_stage, (std::vector<std::string>{"worker"}));
  // Neither: one stage.
  conf_.Unset("loom.application.training-stage");
  spec = Build();
  ASSERT_OK(spec);
  EXPECT_TRUE(spec->prepare_stage.empty());
  EXPECT_TRUE(spec->training_stage.empty());
}

TEST_F(JobSpecTest, TensorBoardLogDirAddsASidecarType) {
  conf_.Set("loom.application.tensorboard-log-dir", "/tmp/tb", "--sidecar_tensorboard_log_dir");
  auto spec = Build("loom.worker.instances=3 loom.worker.memory=1g");
  ASSERT_OK(spec);
  EXPECT_EQ(spec->tensorboard_log_dir, "/tmp/tb");
  {
    config::Config relative = conf_;
    relative.Set("loom.application.tensorboard-log-dir", "runs/tb", "--sidecar_tensorboard_log_dir");
    auto r = BuildJobSpec(relative, dir_.string());
    ASSERT_OK(r);
    EXPECT_EQ(r->tensorboard_log_dir, AbsolutePath(dir_.string() + "/runs/tb"));
    relative.Set("loom.application.tensorboard-log-dir", "hdfs:///logs/tb", "--sidecar_tensorboard_log_dir");
    EXPECT_EQ(BuildJobSpec(relative, dir_.string())->tensorboard_log_dir, "hdfs:///logs/tb");
  }
  const TaskTypeSpec* tb = spec->FindType("tensorboard");
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(tb->instances, 1);
  EXPECT_EQ(tb->resources.vcores, 2);
  EXPECT_EQ(tb->resources.memory_mib, 2048);
  EXPECT_EQ(tb->resources.gpus, 0);
  EXPECT_EQ(tb->role, TaskRole::kSidecar);
  EXPECT_EQ(tb->command, "tensorboard --logdir \"$TB_LOG_DIR\" --port \"$TB_PORT\" --host 0.0.0.0");
  EXPECT_EQ(spec->FindType("worker")->command, "python3 train.py");
  // TensorBoard's sizes are its own: the other types keep theirs.
  EXPECT_EQ(spec->FindType("worker")->instances, 3);
  EXPECT_EQ(spec->FindType("worker")->resources.memory_mib, 1024);
  EXPECT_EQ(spec->FindType("worker")->resources.vcores, 1);
  // The AM, reading the final config, builds the same type.
  auto am = RebuiltOnTheAm(conf_, dir_.string());
  ASSERT_OK(am);
  EXPECT_EQ(am->FindType("tensorboard")->resources.ToString(), tb->resources.ToString());
  // loom.tensorboard.* and python-exec-path override, and even a removed sidecar entry keeps it one.
  spec = Build("tony.tensorboard.vcores=4 tony.python-exec-path=/opt/py/bin/python tony.application.sidecar.jobtypes=");
  ASSERT_OK(spec);
  tb = spec->FindType("tensorboard");
  EXPECT_EQ(tb->resources.vcores, 4);
  EXPECT_EQ(tb->role, TaskRole::kSidecar);
  EXPECT_EQ(tb->command, "/opt/py/bin/python -m tensorboard.main --logdir \"$TB_LOG_DIR\" --port \"$TB_PORT\" --host 0.0.0.0");
  EXPECT_EQ(Build("tony.tensorboard.command=my_tb.sh")->FindType("tensorboard")->command, "my_tb.sh");
  // Without the log dir there is no TensorBoard type.
  conf_.Unset("loom.application.tensorboard-log-dir");
  spec = Build();
  ASSERT_OK(spec);
  EXPECT_EQ(spec->FindType("tensorboard"), nullptr);
  EXPECT_TRUE(spec->tensorboard_log_dir.empty());
}

TEST_F(JobSpecTest, TensorBoardTypeOfTheUsersOwnIsKept) {
  auto spec = Build("loom.worker.instances=1 loom.tensorboard.instances=1 loom.tensorboard.memory=1g "
                    "loom.application.tensorboard-log-dir=hdfs:///logs");
  ASSERT_OK(spec);
  const TaskTypeSpec* tb = spec->FindType("tensorboard");
  EXPECT_EQ(tb->resources.memory_mib, 1024);
  EXPECT_EQ(tb->resources.vcores, 1);  // the type's own default, as any type's
  EXPECT_EQ(tb->command, "tensorboard --logdir \"$TB_LOG_DIR\" --port \"$TB_PORT\" --host 0.0.0.0");
}

TEST_F(JobSpecTest, DockerImagesPerTypeOrForAll) {
  auto spec = Build("tony.worker.instances=2 tony.ps.instances=1 tony.docker.enabled=true "
                    "tony.docker.containers.image=python:3.11 tony.docker.worker.image=trainer:1 "
                    "tony.docker.containers.mount=/data:/data:ro");
  ASSERT_OK(spec);
  EXPECT_TRUE(spec->docker_enabled);
  EXPECT_EQ(spec->FindType("worker")->docker_image, "trainer:1");
  EXPECT_EQ(spec->FindType("ps")->docker_image, "python:3.11");
  EXPECT_EQ(spec->docker_mounts, "/data:/data:ro");
}

// Docker's keys without tony.docker.enabled are refused: kBuildCases.
TEST_F(JobSpecTest, DockerIsOffUnlessEnabled) {
  auto spec = Build("tony.worker.instances=1");
  ASSERT_OK(spec);
  EXPECT_FALSE(spec->docker_enabled);
  EXPECT_TRUE(spec->FindType("worker")->docker_image.empty());
}

TEST_F(JobSpecTest, TimeoutsAndMetricsSettings) {
  auto spec = Build("loom.worker.instances=1");
  ASSERT_OK(spec);
  EXPECT_EQ(spec->am_startup_timeout_ms, 0);
  EXPECT_EQ(spec->executor_registry_timeout_ms, 0);
  EXPECT_EQ(spec->metrics_interval_ms, 5000);
  EXPECT_TRUE(spec->gpu_metrics);
  spec = Build("tony.am.startup-timeout=60000 tony.task.executor.registry-timeout-sec=30 "
               "tony.task.metrics-interval-ms=250 tony.task.gpu-metrics.enabled=false");
  ASSERT_OK(spec);
  EXPECT_EQ(spec->am_startup_timeout_ms, 60000);
  EXPECT_EQ(spec->executor_registry_timeout_ms, 30000);
  EXPECT_EQ(spec->metrics_interval_ms, 250);
  EXPECT_FALSE(spec->gpu_metrics);
}

// Security is accepted either way: kBuildCases.
TEST_F(JobSpecTest, PlacementIsRefusedByName) {
  conf_.Set("tony.worker.instances", "1", "--conf");
  for (const char* k : {"tony.worker.placement-spec", "tony.containers.placement-spec",
                        "tony.application.placement-spec", "tony.worker.allocation-tags",
                        "tony.containers.allocation-tags"}) {
    config::Config c = conf_;
    c.Set(k, "zk=3,notin,node,zk", "--conf");
    EXPECT_STATUS(BuildJobSpec(c, dir_.string()), kInvalidArgument,
                  HasSubstr(std::string(k) + "=zk=3,notin,node,zk (from --conf): YARN placement constraints are not "
                            "supported yet"));
  }
}

TEST_F(JobSpecTest, TonysOwnDefaultFileIsAccepted) {
  // Every value tony-default.xml sets (tony-core @7ceaaca) asks for nothing Loom refuses.
  const std::map<std::string, std::string> tony_defaults = {
      {"tony.yarn.queue", "default"}, {"tony.application.name", "TensorFlowApplication"},
      {"tony.application.enable-preprocess", "false"}, {"tony.application.timeout", "0"},
      {"tony.application.num-client-rm-connect-retries", "3"}, {"tony.application.distributed-mode", "GANG"},
      {"tony.task.max-total-instances", "-1"}, {"tony.task.max-total-gpus", "-1"}, {"tony.task.am.jvm.opts", ""},
      {"tony.task.executor.jvm.opts", "-Xmx1536m"}, {"tony.task.heartbeat-interval-ms", "1000"},
      {"tony.task.max-missed-heartbeats", "25"}, {"tony.task.metrics-interval-ms", "5000"},
      {"tony.task.gpu-metrics.enabled", "true"}, {"tony.am.retry-count", "0"}, {"tony.am.memory", "2g"},
      {"tony.am.wait-client-signal-stop-timeout-sec", "15"}, {"tony.container.allocation.timeout", "-1"},
      {"tony.application.untracked.jobtypes", "ps"}, {"tony.application.stop-on-failure-jobtypes", "ps"},
      {"tony.docker.enabled", "false"}, {"tony.application.security.enabled", "true"},
      {"tony.portal.url", "https://localhost:19886"}, {"tony.history.location", "/path/to/tony-history"},
      {"tony.history.intermediate", "/path/to/tony-history/intermediate"},
      {"tony.history.finished", "/path/to/tony-history/finished"}, {"tony.history.mover-interval-ms", "300000"},
      {"tony.history.retention-sec", "2592000"}, {"tony.history.purger-interval-ms", "21600000"},
      {"tony.history.finished-dir-timezone", "UTC"}, {"tony.portal.cache.max-entries", "10000"},
      {"tony.keytab.user", "user1"}, {"tony.keytab.location", "/location/to/tony.keytab"},
      {"tony.https.port", "19886"}, {"tony.https.keystore.path", "/location/to/tony.jks"},
      {"tony.https.keystore.type", "JKS"}, {"tony.https.keystore.password", "password"},
      {"tony.https.keystore.algorithm", "SunX509"}, {"tony.http.port", "disabled"}, {"tony.secret.key", "changeme"},
      {"tony.horovod.mode.test", "false"}, {"tony.horovod.mode.test.fast.fail", "false"},
      {"tony.horovod.driver.mode.debug", "false"}, {"tony.other.namenodes", ""}};
  for (const auto& [k, v] : tony_defaults) conf_.Set(k, v, "tony-default.xml");
  conf_.Set("tony.worker.instances", "1", "tony.xml");
  ASSERT_OK(BuildJobSpec(conf_, dir_.string()));
  // Anything else they are set to is refused, naming the key, the value and what to do.
  conf_.Set("tony.history.finished", "hdfs:///tony-history/finished", "tony.xml");
  conf_.Set("tony.task.executor.jvm.opts", "-Xmx4g", "tony.xml");
  conf_.Set("tony.https.keystore.password", "hunter2", "tony.xml");
  Status s = BuildJobSpec(conf_, dir_.string()).status();
  EXPECT_THAT(s.message(), HasSubstr("tony.history.finished=hdfs:///tony-history/finished (from tony.xml): Loom has "
                                     "no TonY history server"));
  // The location is no longer among them: the message does not say it is refused.
  EXPECT_THAT(s.message(), HasSubstr("to tony.history.location/<job id>"));
  EXPECT_THAT(s.message(), Not(HasSubstr("tony.history.location=")));
  EXPECT_THAT(s.message(), HasSubstr("tony.task.executor.jvm.opts=-Xmx4g (from tony.xml): Loom's AM and executors "
                                     "are native programs, not JVMs"));
  EXPECT_THAT(s.message(), HasSubstr("(tony.am.memory sizes the AM)"));
  EXPECT_THAT(s.message(), HasSubstr("tony.https.keystore.password=<hidden>"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("hunter2")));
}

// Messages name keys in the user's spelling (kBuildCases); the spec carries the spelling to code
// that has no config (the AM, executors, backends).
TEST_F(JobSpecTest, TheSpecCarriesTheUsersSpelling) {
  auto spec = Build("tony.worker.instances=3 tony.application.framework=tensorflow");
  ASSERT_OK(spec);
  EXPECT_EQ(spec->KeyName("loom.application.timeout"), "tony.application.timeout");
  EXPECT_EQ(RebuiltOnTheAm(conf_, dir_.string())->key_prefix, "tony.");
}

TEST(TaskId, Parse) {
  EXPECT_EQ(ParseTaskId("worker:3")->ToString(), "worker:3");
  EXPECT_FALSE(ParseTaskId("worker").ok());
  EXPECT_FALSE(ParseTaskId("worker:-1").ok());
}

TEST_F(JobSpecTest, KeyNameIsTheUsersSpellingEvenInAMixedConfig) {
  auto spec = Build("loom.worker.instances=2 loom.worker.memory=1g tony.application.timeout=60000");
  ASSERT_OK(spec);
  EXPECT_EQ(spec->key_prefix, "loom.");
  EXPECT_EQ(spec->KeyName("loom.application.timeout"), "tony.application.timeout");
  EXPECT_EQ(spec->KeyName("loom.container.allocation.timeout"), "loom.container.allocation.timeout");
}

TEST_F(JobSpecTest, ProcessesPerTask) {
  auto one = Build("loom.worker.instances=2");
  ASSERT_OK(one);
  EXPECT_EQ(one->FindType("worker")->processes, 1);  // the default: one process per task
  EXPECT_TRUE(one->FindType("worker")->split_gpus);
  auto split = Build("tony.worker.processes=4 tony.worker.gpus=8");
  ASSERT_OK(split);
  EXPECT_EQ(split->FindType("worker")->processes, 4);
  EXPECT_TRUE(split->FindType("worker")->split_gpus);
  auto all = Build("loom.worker.process-gpus=ALL");
  ASSERT_OK(all);
  EXPECT_FALSE(all->FindType("worker")->split_gpus);
}

// ---- Which types hold ranks (core/job_world.h) --------------------------------------------

TEST_F(JobSpecTest, OnlyTrainingTypesHoldRanksByDefault) {
  auto spec = Build("loom.application.framework=pytorch loom.chief.instances=1 loom.worker.instances=2 "
                    "loom.reader.instances=1 loom.application.tensorboard-log-dir=/tmp/tb");
  ASSERT_OK(spec);
  EXPECT_TRUE(spec->FindType("chief")->holds_rank);
  EXPECT_TRUE(spec->FindType("worker")->holds_rank);
  EXPECT_FALSE(spec->FindType("reader")->holds_rank);
  EXPECT_FALSE(spec->FindType("tensorboard")->holds_rank);
  EXPECT_EQ(TypesWithoutRanks(*spec), "reader:1");  // a sidecar is no surprise
  std::string note = WorldNote(*spec);
  EXPECT_THAT(note, HasSubstr("pytorch: reader:1 holds no rank"));
  EXPECT_THAT(note, HasSubstr("WORLD_SIZE counts chief, worker only"));
  EXPECT_THAT(note, HasSubstr("--conf loom.application.world.jobtypes=chief,worker,reader"));
}

TEST_F(JobSpecTest, DeclaredTypesJoinTheWorld) {
  auto spec = Build("tony.application.framework=horovod tony.worker.instances=2 tony.reader.instances=1 "
                    "tony.application.world.jobtypes=worker,reader");
  ASSERT_OK(spec);
  EXPECT_TRUE(spec->FindType("reader")->holds_rank);
  EXPECT_EQ(TypesWithoutRanks(*spec), "");
  EXPECT_EQ(WorldNote(*spec), "");
}

TEST_F(JobSpecTest, OtherFrameworksHaveNoWorldToLeave) {
  auto spec = Build("loom.worker.instances=2 loom.reader.instances=1");  // tensorflow
  ASSERT_OK(spec);
  EXPECT_TRUE(spec->FindType("reader")->holds_rank);
  EXPECT_EQ(WorldNote(*spec), "");
}

// ---- What the keys alone make a build refuse, or accept ---------------------------------------

// The fixture's config (its src dir and train.py) with `conf` set as Build sets it is refused with
// each of `says` in the message and none of `never_says`; with no `says`, it is accepted.
struct BuildCase {
  const char* name;
  const char* conf;
  std::vector<std::string> says;
  std::vector<std::string> never_says = {};
};

void PrintTo(const BuildCase& c, std::ostream* os) { *os << c.name; }

class JobSpecBuildTest : public JobSpecTest, public ::testing::WithParamInterface<BuildCase> {};

TEST_P(JobSpecBuildTest, RefusedNamingWhyOrAccepted) {
  const BuildCase& c = GetParam();
  Status s = Build(c.conf).status();
  if (c.says.empty()) {
    EXPECT_OK(s);
    return;
  }
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  for (const std::string& text : c.says) EXPECT_THAT(s.message(), HasSubstr(text));
  for (const std::string& text : c.never_says) EXPECT_THAT(s.message(), Not(HasSubstr(text)));
}

const BuildCase kBuildCases[] = {
    {"NoTypes", "", {"no task types"}},
    {"OnlyUntrackedTypesCanNeverFinish", "loom.ps.instances=1", {"no tracked task type"}},
    {"CapsAreEnforced",
     "loom.worker.instances=3 loom.worker.max-instances=2 loom.task.max-total-gpus=1 loom.worker.gpus=1",
     {"exceeds loom.worker.max-instances=2", "loom.task.max-total-gpus=1 but the job asks for 3 GPUs"}},
    {"StandaloneRunsExactlyOneTask", "loom.worker.instances=2 loom.application.framework=standalone",
     {"exactly 1 task"}},
    {"MxnetNeedsAScheduler", "loom.worker.instances=2 loom.application.framework=mxnet",
     {"loom.application.framework=mxnet needs loom.scheduler.instances=1"}},

    // Dependency timeouts need their group, of types of the job.
    {"DependencyTimeoutOfAnUndefinedGroup",
     "loom.worker.instances=2 loom.evaluator.instances=1 "
     "tony.application.dependency.evaluator.timeout.after.training=30",
     {"group 'training' is not defined"}},
    {"DependencyTimeoutOfAGroupWithATypeNotInTheJob",
     "loom.worker.instances=2 loom.evaluator.instances=1 "
     "tony.application.dependency.evaluator.timeout.after.training=30 tony.application.group.training=worker,chief",
     {"task type 'chief' is not part of the job"}},

    // A type near a known one is a typo, unless it is intended.
    {"MisspeltTaskType", "tony.worker.instances=2 tony.workr.instances=1",
     {"unknown task type 'workr' (tony.workr.instances); did you mean worker?",
      "if 'workr' is meant, declare it with tony.application.custom-types=workr or give it its own "
      "tony.workr.command"}},
    {"MisspeltTaskTypeDeclaredIsIntended",
     "tony.worker.instances=2 tony.workr.instances=1 tony.application.custom-types=workr", {}},
    {"TypeNearAnotherIntendedType",
     "loom.worker.instances=1 loom.dbloader.instances=1 loom.dbloader.command=load loom.dbloadr.instances=1",
     {"unknown task type 'dbloadr' (loom.dbloadr.instances); did you mean dbloader?"}},
    // Far from every known type, a type of the user's own needs no declaration; two-letter names
    // are one edit from a known one at most (db is two from ps).
    {"TypesFarFromKnownOnesNeedNoDeclaration",
     "loom.worker.instances=1 loom.dbloader.instances=1 loom.dbloader.command=load loom.db.instances=1 "
     "loom.trainer.instances=1",
     {}},
    {"TypeNearAWellKnownType",
     "loom.worker.instances=1 loom.dbloader.instances=1 loom.dbloader.command=load loom.db.instances=1 "
     "loom.trainer.instances=1 loom.pss.instances=1",
     {"did you mean ps?"}},
    {"KeysOfAMisspeltType", "tony.worker.instances=1 tony.workr.memory=4g",
     {"tony.workr.memory: the job has no task type 'workr'; did you mean tony.worker.memory?"}},
    // Keys of a type the job lacks are harmless otherwise, as tony-default.xml's tony.ps.memory.
    {"KeysOfATypeTheJobLacks", "tony.worker.instances=1 tony.ps.memory=4g tony.chief.vcores=2", {}},
    {"CustomTypeNotInTheJob",
     "tony.worker.instances=1 tony.ps.memory=4g tony.chief.vcores=2 tony.application.custom-types=nosuch",
     {"tony.application.custom-types: 'nosuch' is not a task type of the job"}},

    // Fail-on-worker-failure and the success policy, both set, must agree.
    {"FailOnWorkerFailureAgreeingWithThePolicy",
     "tony.worker.instances=2 tony.application.fail-on-worker-failure-enabled=true "
     "tony.application.success-policy=all",
     {}},
    {"FailOnWorkerFailureContradictingThePolicy",
     "tony.worker.instances=2 tony.application.fail-on-worker-failure-enabled=true "
     "tony.application.success-policy=any",
     {"tony.application.fail-on-worker-failure-enabled=true contradicts tony.application.success-policy=any"}},

    // Stages name types of the job, once each.
    {"PrepareStageOfATypeNotInTheJob",
     "tony.worker.instances=2 tony.ps.instances=1 tony.application.prepare-stage=loader",
     {"tony.application.prepare-stage: task type 'loader' is not a type of the job"}},
    {"TypeInBothStages",
     "tony.worker.instances=2 tony.ps.instances=1 tony.application.prepare-stage=worker "
     "tony.application.training-stage=worker,ps",
     {"task type 'worker' is in both tony.application.prepare-stage and tony.application.training-stage"}},
    // ps is untracked: a prepare stage of it alone would never be done.
    {"PrepareStageWithoutATrackedType",
     "tony.worker.instances=2 tony.ps.instances=1 tony.application.prepare-stage=ps "
     "tony.application.training-stage=worker",
     {"tony.application.prepare-stage=ps: the prepare stage has no tracked type"}},

    {"TensorBoardOfNoInstances",
     "loom.worker.instances=1 loom.tensorboard.instances=0 loom.tensorboard.memory=1g "
     "loom.application.tensorboard-log-dir=hdfs:///logs",
     {"loom.tensorboard.instances=0 switches off the TensorBoard"}},

    {"DockerForATypeWithoutAnImage", "tony.worker.instances=2 tony.ps.instances=1 tony.docker.enabled=true",
     {"tony.docker.enabled=true, but task type 'worker' has no image: set tony.docker.worker.image or "
      "tony.docker.containers.image"}},
    {"DockerImageWithDockerOff", "tony.worker.instances=1 tony.docker.worker.image=trainer:1",
     {"tony.docker.worker.image=trainer:1 asks for Docker, but tony.docker.enabled is false: set "
      "tony.docker.enabled=true"}},
    {"DockerMountWithDockerOff", "tony.worker.instances=1 tony.docker.containers.mount=/a:/a",
     {"tony.docker.containers.mount=/a:/a asks for Docker"}},

    {"SecurityEnabled", "tony.worker.instances=1 tony.application.security.enabled=true", {}},
    {"SecurityDisabled", "tony.worker.instances=1 tony.application.security.enabled=false", {}},

    {"MessagesNameKeysInTheUsersSpelling",
     "tony.worker.instances=3 tony.application.framework=mxnet tony.worker.max-instances=2 "
     "tony.task.max-total-instances=1",
     {"tony.application.framework=mxnet needs tony.scheduler.instances=1",
      "tony.worker.instances=3 exceeds tony.worker.max-instances=2",
      "tony.task.max-total-instances=1 but the job asks for 3 tasks"},
     {"loom."}},
    // Dependency timeouts name their group in the same spelling.
    {"DependencyGroupInTheUsersSpelling",
     "tony.worker.instances=3 tony.application.framework=tensorflow "
     "tony.application.dependency.worker.timeout.after.g=30 tony.application.group.g=chief",
     {"tony.application.group.g: task type 'chief' is not part of the job"}},

    // Processes per task name the key as written.
    {"ZeroProcesses", "tony.worker.instances=2 tony.worker.processes=0",
     {"tony.worker.processes='0': expected an integer >= 1"}},
    {"NegativeProcesses", "tony.worker.instances=2 tony.worker.processes=-1",
     {"tony.worker.processes='-1': expected an integer >= 1"}},
    {"ProcessesNotANumber", "tony.worker.instances=2 tony.worker.processes=two",
     {"tony.worker.processes='two': expected an integer >= 1"}},
    {"ProcessGpusNeitherSplitNorAll", "tony.worker.instances=2 tony.worker.process-gpus=half",
     {"tony.worker.process-gpus='half': expected one of split, all"}},
    {"GpusThatDoNotSplitEvenly", "tony.worker.instances=2 tony.worker.processes=3 tony.worker.gpus=4",
     {"4 GPUs over 3 processes cannot be split evenly: set tony.worker.process-gpus=all"}},
    // Each of the 3 sees all 4.
    {"GpusThatEachProcessSeesAll",
     "tony.worker.instances=2 tony.worker.processes=3 tony.worker.gpus=4 tony.worker.process-gpus=all", {}},
    {"ProcessesOfASidecar",
     "tony.worker.instances=2 tony.tensorboard.instances=1 tony.tensorboard.processes=2",
     {"tony.tensorboard.processes=2: 'tensorboard' is a sidecar type"}},

    // The types that hold ranks (core/job_world.h). No default type in the job: nothing would.
    {"NoTypeHoldsARank", "loom.application.framework=pytorch loom.trainer.instances=2",
     {"loom.application.framework=pytorch: no task type holds a rank, so WORLD_SIZE would be 0",
      "e.g. loom.application.world.jobtypes=trainer"}},
    {"WorldTypesNotInTheJobOrSidecars",
     "loom.application.framework=pytorch loom.trainer.instances=2 "
     "tony.application.world.jobtypes=trainer,tensorboard,readr loom.application.tensorboard-log-dir=/tmp/tb",
     {"tony.application.world.jobtypes: 'readr' is not a task type of the job",
      "tony.application.world.jobtypes: 'tensorboard' is a sidecar type"},
     {"no task type holds a rank"}},
    {"WorldTypesOfAFrameworkWithoutAWorld",
     "loom.application.framework=tensorflow loom.trainer.instances=2 tony.application.world.jobtypes=trainer "
     "loom.application.tensorboard-log-dir=/tmp/tb",
     {"tony.application.world.jobtypes=trainer names the types that hold ranks under "}},
};

// No prefix: the fixture names its directory after the test suite, which a prefix would make "Prefix/...".
INSTANTIATE_TEST_SUITE_P(, JobSpecBuildTest, ::testing::ValuesIn(kBuildCases),
                         [](const ::testing::TestParamInfo<BuildCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace loom
