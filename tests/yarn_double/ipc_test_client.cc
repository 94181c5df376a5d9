#include "ipc_test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>
#include <vector>

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
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
}

Socket::~Socket() { ::close(fd_); }

void Socket::Send(const std::string& b) { ASSERT_EQ(::send(fd_, b.data(), b.size(), MSG_NOSIGNAL), ssize_t(b.size())); }

std::optional<std::string> Socket::ReadFrame() {
  std::string len;
  if (!ReadN(4, &len)) return std::nullopt;
  uint32_t n = (uint32_t{static_cast<uint8_t>(len[0])} << 24) | (uint32_t{static_cast<uint8_t>(len[1])} << 16) |
               (uint32_t{static_cast<uint8_t>(len[2])} << 8) | uint32_t{static_cast<uint8_t>(len[3])};
  std::string body;
  if (!ReadN(n, &body)) return std::nullopt;
  return len + body;
}

bool Socket::ClosedByServer() {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, 5000) <= 0) return false;
  char c;
  return ::recv(fd_, &c, 1, 0) == 0;
}

bool Socket::ReadN(size_t n, std::string* out) {
  out->clear();
  while (out->size() < n) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0) return false;
    char buf[65536];
    ssize_t r = ::recv(fd_, buf, std::min(sizeof(buf), n - out->size()), 0);
    if (r <= 0) return false;
    out->append(buf, static_cast<size_t>(r));
  }
  return true;
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
