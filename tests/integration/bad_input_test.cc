// Bad input exits 2 with a message naming the problem, and starts nothing: no job directory,
// no process.

#include <fstream>

#include <gmock/gmock.h>

#include "refused_submit.h"

namespace loom::testing {
namespace {

class BadInputTest : public RefusedSubmitTest {
 protected:
  // A TonY configuration file holding `properties` (name, value), in the home; its path.
  std::string TonyXml(const std::vector<std::pair<std::string, std::string>>& properties) {
    std::string conf = loom_.home() + "/tony.xml";
    std::ofstream out(conf);
    out << "<configuration>";
    for (const auto& [name, value] : properties) {
      out << "<property><name>" << name << "</name><value>" << value << "</value></property>";
    }
    out << "</configuration>";
    return conf;
  }
};

TEST_F(BadInputTest, MissingScript) {
  RunResult r = loom_.Run({"submit", "--src_dir", src_, "--executes", "nope.py", "--conf", "loom.worker.instances=1"});
  ExpectNothingStarted(r);
  EXPECT_THAT(r.err, HasSubstr("--executes: nope.py does not exist"));
}

// A value naming the src dir itself (or a directory) names no script to run.
TEST_F(BadInputTest, ExecutesNamingNoScript) {
  for (const std::string& value : {std::string("./"), src_ + "/"}) {
    RunResult r = loom_.Run({"submit", "--src_dir", src_, "--executes", value, "--conf", "loom.worker.instances=1"});
    ExpectNothingStarted(r);
    EXPECT_THAT(r.err, HasSubstr("--executes " + value + ": names no script"));
  }
}

// How --executes runs is decided by `loom submit` and recorded for the AM; the user cannot set it.
TEST_F(BadInputTest, RecordedExecutesDecisionIsNotTheUsers) {
  ExpectRefused({"--conf", "loom.worker.instances=1", "--conf", "loom.internal.executes-as=program"},
                {"loom.internal.executes-as (from --conf): Loom sets this key itself"});
}

TEST_F(BadInputTest, NegativeInstances) {
  ExpectRefused({"--conf", "tony.worker.instances=-2"}, {"tony.worker.instances='-2': expected an integer >= 0"});
}

TEST_F(BadInputTest, MalformedMemory) {
  ExpectRefused({"--conf", "loom.worker.instances=1", "--conf", "loom.worker.memory=4x"},
                {"loom.worker.memory='4x': expected a memory size"});
}

TEST_F(BadInputTest, UnknownKeyInConfFileGetsSuggestion) {
  std::string conf = TonyXml({{"tony.worker.instances", "2"}, {"tony.worker.memroy", "2g"}});
  RunResult r = Submit({"-conf_file", conf});  // TonY's single-dash spelling
  ExpectNothingStarted(r);
  EXPECT_THAT(r.err, HasSubstr("unknown key tony.worker.memroy (from " + conf + "); did you mean tony.worker.memory?"));
}

TEST_F(BadInputTest, MoreGpusThanTheHostHas) {
  ExpectRefused({"--conf", "loom.worker.instances=2", "--conf", "loom.worker.gpus=1", "--conf", "loom.local.gpus=1"},
                {"the job needs 2 GPUs in total but this host has 1"});
}

TEST_F(BadInputTest, MalformedXml) {
  std::string conf = loom_.home() + "/broken.xml";
  std::ofstream(conf) << "<configuration><property><name>x</name>";
  ExpectRefused({"--conf_file", conf}, {"malformed XML"});
  // Placed where an editor shows it, not at a byte offset: line 3's closing tag is misspelt.
  std::ofstream(conf, std::ios::trunc) << "<?xml version=\"1.0\"?>\n<configuration>\n"
                                          "  <property><name>tony.worker.instances</name><value>1</value></propertyy>\n"
                                          "</configuration>\n";
  RunResult placed = Submit({"--conf_file", conf});
  ExpectNothingStarted(placed);
  EXPECT_THAT(placed.err, HasSubstr("config file " + conf + ": malformed XML at line 3, column "));
  EXPECT_THAT(placed.err, Not(HasSubstr("offset")));
}

TEST_F(BadInputTest, UnknownFlagAndBackend) {
  ExpectNothingStarted(Submit({"--conf", "loom.worker.instances=1", "--executez", "x"}));
  ExpectRefused({"--conf", "loom.worker.instances=1", "--cluster", "mesos"}, {"--cluster"});
}

TEST_F(BadInputTest, MisspeltTaskType) {
  RunResult r = Submit({"--conf", "tony.worker.instances=1", "--conf", "tony.workr.instances=1"});
  ExpectNothingStarted(r);
  EXPECT_THAT(r.err, HasSubstr("unknown task type 'workr' (tony.workr.instances); did you mean worker?"));
  EXPECT_THAT(r.err, HasSubstr("declare it with tony.application.custom-types=workr"));
}

TEST_F(BadInputTest, KerberosLoginKeysOnTheLocalBackendAreRefused) {
  ExpectRefused({"--conf", "tony.worker.instances=1", "--conf", "tony.keytab.location=/etc/alice.keytab"},
                {"tony.keytab.location=/etc/alice.keytab: a Kerberos login is for --cluster yarn"});
  ExpectRefused({"--conf", "loom.worker.instances=1", "--conf", "loom.kerberos.principal=alice@EXAMPLE.COM"},
                {"loom.kerberos.principal=alice@EXAMPLE.COM: a Kerberos login"});
}

TEST_F(BadInputTest, FlagsAndKeysWithNothingToDoAreRefused) {
  // TonY's --hdfs_classpath feeds a JVM classpath; Loom has no JVM to give it to.
  ExpectRefused({"--conf", "tony.worker.instances=1", "--hdfs_classpath", "hdfs:///jars"},
                {"--hdfs_classpath hdfs:///jars: TonY puts these HDFS jars on its JVMs' classpath"});
  ExpectRefused({"--conf", "tony.worker.instances=1", "--conf", "tony.application.mapred-conf-path=/etc/mapred-site.xml"},
                {"tony.application.mapred-conf-path=/etc/mapred-site.xml (from --conf): Loom runs no MapReduce"});
}

TEST_F(BadInputTest, UnusableResourceLedgerIsFoundAtSubmit) {
  // A ledger directory that cannot exist (its parent is a file): the AM could never book the
  // job's share, so nothing is started.
  std::ofstream(loom_.home() + "/not-a-dir") << "x";
  RunResult r = loom_.Run({"submit", "--src_dir", src_, "--executes", "train.py", "--python_binary_path",
                           "/usr/bin/python3", "--conf", "tony.worker.instances=1"},
                          {{"LOOM_LEDGER_DIR", loom_.home() + "/not-a-dir/ledger"}});
  ExpectNothingStarted(r);
  EXPECT_THAT(r.err, HasSubstr("the resource ledger " + loom_.home() + "/not-a-dir/ledger cannot be used"));
  EXPECT_THAT(r.err, HasSubstr("set LOOM_LEDGER_DIR"));
}

TEST_F(BadInputTest, PlacementConstraintsAreRefused) {
  std::string conf = TonyXml({{"tony.worker.instances", "2"}, {"tony.worker.placement-spec", "worker,notin,node,worker"}});
  ExpectRefused({"--conf_file", conf}, {"tony.worker.placement-spec=worker,notin,node,worker (from " + conf +
                                        "): YARN placement constraints are not supported yet"});
}

TEST_F(BadInputTest, MxnetWithoutSchedulerNamesTheUsersKeys) {
  ExpectRefused({"--conf", "tony.application.framework=mxnet", "--conf", "tony.worker.instances=2", "--conf",
                 "tony.server.instances=1"},
                {"tony.application.framework=mxnet needs tony.scheduler.instances=1"});
}

TEST_F(BadInputTest, FailOnWorkerFailureContradictingTheSuccessPolicy) {
  ExpectRefused({"--conf", "tony.worker.instances=2", "--conf", "tony.application.fail-on-worker-failure-enabled=true",
                 "--conf", "loom.application.success-policy=any"},
                {"tony.application.fail-on-worker-failure-enabled=true contradicts "
                 "loom.application.success-policy=any"});
}

TEST_F(BadInputTest, DockerImageWithDockerOff) {
  ExpectRefused({"--conf", "tony.worker.instances=1", "--conf", "tony.docker.containers.image=python:3.11"},
                {"tony.docker.containers.image=python:3.11 asks for Docker, but tony.docker.enabled "
                 "is false: set tony.docker.enabled=true"});
}

TEST_F(BadInputTest, StageNamingATypeTheJobLacks) {
  ExpectRefused({"--conf", "tony.worker.instances=1", "--conf", "tony.application.prepare-stage=loader"},
                {"tony.application.prepare-stage: task type 'loader' is not a type of the job"});
}

TEST_F(BadInputTest, UnknownJobForStatusLogsKill) {
  for (const char* cmd : {"status", "logs", "kill"}) {
    RunResult r = loom_.Run({cmd, "job_nonexistent"});
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_THAT(r.err, HasSubstr("no job job_nonexistent"));
  }
}

}  // namespace
}  // namespace loom::testing
