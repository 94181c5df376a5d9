#include "cluster/yarn/yarn_container_broker.h"

#include <gmock/gmock.h>

namespace loom::cluster::yarn {
namespace {

// The shape of a Hadoop 3.3 NodeManager's diagnostics for a container that exited non-zero:
// the exit block is appended twice, with different timestamps.
TEST(WithoutRepeatedBlocks, KeepsEachBlockOnce) {
  std::string exit_block =
      "Container exited with a non-zero exit code 3. Error file: prelaunch.err.\n"
      "Last 4096 bytes of prelaunch.err :\nLast 4096 bytes of stderr :\nfatal: simulated failure";
  std::string diag = "Exception from container-launch.\nContainer id: container_1_0001_01_000002\nExit code: 3\n\n"
                     "[2026-11-22 18:46:25.123]" + exit_block + "\n\n\n[2026-11-22 18:46:25.124]" + exit_block + "\n";
  std::string once = WithoutRepeatedBlocks(diag);
  EXPECT_THAT(once, ::testing::HasSubstr("Exit code: 3"));
  size_t first = once.find("fatal: simulated failure");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(once.find("fatal: simulated failure", first + 1), std::string::npos) << once;
}

TEST(WithoutRepeatedBlocks, LeavesDistinctTextAlone) {
  EXPECT_EQ(WithoutRepeatedBlocks("Container released on a *lost* node"), "Container released on a *lost* node");
  EXPECT_EQ(WithoutRepeatedBlocks("a\n\nb"), "a\nb");
  EXPECT_EQ(WithoutRepeatedBlocks(""), "");
}

}  // namespace
}  // namespace loom::cluster::yarn
