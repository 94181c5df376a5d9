// Tests of the YARN test double's behaviour, end to end over its ports with raw protos (the
// client of ipc_test_client.h): the container contract, scheduling and how containers end, the
// application life cycle. Malformed input and the Hadoop conf dir: yarn_double_input_test.cc;
// the RM's web proxy: rm_web_proxy_test.cc;
// the recorded exchanges replayed: yarn_test_double_replay_test.cc.

#include "yarn_test_double.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/eventually.h"
#include "core/files.h"
#include "core/inet_address.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "core/testing.h"
#include "fake_hdfs.h"
#include "hadoop/proto/hadoop_rpc.pb.h"
#include "hadoop/proto/yarn.pb.h"
#include "hadoop/wire/credentials.h"
#include "ipc_test_client.h"
#include "yarn_double_test_fixture.h"

namespace loom::yarn_double {
namespace {

using ::hadoop::common::RpcResponseHeaderProto;
using ::testing::HasSubstr;
using ::testing::StartsWith;

int64_t ResourceGpus(const yp::ResourceProto& r) {
  for (const auto& i : r.resource_value_map()) {
    if (i.key() == "yarn.io/gpu") return i.value();
  }
  return 0;
}

// ---- behaviour, end to end with raw protos -----------------------------------------------------

// WebHDFS CREATE in two steps (NameNode 307, then the DataNode), over raw HTTP.
Status WebHdfsPut(int nn_port, const std::string& path, const std::string& data) {
  auto http = [](int port, const std::string& request) -> std::string {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = Ipv4Address(INADDR_LOOPBACK, port);
    std::string reply;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
        ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == ssize_t(request.size())) {
      char buf[4096];
      for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0) break;
        ssize_t r = ::recv(fd, buf, sizeof(buf), 0);
        if (r <= 0) break;
        reply.append(buf, static_cast<size_t>(r));
        if (reply.find("\r\n\r\n") != std::string::npos && reply.find(" 100 Continue") == std::string::npos &&
            reply.find("Content-Length: 0") != std::string::npos) {
          break;
        }
      }
    }
    ::close(fd);
    return reply;
  };
  std::string step1 = http(nn_port, "PUT /webhdfs/v1" + path + "?op=CREATE&user.name=root&overwrite=true HTTP/1.1\r\n"
                                    "Host: 127.0.0.1\r\nContent-Length: 0\r\n\r\n");
  size_t loc = step1.find("Location: http://127.0.0.1:");
  if (loc == std::string::npos) return Status::Internal("no redirect: " + step1);
  std::string rest = step1.substr(loc + 27);
  int dn_port = std::stoi(rest);
  std::string target = rest.substr(rest.find('/'), rest.find("\r\n") - rest.find('/'));
  std::string step2 = http(dn_port, "PUT " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                                        std::to_string(data.size()) + "\r\n\r\n" + data);
  if (step2.find(" 201 ") == std::string::npos) return Status::Internal("upload failed: " + step2);
  return Status::Ok();
}

bool WaitForFile(const std::string& path) {
  return loom::testing::Eventually([&] { return PathExists(path); }, std::chrono::seconds(15),
                                   std::chrono::milliseconds(20));
}

std::map<std::string, std::string> ReadEnvFile(const std::string& path) {
  std::map<std::string, std::string> env;
  for (const std::string& line : Split(MustRead(path), '\n')) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

yp::LocalResourceProto HdfsResource(FakeHdfs& hdfs, const std::string& path, yp::LocalResourceTypeProto type,
                                    int64_t timestamp_delta = 0) {
  std::string fs = hdfs.default_fs();  // hdfs://127.0.0.1:<port>
  yp::LocalResourceProto r;
  r.mutable_resource()->set_scheme("hdfs");
  r.mutable_resource()->set_host("127.0.0.1");
  r.mutable_resource()->set_port(std::stoi(fs.substr(fs.rfind(':') + 1)));
  r.mutable_resource()->set_file(path);
  Result<FakeHdfs::Entry> e = hdfs.Stat(path);
  EXPECT_TRUE(e.ok()) << path;
  r.set_size(e.ok() ? e->length : 0);
  r.set_timestamp((e.ok() ? e->mtime_ms : 0) + timestamp_delta);
  r.set_type(type);
  r.set_visibility(yp::APPLICATION);
  return r;
}

TEST_F(YarnDoubleTest, RunsAnAmWithTheContainerContractAndKillsIt) {
  StartHdfs();
  const YarnTestDouble::Options o = OverHdfs();
  StartDouble(o);
  ASSERT_OK(WebHdfsPut(hdfs_->namenode_http_port(), "/user/root/e2e/hello.sh", "echo hi from hdfs\n"));
  std::string out = work_.string() + "/out";
  ASSERT_OK(MakeDirs(out));
  // An ARCHIVE resource: unpacked into a directory the key names.
  ASSERT_OK(MakeDirs(work_.string() + "/arch/sub"));
  ASSERT_OK(WriteFileAtomic(work_.string() + "/arch/sub/inner.txt", "inside\n"));
  SpawnOptions tar;
  tar.argv = {"tar", "-czf", work_.string() + "/arch.tar.gz", "-C", work_.string() + "/arch", "sub"};
  tar.env = {{"PATH", "/usr/bin:/bin"}};
  Result<Subprocess> tar_proc = Subprocess::Spawn(tar);
  ASSERT_OK(tar_proc);
  ASSERT_TRUE(tar_proc->Wait()->success());
  ASSERT_OK(WebHdfsPut(hdfs_->namenode_http_port(), "/user/root/e2e/arch.tar.gz",
                       MustRead(work_.string() + "/arch.tar.gz")));

  TestIpc rm(double_->rm_port());
  rm.Simple("root", kClientProtocol);
  yp::ContainerLaunchContextProto clc;
  auto* res = clc.add_localresources();
  res->set_key("hello.sh");
  *res->mutable_value() = HdfsResource(*hdfs_, "/user/root/e2e/hello.sh", yp::FILE);
  auto* arch = clc.add_localresources();
  arch->set_key("unpacked");
  *arch->mutable_value() = HdfsResource(*hdfs_, "/user/root/e2e/arch.tar.gz", yp::ARCHIVE);
  for (auto [k, v] : {std::pair{"MY_VAR", "x{{HOME}}/y"}, {"CP", "a<CPS>b"}, {"CONTAINER_ID", "overridden?"}}) {
    auto* e = clc.add_environment();
    e->set_key(k);
    e->set_value(v);
  }
  std::string app = Submit(rm,
                           "{ env > " + out + "/env.txt; cp $HADOOP_TOKEN_FILE_LOCATION " + out +
                               "/tokens.bin; ./hello.sh > " + out + "/res.txt; cp unpacked/sub/inner.txt " + out + "; touch " + out +
                               "/ready; exec sleep 300; } 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr",
                           300, clc);
  ASSERT_TRUE(WaitForFile(out + "/ready"));
  yp::ApplicationReportProto r = Report(rm, app);
  EXPECT_EQ(r.yarn_application_state(), yp::ACCEPTED);
  EXPECT_EQ(r.diagnostics(), "AM container is launched, waiting for AM container to Register with RM");
  EXPECT_EQ(r.applicationtags(0), "loom-test");

  // The environment the NM promises (README 9, container/worker-stdout-env.txt).
  std::string am = "container_" + app.substr(12) + "_01_000001";
  std::string work_dir = o.work_dir + "/nm-local/usercache/root/appcache/" + app + "/" + am;
  std::string log_dir = o.work_dir + "/logs/" + app + "/" + am;
  std::map<std::string, std::string> env = ReadEnvFile(out + "/env.txt");
  EXPECT_EQ(env["CONTAINER_ID"], am);
  EXPECT_EQ(env["HADOOP_TOKEN_FILE_LOCATION"], work_dir + "/container_tokens");
  EXPECT_EQ(env["NM_HOST"], "localhost");
  EXPECT_EQ(env["NM_PORT"], std::to_string(double_->nm_port()));
  EXPECT_EQ(env["NM_HTTP_PORT"], std::to_string(double_->nm_http_port()));
  EXPECT_EQ(env["LOG_DIRS"], log_dir);
  EXPECT_EQ(env["LOCAL_DIRS"], o.work_dir + "/nm-local/usercache/root/appcache/" + app);
  EXPECT_EQ(env["LOCAL_USER_DIRS"], o.work_dir + "/nm-local/usercache/root/");
  EXPECT_EQ(env["PWD"], work_dir);
  EXPECT_EQ(env["USER"], "root");
  EXPECT_EQ(env["HOME"], "/home/");
  EXPECT_EQ(env["APPLICATION_WEB_PROXY_BASE"], "/proxy/" + app);
  EXPECT_FALSE(env["APP_SUBMIT_TIME_ENV"].empty());
  EXPECT_FALSE(env["JVM_PID"].empty());
  EXPECT_EQ(env["MY_VAR"], "x/home//y");  // {{HOME}} -> $HOME, expanded by the launch script
  EXPECT_EQ(env["CP"], "a:b");
  // What the NodeManager received, unexpanded: the CLC's variables and the two the RM adds.
  bool seen = false;
  for (auto c : double_->Containers()) {
    if (c.id != am) continue;
    seen = true;
    EXPECT_EQ(c.launch_env["MY_VAR"], "x{{HOME}}/y");
    EXPECT_EQ(c.launch_env["APPLICATION_WEB_PROXY_BASE"], "/proxy/" + app);
    EXPECT_EQ(c.launch_env.count("NM_HOST"), 0u);  // the NM's own, not the launch context's
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(MustRead(out + "/res.txt"), "hi from hdfs\n");  // a FILE resource, executable once localized
  EXPECT_EQ(MustRead(out + "/inner.txt"), "inside\n");
  EXPECT_TRUE(PathExists(log_dir + "/launch_container.sh"));
  EXPECT_TRUE(PathExists(log_dir + "/directory.info"));

  // container_tokens: HDTS with the AMRMToken, which the scheduler port accepts.
  Result<hadoop::Credentials> creds = hadoop::ParseCredentials(MustRead(out + "/tokens.bin"));
  ASSERT_OK(creds);
  std::optional<hadoop::Token> amrm = creds->FindKind("YARN_AM_RM_TOKEN");
  ASSERT_TRUE(amrm.has_value());
  EXPECT_EQ(amrm->service, "");
  EXPECT_EQ(*amrm, *double_->AmRmToken(app));
  TestIpc am_client(double_->scheduler_port());
  ASSERT_OK(am_client.Token(*amrm, kAmProtocol));
  yp::RegisterApplicationMasterRequestProto reg;
  reg.set_host("e2e-host");
  reg.set_rpc_port(4242);
  reg.set_tracking_url("http://e2e-host:4243/");
  auto rr = am_client.CallOk<yp::RegisterApplicationMasterResponseProto>("registerApplicationMaster", kAmProtocol, reg);
  EXPECT_EQ(rr.queue(), "default");
  r = Report(rm, app);
  EXPECT_EQ(r.yarn_application_state(), yp::RUNNING);
  EXPECT_EQ(r.host(), "e2e-host");
  EXPECT_EQ(r.rpc_port(), 4242);
  // The RM's web proxy, which names itself as the recorded RM does (http://localhost:8088);
  // the AM's own URL is the original one (ipc-queue/03).
  const std::string rm_web = "http://localhost:" + std::to_string(double_->rm_web_port());
  EXPECT_EQ(r.trackingurl(), rm_web + "/proxy/" + app + "/");
  EXPECT_EQ(r.originaltrackingurl(), "http://e2e-host:4243/");

  // A forged password is refused at SASL time.
  hadoop::Token forged = *amrm;
  forged.password[0] ^= 1;
  TestIpc bad(double_->scheduler_port());
  EXPECT_STATUS(bad.Token(forged, kAmProtocol), kUnauthenticated, HasSubstr("Mismatched response"));

  // Kill: the AM's process group goes, the state is KILLED at once.
  pid_t pid = FindContainer(am)->pid;
  ASSERT_GT(pid, 0);
  yp::KillApplicationRequestProto kill;
  *kill.mutable_application_id() = r.applicationid();
  EXPECT_TRUE(rm.CallOk<yp::KillApplicationResponseProto>("forceKillApplication", kClientProtocol, kill)
                  .is_kill_completed());
  r = Report(rm, app);
  EXPECT_EQ(r.yarn_application_state(), yp::KILLED);
  EXPECT_EQ(r.final_application_status(), yp::APP_KILLED);
  EXPECT_THAT(r.diagnostics(), StartsWith("Application " + app + " was killed by user root at 127.0.0.1"));
  // Killed: both tracking URLs are the RM's application page (rm-rest/18).
  EXPECT_EQ(r.trackingurl(), rm_web + "/cluster/app/" + app);
  EXPECT_EQ(r.originaltrackingurl(), rm_web + "/cluster/app/" + app);
  ASSERT_TRUE(WaitComplete(am));
  EXPECT_EQ(FindContainer(am)->exit_status, 143);
  EXPECT_FALSE(ProcessAlive(pid));
  EXPECT_TRUE(double_->LiveContainerProcesses().empty());
  // The RM dropped the attempt: the open connection gets ApplicationAttemptNotFoundException.
  Reply after = am_client.Call("allocate", kAmProtocol, yp::AllocateRequestProto());
  EXPECT_EQ(after.header.exceptionclassname(), "org.apache.hadoop.yarn.exceptions.ApplicationAttemptNotFoundException");
  // Unknown applications.
  Reply missing = rm.Call("getApplicationReport", kClientProtocol, [] {
    yp::GetApplicationReportRequestProto q;
    q.mutable_application_id()->set_id(77);
    q.mutable_application_id()->set_cluster_timestamp(5);
    return q;
  }());
  EXPECT_EQ(missing.header.status(), RpcResponseHeaderProto::ERROR);
  EXPECT_EQ(missing.header.exceptionclassname(), "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException");
  EXPECT_THAT(missing.header.errormsg(),
              StartsWith("Application with id 'application_5_0077' doesn't exist in RM. Please check that the job "
                         "submission was successful.\n\tat "));
}

TEST_F(YarnDoubleTest, SchedulesWorkersAndReportsHowTheyEnd) {
  StartHdfs();
  YarnTestDouble::Options o = OverHdfs();
  o.node_memory_mb = 4096;
  o.node_vcores = 8;
  o.node_gpus = 2;
  o.nm_heartbeat_ms = 0;  // what each allocate call gets is what this test checks
  StartDouble(o);
  ASSERT_OK(WebHdfsPut(hdfs_->namenode_http_port(), "/user/root/w/data.txt", "payload\n"));
  TestIpc rm(double_->rm_port());
  rm.Simple("root", kClientProtocol);
  std::string app = Submit(rm, "exec sleep 300");
  std::string am = "container_" + app.substr(12) + "_01_000001";
  ASSERT_OK(double_->WaitForAppState(app, yp::ACCEPTED, std::chrono::seconds(5)));
  ASSERT_TRUE(WaitStarted(am));

  TestIpc am_client(double_->scheduler_port());
  ASSERT_OK(am_client.Token(*double_->AmRmToken(app), kAmProtocol));
  // Before registering: ApplicationMasterNotRegisteredException.
  EXPECT_EQ(am_client.Call("allocate", kAmProtocol, yp::AllocateRequestProto()).header.exceptionclassname(),
            "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException");
  yp::RegisterApplicationMasterRequestProto reg;
  reg.set_host("h");
  reg.set_rpc_port(-1);
  reg.set_tracking_url("");
  auto rr = am_client.CallOk<yp::RegisterApplicationMasterResponseProto>("registerApplicationMaster", kAmProtocol, reg);
  ASSERT_EQ(rr.resource_types_size(), 3);
  EXPECT_EQ(rr.resource_types(2).name(), "yarn.io/gpu");

  int32_t rid = 0;
  std::map<int64_t, yp::ContainerStatusProto> ends;  // every end comes back once through allocate
  auto allocate = [&](std::vector<yp::ResourceRequestProto> asks, std::vector<yp::ContainerIdProto> release = {}) {
    yp::AllocateRequestProto req;
    for (auto& a : asks) *req.add_ask() = a;
    for (auto& c : release) *req.add_release() = c;
    req.set_response_id(rid);
    auto resp = am_client.CallOk<yp::AllocateResponseProto>("allocate", kAmProtocol, req);
    rid = resp.response_id();
    for (const auto& s : resp.completed_container_statuses()) {
      EXPECT_FALSE(ends.count(s.container_id().id())) << "reported twice";
      ends[s.container_id().id()] = s;
    }
    return resp;
  };
  auto ask = [](int priority, int64_t mb, int vcores, int64_t gpus, int n) {
    yp::ResourceRequestProto a;
    a.mutable_priority()->set_priority(priority);
    a.set_resource_name("*");
    a.mutable_capability()->set_memory(mb);
    a.mutable_capability()->set_virtual_cores(vcores);
    if (gpus) {
      auto* g = a.mutable_capability()->add_resource_value_map();
      g->set_key("yarn.io/gpu");
      g->set_value(gpus);
    }
    a.set_num_containers(n);
    a.set_allocation_request_id(priority * 10);
    return a;
  };
  // More than the node can ever hold: InvalidResourceRequestException, nothing changes.
  {
    yp::AllocateRequestProto req;
    *req.add_ask() = ask(1, 1000, 1, 3, 1);
    req.set_response_id(rid);
    Reply r = am_client.Call("allocate", kAmProtocol, req);
    EXPECT_EQ(r.header.exceptionclassname(), "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException");
    EXPECT_THAT(r.header.errormsg(),
                StartsWith("Invalid resource request! Cannot allocate containers as requested resource is greater "
                           "than maximum allowed allocation. Requested resource type=[yarn.io/gpu]"));
  }
  // Three GPU workers wanted, the node has two GPUs: two now, on the next call.
  EXPECT_EQ(allocate({ask(1, 1000, 1, 1, 3)}).allocated_containers_size(), 0);
  yp::AllocateResponseProto got = allocate({});
  ASSERT_EQ(got.allocated_containers_size(), 2);
  ASSERT_EQ(got.nm_tokens_size(), 1);
  EXPECT_EQ(got.allocated_containers(0).resource().memory(), 1024);  // rounded up to the 128 MB minimum
  EXPECT_EQ(got.allocated_containers(0).allocation_request_id(), 10);
  EXPECT_EQ(ResourceGpus(got.allocated_containers(0).resource()), 1);
  hadoop::Token nm_token = NmTokenOf(got);
  // The request before the last one is a retry and gets the cached reply; anything else fails.
  {
    yp::AllocateRequestProto retry;
    retry.set_response_id(rid - 1);
    Reply again = am_client.Call("allocate", kAmProtocol, retry);
    EXPECT_EQ(again.body.value_or(""), got.SerializeAsString());
    retry.set_response_id(rid + 5);
    EXPECT_EQ(am_client.Call("allocate", kAmProtocol, retry).header.exceptionclassname(),
              "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException");
  }
  // Two plain workers for the stop and release cases; cancel the third GPU worker.
  allocate({ask(1, 1000, 1, 1, 0), ask(2, 256, 1, 0, 2)});
  yp::AllocateResponseProto plain = allocate({});
  ASSERT_EQ(plain.allocated_containers_size(), 2);
  EXPECT_EQ(plain.nm_tokens_size(), 0);  // one NMToken per node and attempt

  const yp::ContainerProto &fails = got.allocated_containers(0), &stale = got.allocated_containers(1);
  const yp::ContainerProto &stopped = plain.allocated_containers(0), &released = plain.allocated_containers(1);
  EXPECT_EQ(StartOnNm(nm_token, fails, "echo oops >&2; exit 3 2><LOG_DIR>/stderr").succeeded_requests_size(), 1);
  yp::ContainerLaunchContextProto with_stale;
  auto* lr = with_stale.add_localresources();
  lr->set_key("data.txt");
  *lr->mutable_value() = HdfsResource(*hdfs_, "/user/root/w/data.txt", yp::FILE, -5);
  EXPECT_EQ(StartOnNm(nm_token, stale, "true", &with_stale).succeeded_requests_size(), 1);
  EXPECT_EQ(StartOnNm(nm_token, stopped, "exec sleep 300").succeeded_requests_size(), 1);
  EXPECT_EQ(StartOnNm(nm_token, released, "exec sleep 300").succeeded_requests_size(), 1);
  // Starting twice, or with a forged container token, is refused per container.
  EXPECT_EQ(StartOnNm(nm_token, stopped, "true").failed_requests_size(), 1);
  yp::ContainerProto forged = released;
  forged.mutable_container_token()->mutable_password()->at(0) ^= 1;
  auto refused = StartOnNm(nm_token, forged, "true");
  ASSERT_EQ(refused.failed_requests_size(), 1);
  EXPECT_THAT(refused.failed_requests(0).exception().message(), HasSubstr("Invalid container token"));

  std::string stopped_id = "container_" + app.substr(12) + "_01_00000" + std::to_string(stopped.id().id());
  ASSERT_TRUE(WaitStarted(stopped_id));
  {
    TestIpc nm(double_->nm_port());
    ASSERT_OK(nm.Token(nm_token, kNmProtocol));
    yp::StopContainersRequestProto stop;
    *stop.add_container_id() = stopped.id();
    EXPECT_EQ(nm.CallOk<yp::StopContainersResponseProto>("stopContainers", kNmProtocol, stop).succeeded_requests_size(),
              1);
  }
  ASSERT_TRUE(WaitComplete(stopped_id));
  allocate({}, {released.id()});

  // Completions reach the AM in allocate replies: ask until all four have come.
  loom::testing::Eventually(
      [&] {
        allocate({});
        return ends.size() >= 4;
      },
      std::chrono::seconds(5), std::chrono::milliseconds(25));
  ASSERT_EQ(ends.size(), 4u);
  EXPECT_EQ(ends[fails.id().id()].exit_status(), 3);
  EXPECT_THAT(ends[fails.id().id()].diagnostics(), HasSubstr("Exception from container-launch."));
  EXPECT_EQ(ends[stale.id().id()].exit_status(), -1000);
  EXPECT_THAT(ends[stale.id().id()].diagnostics(), HasSubstr(" changed on src filesystem (expected "));
  EXPECT_EQ(ends[stopped.id().id()].exit_status(), 143);
  EXPECT_THAT(ends[stopped.id().id()].diagnostics(), StartsWith("Container killed by the ApplicationMaster."));
  EXPECT_EQ(ends[released.id().id()].exit_status(), -100);
  EXPECT_EQ(ends[released.id().id()].diagnostics(), "Container released by application");
  for (const auto& [id, s] : ends) {
    EXPECT_EQ(s.state(), yp::C_COMPLETE);
    EXPECT_EQ(s.container_sub_state(), yp::CSS_DONE);
  }

  // Unregister: false, then true; FINISHED with the AM's status; the AM container is stopped.
  yp::FinishApplicationMasterRequestProto fin;
  fin.set_final_application_status(yp::APP_FAILED);
  fin.set_diagnostics("two of four failed");
  EXPECT_FALSE(am_client.CallOk<yp::FinishApplicationMasterResponseProto>("finishApplicationMaster", kAmProtocol, fin)
                   .isunregistered());
  EXPECT_TRUE(am_client.CallOk<yp::FinishApplicationMasterResponseProto>("finishApplicationMaster", kAmProtocol, fin)
                  .isunregistered());
  yp::ApplicationReportProto r = Report(rm, app);
  EXPECT_EQ(r.yarn_application_state(), yp::FINISHED);
  EXPECT_EQ(r.final_application_status(), yp::APP_FAILED);
  EXPECT_EQ(r.diagnostics(), "two of four failed");
  ASSERT_TRUE(WaitComplete(am));
  EXPECT_TRUE(double_->LiveContainerProcesses().empty());
}

TEST_F(YarnDoubleTest, AnAmThatExitsWithoutUnregisteringFailsTheApplication) {
  StartDouble(RecordedOptions());
  TestIpc rm(double_->rm_port());
  rm.Simple("root", kClientProtocol);
  std::string app = Submit(rm, "exit 7");
  ASSERT_OK(double_->WaitForAppEnd(app, std::chrono::seconds(10)));
  yp::ApplicationReportProto r = Report(rm, app);
  EXPECT_EQ(r.yarn_application_state(), yp::FAILED);
  EXPECT_EQ(r.final_application_status(), yp::APP_FAILED);
  EXPECT_THAT(r.diagnostics(), StartsWith("Application " + app + " failed 1 times due to AM Container for appattempt_" +
                                          app.substr(12) + "_000001 exited with  exitCode: 7\n"));
  EXPECT_THAT(r.diagnostics(), HasSubstr(". Failing the application."));
  // Submission errors.
  yp::SubmitApplicationRequestProto sub;
  auto* asc = sub.mutable_application_submission_context();
  asc->mutable_application_id()->set_id(9);
  asc->mutable_application_id()->set_cluster_timestamp(kTs);
  asc->set_queue("gpu");
  asc->mutable_am_container_spec()->add_command("true");
  asc->mutable_resource()->set_memory(512);
  Reply bad_queue = rm.Call("submitApplication", kClientProtocol, sub);
  EXPECT_EQ(bad_queue.header.status(), RpcResponseHeaderProto::ERROR);
  EXPECT_THAT(bad_queue.header.errormsg(), HasSubstr("to unknown queue: gpu"));
  asc->set_queue("default");
  asc->mutable_resource()->set_memory(100000);
  EXPECT_EQ(rm.Call("submitApplication", kClientProtocol, sub).header.exceptionclassname(),
            "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException");
  asc->mutable_resource()->set_memory(512);
  asc->mutable_am_container_spec()->set_tokens("");  // present but empty: not HDTS
  EXPECT_THAT(rm.Call("submitApplication", kClientProtocol, sub).header.errormsg(), HasSubstr("java.io.IOException"));
  // Unknown methods.
  Reply unknown = rm.Call("getLabelsToNodes", kClientProtocol, yp::GetClusterMetricsRequestProto());
  EXPECT_EQ(unknown.header.errordetail(), RpcResponseHeaderProto::ERROR_NO_SUCH_METHOD);
  // The connection survived every ERROR.
  EXPECT_EQ(rm.CallOk<yp::GetClusterMetricsResponseProto>("getClusterMetrics", kClientProtocol,
                                                          yp::GetClusterMetricsRequestProto())
                .cluster_metrics()
                .num_active_nms(),
            1);
}

// ClientRMService.submitApplication: an application without a type is "YARN", a type longer
// than YarnConfiguration.APPLICATION_TYPE_LENGTH (20) is cut to it.
TEST_F(YarnDoubleTest, ApplicationTypesAreKeptAsTheRmKeepsThem) {
  StartDouble(RecordedOptions());
  TestIpc rm(double_->rm_port());
  rm.Simple("root", kClientProtocol);
  EXPECT_EQ(Report(rm, Submit(rm, "exit 0")).applicationtype(), "YARN");
  for (auto [sent, kept] : {std::pair<std::string, std::string>{"TRAINING", "TRAINING"},
                            {"A-TYPE-OF-EXACTLY-20", "A-TYPE-OF-EXACTLY-20"},
                            {"A-TYPE-LONGER-THAN-TWENTY", "A-TYPE-LONGER-THAN-T"}}) {
    yp::ContainerLaunchContextProto clc;
    auto na = rm.CallOk<yp::GetNewApplicationResponseProto>("getNewApplication", kClientProtocol,
                                                             yp::GetNewApplicationRequestProto());
    yp::SubmitApplicationRequestProto sub;
    auto* asc = sub.mutable_application_submission_context();
    *asc->mutable_application_id() = na.application_id();
    asc->set_queue("default");
    asc->set_applicationtype(sent);
    asc->mutable_resource()->set_memory(512);
    asc->mutable_resource()->set_virtual_cores(1);
    asc->mutable_am_container_spec()->add_command("exit 0");
    rm.CallOk<yp::SubmitApplicationResponseProto>("submitApplication", kClientProtocol, sub);
    yp::GetApplicationReportRequestProto req;
    *req.mutable_application_id() = na.application_id();
    EXPECT_EQ(rm.CallOk<yp::GetApplicationReportResponseProto>("getApplicationReport", kClientProtocol, req)
                  .application_report()
                  .applicationtype(),
              kept);
  }
}

}  // namespace
}  // namespace loom::yarn_double
