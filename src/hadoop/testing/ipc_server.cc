// The test servers' Hadoop IPC server (ipc_server.h): the listener and its connection threads,
// and a connection's socket I/O, framing (WRAP frames once SASL negotiated a layer) and calls.
// A connection's set-up (preamble, SASL, connection context) is in ipc_server_sasl.cc.

#include "hadoop/testing/ipc_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <google/protobuf/io/coded_stream.h>

#include "hadoop/testing/gss_acceptor.h"
#include "hadoop/testing/ipc_server_internal.h"
#include "hadoop/wire/ipc_frame.h"
#include "hadoop/wire/sasl_digest.h"
#include "hadoop/wire/sasl_layer.h"

namespace loom::hadoop::testing {

namespace ipc_internal {

namespace {

std::string VarintPrefixed(std::string_view bytes) {
  uint8_t prefix[10];
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(bytes.size()),
                                                                                 prefix);
  std::string out(reinterpret_cast<const char*>(prefix), end - prefix);
  out.append(bytes);
  return out;
}

std::string BigEndian32(uint32_t v) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (24 - 8 * i)) & 0xff);
  return out;
}

}  // namespace

void Session::Run() {
  info_.peer_ip = PeerIp();
  bool set_up = Handshake();
  ReportSetup(set_up);
  if (!set_up) return CloseGracefully();
  while (!stopping_->load()) {
    std::optional<std::string> frame = ReadPlainFrame();
    if (!frame) break;
    if (!HandleFrame(*frame)) break;
  }
  // The delayed replies still write to the socket: it is closed only after them.
  for (std::thread& t : delayed_) t.join();
  CloseGracefully();
}

void Session::ReportSetup(bool ok) {
  if (!options_.on_setup || stopping_->load()) return;
  if (ok) return options_.on_setup(info_, Status::Ok());
  std::string why;
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    why = refusal_.empty() ? "the connection ended during set-up" : refusal_;
  }
  options_.on_setup(info_, Status::Unauthenticated(why));
}

// ---- socket I/O ----------------------------------------------------------------------------

std::string Session::PeerIp() const {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "127.0.0.1";
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &addr.sin_addr, buf, sizeof(buf));
  return buf;
}

bool Session::ReadExact(char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::recv(fd_, buf + got, n - got, 0);
    if (r == 0) return false;
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

// Waits for the next frame. Like Hadoop's server, drops a connection idle for too long.
std::optional<std::string> Session::ReadFrame() {
  if (options_.idle_close_ms > 0) {
    pollfd p{fd_, POLLIN, 0};
    int r;
    do r = ::poll(&p, 1, options_.idle_close_ms); while (r < 0 && errno == EINTR);
    if (r <= 0) return std::nullopt;
  }
  char len_bytes[4];
  if (!ReadExact(len_bytes, 4)) return std::nullopt;
  uint32_t len = 0;
  for (char c : len_bytes) len = (len << 8) | static_cast<uint8_t>(c);
  if (len > hadoop::kMaxFrameBytes) {
    SendError(hadoop::kAuthFailedCallId, "", -1,
              Fatal(kIpcException,
                    "Requested data length " + std::to_string(len) +
                        " is longer than maximum configured RPC length " + std::to_string(hadoop::kMaxFrameBytes),
                    RpcResponseHeaderProto::FATAL_INVALID_RPC_HEADER));
    return std::nullopt;
  }
  std::string body(len, '\0');
  if (len > 0 && !ReadExact(body.data(), len)) return std::nullopt;
  return body;
}

// The next ordinary frame after SASL: as read, or reassembled from the client's WRAP tokens
// once a security layer is negotiated (a frame may span tokens, as Hadoop's server allows).
// nullopt: the connection is over (a frame in clear, or a token that fails its check).
std::optional<std::string> Session::ReadPlainFrame() {
  if (!layer_) return ReadFrame();
  for (;;) {
    if (plain_.size() >= 4) {
      uint32_t len = 0;
      for (int i = 0; i < 4; ++i) len = (len << 8) | static_cast<uint8_t>(plain_[static_cast<size_t>(i)]);
      if (len > hadoop::kMaxFrameBytes) return std::nullopt;
      if (plain_.size() >= 4 + static_cast<size_t>(len)) {
        std::string body = plain_.substr(4, len);
        plain_.erase(0, 4 + static_cast<size_t>(len));
        return body;
      }
    }
    std::optional<std::string> frame = ReadFrame();
    if (!frame) return std::nullopt;
    RpcRequestHeaderProto header;
    RpcSaslProto msg;
    Result<std::vector<std::string_view>> parts = hadoop::SplitDelimited(*frame);
    bool wrapped = parts.ok() && parts->size() == 2 &&
                   header.ParseFromArray((*parts)[0].data(), static_cast<int>((*parts)[0].size())) &&
                   header.callid() == hadoop::kSaslCallId &&
                   msg.ParseFromArray((*parts)[1].data(), static_cast<int>((*parts)[1].size())) &&
                   msg.state() == RpcSaslProto::WRAP;
    if (!wrapped) {
      // Hadoop's server would try to unwrap it and fail: the connection ends.
      return Drop("a frame in clear after SASL negotiated " + std::string(layer_->Qop()));
    }
    Result<std::string> plain = layer_->Unwrap(msg.token());
    if (!plain.ok()) {
      return Drop(plain.status().message());
    }
    plain_ += *plain;
  }
}

// Ends a wrapped stream, saying why on stderr (the test's log): Hadoop closes silently.
std::nullopt_t Session::Drop(const std::string& why) {
  std::fprintf(stderr, "yarn double %s: closing a connection from %s: %s\n", options_.name.c_str(),
               info_.peer_ip.c_str(), why.c_str());
  return std::nullopt;
}

void Session::SendAll(const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t r = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return;
    sent += static_cast<size_t>(r);
  }
}

// A response frame: the header, then the body (SUCCESS only), both varint-delimited. Callers
// hold write_mu_.
void Session::SendResponse(const RpcResponseHeaderProto& header, const std::string* body) {
  std::string payload = VarintPrefixed(header.SerializeAsString());
  if (body) payload += VarintPrefixed(*body);
  std::string frame = BigEndian32(static_cast<uint32_t>(payload.size())) + payload;
  if (!layer_) return SendAll(frame);
  // Wrapped as recorded (rpc/08): header {callId -33, status SUCCESS} only, then
  // RpcSaslProto{WRAP, token}; one token per response unless it is too large for one.
  std::string out;
  for (size_t at = 0; at < frame.size(); at += hadoop::kSaslMaxWrapPlainBytes) {
    Result<std::string> token = layer_->Wrap(std::string_view(frame).substr(at, hadoop::kSaslMaxWrapPlainBytes));
    if (!token.ok()) return;
    RpcResponseHeaderProto h;
    h.set_callid(static_cast<uint32_t>(hadoop::kSaslCallId));
    h.set_status(RpcResponseHeaderProto::SUCCESS);
    RpcSaslProto wrap;
    wrap.set_state(RpcSaslProto::WRAP);
    wrap.set_token(*token);
    std::string p = VarintPrefixed(h.SerializeAsString()) + VarintPrefixed(wrap.SerializeAsString());
    out += BigEndian32(static_cast<uint32_t>(p.size())) + p;
  }
  SendAll(out);
}

RpcResponseHeaderProto Session::Header(int32_t call_id, RpcResponseHeaderProto::RpcStatusProto status,
                                       const std::string& client_id, int32_t retry) {
  RpcResponseHeaderProto h;
  h.set_callid(static_cast<uint32_t>(call_id));
  h.set_status(status);
  h.set_serveripcversionnum(hadoop::kIpcVersion);
  h.set_clientid(client_id);
  h.set_retrycount(retry);
  return h;
}

void Session::SendSuccess(int32_t call_id, const std::string& client_id, int32_t retry, const std::string& body) {
  std::lock_guard<std::mutex> lock(write_mu_);
  SendResponse(Header(call_id, RpcResponseHeaderProto::SUCCESS, client_id, retry), &body);
}

void Session::SendError(int32_t call_id, const std::string& client_id, int32_t retry, const RpcError& e) {
  RpcResponseHeaderProto h =
      Header(call_id, e.fatal ? RpcResponseHeaderProto::FATAL : RpcResponseHeaderProto::ERROR, client_id, retry);
  h.set_exceptionclassname(e.exception_class);
  h.set_errormsg(e.message);
  h.set_errordetail(e.detail);
  // Field order on the wire is by number, so the error fields precede clientId as recorded.
  std::lock_guard<std::mutex> lock(write_mu_);
  if (e.fatal) refusal_ = e.message;
  SendResponse(h, nullptr);
}

// Like the Java server: half-close, then drain what the client already sent so the kernel
// sends FIN rather than RST (an RST could destroy the reply before the client reads it).
void Session::CloseGracefully() {
  ::shutdown(fd_, SHUT_WR);
  char buf[4096];
  for (int i = 0; i < 64; ++i) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) break;
    ssize_t r = ::recv(fd_, buf, sizeof(buf), 0);
    if (r <= 0) break;
  }
}

// ---- calls ---------------------------------------------------------------------------------

// One frame after set-up; false: close the connection.
bool Session::HandleFrame(const std::string& frame) {
  RpcRequestHeaderProto header;
  Result<std::vector<std::string_view>> parts = hadoop::SplitDelimited(frame);
  if (!parts.ok() || parts->empty() || !header.ParseFromArray((*parts)[0].data(), (*parts)[0].size())) {
    SendError(hadoop::kAuthFailedCallId, "", -1,
              Fatal(kIpcException, "malformed RPC header", RpcResponseHeaderProto::FATAL_INVALID_RPC_HEADER));
    return false;
  }
  int32_t call_id = header.callid();
  if (call_id == hadoop::kPingCallId) return true;
  if (header.rpcop() == RpcRequestHeaderProto::RPC_CLOSE_CONNECTION) return false;
  if (call_id < 0) {
    SendError(call_id, header.clientid(), header.retrycount(),
              Fatal(kIpcException, "Unknown out of band call #" + std::to_string(call_id),
                    RpcResponseHeaderProto::FATAL_INVALID_RPC_HEADER));
    return false;
  }
  if (header.rpckind() != ::hadoop::common::RPC_PROTOCOL_BUFFER) {
    SendError(call_id, header.clientid(), header.retrycount(),
              Fatal(kIpcException, "Unknown rpc kind in rpc header" + std::to_string(header.rpckind()),
                    RpcResponseHeaderProto::FATAL_INVALID_RPC_HEADER));
    return false;
  }
  RequestHeaderProto request_header;
  if (parts->size() < 3 ||
      !request_header.ParseFromArray((*parts)[1].data(), static_cast<int>((*parts)[1].size()))) {
    SendError(call_id, header.clientid(), header.retrycount(),
              Fatal(kIpcException, "Error decoding the request of call #" + std::to_string(call_id),
                    RpcResponseHeaderProto::FATAL_DESERIALIZING_REQUEST));
    return false;
  }
  if (!options_.protocol.empty() && request_header.declaringclassprotocolname() != options_.protocol) {
    SendError(call_id, header.clientid(), header.retrycount(),
              RpcError{"org.apache.hadoop.ipc.RpcNoSuchProtocolException",
                       "Unknown protocol: " + request_header.declaringclassprotocolname(),
                       RpcResponseHeaderProto::ERROR_NO_SUCH_PROTOCOL, false});
    return true;
  }
  CallReply reply = options_.respond(Call{call_id, request_header.methodname(), (*parts)[2], info_});
  if (reply.delay.count() <= 0) return Reply(call_id, header.clientid(), header.retrycount(), reply);
  // Later calls are read and answered meanwhile. A FATAL still ends the connection: shut it,
  // which also ends the read loop.
  delayed_.emplace_back([this, call_id, client_id = header.clientid(), retry = header.retrycount(),
                         reply = std::move(reply)] {
    std::this_thread::sleep_for(reply.delay);  // the script's delay, not a wait of a test
    bool open = Reply(call_id, client_id, retry, reply);
    ++*delayed_written_;  // after the write: a test waiting for it finds the bytes sent
    if (!open && !reply.close_after) ::shutdown(fd_, SHUT_RDWR);
  });
  return true;
}

bool Session::Reply(int32_t call_id, const std::string& client_id, int32_t retry, const CallReply& reply) {
  bool fatal = false;
  if (!reply.result) {
    std::lock_guard<std::mutex> lock(write_mu_);
    SendAll(reply.raw);
  } else if (auto* body = std::get_if<std::string>(&*reply.result)) {
    SendSuccess(call_id, client_id, retry, *body);
  } else {
    const RpcError& e = std::get<RpcError>(*reply.result);
    SendError(call_id, client_id, retry, e);
    fatal = e.fatal;
  }
  if (reply.close_after) shut_();
  return !fatal && !reply.close_after;
}

}  // namespace ipc_internal

using ipc_internal::Session;

IpcServer::IpcServer(IpcServerOptions options) : options_(std::move(options)) {
  if (!options_.respond && options_.handle) {
    options_.respond = [handle = options_.handle](const Call& call) -> CallReply {
      return handle(call.method, call.request, call.connection);
    };
  }
  if (!options_.next_nonce) options_.next_nonce = [] { return NewCnonce(); };
}

IpcServer::~IpcServer() { Stop(); }

Status IpcServer::Start() {
  if (Result<std::vector<std::string>> q = hadoop::QopsFromRpcProtection(options_.rpc_protection); !q.ok()) {
    return q.status().WithContext("IPC server " + options_.name);
  }
  if (!options_.kerberos_principal.empty()) {
    // Fail at start, not at the first client, when the keytab lacks the service's key.
    Result<std::unique_ptr<GssAcceptor>> probe = GssAcceptor::Create(options_.kerberos_keytab, options_.kerberos_principal);
    if (!probe.ok()) return probe.status().WithContext("IPC server " + options_.name);
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::FromErrno("socket", errno);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (::inet_pton(AF_INET, options_.bind_ip.c_str(), &addr.sin_addr) != 1) {
    return Status::InvalidArgument("not an IPv4 address for " + options_.name + ": " + options_.bind_ip);
  }
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Status::FromErrno("bind " + options_.bind_ip + ":0 for " + options_.name, errno);
  }
  if (::listen(listen_fd_, 64) != 0) return Status::FromErrno("listen", errno);
  socklen_t len = sizeof(addr);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return Status::Ok();
}

void IpcServer::AcceptLoop() {
  while (!stopping_.load()) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      break;  // the listener was shut down
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_.load()) {
      ::close(fd);
      break;
    }
    ReapFinished();
    auto conn = std::make_unique<Conn>();
    conn->fd = fd;
    Conn* raw = conn.get();
    conns_.push_back(std::move(conn));
    int index = ++connections_;
    raw->thread = std::thread([this, raw, index] { Serve(raw, index); });
  }
}

void IpcServer::Serve(Conn* conn, int index) {
  Session(conn->fd, index, options_, &stopping_, [this, conn] { Shut(conn); }, &delayed_replies_).Run();
  conn->done.store(true);
}

void IpcServer::Shut(Conn* conn) {
  if (conn->shut.exchange(true)) return;
  ::shutdown(conn->fd, SHUT_RDWR);
  ++closes_;
}

void IpcServer::CloseConnections() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& c : conns_) {
    if (!c->done.load()) Shut(c.get());
  }
}

void IpcServer::ReapFinished() {
  for (auto it = conns_.begin(); it != conns_.end();) {
    if ((*it)->done.load()) {
      (*it)->thread.join();
      ::close((*it)->fd);
      it = conns_.erase(it);
    } else {
      ++it;
    }
  }
}

void IpcServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  if (accept_thread_.joinable()) accept_thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  std::list<std::unique_ptr<Conn>> conns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    conns.swap(conns_);
  }
  for (auto& c : conns) ::shutdown(c->fd, SHUT_RDWR);  // unblocks the session's recv
  for (auto& c : conns) {
    if (c->thread.joinable()) c->thread.join();
    ::close(c->fd);
  }
}

}  // namespace loom::hadoop::testing
