// The aggregated log formats against the files a real Hadoop 3.3.6 NodeManager wrote
// (tests/data/yarn-captures/log-aggregation/): decoded and printed like `yarn logs`, the output
// must equal what `yarn logs -applicationId` printed for the same file, byte for byte.
// Then malformed input: every cut and many corruptions give an error, never a crash.

#include "hadoop/logs/aggregated_log_file.h"

#include <random>

#include "core/files.h"
#include "core/testing.h"
#include "hadoop/testing/captures.h"
#include "hadoop/logs/aggregated_logs.h"
#include "hadoop/logs/java_serialization.h"
#include "hadoop/logs/logs_test_util.h"

namespace loom::hadoop {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A file of the recordings under log-aggregation/.
std::string Capture(const std::string& name) { return testing::ReadCapture("log-aggregation/" + name); }

// The HDFS file's modificationTime from the recorded LISTSTATUS of its app dir
// (tfile-http-08): TFile stores no time, `yarn logs` prints this one.
constexpr int64_t kTFileHdfsMtime = 1795374081872;

TEST(AggregatedLogFile, TFileRendersExactlyAsYarnLogs) {
  Result<AggregatedLogFile> file = ParseTFileLogs(Capture("tfile-localhost_45454.bin"));
  ASSERT_OK(file);
  EXPECT_EQ(file->format, AggregatedLogFormat::kTFile);
  EXPECT_EQ(file->owner, "root");
  EXPECT_THAT(file->ContainerIds(), ElementsAre("container_1795374029814_0002_01_000001",
                                                "container_1795374029814_0002_01_000003",
                                                "container_1795374029814_0002_01_000002"));
  std::string rendered = RenderYarnLogs(*file, "localhost_45454", kTFileHdfsMtime);
  std::string expected = Capture("tfile-yarn-logs.txt");
  ASSERT_EQ(rendered.size(), expected.size());
  EXPECT_TRUE(rendered == expected);
  // The listing of tfile-http-08 carries the mtime as JSON; check the constant against it.
  EXPECT_THAT(Capture("tfile-http-08-nn-9870-LISTSTATUS-app-dir.s2c.bin"),
              HasSubstr("\"modificationTime\":" + std::to_string(kTFileHdfsMtime)));
}

TEST(AggregatedLogFile, IFileRendersExactlyAsYarnLogs) {
  Result<AggregatedLogFile> file = ParseIFileLogs(Capture("ifile-localhost_45454.bin"));
  ASSERT_OK(file);
  EXPECT_EQ(file->format, AggregatedLogFormat::kIFile);
  EXPECT_EQ(file->owner, "root");
  EXPECT_EQ(file->node_id, "localhost:45454");
  EXPECT_THAT(file->ContainerIds(), ElementsAre("container_1795374306301_0001_01_000002",
                                                "container_1795374306301_0001_01_000003",
                                                "container_1795374306301_0001_01_000001"));
  // An IFile has per-file times; the HDFS mtime given here must not show.
  std::string rendered = RenderYarnLogs(*file, "localhost_45454", 0);
  std::string expected = Capture("ifile-yarn-logs.txt");
  ASSERT_EQ(rendered.size(), expected.size());
  EXPECT_TRUE(rendered == expected);
}

TEST(AggregatedLogFile, ContentsOfOneFile) {
  Result<AggregatedLogFile> t = ParseAggregatedLogFile(Capture("tfile-localhost_45454.bin"));
  ASSERT_OK(t);
  EXPECT_EQ(t->format, AggregatedLogFormat::kTFile);
  EXPECT_EQ(t->Contents("container_1795374029814_0002_01_000002", "stdout").value_or("?"),
            "stdout line 1 from container_1795374029814_0002_01_000002\nstdout line 2\n");
  EXPECT_EQ(t->Contents("container_1795374029814_0002_01_000001", "AppMaster.stdout").value_or("?"), "");
  EXPECT_STATUS(t->Contents("container_1795374029814_0002_01_000001", "stdout"), kNotFound,
                HasSubstr("it has: AppMaster.stderr, AppMaster.stdout, directory.info"));
  EXPECT_STATUS(t->Contents("container_1795374029814_0002_01_000009", "stdout"), kNotFound, HasSubstr("no container"));

  Result<AggregatedLogFile> i = ParseAggregatedLogFile(Capture("ifile-localhost_45454.bin"));
  ASSERT_OK(i);
  EXPECT_EQ(i->format, AggregatedLogFormat::kIFile);
  EXPECT_EQ(i->Contents("container_1795374306301_0001_01_000003", "stderr").value_or("?"),
            "stderr line from container_1795374306301_0001_01_000003\n");
}

// A large IFile is read in pieces: trailer -> index length -> index -> one log's bytes.
TEST(AggregatedLogFile, IFilePieceByPiece) {
  std::string bytes = Capture("ifile-localhost_45454.bin");
  int64_t size = static_cast<int64_t>(bytes.size());
  Result<AggregatedLogFormat> format = DetectAggregatedLogFormat(bytes.substr(0, 32), bytes.substr(bytes.size() - 36));
  ASSERT_OK(format);
  EXPECT_EQ(*format, AggregatedLogFormat::kIFile);
  Result<int64_t> index_length = IFileIndexLength(bytes.substr(bytes.size() - kIFileTrailerSize), size);
  ASSERT_OK(index_length);
  EXPECT_EQ(*index_length, 2138);  // ifile-localhost_45454.layout.txt
  Result<AggregatedLogFile> index = ParseIFileIndex(bytes.substr(size - kIFileTrailerSize - *index_length, *index_length));
  ASSERT_OK(index);
  ASSERT_EQ(index->entries.size(), 18u);
  const AggregatedLogEntry& first = index->entries[0];
  EXPECT_EQ(first.container_id, "container_1795374306301_0001_01_000002");
  EXPECT_EQ(first.file_name, "stderr");
  EXPECT_EQ(first.offset, 0x3139);
  EXPECT_EQ(first.length, 56);
  EXPECT_EQ(first.mtime_ms, 1795374325226);
  EXPECT_TRUE(first.bytes.empty());
  EXPECT_EQ(bytes.substr(first.offset, first.length), "stderr line from container_1795374306301_0001_01_000002\n");

  Result<AggregatedLogFormat> tfile = DetectAggregatedLogFormat(Capture("tfile-localhost_45454.bin").substr(0, 32),
                                                                Capture("tfile-localhost_45454.bin").substr(24224 - 36));
  ASSERT_OK(tfile);
  EXPECT_EQ(*tfile, AggregatedLogFormat::kTFile);
  EXPECT_STATUS(DetectAggregatedLogFormat(std::string(32, 'a'), std::string(36, 'b')), kInvalidArgument,
                HasSubstr("not an aggregated log file"));
}

TEST(AggregatedLogFile, JavaStreamOfTheIFileIndex) {
  std::string bytes = Capture("ifile-localhost_45454.bin");
  Result<JavaObjectStream> stream = JavaObjectStream::Parse(std::string_view(bytes).substr(0x5bd5, 2138));
  ASSERT_OK(stream);
  ASSERT_EQ(stream->contents().size(), 1u);
  const JavaValue& meta = *stream->contents()[0];
  ASSERT_EQ(meta.kind, JavaValue::Kind::kObject);
  EXPECT_EQ(meta.desc->name,
            "org.apache.hadoop.yarn.logaggregation.filecontroller.ifile.LogAggregationIndexedFileController$IndexedLogsMeta");
  EXPECT_EQ(meta.desc->serial_version_uid, 5439875373);
  ASSERT_NE(meta.Field("version"), nullptr);
  EXPECT_EQ(meta.Field("version")->integer, 1);
  EXPECT_EQ(meta.Field("compressName")->text, "none");
  const JavaValue* acls = meta.Field("acls");
  ASSERT_NE(acls, nullptr);
  EXPECT_EQ(acls->desc->name, "java.util.HashMap");
  EXPECT_TRUE(acls->WrittenObjects().empty());
  const JavaValue* cycles = meta.Field("logMetas");
  ASSERT_NE(cycles, nullptr);
  ASSERT_EQ(cycles->WrittenObjects().size(), 1u);
  const JavaValue* cycle = cycles->WrittenObjects()[0];
  EXPECT_EQ(cycle->Field("uploadTimeStamp")->integer, 1795374328992);
  EXPECT_EQ(cycle->Field("remoteNodeLogFileName")->text, "localhost_45454");
  EXPECT_EQ(cycle->Field("logMetas")->WrittenObjects().size(), 6u);  // 3 keys, 3 values
}

TEST(AggregatedLogFile, ModifiedUtf8) {
  EXPECT_EQ(ModifiedUtf8ToUtf8(std::string("a\xC0\x80z", 4)), std::string("a\0z", 3));
  // U+1F600 as the surrogate pair D83D DE00, each half in 3 bytes.
  EXPECT_EQ(ModifiedUtf8ToUtf8("\xED\xA0\xBD\xED\xB8\x80"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(ModifiedUtf8ToUtf8("h\xC3\xA9"), "h\xC3\xA9");
}

TEST(AggregatedLogFile, TimesLikeHadoop) {
  EXPECT_EQ(FormatLogTime(kTFileHdfsMtime), "Sun Nov 22 19:01:21 +0000 2026");
  EXPECT_EQ(FormatLogTime(0), "Thu Jan 01 00:00:00 +0000 1970");
  EXPECT_EQ(FormatLogTime(-1), "Wed Dec 31 23:59:59 +0000 1969");
}

// ---- malformed input -----------------------------------------------------------------------------

TEST(AggregatedLogFile, EveryTruncationIsAnError) {
  for (const char* name : {"tfile-localhost_45454.bin", "ifile-localhost_45454.bin"}) {
    SCOPED_TRACE(name);
    std::string bytes = Capture(name);
    for (size_t cut = 0; cut < bytes.size(); cut += (cut < 200 || bytes.size() - cut < 3000) ? 1 : 97) {
      Result<AggregatedLogFile> r = ParseAggregatedLogFile(std::string_view(bytes).substr(0, cut));
      EXPECT_FALSE(r.ok()) << "cut at " << cut;
    }
  }
}

TEST(AggregatedLogFile, BadMagicAndBadTrailer) {
  std::string t = Capture("tfile-localhost_45454.bin");
  std::string bad = t;
  bad[3] ^= 0x40;
  EXPECT_STATUS(ParseTFileLogs(bad), kInvalidArgument, HasSubstr("magic"));
  bad = t;
  bad[bad.size() - 21] ^= 0x7f;  // the MetaIndex offset's low byte
  EXPECT_FALSE(ParseTFileLogs(bad).ok());
  bad = t;
  bad[bad.size() - 19] = 2;  // BCFile major version 2
  EXPECT_STATUS(ParseTFileLogs(bad), kUnimplemented, HasSubstr("version"));

  std::string i = Capture("ifile-localhost_45454.bin");
  bad = i;
  bad[5] ^= 1;  // the leading id no longer matches the trailing one
  EXPECT_STATUS(ParseIFileLogs(bad), kInvalidArgument, HasSubstr("ids"));
  bad = i;
  bad[bad.size() - 36] = 0x7f;  // an index length larger than the file
  EXPECT_STATUS(ParseIFileLogs(bad), kInvalidArgument, HasSubstr("index length"));
}

TEST(AggregatedLogFile, BadSerializedIndex) {
  std::string i = Capture("ifile-localhost_45454.bin");
  const size_t index_at = 0x5bd5;
  std::string bad = i;
  bad[index_at] = 0x00;  // no AC ED magic
  EXPECT_STATUS(ParseIFileLogs(bad), kInvalidArgument, HasSubstr("not a Java serialization stream"));
  bad = i;
  bad[index_at + 4] = 0x7b;  // TC_EXCEPTION instead of TC_OBJECT
  EXPECT_STATUS(ParseIFileLogs(bad), kInvalidArgument, HasSubstr("exception"));
  // A back reference to a handle that does not exist (the first "q 00 7e 00 02" in the index).
  bad = i;
  size_t ref = bad.find(std::string("q\x00~\x00\x02", 5), index_at);
  ASSERT_NE(ref, std::string::npos);
  bad[ref + 3] = 0x7f;
  EXPECT_STATUS(ParseIFileLogs(bad), kInvalidArgument, HasSubstr("unknown handle"));
  // A startIndex beyond the log bytes.
  Result<AggregatedLogFile> good = ParseIFileLogs(i);
  ASSERT_OK(good);
  bad = i;
  size_t stderr_meta = bad.find(std::string("\x00\x00\x00\x00\x00\x00\x31\x39", 8), index_at);  // startIndex 0x3139
  ASSERT_NE(stderr_meta, std::string::npos);
  bad[stderr_meta + 4] = 0x7f;
  EXPECT_STATUS(ParseIFileLogs(bad), kInvalidArgument, HasSubstr("lies outside"));
  // A compressed index says so.
  bad = i;
  size_t none = bad.find(std::string("t\x00\x04none", 7), index_at);
  ASSERT_NE(none, std::string::npos);
  bad.replace(none + 3, 4, "gzzz");
  EXPECT_STATUS(ParseIFileLogs(bad), kUnimplemented, HasSubstr("gzzz"));
}

// Random byte flips anywhere: any outcome but a crash (run under ASan in the fuzz build).
TEST(AggregatedLogFile, CorruptionNeverCrashes) {
  std::mt19937 rng(20261122);
  int errors = 0;
  for (const char* name : {"tfile-localhost_45454.bin", "ifile-localhost_45454.bin"}) {
    std::string bytes = Capture(name);
    for (int round = 0; round < 600; ++round) {
      std::string bad = bytes;
      int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) {
        // Mostly in the structure (the tail), sometimes anywhere.
        size_t at = rng() % 3 == 0 ? rng() % bad.size() : bad.size() - 1 - rng() % std::min<size_t>(bad.size(), 2300);
        bad[at] = static_cast<char>(rng());
      }
      Result<AggregatedLogFile> r = ParseAggregatedLogFile(bad);
      if (!r.ok()) ++errors;
    }
  }
  EXPECT_GT(errors, 0);
}

TEST(JavaObjectStream, RejectsDeepNesting) {
  // An Object[] holding an Object[] holding ... far deeper than kMaxDepth.
  std::string s("\xAC\xED\x00\x05", 4);
  std::string array_desc = std::string("\x75\x72\x00\x13[Ljava.lang.Object;", 23) + std::string(8, '\x01') +
                           std::string("\x02\x00\x00\x78\x70", 5) + std::string("\x00\x00\x00\x01", 4);
  s += array_desc;
  for (int i = 0; i < 200; ++i) s += std::string("\x75\x71\x00\x7e\x00\x00\x00\x00\x00\x01", 10);
  EXPECT_STATUS(JavaObjectStream::Parse(s), kInvalidArgument, HasSubstr("nested too deeply"));
}

// ---- where aggregated logs are -------------------------------------------------------------------

TEST(AggregatedLogDirs, BucketedThenOlderLayouts) {
  Result<std::vector<std::string>> dirs = AggregatedLogDirs(RecordedLogsConf(), "root", "application_1795374029814_0002");
  ASSERT_OK(dirs);
  EXPECT_THAT(*dirs, ElementsAre("/tmp/logs/root/bucket-logs-tfile/0002/application_1795374029814_0002",
                                 "/tmp/logs/root/logs-tfile/application_1795374029814_0002",
                                 "/tmp/logs/root/bucket-logs-ifile/0002/application_1795374029814_0002",
                                 "/tmp/logs/root/logs-ifile/application_1795374029814_0002",
                                 "/tmp/logs/root/logs/application_1795374029814_0002"));
  // The recorded paths (README §14): the bucket is the sequence number modulo 10000.
  HadoopConf c = RecordedLogsConf();
  c.log_aggregation_file_formats = {"IFile"};
  c.remote_app_log_dir = "hdfs://127.0.0.1:9000/app-logs/";
  c.log_aggregation_format_dirs["TFile"] = "/other";
  c.log_aggregation_format_suffixes["TFile"] = "tf";
  dirs = AggregatedLogDirs(c, "alice", "application_1795374306301_123456");
  ASSERT_OK(dirs);
  EXPECT_THAT(*dirs, ElementsAre("/app-logs/alice/bucket-logs-ifile/3456/application_1795374306301_123456",
                                 "/app-logs/alice/logs-ifile/application_1795374306301_123456",
                                 "/other/alice/bucket-tf/3456/application_1795374306301_123456",
                                 "/other/alice/tf/application_1795374306301_123456",
                                 "/app-logs/alice/logs/application_1795374306301_123456"));
  EXPECT_STATUS(AggregatedLogDirs(RecordedLogsConf(), "root", "app_1"), kInvalidArgument, HasSubstr("not an application id"));
  c = RecordedLogsConf();
  c.remote_app_log_dir = "s3a://bucket/logs";
  EXPECT_STATUS(AggregatedLogDirs(c, "root", "application_1_1"), kInvalidArgument, HasSubstr("not on fs.defaultFS"));
  EXPECT_EQ(NodeFileName("localhost:45454"), "localhost_45454");
}

TEST(HadoopConfLogs, DefaultsAndSiteValues) {
  std::string dir = ::testing::TempDir() + "/logs-conf-" + std::to_string(::getpid());
  ASSERT_OK(MakeDirs(dir));
  ASSERT_OK(WriteFileAtomic(dir + "/core-site.xml",
                            "<configuration><property><name>fs.defaultFS</name><value>hdfs://nn:9000</value></property>"
                            "</configuration>"));
  Result<HadoopConf> conf = HadoopConf::Load(dir);
  ASSERT_OK(conf);
  EXPECT_FALSE(conf->log_aggregation_enable);
  EXPECT_EQ(conf->remote_app_log_dir, "/tmp/logs");
  EXPECT_EQ(conf->remote_app_log_dir_suffix, "logs");
  EXPECT_THAT(conf->log_aggregation_file_formats, ElementsAre("TFile"));
  EXPECT_EQ(conf->nm_webapp.ToString(), "0.0.0.0:8042");
  // The recorded log-aggregation run's settings (README §14), plus per-format overrides.
  ASSERT_OK(WriteFileAtomic(
      dir + "/yarn-site.xml",
      "<configuration>"
      "<property><name>yarn.log-aggregation-enable</name><value>TRUE</value></property>"
      "<property><name>yarn.nodemanager.remote-app-log-dir</name><value>/var/logs</value></property>"
      "<property><name>yarn.nodemanager.remote-app-log-dir-suffix</name><value>agg</value></property>"
      "<property><name>yarn.log-aggregation.file-formats</name><value>IFile, TFile</value></property>"
      "<property><name>yarn.log-aggregation.IFile.remote-app-log-dir</name><value>/ifiles</value></property>"
      "<property><name>yarn.log-aggregation.IFile.remote-app-log-dir-suffix</name><value>x</value></property>"
      "<property><name>yarn.nodemanager.hostname</name><value>nm1</value></property>"
      "</configuration>"));
  conf = HadoopConf::Load(dir);
  ASSERT_OK(conf);
  EXPECT_TRUE(conf->log_aggregation_enable);
  EXPECT_EQ(conf->remote_app_log_dir, "/var/logs");
  EXPECT_EQ(conf->remote_app_log_dir_suffix, "agg");
  EXPECT_THAT(conf->log_aggregation_file_formats, ElementsAre("IFile", "TFile"));
  EXPECT_EQ(conf->log_aggregation_format_dirs.at("IFile"), "/ifiles");
  EXPECT_EQ(conf->log_aggregation_format_suffixes.at("IFile"), "x");
  EXPECT_EQ(conf->log_aggregation_format_dirs.count("TFile"), 0u);
  EXPECT_EQ(conf->nm_webapp.ToString(), "nm1:8042");
  ASSERT_OK(RemoveTree(dir));
}

}  // namespace
}  // namespace loom::hadoop
