// NameNodeClient against the recorded `hdfs fetchdt` of the Kerberized cluster (kerberos/rpc/02,
// the decrypted plaintext of its WRAP frames): the call it sends is the Java client's, byte for
// byte, and the recorded answer becomes the token DFSClient would store. Then HA (a standby
// first), renew/cancel, and how a file system's NameNodes and token service are found.

#include "hadoop/ipc/namenode_client.h"

#include <map>
#include <string>

#include "core/files.h"
#include "core/testing.h"
#include "hadoop/ipc/rm_failover.h"
#include "hadoop/proto/hadoop_rpc.pb.h"
#include "hadoop/testing/captures.h"
#include "hadoop/testing/fake_ipc_server.h"
#include "hadoop/testing/replay_server.h"
#include "hadoop/wire/ipc_frame.h"

namespace loom::hadoop {
namespace {

using ::testing::HasSubstr;
using testing::Capture;
using testing::FakeCall;
using testing::FakeIpcServer;
using testing::FakeReply;
using testing::ReplayServer;
using testing::ReplaySteps;
namespace hc = ::hadoop::common;

const std::string kFetchdt = "kerberos/rpc/02-client-nn-19000-fetchdt.plain";

Capture LoadFetchdt() {
  Result<Capture> c = testing::LoadCapture(testing::CaptureDir(), kFetchdt);
  EXPECT_OK(c);
  return c.ok() ? *c : Capture{};
}

// The recorded GetDelegationTokenResponseProto body (the last message of the reply frame).
std::string RecordedResponseBody(const Capture& cap) { return cap.s2c.at(0).messages.back(); }

HdfsFileSystem Single(int port, std::string service) {
  return HdfsFileSystem{"hdfs://127.0.0.1:" + std::to_string(port), {{"127.0.0.1", port}}, std::move(service)};
}

TEST(NameNodeClient, GetDelegationTokenSendsTheRecordedCallAndParsesTheRecordedToken) {
  Capture cap = LoadFetchdt();
  ASSERT_EQ(cap.c2s.size(), 2u);  // the connection context, then getDelegationToken (callId 0)
  RpcRequestHeaderProto header;
  ASSERT_TRUE(header.ParseFromString(cap.c2s[1].messages[0]));
  // Inside the GSSAPI layer the frames are the ones a SIMPLE connection sends after its
  // preamble (the context names the same full principal), so with the recorded client id and
  // call id pinned, the whole stream must equal the recording.
  std::vector<testing::ReplayStep> steps = {{Preamble(AuthProtocol::kNone), ""}};
  for (auto& s : ReplaySteps(cap)) steps.push_back(s);
  ReplayServer server(steps);
  IpcOptions o;
  o.user = "root@LOOM.TEST";
  o.client_id_for_test = header.clientid();
  SetNextCallIdForTest(0);
  NameNodeClient nn(Single(server.port(), "127.0.0.1:19000"), o);
  Result<Token> token = nn.GetDelegationToken("rm/localhost@LOOM.TEST");
  ASSERT_OK(token);
  EXPECT_OK(server.Wait());

  hc::GetDelegationTokenResponseProto recorded;
  ASSERT_TRUE(recorded.ParseFromString(RecordedResponseBody(cap)));
  EXPECT_EQ(recorded.token().service(), "");  // K5.5: the client sets it
  EXPECT_EQ(token->identifier, recorded.token().identifier());
  EXPECT_EQ(token->password, recorded.token().password());
  EXPECT_EQ(token->kind, kHdfsDelegationKind);
  EXPECT_EQ(token->service, "127.0.0.1:19000");
  Result<DelegationTokenIdentifier> id = ParseDelegationTokenIdentifier(token->identifier);
  ASSERT_OK(id);
  EXPECT_EQ(id->owner, "root@LOOM.TEST");
  EXPECT_EQ(id->renewer, "rm");  // the renewer's short name
}

TEST(NameNodeClient, RequestBodyIsTheRecordedOne) {
  Capture cap = LoadFetchdt();
  FakeIpcServer server({}, [&](const FakeCall& call) {
    EXPECT_EQ(call.method, "getDelegationToken");
    EXPECT_EQ(call.request, cap.c2s.at(1).messages.back());  // GetDelegationTokenRequestProto
    FakeReply r;
    r.body = RecordedResponseBody(cap);
    return r;
  });
  IpcOptions o;
  o.user = "root";
  NameNodeClient nn(Single(server.port(), "127.0.0.1:19000"), o);
  EXPECT_OK(nn.GetDelegationToken("rm/localhost@LOOM.TEST"));
}

TEST(NameNodeClient, HaSkipsTheStandbyAndNamesTheLogicalService) {
  Capture cap = LoadFetchdt();
  FakeIpcServer standby({}, [](const FakeCall&) {
    return FakeReply::Error(kStandbyException, "Operation category WRITE is not supported in state standby");
  });
  FakeIpcServer active({}, [&](const FakeCall&) {
    FakeReply r;
    r.body = RecordedResponseBody(cap);
    return r;
  });
  SiteProperties site = {{"dfs.nameservices", "ns1"},
                         {"dfs.ha.namenodes.ns1", "nn1, nn2"},
                         {"dfs.namenode.rpc-address.ns1.nn1", "127.0.0.1:" + std::to_string(standby.port())},
                         {"dfs.namenode.rpc-address.ns1.nn2", "127.0.0.1:" + std::to_string(active.port())}};
  Result<HdfsFileSystem> fs = ResolveHdfsFileSystem("hdfs://ns1/user/root", site);
  ASSERT_OK(fs);
  EXPECT_EQ(fs->token_service, "ha-hdfs:ns1");
  ASSERT_EQ(fs->namenodes.size(), 2u);
  IpcOptions o;
  o.user = "root";
  NameNodeClient nn(*fs, o);
  Result<Token> token = nn.GetDelegationToken("rm/localhost@LOOM.TEST");
  ASSERT_OK(token);
  EXPECT_EQ(token->service, "ha-hdfs:ns1");
  EXPECT_EQ(standby.connections(), 1);
  EXPECT_EQ(active.connections(), 1);
}

TEST(NameNodeClient, RefusalNamesTheFileSystemAndTheNameNodesWords) {
  FakeIpcServer server({}, [](const FakeCall&) {
    return FakeReply::Error("java.io.IOException",
                            "Delegation Token can be issued only with kerberos or web authentication");
  });
  IpcOptions o;
  o.user = "root";
  NameNodeClient nn(Single(server.port(), "127.0.0.1:19000"), o);
  Result<Token> token = nn.GetDelegationToken("rm/localhost@LOOM.TEST");
  ASSERT_FALSE(token.ok());
  EXPECT_THAT(token.status().message(), HasSubstr("hdfs://127.0.0.1:"));
  EXPECT_THAT(token.status().message(), HasSubstr("can be issued only with kerberos"));
}

TEST(NameNodeClient, RenewAndCancelSendTheToken) {
  Token t{"id-bytes", "pw", kHdfsDelegationKind, "127.0.0.1:19000"};
  std::vector<std::string> methods;
  FakeIpcServer server({}, [&](const FakeCall& call) {
    methods.push_back(call.method);
    if (call.method == "renewDelegationToken") {
      hc::RenewDelegationTokenRequestProto req;
      EXPECT_TRUE(req.ParseFromString(call.request));
      EXPECT_EQ(req.token().identifier(), "id-bytes");
      EXPECT_EQ(req.token().service(), "127.0.0.1:19000");
      hc::RenewDelegationTokenResponseProto resp;
      resp.set_newexpirytime(1795460000000);
      return FakeReply::Ok(resp);
    }
    hc::CancelDelegationTokenRequestProto req;
    EXPECT_TRUE(req.ParseFromString(call.request));
    EXPECT_EQ(req.token().password(), "pw");
    return FakeReply::Ok(hc::CancelDelegationTokenResponseProto());
  });
  IpcOptions o;
  o.user = "rm";
  NameNodeClient nn(Single(server.port(), t.service), o);
  Result<int64_t> expiry = nn.RenewDelegationToken(t);
  ASSERT_OK(expiry);
  EXPECT_EQ(*expiry, 1795460000000);
  EXPECT_OK(nn.CancelDelegationToken(t));
  EXPECT_EQ(methods, (std::vector<std::string>{"renewDelegationToken", "cancelDelegationToken"}));
}

TEST(ResolveHdfsFileSystem, HostAndPortBecomeTheResolvedAddress) {
  Result<HdfsFileSystem> fs = ResolveHdfsFileSystem("hdfs://localhost:19000", {});
  ASSERT_OK(fs);
  EXPECT_EQ(fs->token_service, "127.0.0.1:19000");
  ASSERT_EQ(fs->namenodes.size(), 1u);
  EXPECT_EQ(fs->namenodes[0].ToString(), "localhost:19000");
  fs = ResolveHdfsFileSystem("hdfs://127.0.0.1/data", {});
  ASSERT_OK(fs);
  EXPECT_EQ(fs->token_service, "127.0.0.1:8020");
  fs = ResolveHdfsFileSystem("hdfs://LocalHost:19000", {{"hadoop.security.token.service.use_ip", "false"}});
  ASSERT_OK(fs);
  EXPECT_EQ(fs->token_service, "localhost:19000");
}

TEST(ResolveHdfsFileSystem, RefusesOtherSchemesAndIncompleteHa) {
  EXPECT_THAT(ResolveHdfsFileSystem("s3a://bucket/x", {}).status().message(), HasSubstr("not an hdfs:// URI"));
  EXPECT_THAT(ResolveHdfsFileSystem("hdfs://", {}).status().message(), HasSubstr("not an hdfs:// URI"));
  SiteProperties site = {{"dfs.nameservices", "ns1"}, {"dfs.ha.namenodes.ns1", "nn1,nn2"},
                         {"dfs.namenode.rpc-address.ns1.nn1", "nn1.example:8020"}};
  EXPECT_THAT(ResolveHdfsFileSystem("hdfs://ns1", site).status().message(),
              HasSubstr("dfs.namenode.rpc-address.ns1.nn2 is not set"));
}

TEST(RenewerPrincipal, ExpandsHostAsMasterGetMasterPrincipal) {
  EXPECT_EQ(RenewerPrincipal("rm/localhost@LOOM.TEST", "127.0.0.1"), "rm/localhost@LOOM.TEST");
  EXPECT_EQ(RenewerPrincipal("rm/_HOST@LOOM.TEST", "127.0.0.1"), "rm/localhost@LOOM.TEST");
  EXPECT_EQ(RenewerPrincipal("rm/_HOST@LOOM.TEST", "RM1.Example.COM"), "rm/rm1.example.com@LOOM.TEST");
}

// `dir` under the test's temp dir, holding `files` (file name, XML).
std::string SiteDir(const std::string& dir, const std::map<std::string, std::string>& files) {
  std::string path = ::testing::TempDir() + "/" + dir;
  EXPECT_OK(MakeDirs(path));
  for (const auto& [file, xml] : files) EXPECT_OK(WriteFileAtomic(path + "/" + file, xml));
  return path;
}

std::string Configuration(const std::string& properties) { return "<configuration>" + properties + "</configuration>"; }

std::string Property(const std::string& name, const std::string& value) {
  return "<property><name>" + name + "</name><value>" + value + "</value></property>";
}

TEST(LoadHdfsSiteProperties, ExtraHdfsSiteWins) {
  std::string dir = SiteDir("nn_site", {{"hdfs-site.xml", Configuration(Property("dfs.nameservices", "a"))},
                                        {"extra.xml", Configuration(Property("dfs.nameservices", "b"))}});
  Result<SiteProperties> site = LoadHdfsSiteProperties(dir, dir + "/extra.xml");
  ASSERT_OK(site);
  EXPECT_EQ(site->at("dfs.nameservices"), "b");
}

// The token path reads hdfs-site.xml as HadoopConf does: ${var} expanded, a property without
// <value> skipped (before, it went through Loom's job config, which did neither).
TEST(LoadHdfsSiteProperties, ExpandsAsHadoopConfDoes) {
  std::string dir = SiteDir(
      "nn_site_expand",
      {{"core-site.xml", Configuration(Property("my.ns", "prod"))},
       {"hdfs-site.xml", Configuration(Property("dfs.nameservices", "${my.ns}") +
                                       "<property><name>dfs.ha.namenodes.prod</name></property>")}});
  Result<SiteProperties> site = LoadHdfsSiteProperties(dir);
  ASSERT_OK(site);
  EXPECT_EQ(site->at("dfs.nameservices"), "prod");
  EXPECT_EQ(site->count("dfs.ha.namenodes.prod"), 0u);
  EXPECT_EQ(site->count("fs.defaultFS"), 0u);  // Hadoop's defaults expand values but are not listed
}

}  // namespace
}  // namespace loom::hadoop
