#pragma once
// For the wire tests only: the SASL frames of a recorded connection (tests/data/yarn-captures/
// kerberos), walked with Loom's frame parser. Every frame of a SASL connection, before and
// after SUCCESS, is a callId -33 RpcSaslProto, so one walk serves the DIGEST-MD5 and the GSSAPI
// layers' tests.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/testing.h"
#include "hadoop/wire/ipc_frame.h"

namespace loom::hadoop {

// One SASL frame as recorded: its header's call id and its RpcSaslProto.
struct SaslFrame {
  int32_t call_id = 0;
  int32_t retry_count = 0;  // requests only
  std::string client_id;    // requests only
  RpcSaslProto sasl;
};

// Every frame of one recorded direction (the c2s stream starts with the 7-byte preamble);
// what does not parse fails the test.
inline std::vector<SaslFrame> RecordedSaslFrames(const std::string& stream, bool client_to_server) {
  FrameReader reader;
  if (client_to_server) {
    Result<AuthProtocol> auth = ParsePreamble(std::string_view(stream).substr(0, 7));
    EXPECT_OK(auth);
    EXPECT_EQ(auth.ok() ? *auth : AuthProtocol::kNone, AuthProtocol::kSasl);
  }
  reader.Feed(client_to_server ? std::string_view(stream).substr(7) : std::string_view(stream));
  std::vector<SaslFrame> out;
  for (;;) {
    Result<std::optional<std::string>> frame = reader.Next();
    EXPECT_OK(frame);
    if (!frame.ok() || !*frame) break;
    Result<std::vector<std::string_view>> parts = SplitDelimited(**frame);
    EXPECT_OK(parts);
    if (!parts.ok() || parts->size() != 2) {
      ADD_FAILURE() << "frame of " << (parts.ok() ? parts->size() : 0) << " messages";
      break;
    }
    SaslFrame f;
    if (client_to_server) {
      RpcRequestHeaderProto h;
      EXPECT_TRUE(h.ParseFromArray((*parts)[0].data(), static_cast<int>((*parts)[0].size())));
      f.call_id = h.callid();
      f.retry_count = h.retrycount();
      f.client_id = h.clientid();
    } else {
      RpcResponseHeaderProto h;
      EXPECT_TRUE(h.ParseFromArray((*parts)[0].data(), static_cast<int>((*parts)[0].size())));
      EXPECT_EQ(h.status(), RpcResponseHeaderProto::SUCCESS);
      f.call_id = ResponseCallId(h);
    }
    EXPECT_TRUE(f.sasl.ParseFromArray((*parts)[1].data(), static_cast<int>((*parts)[1].size())));
    out.push_back(std::move(f));
  }
  EXPECT_EQ(reader.buffered(), 0u);
  return out;
}

}  // namespace loom::hadoop
