#include "hadoop/wire/ipc_frame.h"

#include <google/protobuf/io/coded_stream.h>

namespace loom::hadoop {

namespace {

void AppendBigEndian32(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>((v >> shift) & 0xff));
}

uint32_t ReadBigEndian32(std::string_view b) {
  return (uint32_t{static_cast<uint8_t>(b[0])} << 24) | (uint32_t{static_cast<uint8_t>(b[1])} << 16) |
         (uint32_t{static_cast<uint8_t>(b[2])} << 8) | uint32_t{static_cast<uint8_t>(b[3])};
}

}  // namespace

std::string Preamble(AuthProtocol auth) {
  return std::string("hrpc") + static_cast<char>(kIpcVersion) + '\0' + static_cast<char>(auth);
}

Result<AuthProtocol> ParsePreamble(std::string_view b) {
  if (b.size() != 7 || b.substr(0, 4) != "hrpc") return Status::InvalidArgument("not a Hadoop IPC preamble (no 'hrpc')");
  if (static_cast<uint8_t>(b[4]) != kIpcVersion) {
    return Status::InvalidArgument("Hadoop IPC version " + std::to_string(static_cast<uint8_t>(b[4])) + ", expected 9");
  }
  uint8_t auth = static_cast<uint8_t>(b[6]);
  if (auth == static_cast<uint8_t>(AuthProtocol::kNone)) return AuthProtocol::kNone;
  if (auth == static_cast<uint8_t>(AuthProtocol::kSasl)) return AuthProtocol::kSasl;
  return Status::InvalidArgument("unknown Hadoop IPC auth protocol " + std::to_string(auth));
}

RpcRequestHeaderProto MakeRequestHeader(int32_t call_id, std::string_view client_id, int32_t retry_count) {
  RpcRequestHeaderProto h;
  h.set_rpckind(::hadoop::common::RPC_PROTOCOL_BUFFER);
  h.set_rpcop(RpcRequestHeaderProto::RPC_FINAL_PACKET);
  h.set_callid(call_id);
  h.set_clientid(std::string(client_id));
  h.set_retrycount(retry_count);
  return h;
}

void AppendDelimited(std::string* out, const google::protobuf::MessageLite& m) {
  size_t size = m.ByteSizeLong();
  uint8_t prefix[10];
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(size), prefix);
  out->append(reinterpret_cast<const char*>(prefix), end - prefix);
  m.AppendToString(out);
}

std::string EncodeFrame(std::initializer_list<const google::protobuf::MessageLite*> messages) {
  std::string body;
  for (const auto* m : messages) AppendDelimited(&body, *m);
  std::string frame;
  frame.reserve(body.size() + 4);
  AppendBigEndian32(&frame, static_cast<uint32_t>(body.size()));
  frame += body;
  return frame;
}

Result<std::vector<std::string_view>> SplitDelimited(std::string_view body) {
  std::vector<std::string_view> parts;
  while (!body.empty()) {
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(body.data()),
                                              static_cast<int>(body.size()));
    uint32_t len = 0;
    if (!in.ReadVarint32(&len)) return Status::InvalidArgument("IPC frame: malformed length prefix");
    size_t prefix = static_cast<size_t>(in.CurrentPosition());
    if (len > body.size() - prefix) {
      return Status::InvalidArgument("IPC frame: message of " + std::to_string(len) + " bytes overruns the frame");
    }
    parts.push_back(body.substr(prefix, len));
    body.remove_prefix(prefix + len);
  }
  return parts;
}

Result<std::optional<std::string>> FrameReader::Next() {
  if (buffer_.size() < 4) return std::optional<std::string>();
  uint32_t len = ReadBigEndian32(buffer_);
  if (len > kMaxFrameBytes) {
    return Status::InvalidArgument("IPC frame of " + std::to_string(len) + " bytes exceeds the " +
                                   std::to_string(kMaxFrameBytes) + "-byte limit");
  }
  if (buffer_.size() < 4 + size_t{len}) return std::optional<std::string>();
  std::string body = buffer_.substr(4, len);
  buffer_.erase(0, 4 + size_t{len});
  return std::optional<std::string>(std::move(body));
}

Status RemoteErrorStatus(const RpcResponseHeaderProto& h) {
  std::string msg = h.errormsg();
  if (size_t nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);  // drop the server's stack trace
  std::string text = (h.exceptionclassname().empty() ? std::string("RemoteException") : h.exceptionclassname()) +
                     ": " + msg;
  if (h.status() == RpcResponseHeaderProto::FATAL) {
    if (h.errordetail() == RpcResponseHeaderProto::FATAL_UNAUTHORIZED) return Status::Unauthenticated(text);
    return Status::Unavailable(text);
  }
  return Status(StatusCode::kAborted, text);
}

std::string RemoteExceptionClass(const Status& status) {
  const std::string& m = status.message();
  size_t colon = m.find(": ");
  return colon == std::string::npos ? std::string() : m.substr(0, colon);
}

}  // namespace loom::hadoop
