// loom.history.location (TonY's tony.history.location): accepted, parsed, its TonY placeholder
// unset, and a bad value refused at BuildJobSpec naming the key as written.

#include "core/history_location.h"

#include "core/job_spec.h"
#include "core/job_spec_test_fixture.h"
#include "core/testing.h"

namespace loom {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using Scheme = HistoryLocation::Scheme;

Result<HistoryLocation> Parse(const std::string& key, const std::string& value) {
  config::Config conf;
  conf.Set(key, value, "tony.xml");
  return ParseHistoryLocation(conf);
}

TEST(HistoryLocation, EachFormParses) {
  struct Case {
    std::string value;
    Scheme scheme;
    std::string authority, path;
  };
  const Case cases[] = {
      {"hdfs:///loom-history", Scheme::kHdfs, "", "/loom-history"},
      {"hdfs://nn.example.com:8020/shared/history/", Scheme::kHdfs, "nn.example.com:8020", "/shared/history"},
      {"HDFS://mycluster//a//b", Scheme::kHdfs, "mycluster", "/a/b"},
      {"/shared/history", Scheme::kPath, "", "/shared/history"},
      {"  /x  ", Scheme::kPath, "", "/x"},
      {"file:///var/loom/history", Scheme::kFile, "", "/var/loom/history"},
      {"file://localhost/var/h", Scheme::kFile, "", "/var/h"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.value);
    auto loc = Parse("loom.history.location", c.value);
    ASSERT_OK(loc.status());
    EXPECT_TRUE(loc->set());
    EXPECT_EQ(loc->scheme, c.scheme);
    EXPECT_EQ(loc->authority, c.authority);
    EXPECT_EQ(loc->path, c.path);
    EXPECT_EQ(loc->JobPath("job_1"), c.path + "/job_1");
  }
}

TEST(HistoryLocation, TonysKeyIsTheSameKey) {
  auto loc = Parse("tony.history.location", "hdfs:///tony-history");
  ASSERT_OK(loc.status());
  EXPECT_EQ(loc->scheme, Scheme::kHdfs);
  EXPECT_EQ(loc->path, "/tony-history");
}

TEST(HistoryLocation, UnsetEmptyAndTonysPlaceholderAreNoLocation) {
  config::Config none;
  auto loc = ParseHistoryLocation(none);
  ASSERT_OK(loc.status());
  EXPECT_FALSE(loc->set());
  for (const char* v : {"", "  ", "/path/to/tony-history"}) {
    SCOPED_TRACE(v);
    loc = Parse("tony.history.location", v);
    ASSERT_OK(loc.status());
    EXPECT_FALSE(loc->set());
  }
}

TEST(HistoryLocation, BadValuesAreRefusedNamingTheKeyAsWritten) {
  struct Case {
    std::string value, why;
  };
  const Case cases[] = {
      {"s3://bucket/history", "not s3"},
      {"gs://bucket/history", "not gs"},
      {"viewfs://cluster/history", "not viewfs"},
      {"hdfs:/history", "hdfs: needs hdfs:///path"},
      {"relative/history", "absolute path"},
      {"hdfs://nn:8020", "absolute path"},
      {"/a/../etc", "no '.' or '..'"},
      {"/a/./b", "no '.' or '..'"},
      {"/", "root directory"},
      {"hdfs:///", "root directory"},
      {"file://otherhost/x", "not on otherhost"},
      {"/a?b=1", "no query"},
      {"/a\nb", "control character"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.value);
    EXPECT_STATUS(Parse("tony.history.location", c.value), kInvalidArgument,
                  AllOf(HasSubstr("tony.history.location='" + c.value + "' (from tony.xml): "), HasSubstr(c.why),
                        HasSubstr("hdfs:///path")));
  }
}

TEST(HistoryRecordFiles, StatusIsWrittenLastAndNothingSecretIsThere) {
  const std::vector<std::string>& files = HistoryRecordFiles();
  ASSERT_FALSE(files.empty());
  EXPECT_EQ(files.back(), kHistoryStatusFile);
  for (const std::string& f : files) {
    EXPECT_NE(f, "secret");
    EXPECT_NE(f, "kill_cause");
    EXPECT_TRUE(IsHistoryJobId(f)) << f;  // plain names, no path
  }
}

TEST(HistoryJobId, OnlyPlainNamesAreJobDirs) {
  for (const char* ok : {"job_20261129123000_ab12", "application_1_0001", "a", "x.y-z"}) EXPECT_TRUE(IsHistoryJobId(ok)) << ok;
  for (const char* bad : {"", ".", "..", ".hidden", "a/b", "/abs", "a\\b", "job 1", "a\nb", "%2e%2e"}) {
    EXPECT_FALSE(IsHistoryJobId(bad)) << bad;
  }
  EXPECT_FALSE(IsHistoryJobId(std::string(256, 'a')));
}

class HistoryLocationSpecTest : public testing::JobSpecFixture {};

TEST_F(HistoryLocationSpecTest, TheSpecCarriesItAndABadOneStopsTheSubmission) {
  conf_.Set("tony.worker.instances", "1", "--conf");
  conf_.Set("tony.history.location", "hdfs:///tony-history", "tony.xml");
  auto spec = BuildJobSpec(conf_, dir_.string());
  ASSERT_OK(spec.status());
  EXPECT_EQ(spec->history_location.scheme, Scheme::kHdfs);
  EXPECT_EQ(spec->history_location.path, "/tony-history");

  conf_.Set("tony.history.location", "s3://bucket/tony-history", "tony.xml");
  EXPECT_STATUS(BuildJobSpec(conf_, dir_.string()), kInvalidArgument,
                HasSubstr("tony.history.location='s3://bucket/tony-history' (from tony.xml): Loom writes job records "
                          "to HDFS or a local directory, not s3"));
}

}  // namespace
}  // namespace loom
