// IpcClient with a negotiated DIGEST-MD5 security layer (hadoop.rpc.protection integrity or
// privacy) against a scripted server: after SASL SUCCESS every frame both ways is a callId -33
// WRAP (K4.9-10); a frame in clear, or a token that fails its check, ends the connection.
#include <unistd.h>

#include <thread>

#include "core/testing.h"
#include "hadoop/ipc/ipc_client.h"
#include "hadoop/proto/yarn.pb.h"
#include "hadoop/testing/test_socket.h"
#include "hadoop/wire/ipc_frame.h"
#include "hadoop/wire/sasl_digest.h"

namespace loom::hadoop {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
namespace ypb = ::hadoop::yarn;

const Token kToken{"ident-bytes", "s3cret-password", "YARN_AM_RM_TOKEN", ""};

enum class Reply { kWrapped, kSplitAcrossTokens, kInClear, kTampered };

std::string Frame(const std::string& payload) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((payload.size() >> (24 - 8 * i)) & 0xff);
  return out + payload;
}

std::string ResponseFrame(int32_t call_id, const google::protobuf::MessageLite& body) {
  RpcResponseHeaderProto h;
  h.set_callid(static_cast<uint32_t>(call_id));
  h.set_status(RpcResponseHeaderProto::SUCCESS);
  std::string payload;
  AppendDelimited(&payload, h);
  AppendDelimited(&payload, body);
  return Frame(payload);
}

std::string SaslReply(const RpcSaslProto& sasl) { return ResponseFrame(kSaslCallId, sasl); }

RpcSaslProto ParseSasl(const std::string& frame) {
  Result<std::vector<std::string_view>> parts = SplitDelimited(std::string_view(frame).substr(4));
  RpcSaslProto sasl;
  EXPECT_TRUE(parts.ok() && parts->size() == 2 && sasl.ParseFromArray((*parts)[1].data(), (*parts)[1].size()));
  return sasl;
}

// Serves one connection: DIGEST-MD5 offering `qop`, then one call answered as `reply` says.
// Returns what the server saw (the inner frames' call ids, or an error).
class ScriptedServer {
 public:
  ScriptedServer(std::string qop, Reply reply) : qop_(std::move(qop)), reply_(reply) {
    Result<int> fd = testing::ListenLoopback(&port_);
    EXPECT_OK(fd);
    listen_fd_ = *fd;
    thread_ = std::thread([this] { status_ = Serve(); });
  }
  ~ScriptedServer() {
    if (thread_.joinable()) thread_.join();
    ::close(listen_fd_);
  }
  int port() const { return port_; }
  // Joins the server; its verdict.
  Status Finish() {
    if (thread_.joinable()) thread_.join();
    return status_;
  }
  std::vector<int32_t> inner_call_ids;

 private:
  Status Serve() {
    LOOM_ASSIGN_OR_RETURN(int fd, testing::AcceptWithin(listen_fd_, 10s));
    Status s = Talk(fd);
    ::close(fd);
    return s;
  }

  Status Talk(int fd) {
    LOOM_ASSIGN_OR_RETURN(std::string preamble, testing::ReadExactly(fd, 7, 10s));
    LOOM_ASSIGN_OR_RETURN(std::string negotiate, testing::ReadFrameBytes(fd, 10s));
    RpcSaslProto offer;
    offer.set_state(RpcSaslProto::NEGOTIATE);
    auto* auth = offer.add_auths();
    auth->set_method("TOKEN");
    auth->set_mechanism("DIGEST-MD5");
    auth->set_protocol("");
    auth->set_serverid("default");
    auth->set_challenge(MakeDigestChallenge("n0nce", {qop_}));
    LOOM_RETURN_IF_ERROR(testing::WriteAll(fd, SaslReply(offer)));
    LOOM_ASSIGN_OR_RETURN(std::string initiate, testing::ReadFrameBytes(fd, 10s));
    LOOM_ASSIGN_OR_RETURN(DigestVerified v, DigestVerifyWithPassword(ParseSasl(initiate).token(), "n0nce",
                                                                     kToken.identifier, kToken.password, {qop_}));
    RpcSaslProto success;
    success.set_state(RpcSaslProto::SUCCESS);
    success.set_token(v.success_token);
    LOOM_RETURN_IF_ERROR(testing::WriteAll(fd, SaslReply(success)));
    LOOM_ASSIGN_OR_RETURN(std::unique_ptr<SaslSecurityLayer> layer,
                          NewDigestSecurityLayer(v.qop, v.cipher, v.ha1, DigestSide::kServer));
    if (!layer) return Status::Internal("no layer negotiated");

    // The client's first WRAP carries the connection context and the call (K4.10).
    LOOM_ASSIGN_OR_RETURN(std::string wrap, testing::ReadFrameBytes(fd, 10s));
    RpcSaslProto sasl = ParseSasl(wrap);
    if (sasl.state() != RpcSaslProto::WRAP) return Status::Internal("expected WRAP");
    LOOM_ASSIGN_OR_RETURN(std::string plain, layer->Unwrap(sasl.token()));
    FrameReader inner;
    inner.Feed(plain);
    for (;;) {
      LOOM_ASSIGN_OR_RETURN(std::optional<std::string> body, inner.Next());
      if (!body) break;
      RpcRequestHeaderProto h;
      LOOM_ASSIGN_OR_RETURN(std::vector<std::string_view> parts, SplitDelimited(*body));
      h.ParseFromArray(parts[0].data(), static_cast<int>(parts[0].size()));
      inner_call_ids.push_back(h.callid());
    }
    if (inner_call_ids.size() != 2) return Status::Internal("expected the context and one call in the first WRAP");

    ypb::GetApplicationReportResponseProto response;
    response.mutable_application_report()->set_user("wrapped-user");
    std::string frame = ResponseFrame(inner_call_ids[1], response);
    auto wrapped = [&](std::string_view bytes) -> Result<std::string> {
      LOOM_ASSIGN_OR_RETURN(std::string token, layer->Wrap(bytes));
      RpcSaslProto w;
      w.set_state(RpcSaslProto::WRAP);
      w.set_token(std::move(token));
      return SaslReply(w);
    };
    std::string out;
    switch (reply_) {
      case Reply::kWrapped: {
        LOOM_ASSIGN_OR_RETURN(out, wrapped(frame));
        break;
      }
      case Reply::kSplitAcrossTokens: {
        LOOM_ASSIGN_OR_RETURN(std::string a, wrapped(std::string_view(frame).substr(0, 3)));
        LOOM_ASSIGN_OR_RETURN(std::string b, wrapped(std::string_view(frame).substr(3)));
        out = a + b;
        break;
      }
      case Reply::kInClear:
        out = frame;
        break;
      case Reply::kTampered: {
        LOOM_ASSIGN_OR_RETURN(out, wrapped(frame));
        out[out.size() - 12] = static_cast<char>(out[out.size() - 12] ^ 0x40);  // inside the ciphertext
        break;
      }
    }
    LOOM_RETURN_IF_ERROR(testing::WriteAll(fd, out));
    testing::ReadUntilEof(fd, 2s);
    return Status::Ok();
  }

  std::string qop_;
  Reply reply_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  Status status_;
};

Status CallOnce(int port, const std::string& protection, ypb::GetApplicationReportResponseProto* response) {
  IpcOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.protocol = kAmProtocol;
  o.token = kToken;
  o.rpc_protection = protection;
  o.call_timeout = 10s;
  o.one_call_per_connection = true;
  IpcClient client(o);
  ypb::GetApplicationReportRequestProto req;
  return client.Call("getApplicationReport", req, response);
}

TEST(IpcProtection, PrivacyAndIntegrityCallsRoundTrip) {
  for (auto [qop, protection] : {std::pair{"auth-conf", "privacy"}, {"auth-int", "integrity"}}) {
    for (Reply reply : {Reply::kWrapped, Reply::kSplitAcrossTokens}) {
      SCOPED_TRACE(std::string(qop) + (reply == Reply::kWrapped ? " one token" : " split"));
      ScriptedServer server(qop, reply);
      ypb::GetApplicationReportResponseProto response;
      EXPECT_OK(CallOnce(server.port(), protection, &response));
      EXPECT_OK(server.Finish());
      EXPECT_EQ(response.application_report().user(), "wrapped-user");
      ASSERT_EQ(server.inner_call_ids.size(), 2u);
      EXPECT_EQ(server.inner_call_ids[0], kConnectionContextCallId);
      EXPECT_GE(server.inner_call_ids[1], 0);
    }
  }
}

TEST(IpcProtection, FrameInClearAfterSuccessIsAProtocolError) {
  ScriptedServer server("auth-conf", Reply::kInClear);
  ypb::GetApplicationReportResponseProto response;
  EXPECT_STATUS(CallOnce(server.port(), "privacy", &response), kUnavailable,
                HasSubstr("protocol error: the server sent a frame in clear"));
  EXPECT_OK(server.Finish());
}

TEST(IpcProtection, TamperedResponseEndsTheConnection) {
  ScriptedServer server("auth-conf", Reply::kTampered);
  ypb::GetApplicationReportResponseProto response;
  EXPECT_STATUS(CallOnce(server.port(), "privacy", &response), kUnavailable, HasSubstr("fails its integrity check"));
  EXPECT_OK(server.Finish());
}

TEST(IpcProtection, ClientAllowingLessThanTheServerIsRefusedNamingTheSetting) {
  ScriptedServer server("auth-conf", Reply::kWrapped);
  ypb::GetApplicationReportResponseProto response;
  EXPECT_STATUS(CallOnce(server.port(), "authentication", &response), kFailedPrecondition,
                HasSubstr("hadoop.rpc.protection"));
  EXPECT_STATUS(server.Finish(), kUnavailable, ::testing::_);  // the client hung up
}

TEST(IpcProtection, UnknownProtectionValueIsRefused) {
  ScriptedServer server("auth-conf", Reply::kWrapped);
  ypb::GetApplicationReportResponseProto response;
  EXPECT_STATUS(CallOnce(server.port(), "secret", &response), kInvalidArgument,
                HasSubstr("hadoop.rpc.protection: unknown value 'secret'"));
  EXPECT_STATUS(server.Finish(), kUnavailable, ::testing::_);
}

}  // namespace
}  // namespace loom::hadoop
