#include "ipc_test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string_view>
#include <vector>

#include "core/inet_address.h"
#include "hadoop/testing/test_socket.h"
#include "hadoop/wire/ipc_frame.h"
#include "hadoop/wire/sasl_digest.h"

namespace loom::yarn_double {

using ::hadoop::common::RpcResponseHeaderProto;
using ::hadoop::common::RpcSaslProto;

Reply Decode(const std::string& frame) {
  Reply r;
  Result<std::vector<std::string_view>> parts = hadoop::SplitDelimited(std::string_view(frame).substr(4));
  EXPECT_TRUE(parts.ok() && !parts->empty());
  if (!parts.ok() || parts->empty()) return r;
  r.header_bytes = std::string((*parts)[0]);
  r.header.ParseFromString(r.header_bytes);
  if (parts->size() > 1) r.body = std::string((*parts)[1]);
  return r;
}

Socket::Socket(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = Ipv4Address(INADDR_LOOPBACK, port);
  connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  EXPECT_TRUE(connected_) << "connect to port " << port;
}

Socket::~Socket() { ::close(fd_); }

void Socket::Send(const std::string& b) { ASSERT_EQ(::send(fd_, b.data(), b.size(), MSG_NOSIGNAL), ssize_t(b.size())); }

void Socket::SendSasl(const RpcSaslProto& msg) {
  auto header = hadoop::MakeRequestHeader(hadoop::kSaslCallId, "", -1);
  Send(hadoop::EncodeFrame({&header, &msg}));
}

std::optional<std::string> Socket::ReadFrame() {
  Result<std::string> frame = hadoop::testing::ReadFrameBytes(fd_, std::chrono::seconds(10));
  if (!frame.ok()) return std::nullopt;
  received_ += *frame;
  return *std::move(frame);
}

bool Socket::Read(RpcResponseHeaderProto* header, std::string* body) {
  std::optional<std::string> frame = ReadFrame();
  if (!frame) return false;
  Reply r = Decode(*frame);
  *header = r.header;
  *body = r.body.value_or("");
  return true;
}

RpcSaslProto Socket::ReadSasl(RpcResponseHeaderProto* header) {
  std::string body;
  RpcSaslProto msg;
  if (Read(header, &body)) msg.ParseFromString(body);
  return msg;
}

bool Socket::ClosedByServer() {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, 5000) <= 0) return false;
  char c;
  return ::recv(fd_, &c, 1, 0) == 0;
}

void TestIpc::Simple(const std::string& user, const std::string& protocol) {
  socket_.Send(hadoop::Preamble(hadoop::AuthProtocol::kNone));
  SendContext(user, protocol);
}

Status TestIpc::Token(const hadoop::Token& token, const std::string& protocol) {
  RpcSaslProto negotiate;
  negotiate.set_state(RpcSaslProto::NEGOTIATE);
  auto sasl_header = hadoop::MakeRequestHeader(hadoop::kSaslCallId, "", -1);
  socket_.Send(hadoop::Preamble(hadoop::AuthProtocol::kSasl) + hadoop::EncodeFrame({&sasl_header, &negotiate}));
  std::optional<std::string> f = socket_.ReadFrame();
  if (!f) return Status::Unavailable("no NEGOTIATE reply");
  RpcSaslProto offer;
  offer.ParseFromString(*Decode(*f).body);
  RpcSaslProto::SaslAuth auth = offer.auths(0);
  LOOM_ASSIGN_OR_RETURN(hadoop::DigestChallenge ch, hadoop::ParseDigestChallenge(auth.challenge()));
  LOOM_ASSIGN_OR_RETURN(hadoop::DigestResult dr, hadoop::DigestRespond(token, ch, hadoop::NewCnonce(),
                                                                   auth.protocol() + "/" + auth.serverid()));
  RpcSaslProto initiate;
  initiate.set_state(RpcSaslProto::INITIATE);
  initiate.set_token(dr.response_token);
  auth.clear_challenge();
  *initiate.add_auths() = auth;
  socket_.Send(hadoop::EncodeFrame({&sasl_header, &initiate}));
  f = socket_.ReadFrame();
  if (!f) return Status::Unavailable("no SASL reply");
  Reply r = Decode(*f);
  if (r.header.status() != RpcResponseHeaderProto::SUCCESS) return hadoop::RemoteErrorStatus(r.header);
  RpcSaslProto success;
  success.ParseFromString(*r.body);
  LOOM_RETURN_IF_ERROR(hadoop::VerifyRspAuth(dr, success.token()));
  SendContext("", protocol);
  return Status::Ok();
}

Reply TestIpc::Call(const std::string& method, const std::string& protocol, const google::protobuf::Message& request) {
  auto header = hadoop::MakeRequestHeader(next_call_++, client_id_, 0);
  ::hadoop::common::RequestHeaderProto rh;
  rh.set_methodname(method);
  rh.set_declaringclassprotocolname(protocol);
  rh.set_clientprotocolversion(1);
  socket_.Send(hadoop::EncodeFrame({&header, &rh, &request}));
  std::optional<std::string> f = socket_.ReadFrame();
  EXPECT_TRUE(f.has_value()) << method;
  return f ? Decode(*f) : Reply{};
}

void TestIpc::SendContext(const std::string& user, const std::string& protocol) {
  ::hadoop::common::IpcConnectionContextProto ctx;
  auto* ui = ctx.mutable_userinfo();
  if (!user.empty()) ui->set_effectiveuser(user);
  ctx.set_protocol(protocol);
  auto header = hadoop::MakeRequestHeader(hadoop::kConnectionContextCallId, client_id_, -1);
  socket_.Send(hadoop::EncodeFrame({&header, &ctx}));
}

}  // namespace loom::yarn_double
