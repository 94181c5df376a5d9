#include "control/control_client.h"

#include <gmock/gmock.h>

#include "core/testing.h"

namespace loom::control {
namespace {

using namespace std::chrono_literals;

TEST(ControlClient, AnAddressThatDoesNotResolveIsAnErrorNotAChannel) {
  EXPECT_FALSE(ControlClient::Connect("no-such-host.invalid:4000", "s").ok());
  EXPECT_FALSE(ControlClient::Connect("127.0.0.1", "s").ok());  // no port
  auto client = ControlClient::Connect("127.0.0.1:1", "s");
  ASSERT_OK(client);
  EXPECT_EQ((*client)->address(), "127.0.0.1:1");
}

TEST(ControlClient, ACallGetsItsDeadlineAndNoAmMeansAFailedCallNotAHang) {
  auto client = ControlClient::Connect("127.0.0.1:1", "s");
  ASSERT_OK(client);
  grpc::ClientContext ctx;
  const auto before = std::chrono::system_clock::now();
  (*client)->Prepare(ctx, 2s);
  EXPECT_GE(ctx.deadline(), before + 2s);
  EXPECT_LE(ctx.deadline(), std::chrono::system_clock::now() + 2s);
  JobStateRequest req;
  JobStateResponse resp;
  EXPECT_FALSE((*client)->stub().JobState(&ctx, req, &resp).ok());
  EXPECT_FALSE((*client)->Connected());
}

}  // namespace
}  // namespace loom::control
