#pragma once
// Hadoop IPC (RPC v9) framing, both directions: the 7-byte preamble, frames (4-byte big-endian
// length, then varint-delimited protobuf messages), the request header, and the response
// header's errors. Pure functions over bytes: the client (ipc_client.h) and the test double's
// server both build on them, and the unit tests hold them to the recorded bytes.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/message_lite.h>

#include "core/status.h"
#include "hadoop/proto/hadoop_rpc.pb.h"

namespace loom::hadoop {

using ::hadoop::common::RpcRequestHeaderProto;
using ::hadoop::common::RpcResponseHeaderProto;
using ::hadoop::common::RpcSaslProto;

inline constexpr uint8_t kIpcVersion = 9;
enum class AuthProtocol : uint8_t { kNone = 0x00, kSasl = 0xDF };  // 0xDF: the low byte of -33

// Special call ids (RpcConstants): requests encode them zigzag, responses as uint32.
inline constexpr int32_t kAuthFailedCallId = -1;
inline constexpr int32_t kConnectionContextCallId = -3;
inline constexpr int32_t kPingCallId = -4;
inline constexpr int32_t kSaslCallId = -33;

// The largest frame either side accepts (Hadoop's ipc.maximum.data.length default).
inline constexpr uint32_t kMaxFrameBytes = 64u << 20;

// "hrpc", version 9, service class 0, auth protocol.
std::string Preamble(AuthProtocol auth);
// Parses a preamble; InvalidArgument names what is wrong (magic, version).
Result<AuthProtocol> ParsePreamble(std::string_view bytes);

// A request header as Java writes it: RPC_PROTOCOL_BUFFER, RPC_FINAL_PACKET. SASL frames carry
// an empty client id; retry is -1 for SASL, context and ping, 0 for a first call.
RpcRequestHeaderProto MakeRequestHeader(int32_t call_id, std::string_view client_id, int32_t retry_count);

// Appends `m` with its varint length prefix (writeDelimitedTo).
void AppendDelimited(std::string* out, const google::protobuf::MessageLite& m);
// A whole frame: 4-byte big-endian length of the delimited messages that follow.
std::string EncodeFrame(std::initializer_list<const google::protobuf::MessageLite*> messages);
// Splits a frame body (without its 4-byte length) into its delimited messages; fails on a
// truncated or oversized prefix, or trailing bytes.
Result<std::vector<std::string_view>> SplitDelimited(std::string_view body);

// Accumulates stream bytes and yields complete frame bodies.
class FrameReader {
 public:
  void Feed(std::string_view bytes) { buffer_.append(bytes); }
  // The next complete body, nullopt if more bytes are needed; an error for a length over
  // kMaxFrameBytes (the stream is then unusable).
  Result<std::optional<std::string>> Next();
  size_t buffered() const { return buffer_.size(); }

 private:
  std::string buffer_;
};

// A response header's call id as the signed value the client sent (the wire has uint32).
inline int32_t ResponseCallId(const RpcResponseHeaderProto& h) { return static_cast<int32_t>(h.callid()); }

// A non-SUCCESS response as a Status: the remote exception's class and the first line of its
// message (YARN appends the server's stack trace). FATAL_UNAUTHORIZED is kUnauthenticated,
// other FATALs kUnavailable (the server closes the connection), application errors kAborted.
Status RemoteErrorStatus(const RpcResponseHeaderProto& header);
// The class name of a remote error Status (the text before ": "), to tell exceptions apart.
std::string RemoteExceptionClass(const Status& status);

}  // namespace loom::hadoop
