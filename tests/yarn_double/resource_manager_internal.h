#pragma once
// What the ResourceManager's files share: request parsing, the IPC errors of both RM protocols
// and the scheduler's arithmetic. The RM is YarnDoubleImpl's methods (yarn_double_impl.h) in
// resource_manager.cc (tokens, allocation, the AM launch, the application life cycle),
// capacity_scheduler.cc (queues, activation, heartbeats, nodes), rm_client_calls.cc
// (ApplicationClientProtocol) and rm_scheduler_calls.cc (ApplicationMasterProtocol). Not for
// other files.

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include <google/protobuf/message.h>

#include "hadoop/proto/hadoop_rpc.pb.h"
#include "hadoop/testing/ipc_server.h"
#include "yarn_records.h"

namespace loom::yarn_double {

inline constexpr char kInvalidResourceRequest[] = "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException";

template <typename T>
std::optional<T> Parse(std::string_view bytes) {
  T m;
  if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return std::nullopt;
  return m;
}

inline RpcError BadRequest(const std::string& method) {
  return RpcError{"org.apache.hadoop.ipc.RpcServerException", "Error decoding the request parameter of " + method,
                  ::hadoop::common::RpcResponseHeaderProto::FATAL_DESERIALIZING_REQUEST, true};
}

inline RpcError NoSuchMethod(const std::string& method, const char* protocol) {
  return RpcError{"org.apache.hadoop.ipc.RpcNoSuchMethodException",
                  "Unknown method " + method + " called on " + protocol + " protocol.",
                  ::hadoop::common::RpcResponseHeaderProto::ERROR_NO_SUCH_METHOD, false};
}

inline std::string Serialize(const google::protobuf::Message& m) { return m.SerializeAsString(); }

// Hadoop's message when a request exceeds what the scheduler can ever give (SchedulerUtils).
inline std::string TooBigMessage(const Res& asked, const Res& max, bool gpu) {
  std::string type = asked.memory > max.memory ? "memory-mb" : asked.vcores > max.vcores ? "vcores" : kGpuResource;
  return "Invalid resource request! Cannot allocate containers as requested resource is greater than maximum "
         "allowed allocation. Requested resource type=[" +
         type + "], Requested resource=" + asked.ToString(gpu) + ", maximum allowed allocation=" + max.ToString(gpu) +
         ", please note that maximum allowed allocation is calculated by scheduler based on maximum resource of "
         "registered NodeManagers, which might be less than configured maximum allocation=" +
         max.ToString(gpu);
}

// `r` times `fraction`, rounded down: a queue's share of the cluster.
inline Res Scale(const Res& r, float fraction) {
  auto part = [&](int64_t v) { return static_cast<int64_t>(std::floor(static_cast<double>(v) * fraction + 1e-6)); };
  return Res{part(r.memory), static_cast<int32_t>(part(r.vcores)), part(r.gpus)};
}

}  // namespace loom::yarn_double
