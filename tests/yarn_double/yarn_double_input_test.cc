// The YARN test double given malformed input (it answers with an error and keeps serving, as
// a real RM does) and the Hadoop conf dir it writes for Loom's clients.

#include <string>

#include "core/files.h"
#include "core/strings.h"
#include "core/testing.h"
#include "hadoop/proto/hadoop_rpc.pb.h"
#include "hadoop/proto/yarn.pb.h"
#include "ipc_test_client.h"
#include "yarn_double_test_fixture.h"

namespace loom::yarn_double {
namespace {

using ::hadoop::common::RpcResponseHeaderProto;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST_F(YarnDoubleTest, MalformedInputGetsAnErrorAndTheDoubleKeepsServing) {
  StartDouble(RecordedOptions());
  {
    Socket s(double_->scheduler_port());  // wrong IPC version
    s.Send(std::string("hrpc\x08\x00\xdf", 7));
    std::optional<std::string> f = s.ReadFrame();
    ASSERT_TRUE(f.has_value());
    Reply r = Decode(*f);
    EXPECT_EQ(r.header.status(), RpcResponseHeaderProto::FATAL);
    EXPECT_EQ(r.header.errordetail(), RpcResponseHeaderProto::FATAL_VERSION_MISMATCH);
    EXPECT_TRUE(s.ClosedByServer());
  }
  {
    Socket s(double_->nm_port());  // garbage where SASL should be
    s.Send(std::string("hrpc\x09\x00\xdf", 7) + std::string("\x00\x00\x00\x05hello", 9));
    std::optional<std::string> f = s.ReadFrame();
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(Decode(*f).header.status(), RpcResponseHeaderProto::FATAL);
    EXPECT_TRUE(s.ClosedByServer());
  }
  {
    Socket s(double_->rm_port());  // a frame length over the limit
    s.Send(std::string("hrpc\x09\x00\x00", 7) + std::string("\x7f\xff\xff\xff", 4));
    std::optional<std::string> f = s.ReadFrame();
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(Decode(*f).header.status(), RpcResponseHeaderProto::FATAL);
  }
  {
    Socket s(double_->rm_port());  // not IPC at all
    s.Send("GET / HTTP/1.1\r\n\r\n");
    EXPECT_TRUE(s.ClosedByServer());
  }
  {
    TestIpc rm(double_->rm_port());  // a call whose body does not parse
    rm.Simple("root", kClientProtocol);
    yp::GetClusterMetricsRequestProto empty;
    auto header = hadoop::MakeRequestHeader(0, "0123456789abcdef", 0);
    ::hadoop::common::RequestHeaderProto rh;
    rh.set_methodname("getApplicationReport");
    rh.set_declaringclassprotocolname(kClientProtocol);
    rh.set_clientprotocolversion(1);
    std::string frame = hadoop::EncodeFrame({&header, &rh, &empty});
    frame += std::string("\x05\xff\xff", 3);  // a truncated trailing message
    frame[3] = static_cast<char>(frame[3] + 3);
    rm.socket().Send(frame);
    std::optional<std::string> f = rm.socket().ReadFrame();
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(Decode(*f).header.status(), RpcResponseHeaderProto::FATAL);
  }
  TestIpc rm(double_->rm_port());
  rm.Simple("root", kClientProtocol);
  EXPECT_EQ(rm.CallOk<yp::GetClusterMetricsResponseProto>("getClusterMetrics", kClientProtocol,
                                                          yp::GetClusterMetricsRequestProto())
                .cluster_metrics()
                .num_node_managers(),
            1);
}

TEST_F(YarnDoubleTest, WritesAHadoopConfDirThatPointsAtIt) {
  StartHdfs();
  StartDouble(OverHdfs());
  std::string conf = work_.string() + "/conf";
  ASSERT_OK(double_->WriteHadoopConfDir(conf));
  EXPECT_THAT(MustRead(conf + "/core-site.xml"),
              HasSubstr("<name>fs.defaultFS</name><value>" + hdfs_->default_fs() + "</value>"));
  EXPECT_THAT(MustRead(conf + "/hdfs-site.xml"),
              HasSubstr("<name>dfs.namenode.http-address</name><value>127.0.0.1:" +
                        std::to_string(hdfs_->namenode_http_port()) + "</value>"));
  std::string yarn = MustRead(conf + "/yarn-site.xml");
  EXPECT_THAT(yarn, HasSubstr("<name>yarn.resourcemanager.address</name><value>127.0.0.1:" +
                              std::to_string(double_->rm_port()) + "</value>"));
  EXPECT_THAT(yarn, HasSubstr("<name>yarn.resourcemanager.scheduler.address</name><value>127.0.0.1:" +
                              std::to_string(double_->scheduler_port()) + "</value>"));
}

}  // namespace
}  // namespace loom::yarn_double
