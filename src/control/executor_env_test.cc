#include "control/executor_env.h"

#include <gmock/gmock.h>

#include "core/testing.h"

namespace loom::control {
namespace {

using ::testing::HasSubstr;

TEST(ExecutorEnv, RoundTripsThroughTheEnvironment) {
  ExecutorEnv e;
  e.job_id = "job_1";
  e.task_id = "worker:1";
  e.restart_count = 2;
  e.am_address = "h:1234";
  e.secret_file = "/tmp/s";
  e.port_low = 21000;
  e.port_high = 22000;
  e.preferred_port = 21005;
  e.host = "h";
  e.container_id = "c1";
  e.log_dir = "/logs";
  e.memory_enforced_by = "watchdog";
  std::map<std::string, std::string> env = {{"PATH", "/bin"}};
  e.AddTo(env);
  EXPECT_EQ(env["LOOM_PORT_RANGE"], "21000-22000");
  auto back = ExecutorEnv::FromEnv(env);
  ASSERT_OK(back);
  EXPECT_EQ(back->task_id, "worker:1");
  EXPECT_EQ(back->restart_count, 2);
  EXPECT_EQ(back->port_low, 21000);
  EXPECT_EQ(back->port_high, 22000);
  EXPECT_EQ(back->preferred_port, 21005);
  EXPECT_EQ(back->memory_enforced_by, "watchdog");
  ExecutorEnv::RemoveWiring(env);
  EXPECT_EQ(env.count("LOOM_AM_ADDRESS") + env.count("LOOM_SECRET_FILE") + env.count("LOOM_PORT_RANGE"), 0u);
  EXPECT_EQ(env["LOOM_TASK_ID"], "worker:1");  // the user's process may know its task
  EXPECT_EQ(env["PATH"], "/bin");
}

TEST(ExecutorEnv, NamesWhatIsMissingOrMalformed) {
  std::map<std::string, std::string> env = {{"LOOM_TASK_ID", "worker:0"}, {"LOOM_SECRET_FILE", "/s"}};
  EXPECT_THAT(ExecutorEnv::FromEnv(env).status().message(), HasSubstr("LOOM_AM_ADDRESS"));
  env["LOOM_AM_ADDRESS"] = "h:1";
  EXPECT_OK(ExecutorEnv::FromEnv(env));
  env.erase("LOOM_SECRET_FILE");
  EXPECT_THAT(ExecutorEnv::FromEnv(env).status().message(), HasSubstr("LOOM_SECRET_FILE"));
  env["LOOM_SECRET_CREDENTIAL"] = "loom.job.secret";  // the secret from the container's credentials
  EXPECT_OK(ExecutorEnv::FromEnv(env));
  env["LOOM_PORT_RANGE"] = "9-x";
  EXPECT_THAT(ExecutorEnv::FromEnv(env).status().message(), HasSubstr("LOOM_PORT_RANGE=9-x"));
  env["LOOM_PORT_RANGE"] = "100-200";
  env["LOOM_MEMORY_ENFORCED_BY"] = "magic";
  EXPECT_THAT(ExecutorEnv::FromEnv(env).status().message(), HasSubstr("LOOM_MEMORY_ENFORCED_BY"));
}

}  // namespace
}  // namespace loom::control
