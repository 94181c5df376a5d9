#include "history/job_record.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>

#include "core/testing.h"

namespace loom::history {
namespace {

using ::testing::HasSubstr;

TEST(JobRecord, WrittenAndReadBackWhole) {
  const std::string root =
      (std::filesystem::temp_directory_path() / ("loom_job_record_" + std::to_string(::getpid())) / "job_1").string();
  std::filesystem::create_directories(root);
  const JobDir dir(root);
  const JobRecord written{"job_1", "mnist", "alice", "local", "/home/alice", "pytorch", 1700000000000,
                          {"submit", "--executes", "train.py"}};
  ASSERT_OK(written.Write(dir));
  auto read = JobRecord::Read(dir);
  ASSERT_OK(read);
  EXPECT_EQ(read->ToJson(), written.ToJson());
  EXPECT_EQ(read->argv.size(), 3u);
  std::filesystem::remove_all(std::filesystem::path(root).parent_path());
}

TEST(JobRecord, AnOlderOrImportedRecordLeavesWhatItLacksEmpty) {
  auto r = JobRecord::FromJson({{"job_id", "application_1_0001"}, {"name", "x"}, {"backend", "yarn"}});
  ASSERT_OK(r);
  EXPECT_EQ(r->cwd, "");
  EXPECT_TRUE(r->argv.empty());
  EXPECT_EQ(r->submitted_ms, 0);
}

TEST(JobRecord, FieldsOfTheWrongShapeAreRefusedByName) {
  EXPECT_STATUS(JobRecord::FromJson({{"cwd", 3}}), kInvalidArgument, HasSubstr("cwd"));
  EXPECT_STATUS(JobRecord::FromJson({{"argv", "submit"}}), kInvalidArgument, HasSubstr("argv"));
  EXPECT_STATUS(JobRecord::FromJson(nlohmann::json::array()), kInvalidArgument, HasSubstr("object"));
  // A timestamp out of range is no timestamp, not an overflow.
  EXPECT_EQ(JobRecord::FromJson({{"submitted_ms", 1e300}})->submitted_ms, 0);
}

TEST(JobRecord, ReadingSaysWhichFileIsWrong) {
  const std::string root =
      (std::filesystem::temp_directory_path() / ("loom_job_record_bad_" + std::to_string(::getpid())) / "job_2").string();
  std::filesystem::create_directories(root);
  const JobDir dir(root);
  EXPECT_STATUS(JobRecord::Read(dir), kNotFound, HasSubstr("job.json"));
  std::ofstream(dir.job_json()) << "{not json";
  EXPECT_STATUS(JobRecord::Read(dir), kInvalidArgument, HasSubstr("job.json is not valid JSON"));
  std::filesystem::remove_all(std::filesystem::path(root).parent_path());
}

}  // namespace
}  // namespace loom::history
