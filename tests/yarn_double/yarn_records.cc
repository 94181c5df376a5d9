#include "yarn_records.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>

namespace loom::yarn_double {

namespace {

yp::ResourceInformationProto Info(const std::string& key, int64_t value, const std::string& units) {
  yp::ResourceInformationProto i;
  i.set_key(key);
  i.set_value(value);
  i.set_units(units);
  i.set_type(yp::COUNTABLE);
  return i;
}

std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return rng;
}

// The IPC handler frames at the bottom of every RM/NM stack trace in the recordings.
constexpr const char* kIpcFrames[] = {
    "org.apache.hadoop.ipc.ProtobufRpcEngine2$Server$ProtoBufRpcInvoker.call(ProtobufRpcEngine2.java:621)",
    "org.apache.hadoop.ipc.ProtobufRpcEngine2$Server$ProtoBufRpcInvoker.call(ProtobufRpcEngine2.java:589)",
    "org.apache.hadoop.ipc.ProtobufRpcEngine2$Server$ProtoBufRpcInvoker.call(ProtobufRpcEngine2.java:573)",
    "org.apache.hadoop.ipc.RPC$Server.call(RPC.java:1227)",
    "org.apache.hadoop.ipc.Server$RpcCall.run(Server.java:1094)",
    "org.apache.hadoop.ipc.Server$RpcCall.run(Server.java:1017)",
    "java.base/java.security.AccessController.doPrivileged(AccessController.java:712)",
    "java.base/javax.security.auth.Subject.doAs(Subject.java:439)",
    "org.apache.hadoop.security.UserGroupInformation.doAs(UserGroupInformation.java:1899)",
    "org.apache.hadoop.ipc.Server$Handler.run(Server.java:3048)",
};

}  // namespace

std::string AppIdString(int64_t ts, int32_t app) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "application_%lld_%04d", static_cast<long long>(ts), app);
  return buf;
}

std::string AttemptIdString(int64_t ts, int32_t app, int32_t attempt) {
  char buf[80];
  std::snprintf(buf, sizeof(buf), "appattempt_%lld_%04d_%06d", static_cast<long long>(ts), app, attempt);
  return buf;
}

std::string ContainerIdString(int64_t ts, int32_t app, int32_t attempt, int64_t id) {
  // The bits above 40 are the RM epoch, written as "e<epoch>_" (ContainerId.toString).
  long long epoch = id >> 40;
  long long number = id & ((int64_t{1} << 40) - 1);
  char buf[96];
  if (epoch) {
    std::snprintf(buf, sizeof(buf), "container_e%02lld_%lld_%04d_%02d_%06lld", epoch, static_cast<long long>(ts), app,
                  attempt, number);
  } else {
    std::snprintf(buf, sizeof(buf), "container_%lld_%04d_%02d_%06lld", static_cast<long long>(ts), app, attempt,
                  number);
  }
  return buf;
}

std::string AttemptIdString(const yp::ApplicationAttemptIdProto& a) {
  return AttemptIdString(a.application_id().cluster_timestamp(), a.application_id().id(), a.attemptid());
}

std::string ContainerIdString(const yp::ContainerIdProto& c) {
  const auto& a = c.app_attempt_id();
  return ContainerIdString(a.application_id().cluster_timestamp(), a.application_id().id(), a.attemptid(), c.id());
}

yp::ApplicationIdProto AppIdProto(int64_t ts, int32_t app) {
  yp::ApplicationIdProto p;
  p.set_id(app);
  p.set_cluster_timestamp(ts);
  return p;
}

yp::ApplicationAttemptIdProto AttemptIdProto(int64_t ts, int32_t app, int32_t attempt) {
  yp::ApplicationAttemptIdProto p;
  *p.mutable_application_id() = AppIdProto(ts, app);
  p.set_attemptid(attempt);
  return p;
}

yp::ContainerIdProto ContainerIdProto(int64_t ts, int32_t app, int32_t attempt, int64_t id) {
  yp::ContainerIdProto p;
  *p.mutable_app_attempt_id() = AttemptIdProto(ts, app, attempt);
  p.set_id(id);
  return p;
}

std::string Res::ToString(bool with_gpu) const {
  std::string s = "<memory:" + std::to_string(memory) + ", vCores:" + std::to_string(vcores);
  if (with_gpu) s += ", yarn.io/gpu: " + std::to_string(gpus);
  return s + ">";
}

yp::ResourceProto ResourceToProto(const Res& r, bool with_gpu) {
  yp::ResourceProto p;
  p.set_memory(r.memory);
  p.set_virtual_cores(r.vcores);
  *p.add_resource_value_map() = Info("memory-mb", r.memory, "Mi");
  *p.add_resource_value_map() = Info("vcores", r.vcores, "");
  if (with_gpu) *p.add_resource_value_map() = Info(kGpuResource, r.gpus, "");
  return p;
}

Res ResourceFromProto(const yp::ResourceProto& p) {
  Res r;
  for (const auto& i : p.resource_value_map()) {
    if (i.key() == "memory-mb") r.memory = i.value();
    if (i.key() == "vcores") r.vcores = static_cast<int32_t>(i.value());
    if (i.key() == kGpuResource) r.gpus = i.value();
  }
  if (p.has_memory()) r.memory = p.memory();
  if (p.has_virtual_cores()) r.vcores = p.virtual_cores();
  return r;
}

std::vector<yp::ResourceTypeInfoProto> ResourceTypes(bool with_gpu) {
  std::vector<yp::ResourceTypeInfoProto> out;
  auto add = [&](const char* name, const char* units) {
    yp::ResourceTypeInfoProto t;
    t.set_name(name);
    t.set_units(units);
    t.set_type(yp::COUNTABLE);
    out.push_back(t);
  };
  add("memory-mb", "Mi");
  add("vcores", "");
  if (with_gpu) add(kGpuResource, "");
  return out;
}

RpcError AppError(const std::string& exception_class, const std::string& message,
                  const std::vector<std::string>& top_frames) {
  std::string text = message;
  for (const std::string& f : top_frames) text += "\n\tat " + f;
  for (const char* f : kIpcFrames) text += std::string("\n\tat ") + f;
  text += "\n";
  return RpcError{exception_class, text, ::hadoop::common::RpcResponseHeaderProto::ERROR_APPLICATION, false};
}

std::vector<std::string> ServiceFrames(const std::string& impl_frame, const std::string& protocol_short,
                                       const std::string& method) {
  // Line numbers only where a recording shows them (registerApplicationMaster, negative/04).
  bool recorded = protocol_short == "ApplicationMasterProtocol" && method == "registerApplicationMaster";
  std::string pb_line = recorded ? ":90" : "";
  std::string proto_line = recorded ? ":101" : "";
  return {impl_frame,
          "org.apache.hadoop.yarn.api.impl.pb.service." + protocol_short + "PBServiceImpl." + method + "(" +
              protocol_short + "PBServiceImpl.java" + pb_line + ")",
          "org.apache.hadoop.yarn.proto." + protocol_short + "$" + protocol_short +
              "Service$2.callBlockingMethod(" + protocol_short + ".java" + proto_line + ")"};
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string FormatUtc(int64_t ms, const char* format) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), format, &tm);
  return buf;
}

std::string RandomPassword() {
  std::string p(20, '\0');
  for (char& c : p) c = static_cast<char>(Rng()() & 0xff);
  return p;
}

int32_t RandomInt32() { return static_cast<int32_t>(Rng()() & 0xffffffffu); }

}  // namespace loom::yarn_double
