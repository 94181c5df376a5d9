#include "hadoop/testing/fake_ipc_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <spdlog/spdlog.h>

#include "hadoop/proto/hadoop_rpc.pb.h"
#include "hadoop/testing/test_socket.h"
#include "hadoop/wire/ipc_frame.h"
#include "hadoop/wire/sasl_digest.h"

namespace loom::hadoop::testing {

using ::hadoop::common::IpcConnectionContextProto;
using ::hadoop::common::RequestHeaderProto;

namespace {

constexpr std::chrono::milliseconds kHandshakeTimeout{10000};
constexpr std::chrono::milliseconds kIdleTimeout{60000};

void AppendRawDelimited(std::string* out, std::string_view bytes) {
  uint8_t prefix[10];
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(bytes.size()),
                                                                               prefix);
  out->append(reinterpret_cast<const char*>(prefix), end - prefix);
  out->append(bytes);
}

// A server frame: the response header (as a Hadoop server fills it) and an optional body.
std::string ServerFrame(int32_t call_id, RpcResponseHeaderProto::RpcStatusProto status, std::string_view client_id,
                        int32_t retry, const std::string* body, const std::string& exception_class = "",
                        const std::string& message = "",
                        RpcResponseHeaderProto::RpcErrorCodeProto detail = RpcResponseHeaderProto::ERROR_APPLICATION) {
  RpcResponseHeaderProto h;
  h.set_callid(static_cast<uint32_t>(call_id));
  h.set_status(status);
  h.set_serveripcversionnum(kIpcVersion);
  if (status != RpcResponseHeaderProto::SUCCESS) {
    h.set_exceptionclassname(exception_class);
    h.set_errormsg(message);
    h.set_errordetail(detail);
  }
  h.set_clientid(std::string(client_id));
  h.set_retrycount(retry);
  std::string payload;
  AppendDelimited(&payload, h);
  if (body) AppendRawDelimited(&payload, *body);
  std::string frame;
  for (int shift = 24; shift >= 0; shift -= 8) frame.push_back(static_cast<char>((payload.size() >> shift) & 0xff));
  return frame + payload;
}

std::string SaslReply(const RpcSaslProto& sasl) {
  std::string body = sasl.SerializeAsString();
  return ServerFrame(kSaslCallId, RpcResponseHeaderProto::SUCCESS, "", -1, &body);
}

std::string AuthFailure(int32_t call_id, const std::string& cls, const std::string& message) {
  return ServerFrame(call_id, RpcResponseHeaderProto::FATAL, "", -1, nullptr, cls, message,
                     RpcResponseHeaderProto::FATAL_UNAUTHORIZED);
}

// A client frame's header and the messages after it.
struct ClientFrame {
  RpcRequestHeaderProto header;
  std::vector<std::string> messages;
};

Result<ClientFrame> ReadClientFrame(int fd, std::chrono::milliseconds timeout) {
  LOOM_ASSIGN_OR_RETURN(std::string bytes, ReadFrameBytes(fd, timeout));
  LOOM_ASSIGN_OR_RETURN(std::vector<std::string_view> parts, SplitDelimited(std::string_view(bytes).substr(4)));
  ClientFrame f;
  if (parts.empty() || !f.header.ParseFromArray(parts[0].data(), static_cast<int>(parts[0].size()))) {
    return Status::InvalidArgument("bad request header");
  }
  for (size_t i = 1; i < parts.size(); ++i) f.messages.emplace_back(parts[i]);
  return f;
}

Result<RpcSaslProto> ReadSasl(int fd) {
  LOOM_ASSIGN_OR_RETURN(ClientFrame f, ReadClientFrame(fd, kHandshakeTimeout));
  RpcSaslProto sasl;
  if (f.header.callid() != kSaslCallId || f.messages.empty() || !sasl.ParseFromString(f.messages[0])) {
    return Status::InvalidArgument("expected a SASL frame");
  }
  return sasl;
}

}  // namespace

struct FakeIpcServer::Conn {
  explicit Conn(int f, int i) : fd(f), index(i) {}
  ~Conn() { ::close(fd); }
  const int fd;
  const int index;
  std::string client_id;
  std::mutex write_mu;
};

FakeReply FakeReply::Ok(const google::protobuf::MessageLite& response) {
  FakeReply r;
  r.body = response.SerializeAsString();
  return r;
}

FakeReply FakeReply::Error(std::string exception_class, std::string message) {
  FakeReply r;
  r.kind = Kind::kError;
  r.exception_class = std::move(exception_class);
  r.message = std::move(message);
  return r;
}

FakeIpcServer::FakeIpcServer(FakeServerOptions options, Handler handler)
    : handler_(std::move(handler)), separate_challenge_(options.separate_challenge), token_(std::move(options.token)) {
  Result<int> fd = ListenLoopback(&port_);
  if (!fd.ok()) {
    spdlog::error("fake IPC server: {}", fd.status().ToString());
    return;
  }
  listen_fd_ = *fd;
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

FakeIpcServer::~FakeIpcServer() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  CloseConnections();
  for (;;) {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      threads.swap(threads_);
    }
    if (threads.empty()) break;
    for (auto& t : threads) t.join();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void FakeIpcServer::SetToken(Token token) {
  std::lock_guard lock(mu_);
  token_ = std::move(token);
}

void FakeIpcServer::CloseConnections() {
  std::lock_guard lock(mu_);
  for (auto& weak : open_) {
    if (auto c = weak.lock()) {
      ::shutdown(c->fd, SHUT_RDWR);
      ++closes_;
    }
  }
  open_.clear();
}

bool FakeIpcServer::WaitForCloses(int n) const {
  for (int i = 0; i < 500 && closes_.load() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return closes_.load() >= n;
}

std::vector<std::string> FakeIpcServer::contexts() const {
  std::lock_guard lock(mu_);
  return contexts_;
}

void FakeIpcServer::AcceptLoop() {
  while (!stop_) {
    Result<int> fd = AcceptWithin(listen_fd_, std::chrono::milliseconds(50));
    if (!fd.ok()) continue;
    auto conn = std::make_shared<Conn>(*fd, ++connections_);
    std::lock_guard lock(mu_);
    open_.push_back(conn);
    threads_.emplace_back([this, conn] { Serve(conn); });
  }
}

Status FakeIpcServer::Handshake(Conn& conn) {
  LOOM_ASSIGN_OR_RETURN(std::string preamble, ReadExactly(conn.fd, 7, kHandshakeTimeout));
  LOOM_ASSIGN_OR_RETURN(AuthProtocol auth, ParsePreamble(preamble));
  std::optional<Token> token;
  {
    std::lock_guard lock(mu_);
    token = token_;
  }
  if (auth == AuthProtocol::kNone && token) {
    // What the RM's 8030 port answers (negative/01).
    const std::string message = "SIMPLE authentication is not enabled.  Available:[TOKEN]";
    (void)WriteAll(conn.fd,
                   AuthFailure(kAuthFailedCallId, "org.apache.hadoop.security.AccessControlException", message));
    return Status::Unauthenticated(message);
  }
  if (auth == AuthProtocol::kSasl) {
    LOOM_ASSIGN_OR_RETURN(RpcSaslProto negotiate, ReadSasl(conn.fd));
    if (negotiate.state() != RpcSaslProto::NEGOTIATE) return Status::InvalidArgument("expected NEGOTIATE");
    if (!token) {
      RpcSaslProto success;
      success.set_state(RpcSaslProto::SUCCESS);  // "switch to simple"
      LOOM_RETURN_IF_ERROR(WriteAll(conn.fd, SaslReply(success)));
    } else {
      const std::string nonce = NewCnonce();
      RpcSaslProto offer;
      offer.set_state(RpcSaslProto::NEGOTIATE);
      RpcSaslProto::SaslAuth* entry = offer.add_auths();
      entry->set_method("TOKEN");
      entry->set_mechanism("DIGEST-MD5");
      entry->set_protocol("");
      entry->set_serverid("default");
      RpcSaslProto::SaslAuth expected_echo = *entry;
      if (!separate_challenge_) entry->set_challenge(MakeDigestChallenge(nonce));
      LOOM_RETURN_IF_ERROR(WriteAll(conn.fd, SaslReply(offer)));
      LOOM_ASSIGN_OR_RETURN(RpcSaslProto initiate, ReadSasl(conn.fd));
      // The real server compares the echoed auth with protobuf equality, presence included.
      if (initiate.state() != RpcSaslProto::INITIATE || initiate.auths_size() != 1 ||
          initiate.auths(0).SerializeAsString() != expected_echo.SerializeAsString()) {
        const std::string message = "TOKEN authentication is not enabled.  Available:[TOKEN]";
        (void)WriteAll(conn.fd, AuthFailure(kSaslCallId, "org.apache.hadoop.security.AccessControlException", message));
        return Status::Unauthenticated(message);
      }
      std::string client_token = initiate.token();
      if (separate_challenge_) {
        RpcSaslProto challenge;
        challenge.set_state(RpcSaslProto::CHALLENGE);
        challenge.set_token(MakeDigestChallenge(nonce));
        LOOM_RETURN_IF_ERROR(WriteAll(conn.fd, SaslReply(challenge)));
        LOOM_ASSIGN_OR_RETURN(RpcSaslProto response, ReadSasl(conn.fd));
        if (response.state() != RpcSaslProto::RESPONSE || !initiate.token().empty()) {
          return Status::InvalidArgument("expected an INITIATE without token, then RESPONSE");
        }
        client_token = response.token();
      }
      Result<DigestVerified> verified =
          DigestVerify(client_token, nonce, [&](const std::string& identifier) -> Result<std::string> {
            if (identifier != token->identifier) return Status::NotFound("token identifier not found");
            return token->password;
          });
      if (!verified.ok()) {
        (void)WriteAll(conn.fd, AuthFailure(kSaslCallId, "javax.security.sasl.SaslException",
                                            verified.status().message()));
        return verified.status();
      }
      RpcSaslProto success;
      success.set_state(RpcSaslProto::SUCCESS);
      success.set_token(verified->success_token);
      LOOM_RETURN_IF_ERROR(WriteAll(conn.fd, SaslReply(success)));
    }
  }
  LOOM_ASSIGN_OR_RETURN(ClientFrame context_frame, ReadClientFrame(conn.fd, kHandshakeTimeout));
  IpcConnectionContextProto context;
  if (context_frame.header.callid() != kConnectionContextCallId || context_frame.messages.empty() ||
      !context.ParseFromString(context_frame.messages[0])) {
    return Status::InvalidArgument("expected the connection context");
  }
  conn.client_id = context_frame.header.clientid();
  std::lock_guard lock(mu_);
  contexts_.push_back(context.userinfo().effectiveuser() + "@" + context.protocol());
  return Status::Ok();
}

void FakeIpcServer::Serve(std::shared_ptr<Conn> conn) {
  if (Status s = Handshake(*conn); !s.ok()) {
    std::lock_guard lock(mu_);
    contexts_.push_back("auth failed: " + s.message());
    return;
  }
  for (;;) {
    Result<ClientFrame> f = ReadClientFrame(conn->fd, kIdleTimeout);
    if (!f.ok()) return;  // closed (by either side) or garbage
    if (f->header.callid() < 0) continue;  // a ping
    RequestHeaderProto call_header;
    if (f->messages.empty() || !call_header.ParseFromString(f->messages[0])) return;
    FakeCall call{conn->index, f->header.callid(), call_header.methodname(),
                  f->messages.size() > 1 ? f->messages[1] : std::string()};
    FakeReply reply = handler_(call);
    std::lock_guard lock(mu_);
    threads_.emplace_back([this, conn, call = std::move(call), reply = std::move(reply)] { Reply(conn, call, reply); });
  }
}

void FakeIpcServer::Reply(std::shared_ptr<Conn> conn, FakeCall call, FakeReply reply) {
  if (reply.delay.count() > 0) std::this_thread::sleep_for(reply.delay);
  std::string bytes;
  switch (reply.kind) {
    case FakeReply::Kind::kSuccess:
      bytes = ServerFrame(call.call_id, RpcResponseHeaderProto::SUCCESS, conn->client_id, 0, &reply.body);
      break;
    case FakeReply::Kind::kError:
      bytes = ServerFrame(call.call_id, RpcResponseHeaderProto::ERROR, conn->client_id, 0, nullptr,
                          reply.exception_class, reply.message);
      break;
    case FakeReply::Kind::kFatal:
      bytes = ServerFrame(call.call_id, RpcResponseHeaderProto::FATAL, conn->client_id, 0, nullptr,
                          reply.exception_class, reply.message, RpcResponseHeaderProto::FATAL_UNKNOWN);
      reply.close_after = true;
      break;
    case FakeReply::Kind::kNoReply:
      break;
    case FakeReply::Kind::kRaw:
      bytes = reply.body;
      break;
  }
  std::lock_guard lock(conn->write_mu);
  if (!bytes.empty()) (void)WriteAll(conn->fd, bytes);
  if (reply.close_after) {
    ::shutdown(conn->fd, SHUT_RDWR);
    ++closes_;
  }
}

}  // namespace loom::hadoop::testing
