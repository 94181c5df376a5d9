#include "core/forwarded_env.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

TEST(ForwardedEnvTest, MlflowVariablesAreForwardedAndTheirCredentialsKnown) {
  EXPECT_TRUE(IsForwardedToTasks("MLFLOW_TRACKING_URI"));
  EXPECT_FALSE(IsForwardedToTasks("AWS_SECRET_ACCESS_KEY"));
  EXPECT_FALSE(IsForwardedToTasks("XMLFLOW_X"));
  for (const char* secret : {"MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_GATEWAY_SECRET",
                             "MLFLOW_DATABRICKS_API_KEY"}) {
    EXPECT_TRUE(HoldsCredential(secret)) << secret;
  }
  for (const char* plain : {"MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_USERNAME", "MLFLOW_EXPERIMENT_NAME",
                            "MLFLOW_KEYRING"}) {
    EXPECT_FALSE(HoldsCredential(plain)) << plain;
  }
  auto creds = ForwardedCredentials({{"MLFLOW_TRACKING_TOKEN", "t"},
                                     {"MLFLOW_TRACKING_URI", "http://x"},
                                     {"GITHUB_TOKEN", "g"}});
  EXPECT_EQ(creds, (std::map<std::string, std::string>{{"MLFLOW_TRACKING_TOKEN", "t"}}));
}

}  // namespace
}  // namespace loom
