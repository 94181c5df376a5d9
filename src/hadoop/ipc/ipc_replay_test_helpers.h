#pragma once
// What the replay tests of Loom's Hadoop IPC client share (ipc_replay_test.cc: the recorded
// exchanges, byte for byte; ipc_replay_negative_test.cc: what a real server refused): the
// recordings of tests/data/yarn-captures, the recorded client's pinned values, and a replay of
// every recorded call. Tests only.

#include <set>

#include <google/protobuf/empty.pb.h>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/testing.h"
#include "hadoop/ipc/ipc_client.h"
#include "hadoop/ipc/ipc_test_hooks.h"
#include "hadoop/ipc/yarn_clients.h"
#include "hadoop/proto/hadoop_rpc.pb.h"
#include "hadoop/testing/captures.h"
#include "hadoop/testing/replay_server.h"
#include "hadoop/wire/credentials.h"
#include "hadoop/wire/ipc_frame.h"
#include "hadoop/wire/sasl_digest.h"
#include "hadoop/wire/test_hex.h"

namespace loom::hadoop::replay_test {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::Capture;
using testing::CapturedFrame;
using testing::LoadCapture;
using testing::ReplayOptions;
using testing::ReplayServer;
using testing::ReplaySteps;

// Request and response bodies passed through untouched: every field stays an unknown field,
// which protobuf writes back in its original order, so the bytes are the recorded ones.
using RawMessage = google::protobuf::Empty;

inline const std::string kCaptures = testing::CaptureDir();

inline Capture Load(const std::string& stem) {
  Result<Capture> c = LoadCapture(kCaptures, stem);
  EXPECT_OK(c);
  return c.ok() ? *c : Capture{};
}

// The 16-byte client id of the recorded client (from its context or first call).
inline std::string RecordedClientId(const Capture& cap) {
  for (const CapturedFrame& f : cap.c2s) {
    RpcRequestHeaderProto h;
    if (f.call_id != kSaslCallId && h.ParseFromString(f.messages[0])) return h.clientid();
  }
  return "";
}

// The cnonce of the recorded DIGEST-MD5 response, if any.
inline std::string RecordedCnonce(const Capture& cap) {
  for (const CapturedFrame& f : cap.c2s) {
    RpcSaslProto sasl;
    if (f.call_id != kSaslCallId || f.messages.size() < 2 || !sasl.ParseFromString(f.messages[1])) continue;
    if (sasl.state() != RpcSaslProto::INITIATE || sasl.token().empty()) continue;
    auto directives = ParseDirectives(sasl.token());
    if (!directives.ok()) continue;
    for (auto& [k, v] : *directives) {
      if (k == "cnonce") return v;
    }
  }
  return "";
}

// The token the recorded client used, from digest-vectors.json.
inline Token RecordedToken(const std::string& stem) {
  Result<std::string> text = ReadFile(kCaptures + "digest-vectors.json");
  EXPECT_OK(text);
  for (const auto& v : nlohmann::json::parse(text.value_or("[]"))) {
    if (v["connection"] != stem || !v.contains("token_identifier_hex")) continue;
    return Token{FromHex(v["token_identifier_hex"].get<std::string>()),
                 FromHex(v["token_password_hex"].get<std::string>()), "", ""};
  }
  ADD_FAILURE() << "no token for " << stem;
  return {};
}

inline Token AmRmTokenFromFile(const std::string& file) {
  Result<Credentials> creds = ReadCredentialsFile(kCaptures + file);
  EXPECT_OK(creds);
  if (!creds.ok()) return {};
  std::optional<Token> t = creds->FindKind("YARN_AM_RM_TOKEN");
  EXPECT_TRUE(t.has_value());
  return t.value_or(Token{});
}

// The recorded reply to `call_id`.
inline const CapturedFrame* ReplyTo(const Capture& cap, int32_t call_id) {
  for (const CapturedFrame& f : cap.s2c) {
    if (f.call_id == call_id) return &f;
  }
  return nullptr;
}

template <typename T>
inline T RecordedMessage(const std::string& bytes) {
  T m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  return m;
}

// The recorded request body of call `call_id`.
inline std::string RecordedRequest(const Capture& cap, int32_t call_id) {
  for (const CapturedFrame& f : cap.c2s) {
    if (f.call_id == call_id) return f.messages.size() > 2 ? f.messages[2] : "";
  }
  ADD_FAILURE() << "no recorded call " << call_id;
  return "";
}

// Sends every recorded call through `client` with its recorded call id and body, and checks our
// reading of each recorded reply: the body, or the remote exception.
inline void ReplayEveryCall(IpcClient& client, const Capture& cap) {
  for (const CapturedFrame& f : cap.c2s) {
    if (f.call_id < 0) continue;
    SCOPED_TRACE("call " + std::to_string(f.call_id));
    auto header = RecordedMessage<::hadoop::common::RequestHeaderProto>(f.messages[1]);
    RawMessage request = RecordedMessage<RawMessage>(f.messages[2]);
    const CapturedFrame* reply = ReplyTo(cap, f.call_id);
    ASSERT_NE(reply, nullptr);
    auto reply_header = RecordedMessage<RpcResponseHeaderProto>(reply->messages[0]);

    SetNextCallIdForTest(f.call_id);
    RawMessage response;
    Status st = client.Call(header.methodname(), request, &response);
    if (reply_header.status() == RpcResponseHeaderProto::SUCCESS) {
      ASSERT_OK(st);
      EXPECT_EQ(response.SerializeAsString(), reply->messages[1]);
    } else {
      EXPECT_EQ(st.code(), StatusCode::kAborted) << st.ToString();
      EXPECT_THAT(st.message(), StartsWith(reply_header.exceptionclassname() + ": "));
      EXPECT_EQ(RemoteExceptionClass(st), reply_header.exceptionclassname());
    }
  }
}

inline IpcOptions RecordedOptions(const Capture& cap, int port, const std::string& protocol) {
  IpcOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.protocol = protocol;
  o.client_id_for_test = RecordedClientId(cap);
  o.cnonce_for_test = RecordedCnonce(cap);
  o.call_timeout = std::chrono::seconds(10);
  return o;
}

}  // namespace loom::hadoop::replay_test
