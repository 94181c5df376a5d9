#pragma once
// Small YARN record helpers for the test double: id strings and protos, resources with their
// resource_value_map as the recorded RM writes them, and Java exceptions as the RM puts them
// on the wire (message plus a server stack trace).

#include <cstdint>
#include <string>
#include <vector>

#include "hadoop/proto/yarn.pb.h"
#include "ipc_server_names.h"

namespace loom::yarn_double {

namespace yp = ::hadoop::yarn;

// ---- ids ----------------------------------------------------------------------------------------

std::string AppIdString(int64_t cluster_ts, int32_t app);                        // application_<ts>_0001
std::string AttemptIdString(int64_t cluster_ts, int32_t app, int32_t attempt);   // appattempt_<ts>_0001_000001
std::string ContainerIdString(int64_t cluster_ts, int32_t app, int32_t attempt, int64_t id);  // container_..._01_000001
std::string AttemptIdString(const yp::ApplicationAttemptIdProto& a);
std::string ContainerIdString(const yp::ContainerIdProto& c);

yp::ApplicationIdProto AppIdProto(int64_t cluster_ts, int32_t app);
yp::ApplicationAttemptIdProto AttemptIdProto(int64_t cluster_ts, int32_t app, int32_t attempt);
// As the RM writes it: app_attempt_id and id, no app_id (field 1), as in dshell/05.
yp::ContainerIdProto ContainerIdProto(int64_t cluster_ts, int32_t app, int32_t attempt, int64_t id);

// ---- resources ------------------------------------------------------------------------------

inline constexpr char kGpuResource[] = "yarn.io/gpu";

struct Res {
  int64_t memory = 0;
  int32_t vcores = 0;
  int64_t gpus = 0;
  bool FitsIn(const Res& o) const { return memory <= o.memory && vcores <= o.vcores && gpus <= o.gpus; }
  Res operator+(const Res& o) const { return {memory + o.memory, vcores + o.vcores, gpus + o.gpus}; }
  Res operator-(const Res& o) const { return {memory - o.memory, vcores - o.vcores, gpus - o.gpus}; }
  bool operator==(const Res&) const = default;
  // Hadoop's Resource.toString: "<memory:512, vCores:1>" (", yarn.io/gpu: 2" with GPUs).
  std::string ToString(bool with_gpu) const;
};

// memory, virtual_cores and resource_value_map {memory-mb "Mi", vcores "", [yarn.io/gpu ""]}.
yp::ResourceProto ResourceToProto(const Res& r, bool with_gpu);
// Fields 1 and 2 win over map entries, as in ResourcePBImpl; yarn.io/gpu from the map.
Res ResourceFromProto(const yp::ResourceProto& p);
// The resource types the RM knows: memory-mb, vcores, and yarn.io/gpu when the node has GPUs.
std::vector<yp::ResourceTypeInfoProto> ResourceTypes(bool with_gpu);

// ---- Java exceptions on the wire -----------------------------------------------------------

// An application error (status ERROR, ERROR_APPLICATION): `message`, then the frames given,
// then the IPC handler frames every 3.3.6 RM stack trace ends with (dshell/01, negative/04).
RpcError AppError(const std::string& exception_class, const std::string& message,
                  const std::vector<std::string>& top_frames);
// The frames of a protocol method's PB service layer, e.g. for ClientRMService.getNewApplication.
std::vector<std::string> ServiceFrames(const std::string& impl_frame, const std::string& protocol_short,
                                       const std::string& method);

// Epoch milliseconds now.
int64_t NowMs();
// Epoch milliseconds `ms` as strftime's `format` in UTC, to the second.
std::string FormatUtc(int64_t ms, const char* format);
// 20 random bytes (a token password, like HMAC-SHA1 output).
std::string RandomPassword();
int32_t RandomInt32();

}  // namespace loom::yarn_double
