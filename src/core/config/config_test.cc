#include "core/config/config.h"

#include "core/config/key_registry.h"
#include "core/files.h"
#include "core/testing.h"

namespace loom::config {
namespace {

using ::testing::HasSubstr;

constexpr char kTonyXml[] = R"(<?xml version="1.0"?>
<configuration>
  <property><name>tony.worker.instances</name><value>2</value></property>
  <property><name>tony.worker.memory</name><value>4g</value></property>
  <property><name>tony.application.framework</name><value>pytorch</value></property>
</configuration>)";

TEST(Config, TonyKeysAreStoredUnderLoomNames) {
  Config c;
  ASSERT_OK(c.MergeXmlString(kTonyXml, "tony.xml"));
  EXPECT_EQ(c.Get("loom.worker.instances"), "2");
  EXPECT_EQ(c.Get("tony.worker.instances"), "2");  // either name reads the same entry
  EXPECT_EQ(c.Entry("loom.worker.memory")->original_key, "tony.worker.memory");
  EXPECT_EQ(c.Entry("loom.worker.memory")->source, "tony.xml");
}

TEST(Config, LayersOverrideInOrder) {
  Config c;
  ASSERT_OK(c.MergeXmlString(kTonyXml, "file"));
  c.Set("loom.worker.instances", "3", "--conf");  // loom name overrides the tony alias
  EXPECT_EQ(c.Get("tony.worker.instances"), "3");
  EXPECT_EQ(GetString(c, "loom.worker.vcores"), "1");  // default when unset
  EXPECT_EQ(GetMemoryMib(c, "loom.worker.memory"), 4096);
  EXPECT_EQ(GetMemoryMib(c, "loom.ps.memory"), 2048);  // per-type default, as tony-default.xml
}

// Hadoop's Configuration skips a property without <value> (tony-default.xml's
// tony.other.namenodes): the key stays as the layers below left it.
TEST(Config, PropertyWithoutValueLeavesTheKeyUnset) {
  Config c;
  c.Set("tony.application.node-label", "gpu", "--conf_file");
  ASSERT_OK(c.MergeXmlString("<configuration>"
                             "<property><description>d</description><name>tony.other.namenodes</name></property>"
                             "<property><name>tony.application.node-label</name></property>"
                             "<property><name>tony.application.tags</name><value></value></property>"
                             "</configuration>",
                             "tony-default.xml"));
  EXPECT_FALSE(c.Has("loom.other.namenodes"));
  EXPECT_EQ(c.Get("loom.application.node-label"), "gpu");
  EXPECT_EQ(c.Get("loom.application.tags"), "");  // an empty <value> sets the key, empty
}

TEST(Config, MalformedXmlNamesTheSource) {
  Config c;
  EXPECT_STATUS(c.MergeXmlString("<configuration><property>", "bad.xml"), kInvalidArgument,
                HasSubstr("bad.xml: malformed XML"));
  EXPECT_STATUS(c.MergeXmlString("<conf/>", "x.xml"), kInvalidArgument, HasSubstr("no <configuration>"));
  EXPECT_STATUS(c.MergeXmlFile("/nonexistent/tony.xml"), kInvalidArgument, HasSubstr("does not exist"));
}

// An editor's place, not pugixml's byte offset: line and column, columns in characters.
TEST(Config, MalformedXmlIsPlacedByLineAndColumn) {
  Config c;
  const std::string bad = "<?xml version=\"1.0\"?>\n<configuration>\n  <property><name>a</name><value>1</value>\n"
                          "  </propertyx>\n</configuration>\n";
  Status s = c.MergeXmlString(bad, "tony.xml");
  EXPECT_STATUS(s, kInvalidArgument, HasSubstr("tony.xml: malformed XML at line 4, column 5: "));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("offset")));
  EXPECT_EQ(XmlErrorPlace("ab\ncd", 0), "line 1, column 1");
  EXPECT_EQ(XmlErrorPlace("ab\ncd", 4), "line 2, column 2");
  EXPECT_EQ(XmlErrorPlace("\xc3\xa9t\xc3\xa9<", 5), "line 1, column 4");  // "été<": 3 characters before '<'
  EXPECT_EQ(XmlErrorPlace("ab", 99), "line 1, column 3");  // past the end: where the text ends
  // A file: the same place, from the file's own bytes.
  std::string path = ::testing::TempDir() + "/malformed_tony.xml";
  ASSERT_OK(WriteFileAtomic(path, bad));
  EXPECT_STATUS(c.MergeXmlFile(path), kInvalidArgument,
                HasSubstr("config file " + path + ": malformed XML at line 4, column 5: "));
}

TEST(Config, RoundTripsThroughXml) {
  Config c;
  c.Set("loom.worker.instances", "2", "--conf");
  c.Set("loom.execution.envs", "A=1,B=<x&y>", "--shell_env");
  Config back;
  ASSERT_OK(back.MergeXmlString(c.ToXml(), "final", /*recorded_sources=*/true));
  EXPECT_EQ(back.Get("loom.execution.envs"), "A=1,B=<x&y>");
  EXPECT_EQ(back.Get("loom.worker.instances"), "2");
}

// One key refused: an unknown one with a suggestion, a bad value with its key and what it should be.
TEST(Validate, ABadKeyIsNamedWithWhatIsWrong) {
  struct Case {
    const char* key;
    const char* value;
    const char* source;
    const char* says;
  };
  const Case cases[] = {
      {"tony.worker.instnaces", "2", "--conf",
       "unknown key tony.worker.instnaces (from --conf); did you mean tony.worker.instances?"},
      {"loom.application.timout", "10", "f.xml", "did you mean loom.application.timeout?"},
      {"loom.worker.memory", "4x", "--conf", "loom.worker.memory='4x': expected a memory size"},
      {"loom.worker.instances", "-1", "--conf", "loom.worker.instances='-1': expected an integer >= 0"},
      {"loom.application.framework", "caffe", "--conf", "expected one of tensorflow, pytorch"},
      {"loom.task.port-range", "30000-20000", "--conf", "LOW-HIGH"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.key) + "=" + c.value);
    Config conf;
    conf.Set(c.key, c.value, c.source);
    EXPECT_STATUS(Validate(conf), kInvalidArgument, HasSubstr(c.says));
  }
}

TEST(Validate, ReportsEveryProblemAtOnce) {
  Config c;
  c.Set("loom.worker.memory", "4x", "--conf");
  c.Set("loom.worker.vcores", "0", "--conf");
  Status s = Validate(c);
  EXPECT_THAT(s.message(), HasSubstr("memory"));
  EXPECT_THAT(s.message(), HasSubstr("vcores"));
}

TEST(Validate, AcceptsEveryTonyDefaultKey) {
  // The 65 keys of TonY's tony-default.xml (tony-core @7ceaaca), spelled as TonY spells them.
  const char* keys[] = {
      "tony.yarn.queue", "tony.application.name", "tony.application.type", "tony.application.tags",
      "tony.application.node-label", "tony.application.enable-preprocess", "tony.application.timeout",
      "tony.application.framework", "tony.application.num-client-rm-connect-retries",
      "tony.application.distributed-mode", "tony.application.untracked.jobtypes",
      "tony.application.sidecar.jobtypes", "tony.application.stop-on-failure-jobtypes",
      "tony.application.fail-on-worker-failure-enabled", "tony.application.security.enabled",
      "tony.application.hdfs-conf-path", "tony.application.yarn-conf-path", "tony.application.mapred-conf-path",
      "tony.other.namenodes", "tony.am.startup-timeout", "tony.am.retry-count", "tony.am.memory",
      "tony.am.vcores", "tony.am.gpus", "tony.am.wait-client-signal-stop-timeout-sec",
      "tony.task.max-total-instances", "tony.task.max-total-gpus", "tony.task.am.jvm.opts",
      "tony.task.executor.jvm.opts", "tony.task.heartbeat-interval-ms", "tony.task.max-missed-heartbeats",
      "tony.task.metrics-interval-ms", "tony.task.gpu-metrics.enabled", "tony.task.executor.execution-timeout-ms",
      "tony.task.executor.registry-timeout-sec", "tony.task.executor.execution.error-message-max-depth",
      "tony.container.allocation.timeout", "tony.container.registration.timeout", "tony.ps.memory",
      "tony.ps.vcores", "tony.worker.memory", "tony.worker.vcores", "tony.worker.gpus", "tony.docker.enabled",
      "tony.history.location", "tony.history.intermediate", "tony.history.finished",
      "tony.history.mover-interval-ms", "tony.history.retention-sec", "tony.history.purger-interval-ms",
      "tony.history.finished-dir-timezone", "tony.portal.url", "tony.portal.cache.max-entries",
      "tony.keytab.user", "tony.keytab.location", "tony.https.port", "tony.https.keystore.path",
      "tony.https.keystore.type", "tony.https.keystore.password", "tony.https.keystore.algorithm",
      "tony.http.port", "tony.secret.key", "tony.horovod.mode.test", "tony.horovod.mode.test.fast.fail",
      "tony.horovod.driver.mode.debug",
      // Keys in TonyConfigurationKeys but not in the XML.
      "tony.evaluator.instances", "tony.worker.command", "tony.worker.resources", "tony.worker.node-label",
      "tony.worker.max-instances", "tony.worker.placement-spec", "tony.worker.allocation-tags",
      "tony.docker.worker.image", "tony.containers.command", "tony.containers.resources", "tony.containers.envs",
      "tony.execution.envs", "tony.containers.placement-spec", "tony.containers.allocation-tags",
      "tony.docker.containers.image", "tony.docker.containers.mount", "tony.application.prepare-stage",
      "tony.application.training-stage", "tony.application.group.A",
      "tony.application.dependency.evaluator.timeout.after.A",
      "tony.application.dependency.evaluator.timeout.after.A.ignored", "tony.application.placement-spec",
      "tony.am.node-label", "tony.application.tensorboard-log-dir", "tony.application.hadoop.location",
      "tony.application.hadoop.classpath", "tony.task.default.jvm.opts", "tony.gpu-exec-path",
      "tony.python-exec-path", "tony.version-info.version", "tony.task.max-total-memory"};
  for (const char* k : keys) {
    EXPECT_NE(FindKey(CanonicalKey(k)), nullptr) << k;
  }
}

TEST(Config, FinalConfigKeepsSourcesAndSpelling) {
  Config c;
  c.Set("tony.worker.instances", "2", "--conf");
  c.Set("loom.application.src-dir", "src", "--src_dir");
  Config back;
  ASSERT_OK(back.MergeXmlString(WithDefaults(c).ToXml(), "/jobs/j/config.xml", /*recorded_sources=*/true));
  // What the user set stays theirs, as they spelt it; what Loom filled in stays a default.
  EXPECT_EQ(back.Entry("loom.worker.instances")->original_key, "tony.worker.instances");
  EXPECT_EQ(back.Entry("loom.worker.instances")->source, "--conf");
  EXPECT_TRUE(back.IsExplicit("loom.worker.instances"));
  EXPECT_EQ(back.Entry("loom.worker.memory")->source, "default");
  EXPECT_FALSE(back.IsExplicit("loom.worker.memory"));
  EXPECT_EQ(back.Entry("loom.application.src-dir")->source, "--src_dir");
  // A file without <source> elements is the file's.
  Config plain;
  ASSERT_OK(plain.MergeXmlString(kTonyXml, "tony.xml"));
  EXPECT_EQ(plain.Entry("loom.worker.memory")->source, "tony.xml");
}

TEST(Spelled, KeysAreNamedAsTheUserWritesThem) {
  Config c;
  c.Set("tony.worker.instances", "2", "--conf");
  c.Set("tony.application.framework", "mxnet", "tony.xml");
  c.Set("loom.local.gpus", "1", "--conf");
  c.Set("loom.application.src-dir", "src", "--src_dir");  // flags do not tell the user's prefix
  c.Set("loom.application.python-binary-path", "python3", "--python_binary_path");
  EXPECT_EQ(UserPrefix(c), "tony.");
  EXPECT_EQ(Spelled(c, "loom.worker.instances"), "tony.worker.instances");
  EXPECT_EQ(Spelled(c, "loom.local.gpus"), "loom.local.gpus");          // as written
  EXPECT_EQ(Spelled(c, "loom.scheduler.instances"), "tony.scheduler.instances");  // unset: their prefix
  EXPECT_EQ(Spelled(c, "loom.application.src-dir"), "--src_dir");       // set by a flag
  Config d;
  d.Set("loom.worker.instances", "2", "--conf");
  EXPECT_EQ(Spelled(d, "loom.scheduler.instances"), "loom.scheduler.instances");
  EXPECT_EQ(Spelled(Config(), "loom.scheduler.instances"), "loom.scheduler.instances");
}

TEST(Spelled, RespellTouchesKeysOnly) {
  EXPECT_EQ(Respell("set loom.a.b=1 or loom.<type>.command; $LOOM_HOME/.loom.secret stays", "tony."),
            "set tony.a.b=1 or tony.<type>.command; $LOOM_HOME/.loom.secret stays");
  EXPECT_EQ(Respell("set loom.a.b", "loom."), "set loom.a.b");
}

TEST(Refusal, HarmlessValuesAreTonysOwn) {
  // Kerberos works now: TonY's default (true) and false are both accepted (false is refused
  // later, by the YARN submitter, on a Kerberized cluster).
  const KeyInfo* security = FindKey("loom.application.security.enabled");
  ASSERT_NE(security, nullptr);
  EXPECT_FALSE(security->refused());
  const KeyInfo* jvm = FindKey("loom.task.executor.jvm.opts");
  EXPECT_TRUE(jvm->Harmless("-Xmx1536m"));
  EXPECT_TRUE(jvm->Harmless(""));
  EXPECT_FALSE(jvm->Harmless("-Xmx4g"));
  EXPECT_TRUE(FindKey("loom.worker.placement-spec")->refused());
  EXPECT_FALSE(FindKey("loom.worker.placement-spec")->Harmless("zk=3"));
  EXPECT_TRUE(FindKey("loom.task.max-total-fpgas")->refused());
  EXPECT_FALSE(FindKey("loom.task.max-total-gpus")->refused());
  EXPECT_FALSE(FindKey("loom.application.fail-on-worker-failure-enabled")->refused());
}

TEST(Validate, RefusedKeysNameKeyValueReasonAndWhatToDo) {
  Config c;
  c.Set("tony.application.hadoop.location", "/opt/hadoop", "tony.xml");
  c.Set("tony.keytab.user", "user1", "tony.xml");  // tony-default.xml's own placeholder: harmless
  c.Set("tony.other.namenodes", "hdfs://nn2:8020", "tony.xml");  // a Kerberized YARN job's: the backend decides
  Status s = Validate(c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("tony.application.hadoop.location=/opt/hadoop (from tony.xml): Loom runs no "
                                     "Hadoop Java client"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("other.namenodes")));
  EXPECT_THAT(s.message(), HasSubstr("Remove the key"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("keytab")));
}

TEST(WithDefaults, LeavesOutRefusedAndAliasKeys) {
  Config c;
  c.Set("tony.worker.instances", "2", "--conf");
  Config full = WithDefaults(c);
  EXPECT_FALSE(full.Has("loom.https.port"));        // refused: its default does nothing
  EXPECT_FALSE(full.Has("loom.task.executor.jvm.opts"));
  // Unset, fail-on-worker-failure leaves the success policy to decide.
  EXPECT_FALSE(full.Has("loom.application.fail-on-worker-failure-enabled"));
  EXPECT_EQ(full.Get("loom.application.security.enabled").value_or(""), "true");  // TonY's default
}

TEST(WithDefaults, FillsGlobalAndPerTypeDefaults) {
  Config c;
  c.Set("tony.worker.instances", "2", "--conf");
  Config full = WithDefaults(c);
  EXPECT_EQ(full.Get("loom.worker.memory"), "2g");
  EXPECT_EQ(full.Entry("loom.worker.memory")->source, "default");
  EXPECT_EQ(full.Get("loom.application.untracked.jobtypes"), "ps");
  EXPECT_EQ(full.Entry("loom.worker.instances")->source, "--conf");
}

}  // namespace
TEST(Config, SourcesInAUsersFileAreTheFileItself) {
  // Hadoop's dumped configurations carry <source> values that mean nothing to the user here.
  const char* dumped =
      "<configuration><property><name>tony.worker.instances</name><value>2</value>"
      "<source>programmatically</source></property></configuration>";
  Config user;
  ASSERT_OK(user.MergeXmlString(dumped, "/home/u/tony.xml"));
  EXPECT_EQ(user.Entry("loom.worker.instances")->source, "/home/u/tony.xml");
  Config recorded;
  ASSERT_OK(recorded.MergeXmlString(dumped, "/jobs/j/config.xml", /*recorded_sources=*/true));
  EXPECT_EQ(recorded.Entry("loom.worker.instances")->source, "programmatically");
}

}  // namespace loom::config
