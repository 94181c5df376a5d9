#include "core/job_spec.h"

#include <filesystem>
#include <fstream>
#include <map>

#include "core/config/key_registry.h"
#include "core/files.h"
#include "core/job_world.h"
#include "core/job_spec_test_fixture.h"
#include "core/testing.h"

namespace loom {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class JobSpecTest : public testing::JobSpecFixture {};

TEST_F(JobSpecTest, TypesInRankOrderWithRoles) {
  conf_.Set("tony.ps.instances", "1", "f");
  conf_.Set("tony.worker.instances", "2", "f");
  conf_.Set("tony.evaluator.instances", "1", "f");
  conf_.Set("tony.chief.instances", "1", "f");
  conf_.Set("tony.tensorboard.instances", "1", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
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
  conf_.Set("loom.worker.instances", "1", "f");
  conf_.Set("loom.ps.instances", "1", "f");
  conf_.Set("loom.ps.command", "sleep 100", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
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

TEST_F(JobSpecTest, NoTypesIsAnError) {
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("no task types"));
}

TEST_F(JobSpecTest, CapsAreEnforced) {
  conf_.Set("loom.worker.instances", "3", "f");
  conf_.Set("loom.worker.max-instances", "2", "f");
  conf_.Set("loom.task.max-total-gpus", "1", "f");
  conf_.Set("loom.worker.gpus", "1", "f");
  Status s = BuildJobSpec(conf_, dir_.string()).status();
  EXPECT_THAT(s.message(), HasSubstr("exceeds loom.worker.max-instances=2"));
  EXPECT_THAT(s.message(), HasSubstr("loom.task.max-total-gpus=1 but the job asks for 3 GPUs"));
}

TEST_F(JobSpecTest, FrameworkConstraints) {
  conf_.Set("loom.worker.instances", "2", "f");
  conf_.Set("loom.application.framework", "standalone", "f");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("exactly 1 task"));
  conf_.Set("loom.application.framework", "mxnet", "f");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("loom.application.framework=mxnet needs loom.scheduler.instances=1"));
}

TEST_F(JobSpecTest, OnlyUntrackedTypesCanNeverFinish) {
  conf_.Set("loom.ps.instances", "1", "f");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("no tracked task type"));
}

TEST_F(JobSpecTest, EnvListsAreParsed) {
  conf_.Set("loom.worker.instances", "1", "f");
  conf_.Set("loom.execution.envs", "A=1,B=two", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->execution_env.at("B"), "two");
}

TEST_F(JobSpecTest, DependencyTimeoutsNeedTheirGroupAndType) {
  conf_.Set("loom.worker.instances", "2", "f");
  conf_.Set("loom.evaluator.instances", "1", "f");
  conf_.Set("tony.application.dependency.evaluator.timeout.after.training", "30", "f");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("group 'training' is not defined"));
  conf_.Set("tony.application.group.training", "worker,chief", "f");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("task type 'chief' is not part of the job"));
  conf_.Set("tony.application.group.training", "worker", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  ASSERT_EQ(spec->dependency_timeouts.size(), 1u);
  EXPECT_EQ(spec->dependency_timeouts[0].type, "evaluator");
  EXPECT_EQ(spec->dependency_timeouts[0].seconds, 30);
  EXPECT_FALSE(spec->dependency_timeouts[0].ignored);
}

TEST_F(JobSpecTest, MisspeltTaskTypeIsRefusedWithASuggestion) {
  conf_.Set("tony.worker.instances", "2", "--conf");
  conf_.Set("tony.workr.instances", "1", "--conf");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("unknown task type 'workr' (tony.workr.instances); did you mean worker?"));
  EXPECT_THAT(BuildJobSpec(conf_, dir_.string()).status().message(),
              HasSubstr("if 'workr' is meant, declare it with tony.application.custom-types=workr or give it its "
                        "own tony.workr.command"));
  // Declared, or with a command of its own, the type is intended.
  conf_.Set("tony.application.custom-types", "workr", "--conf");
  ASSERT_OK(BuildJobSpec(conf_, dir_.string()));
  conf_.Unset("tony.application.custom-types");
  conf_.Set("tony.workr.command", "sleep 1", "--conf");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->FindType("workr")->command, "sleep 1");
}

TEST_F(JobSpecTest, TypeNearAnotherIntendedTypeIsRefused) {
  conf_.Set("loom.worker.instances", "1", "f");
  conf_.Set("loom.dbloader.instances", "1", "f");
  conf_.Set("loom.dbloader.command", "load", "f");
  conf_.Set("loom.dbloadr.instances", "1", "f");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("unknown task type 'dbloadr' (loom.dbloadr.instances); did you mean dbloader?"));
  // Far from every known type, a type of the user's own needs no declaration; two-letter names
  // are one edit from a known one at most (db is two from ps).
  conf_.Unset("loom.dbloadr.instances");
  conf_.Set("loom.db.instances", "1", "f");
  conf_.Set("loom.trainer.instances", "1", "f");
  ASSERT_OK(BuildJobSpec(conf_, dir_.string()));
  conf_.Set("loom.pss.instances", "1", "f");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("did you mean ps?"));
}

TEST_F(JobSpecTest, KeysOfAMisspeltTypeAreRefused) {
  conf_.Set("tony.worker.instances", "1", "--conf");
  conf_.Set("tony.workr.memory", "4g", "--conf");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("tony.workr.memory: the job has no task type 'workr'; did you mean tony.worker.memory?"));
  conf_.Unset("tony.workr.memory");
  // Keys of a type the job lacks are harmless otherwise, as tony-default.xml's tony.ps.memory.
  conf_.Set("tony.ps.memory", "4g", "--conf");
  conf_.Set("tony.chief.vcores", "2", "--conf");
  ASSERT_OK(BuildJobSpec(conf_, dir_.string()));
  conf_.Set("tony.application.custom-types", "nosuch", "--conf");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("tony.application.custom-types: 'nosuch' is not a task type of the job"));
}

// What the AM builds from the job directory's config.xml, as role_commands.cc does.
Result<JobSpec> RebuiltOnTheAm(const config::Config& submitted, const std::string& base_dir) {
  config::Config back;
  LOOM_RETURN_IF_ERROR(back.MergeXmlString(config::WithDefaults(submitted).ToXml(), "config.xml", /*recorded_sources=*/true));
  return BuildJobSpec(back, base_dir, /*check_files=*/false);
}

TEST_F(JobSpecTest, FailOnWorkerFailureIsTheSuccessPolicyAlias) {
  conf_.Set("tony.worker.instances", "2", "--conf");
  EXPECT_EQ(BuildJobSpec(conf_, dir_.string())->success_policy, SuccessPolicy::kAll);  // unset: the policy
  conf_.Set("tony.application.success-policy", "any", "--conf");
  EXPECT_EQ(BuildJobSpec(conf_, dir_.string())->success_policy, SuccessPolicy::kAny);
  conf_.Unset("tony.application.success-policy");
  conf_.Set("tony.application.fail-on-worker-failure-enabled", "false", "--conf");
  EXPECT_EQ(BuildJobSpec(conf_, dir_.string())->success_policy, SuccessPolicy::kAny);
  EXPECT_EQ(RebuiltOnTheAm(conf_, dir_.string())->success_policy, SuccessPolicy::kAny);
  conf_.Set("tony.application.fail-on-worker-failure-enabled", "true", "--conf");
  EXPECT_EQ(BuildJobSpec(conf_, dir_.string())->success_policy, SuccessPolicy::kAll);
  // Both set: they must agree.
  conf_.Set("tony.application.success-policy", "all", "--conf");
  ASSERT_OK(BuildJobSpec(conf_, dir_.string()));
  conf_.Set("tony.application.success-policy", "any", "--conf");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("tony.application.fail-on-worker-failure-enabled=true contradicts "
                          "tony.application.success-policy=any"));
}

TEST_F(JobSpecTest, StagesFillTheOtherListWithTheRemainingTypes) {
  conf_.Set("loom.worker.instances", "2", "f");
  conf_.Set("loom.ps.instances", "1", "f");
  conf_.Set("loom.dbloader.instances", "1", "f");
  conf_.Set("loom.dbloader.command", "load", "f");
  conf_.Set("loom.application.prepare-stage", "dbloader", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->prepare_stage, (std::vector<std::string>{"dbloader"}));
  EXPECT_EQ(spec->training_stage, (std::vector<std::string>{"worker", "ps"}));  // rank order
  conf_.Unset("loom.application.prepare-stage");
  conf_.Set("loom.application.training-stage", "worker", "f");
  spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->prepare_stage, (std::vector<std::string>{"dbloader", "ps"}));
  EXPECT_EQ(spec->training_stage, (std::vector<std::string>{"worker"}));
  // Neither: one stage.
  conf_.Unset("loom.application.training-stage");
  spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_TRUE(spec->prepare_stage.empty());
  EXPECT_TRUE(spec->training_stage.empty());
}

TEST_F(JobSpecTest, StagesNameTypesOfTheJobOnceEach) {
  conf_.Set("tony.worker.instances", "2", "--conf");
  conf_.Set("tony.ps.instances", "1", "--conf");
  conf_.Set("tony.application.prepare-stage", "loader", "--conf");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("tony.application.prepare-stage: task type 'loader' is not a type of the job"));
  conf_.Set("tony.application.prepare-stage", "worker", "--conf");
  conf_.Set("tony.application.training-stage", "worker,ps", "--conf");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("task type 'worker' is in both tony.application.prepare-stage and "
                          "tony.application.training-stage"));
  // ps is untracked: a prepare stage of it alone would never be done.
  conf_.Set("tony.application.prepare-stage", "ps", "--conf");
  conf_.Set("tony.application.training-stage", "worker", "--conf");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("tony.application.prepare-stage=ps: the prepare stage has no tracked type"));
}

TEST_F(JobSpecTest, TensorBoardLogDirAddsASidecarType) {
  conf_.Set("loom.worker.instances", "3", "f");
  conf_.Set("loom.worker.memory", "1g", "f");
  conf_.Set("loom.application.tensorboard-log-dir", "/tmp/tb", "--sidecar_tensorboard_log_dir");
  auto spec = BuildJobSpec(conf_, dir_.string());
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
  conf_.Set("tony.tensorboard.vcores", "4", "--conf");
  conf_.Set("tony.python-exec-path", "/opt/py/bin/python", "--conf");
  conf_.Set("tony.application.sidecar.jobtypes", "", "--conf");
  spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  tb = spec->FindType("tensorboard");
  EXPECT_EQ(tb->resources.vcores, 4);
  EXPECT_EQ(tb->role, TaskRole::kSidecar);
  EXPECT_EQ(tb->command, "/opt/py/bin/python -m tensorboard.main --logdir \"$TB_LOG_DIR\" --port \"$TB_PORT\" --host 0.0.0.0");
  conf_.Set("tony.tensorboard.command", "my_tb.sh", "--conf");
  EXPECT_EQ(BuildJobSpec(conf_, dir_.string())->FindType("tensorboard")->command, "my_tb.sh");
  // Without the log dir there is no TensorBoard type.
  conf_.Unset("loom.application.tensorboard-log-dir");
  spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->FindType("tensorboard"), nullptr);
  EXPECT_TRUE(spec->tensorboard_log_dir.empty());
}

TEST_F(JobSpecTest, TensorBoardTypeOfTheUsersOwnIsKept) {
  conf_.Set("loom.worker.instances", "1", "f");
  conf_.Set("loom.tensorboard.instances", "1", "f");
  conf_.Set("loom.tensorboard.memory", "1g", "f");
  conf_.Set("loom.application.tensorboard-log-dir", "hdfs:///logs", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  const TaskTypeSpec* tb = spec->FindType("tensorboard");
  EXPECT_EQ(tb->resources.memory_mib, 1024);
  EXPECT_EQ(tb->resources.vcores, 1);  // the type's own default, as any type's
  EXPECT_EQ(tb->command, "tensorboard --logdir \"$TB_LOG_DIR\" --port \"$TB_PORT\" --host 0.0.0.0");
  conf_.Set("loom.tensorboard.instances", "0", "f");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("loom.tensorboard.instances=0 switches off the TensorBoard"));
}

TEST_F(JobSpecTest, DockerImagesPerTypeOrForAll) {
  conf_.Set("tony.worker.instances", "2", "--conf");
  conf_.Set("tony.ps.instances", "1", "--conf");
  conf_.Set("tony.docker.enabled", "true", "--conf");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("tony.docker.enabled=true, but task type 'worker' has no image: set "
                          "tony.docker.worker.image or tony.docker.containers.image"));
  conf_.Set("tony.docker.containers.image", "python:3.11", "--conf");
  conf_.Set("tony.docker.worker.image", "trainer:1", "--conf");
  conf_.Set("tony.docker.containers.mount", "/data:/data:ro", "--conf");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_TRUE(spec->docker_enabled);
  EXPECT_EQ(spec->FindType("worker")->docker_image, "trainer:1");
  EXPECT_EQ(spec->FindType("ps")->docker_image, "python:3.11");
  EXPECT_EQ(spec->docker_mounts, "/data:/data:ro");
}

TEST_F(JobSpecTest, DockerKeysWithDockerOffAreRefused) {
  conf_.Set("tony.worker.instances", "1", "--conf");
  conf_.Set("tony.docker.worker.image", "trainer:1", "--conf");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("tony.docker.worker.image=trainer:1 asks for Docker, but tony.docker.enabled is false: "
                          "set tony.docker.enabled=true"));
  conf_.Unset("tony.docker.worker.image");
  conf_.Set("tony.docker.containers.mount", "/a:/a", "--conf");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument, HasSubstr("tony.docker.containers.mount=/a:/a asks for Docker"));
  conf_.Unset("tony.docker.containers.mount");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_FALSE(spec->docker_enabled);
  EXPECT_TRUE(spec->FindType("worker")->docker_image.empty());
}

TEST_F(JobSpecTest, TimeoutsAndMetricsSettings) {
  conf_.Set("loom.worker.instances", "1", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->am_startup_timeout_ms, 0);
  EXPECT_EQ(spec->executor_registry_timeout_ms, 0);
  EXPECT_EQ(spec->metrics_interval_ms, 5000);
  EXPECT_TRUE(spec->gpu_metrics);
  conf_.Set("tony.am.startup-timeout", "60000", "f");
  conf_.Set("tony.task.executor.registry-timeout-sec", "30", "f");
  conf_.Set("tony.task.metrics-interval-ms", "250", "f");
  conf_.Set("tony.task.gpu-metrics.enabled", "false", "f");
  spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->am_startup_timeout_ms, 60000);
  EXPECT_EQ(spec->executor_registry_timeout_ms, 30000);
  EXPECT_EQ(spec->metrics_interval_ms, 250);
  EXPECT_FALSE(spec->gpu_metrics);
}

TEST_F(JobSpecTest, SecurityIsAcceptedAndPlacementIsRefusedByName) {
  conf_.Set("tony.worker.instances", "1", "--conf");
  conf_.Set("tony.application.security.enabled", "true", "--conf");
  ASSERT_OK(BuildJobSpec(conf_, dir_.string()));
  conf_.Set("tony.application.security.enabled", "false", "--conf");
  ASSERT_OK(BuildJobSpec(conf_, dir_.string()));
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

TEST_F(JobSpecTest, MessagesNameKeysInTheUsersSpelling) {
  conf_.Set("tony.worker.instances", "3", "--conf");
  conf_.Set("tony.application.framework", "mxnet", "--conf");
  conf_.Set("tony.worker.max-instances", "2", "--conf");
  conf_.Set("tony.task.max-total-instances", "1", "--conf");
  Status s = BuildJobSpec(conf_, dir_.string()).status();
  EXPECT_THAT(s.message(), HasSubstr("tony.application.framework=mxnet needs tony.scheduler.instances=1"));
  EXPECT_THAT(s.message(), HasSubstr("tony.worker.instances=3 exceeds tony.worker.max-instances=2"));
  EXPECT_THAT(s.message(), HasSubstr("tony.task.max-total-instances=1 but the job asks for 3 tasks"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("loom.")));
  // The spec carries the spelling to code that has no config (the AM, executors, backends).
  conf_.Set("tony.application.framework", "tensorflow", "--conf");
  conf_.Unset("tony.worker.max-instances");
  conf_.Unset("tony.task.max-total-instances");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->KeyName("loom.application.timeout"), "tony.application.timeout");
  EXPECT_EQ(RebuiltOnTheAm(conf_, dir_.string())->key_prefix, "tony.");
  // Dependency timeouts name their group in the same spelling.
  config::Config d = conf_;
  d.Set("tony.application.framework", "tensorflow", "--conf");
  d.Unset("tony.task.max-total-instances");
  d.Unset("tony.worker.max-instances");
  d.Set("tony.application.dependency.worker.timeout.after.g", "30", "--conf");
  d.Set("tony.application.group.g", "chief", "--conf");
  EXPECT_STATUS(BuildJobSpec(d, dir_.string()), kInvalidArgument,
                HasSubstr("tony.application.group.g: task type 'chief' is not part of the job"));
}

TEST(TaskId, Parse) {
  EXPECT_EQ(ParseTaskId("worker:3")->ToString(), "worker:3");
  EXPECT_FALSE(ParseTaskId("worker").ok());
  EXPECT_FALSE(ParseTaskId("worker:-1").ok());
}

TEST_F(JobSpecTest, KeyNameIsTheUsersSpellingEvenInAMixedConfig) {
  conf_.Set("loom.worker.instances", "2", "--conf");
  conf_.Set("loom.worker.memory", "1g", "--conf");
  conf_.Set("tony.application.timeout", "60000", "--conf");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->key_prefix, "loom.");
  EXPECT_EQ(spec->KeyName("loom.application.timeout"), "tony.application.timeout");
  EXPECT_EQ(spec->KeyName("loom.container.allocation.timeout"), "loom.container.allocation.timeout");
}

TEST_F(JobSpecTest, ProcessesPerTask) {
  conf_.Set("loom.worker.instances", "2", "--conf");
  auto one = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(one);
  EXPECT_EQ(one->FindType("worker")->processes, 1);  // the default: one process per task
  EXPECT_TRUE(one->FindType("worker")->split_gpus);
  conf_.Set("tony.worker.processes", "4", "--conf");
  conf_.Set("tony.worker.gpus", "8", "--conf");
  auto split = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(split);
  EXPECT_EQ(split->FindType("worker")->processes, 4);
  EXPECT_TRUE(split->FindType("worker")->split_gpus);
  conf_.Set("loom.worker.process-gpus", "ALL", "--conf");
  auto all = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(all);
  EXPECT_FALSE(all->FindType("worker")->split_gpus);
}

TEST_F(JobSpecTest, BadProcessesNameTheKeyAsWritten) {
  conf_.Set("tony.worker.instances", "2", "--conf");
  for (const char* bad : {"0", "-1", "two"}) {
    config::Config c = conf_;
    c.Set("tony.worker.processes", bad, "--conf");
    EXPECT_STATUS(BuildJobSpec(c, dir_.string()), kInvalidArgument,
                  HasSubstr("tony.worker.processes='" + std::string(bad) + "': expected an integer >= 1"));
  }
  config::Config mode = conf_;
  mode.Set("tony.worker.process-gpus", "half", "--conf");
  EXPECT_STATUS(BuildJobSpec(mode, dir_.string()), kInvalidArgument,
                HasSubstr("tony.worker.process-gpus='half': expected one of split, all"));
  config::Config uneven = conf_;
  uneven.Set("tony.worker.processes", "3", "--conf");
  uneven.Set("tony.worker.gpus", "4", "--conf");
  EXPECT_STATUS(BuildJobSpec(uneven, dir_.string()), kInvalidArgument,
                HasSubstr("4 GPUs over 3 processes cannot be split evenly: set tony.worker.process-gpus=all"));
  uneven.Set("tony.worker.process-gpus", "all", "--conf");
  EXPECT_OK(BuildJobSpec(uneven, dir_.string()));  // each of the 3 sees all 4
  config::Config sidecar = conf_;
  sidecar.Set("tony.tensorboard.instances", "1", "--conf");
  sidecar.Set("tony.tensorboard.processes", "2", "--conf");
  EXPECT_STATUS(BuildJobSpec(sidecar, dir_.string()), kInvalidArgument,
                HasSubstr("tony.tensorboard.processes=2: 'tensorboard' is a sidecar type"));
}

// ---- Which types hold ranks (core/job_world.h) --------------------------------------------

TEST_F(JobSpecTest, OnlyTrainingTypesHoldRanksByDefault) {
  conf_.Set("loom.application.framework", "pytorch", "f");
  conf_.Set("loom.chief.instances", "1", "f");
  conf_.Set("loom.worker.instances", "2", "f");
  conf_.Set("loom.reader.instances", "1", "f");
  conf_.Set("loom.application.tensorboard-log-dir", "/tmp/tb", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
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
  conf_.Set("tony.application.framework", "horovod", "f");
  conf_.Set("tony.worker.instances", "2", "f");
  conf_.Set("tony.reader.instances", "1", "f");
  conf_.Set("tony.application.world.jobtypes", "worker,reader", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec);
  EXPECT_TRUE(spec->FindType("reader")->holds_rank);
  EXPECT_EQ(TypesWithoutRanks(*spec), "");
  EXPECT_EQ(WorldNote(*spec), "");
}

TEST_F(JobSpecTest, OtherFrameworksHaveNoWorldToLeave) {
  conf_.Set("loom.worker.instances", "2", "f");
  conf_.Set("loom.reader.instances", "1", "f");
  auto spec = BuildJobSpec(conf_, dir_.string());  // tensorflow
  ASSERT_OK(spec);
  EXPECT_TRUE(spec->FindType("reader")->holds_rank);
  EXPECT_EQ(WorldNote(*spec), "");
}

TEST_F(JobSpecTest, WorldTypesAreChecked) {
  conf_.Set("loom.application.framework", "pytorch", "f");
  conf_.Set("loom.trainer.instances", "2", "f");
  // No default type in the job: nothing would hold a rank.
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("loom.application.framework=pytorch: no task type holds a rank, so WORLD_SIZE would be 0"));
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("e.g. loom.application.world.jobtypes=trainer"));
  conf_.Set("tony.application.world.jobtypes", "trainer,tensorboard,readr", "f");
  conf_.Set("loom.application.tensorboard-log-dir", "/tmp/tb", "f");
  Status s = BuildJobSpec(conf_, dir_.string()).status();
  EXPECT_THAT(s.message(), HasSubstr("tony.application.world.jobtypes: 'readr' is not a task type of the job"));
  EXPECT_THAT(s.message(), HasSubstr("tony.application.world.jobtypes: 'tensorboard' is a sidecar type"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("no task type holds a rank")));
  conf_.Set("tony.application.world.jobtypes", "trainer", "f");
  conf_.Set("loom.application.framework", "tensorflow", "f");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("tony.application.world.jobtypes=trainer names the types that hold ranks under "));
}

}  // namespace
}  // namespace loom
