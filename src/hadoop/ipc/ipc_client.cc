// IpcClient: opening connections (the handshake, with ipc_sasl.cc), calls over a long-lived
// connection or one of their own, the reader thread that hands responses to their callers.
#include "hadoop/ipc/ipc_client.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "hadoop/ipc/ipc_client_internal.h"
#include "hadoop/ipc/ipc_socket.h"
#include "hadoop/ipc/ipc_test_hooks.h"
#include "hadoop/proto/hadoop_rpc.pb.h"
#include "hadoop/wire/ipc_frame.h"
#include "hadoop/wire/sasl_layer.h"

namespace loom::hadoop {

using ::hadoop::common::IpcConnectionContextProto;
using ::hadoop::common::RequestHeaderProto;
using ipc_internal::Clock;
using ipc_internal::KerberosPrincipalKey;
using ipc_internal::Opened;
using ipc_internal::ParseServerFrame;
using ipc_internal::Pending;
using ipc_internal::ReadFrame;
using ipc_internal::ServerFrame;
using ipc_internal::Socket;

namespace {

std::atomic<int32_t> g_next_call_id{0};

std::mutex g_test_identity_mu;
std::string g_test_client_id;
std::string g_test_cnonce;

// Java's ipc.Client closes a connection idle for ipc.client.connection.maxidletime (10 s),
// before the server's own idle close (20 s); doing the same avoids writing a call into a socket
// the server is closing at that moment.
constexpr std::chrono::seconds kClientIdleClose{10};

// 16 random bytes with the version and variant bits of a v4 UUID, as Java's ClientId.
std::string RandomClientId() {
  std::random_device rd;
  std::string id(16, '\0');
  for (char& c : id) c = static_cast<char>(rd() & 0xff);
  id[6] = static_cast<char>((id[6] & 0x0f) | 0x40);
  id[8] = static_cast<char>((id[8] & 0x3f) | 0x80);
  return id;
}

std::string TestClientId() {
  std::lock_guard lock(g_test_identity_mu);
  return g_test_client_id;
}

// `bytes` (whole frames) as they go on the wire: as is, or cut into WRAP tokens of at most
// kSaslMaxWrapPlainBytes, as Java's SaslRpcClient.WrappedOutputStream does.
Result<std::string> OnWire(Opened* o, std::string bytes) {
  if (!o->wrapping) return bytes;
  std::lock_guard lock(o->wrapping->mu);
  std::string out;
  for (size_t at = 0; at < bytes.size(); at += kSaslMaxWrapPlainBytes) {
    LOOM_ASSIGN_OR_RETURN(std::string token,
                          o->wrapping->layer->Wrap(std::string_view(bytes).substr(at, kSaslMaxWrapPlainBytes)));
    RpcSaslProto wrap;
    wrap.set_state(RpcSaslProto::WRAP);
    wrap.set_token(std::move(token));
    RpcRequestHeaderProto header = MakeRequestHeader(kSaslCallId, "", -1);
    out += EncodeFrame({&header, &wrap});
  }
  return out;
}

Status WriteFrames(Opened* o, std::string bytes) {
  LOOM_ASSIGN_OR_RETURN(std::string wire, OnWire(o, std::move(bytes)));
  return o->socket.WriteAll(wire);
}

}  // namespace

std::string ipc_internal::TestCnonce() {
  std::lock_guard lock(g_test_identity_mu);
  return g_test_cnonce;
}

Result<ServerFrame> ipc_internal::ParseServerFrame(const std::string& frame) {
  LOOM_ASSIGN_OR_RETURN(std::vector<std::string_view> parts, SplitDelimited(frame));
  ServerFrame out;
  if (parts.empty() || !out.header.ParseFromArray(parts[0].data(), static_cast<int>(parts[0].size()))) {
    return Status(StatusCode::kDataLoss, "malformed RPC response header");
  }
  if (parts.size() > 1) out.body = std::string(parts[1]);
  return out;
}

int32_t NextCallId() { return g_next_call_id.fetch_add(1) & 0x7fffffff; }  // wraps like Java's

void SetNextCallIdForTest(int32_t id) { g_next_call_id.store(id); }

void SetIpcIdentityForTest(std::string client_id, std::string cnonce) {
  std::lock_guard lock(g_test_identity_mu);
  g_test_client_id = std::move(client_id);
  g_test_cnonce = std::move(cnonce);
}

IpcClient::Impl::Impl(IpcOptions o) : options(std::move(o)), token(options.token), kerberos(options.kerberos) {
  client_id = !options.client_id_for_test.empty() ? options.client_id_for_test : TestClientId();
  if (client_id.empty()) client_id = RandomClientId();
  if (!kerberos && !options.token && !KerberosPrincipalKey(options.protocol).empty()) kerberos = ProcessKerberos();
}

std::string IpcClient::Impl::ContextFrame(bool token_auth) const {
  RpcRequestHeaderProto header = MakeRequestHeader(kConnectionContextCallId, client_id, -1);
  IpcConnectionContextProto context;
  // After TOKEN auth the server knows the user from the token: Java sends userInfo present but
  // empty; a differing effectiveUser would be refused.
  auto* user = context.mutable_userinfo();
  // After KERBEROS auth the server expects the full principal (K4.11); another name would be a
  // proxy-user request.
  if (kerberos && kerberos->login) {
    user->set_effectiveuser(kerberos->login->principal());
  } else if (!token_auth) {
    user->set_effectiveuser(options.user);
  }
  context.set_protocol(options.protocol);
  return EncodeFrame({&header, &context});
}

std::string IpcClient::Impl::CallFrame(int32_t call_id, const std::string& method,
                                       const google::protobuf::Message& request) const {
  RpcRequestHeaderProto header = MakeRequestHeader(call_id, client_id, 0);
  RequestHeaderProto call;
  call.set_methodname(method);
  call.set_declaringclassprotocolname(options.protocol);
  call.set_clientprotocolversion(1);
  return EncodeFrame({&header, &call, &request});
}

Result<Opened> IpcClient::Impl::Open(Clock::time_point deadline) {
  std::optional<Token> tok;
  {
    std::lock_guard lock(mu);
    tok = token;
  }
  auto connect_timeout = std::min(options.connect_timeout,
                                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  Result<Socket> sock = Socket::Connect(options.host, options.port, connect_timeout);
  if (!sock.ok()) return Status::Unavailable("cannot connect to " + Describe() + ": " + sock.status().message());
  Opened o{std::move(*sock), FrameReader(), ""};
  o.socket.SetSendTimeout(options.call_timeout);
  if (!tok && kerberos) {
    LOOM_RETURN_IF_ERROR(SaslKerberos(&o, deadline));
    o.unsent = ContextFrame(false);
    return o;
  }
  if (!tok) {
    o.unsent = Preamble(AuthProtocol::kNone) + ContextFrame(false);
    return o;
  }
  LOOM_ASSIGN_OR_RETURN(bool token_auth, Sasl(&o, *tok, deadline));
  o.unsent = ContextFrame(token_auth);
  return o;
}

// The next ordinary frame from the server: as read, or unwrapped from WRAP tokens when SASL
// negotiated integrity or privacy (K4.9-10). A frame in clear is then a protocol error, and so
// is a token that fails its check (sasl_layer.h): either ends the connection.
Result<std::string> IpcClient::Impl::NextFrame(Opened* o, std::optional<Clock::time_point> deadline) {
  if (!o->wrapping) return ReadFrame(o->socket, &o->reader, deadline);
  Opened::Wrapping& w = *o->wrapping;
  for (;;) {
    {
      std::lock_guard lock(w.mu);
      Result<std::optional<std::string>> inner = w.plain.Next();
      if (!inner.ok()) return Status(StatusCode::kDataLoss, Describe() + ": inside SASL WRAP: " + inner.status().message());
      if (*inner) return std::move(**inner);
    }
    LOOM_ASSIGN_OR_RETURN(std::string raw, ReadFrame(o->socket, &o->reader, deadline));
    Result<ServerFrame> f = ParseServerFrame(raw);
    if (!f.ok()) return Status(StatusCode::kDataLoss, Describe() + ": " + f.status().message());
    RpcSaslProto sasl;
    const bool wrapped = ResponseCallId(f->header) == kSaslCallId &&
                         f->header.status() == RpcResponseHeaderProto::SUCCESS && f->body &&
                         sasl.ParseFromString(*f->body) && sasl.state() == RpcSaslProto::WRAP;
    if (!wrapped) {
      if (f->header.status() == RpcResponseHeaderProto::FATAL) return Fatal(f->header);
      return Status(StatusCode::kDataLoss,
                    Describe() + ": protocol error: the server sent a frame in clear (call id " +
                        std::to_string(ResponseCallId(f->header)) + ") after SASL negotiated " +
                        std::string(w.layer->Qop()) + " (hadoop.rpc.protection=" +
                        RpcProtectionOfQop(w.layer->Qop()) + "); every frame must be wrapped");
    }
    std::lock_guard lock(w.mu);
    Result<std::string> plain = w.layer->Unwrap(sasl.token());
    if (!plain.ok()) return plain.status().WithContext(Describe());
    w.plain.Feed(*plain);
  }
}

Result<std::shared_ptr<IpcClient::Impl::Connection>> IpcClient::Impl::Connected(Clock::time_point deadline) {
  std::lock_guard connect_lock(connect_mu);
  std::shared_ptr<Connection> old;
  {
    std::lock_guard lock(mu);
    if (conn && !conn->dead) {
      // With no call in flight, drop a connection that idled too long or that the server has
      // already closed (its idle timeout), so the next call is not written into it.
      bool reusable = !conn->pending.empty() ||
                      (Clock::now() - conn->last_active <= kClientIdleClose && !conn->io.socket.PeerClosed());
      if (reusable) return conn;
      conn->dead = true;
    }
    old = std::move(conn);
  }
  if (old) {
    old->io.socket.Shutdown();
    if (old->reader.joinable()) old->reader.join();
  }
  LOOM_ASSIGN_OR_RETURN(Opened opened, Open(deadline));
  auto c = std::make_shared<Connection>();
  c->io = std::move(opened);
  c->last_active = Clock::now();
  try {
    c->reader = std::thread([this, raw = c.get()] { ReadLoop(raw); });
  } catch (const std::system_error& e) {
    return Status::ResourceExhausted("cannot start the reader thread for " + Describe() + ": " + e.what());
  }
  std::lock_guard lock(mu);
  conn = c;
  return c;
}

Status IpcClient::Impl::Send(Connection& c, const std::string& frame) {
  std::lock_guard lock(c.write_mu);
  if (c.io.unsent.empty()) return WriteFrames(&c.io, frame);
  // Java writes the context (and a SIMPLE preamble) in the same segment as the first call.
  std::string bytes = std::move(c.io.unsent);
  c.io.unsent.clear();
  bytes += frame;
  return WriteFrames(&c.io, std::move(bytes));
}

Status IpcClient::Impl::Await(Connection& c, int32_t call_id, Pending* p, const std::string& method,
                              Clock::time_point deadline, google::protobuf::Message* response) {
  std::unique_lock lock(mu);
  if (!cv.wait_until(lock, deadline, [p] { return p->done; })) {
    c.pending.erase(call_id);
    return Status::DeadlineExceeded(method + " on " + Describe() + ": no response within " +
                                    std::to_string(options.call_timeout.count()) + " ms");
  }
  lock.unlock();
  if (!p->status.ok()) return p->status;
  if (!response->ParseFromString(p->body)) {
    return Status(StatusCode::kDataLoss, method + " on " + Describe() + ": cannot parse the " +
                                             response->GetTypeName());
  }
  return Status::Ok();
}

Status IpcClient::Impl::Call(const std::string& method, const google::protobuf::Message& request,
                             google::protobuf::Message* response) {
  const Clock::time_point deadline = Clock::now() + options.call_timeout;
  const int32_t call_id = NextCallId();
  const std::string frame = CallFrame(call_id, method, request);
  if (options.one_call_per_connection) return CallOnOwnConnection(call_id, frame, method, deadline, response);

  for (int attempt = 0;; ++attempt) {
    LOOM_ASSIGN_OR_RETURN(std::shared_ptr<Connection> c, Connected(deadline));
    Pending p;
    {
      std::lock_guard lock(mu);
      if (c->dead) {
        // The server closed it between our check and now; nothing was sent.
        if (attempt == 0) continue;
        return Status::Unavailable(method + ": connection to " + Describe() + " closed");
      }
      c->pending[call_id] = &p;
      c->last_active = Clock::now();
    }
    if (Status sent = Send(*c, frame); !sent.ok()) {
      {
        std::lock_guard lock(mu);
        c->pending.erase(call_id);
      }
      Kill(c.get(), Lost(sent));
      if (attempt == 0) continue;  // never sent: reconnect (full handshake) and retry once
      return Lost(sent);
    }
    return Await(*c, call_id, &p, method, deadline, response);
  }
}

// Connect, handshake, one call, close: what Java does towards NodeManagers.
Status IpcClient::Impl::CallOnOwnConnection(int32_t call_id, const std::string& frame, const std::string& method,
                                            Clock::time_point deadline, google::protobuf::Message* response) {
  LOOM_ASSIGN_OR_RETURN(Opened o, Open(deadline));
  if (Status s = WriteFrames(&o, o.unsent + frame); !s.ok()) return Lost(s);
  for (;;) {
    Result<std::string> bytes = NextFrame(&o, deadline);
    if (!bytes.ok()) {
      if (bytes.status().code() == StatusCode::kDeadlineExceeded) {
        return Status::DeadlineExceeded(method + " on " + Describe() + ": no response within " +
                                        std::to_string(options.call_timeout.count()) + " ms");
      }
      return Lost(bytes.status());
    }
    LOOM_ASSIGN_OR_RETURN(ServerFrame f, ParseServerFrame(*bytes));
    if (f.header.status() == RpcResponseHeaderProto::FATAL) return Fatal(f.header);
    if (ResponseCallId(f.header) != call_id) continue;
    if (f.header.status() != RpcResponseHeaderProto::SUCCESS) return RemoteErrorStatus(f.header);
    if (!response->ParseFromString(f.body.value_or(""))) {
      return Status(StatusCode::kDataLoss, method + " on " + Describe() + ": cannot parse the " +
                                               response->GetTypeName());
    }
    return Status::Ok();
  }
}

void IpcClient::Impl::ReadLoop(Connection* c) {
  Status why;
  for (;;) {
    Result<std::string> frame = NextFrame(&c->io, std::nullopt);
    if (!frame.ok()) {
      why = Lost(frame.status());
      break;
    }
    why = Dispatch(c, *frame);
    if (!why.ok()) break;
  }
  Kill(c, why);
}

// Hands one response to its caller; an error return ends the connection.
Status IpcClient::Impl::Dispatch(Connection* c, const std::string& frame) {
  Result<ServerFrame> f = ParseServerFrame(frame);
  if (!f.ok()) return Status(StatusCode::kDataLoss, Describe() + ": " + f.status().message());
  if (f->header.status() == RpcResponseHeaderProto::FATAL) return Fatal(f->header);
  const int32_t id = ResponseCallId(f->header);
  if (id == kSaslCallId) {
    // NextFrame() has already unwrapped what a negotiated layer protects: a SASL frame here is
    // a WRAP without a layer (the server and SASL disagree on qop) or one nested in a WRAP.
    return Status(StatusCode::kDataLoss, Describe() + ": protocol error: a SASL frame after authentication, "
                                                      "although SASL negotiated no security layer (qop auth)");
  }
  std::lock_guard lock(mu);
  auto it = c->pending.find(id);
  if (it == c->pending.end()) {
    spdlog::debug("{}: response to call {} that nobody waits for (timed out?)", Describe(), id);
    return Status::Ok();
  }
  Pending* p = it->second;
  if (f->header.status() == RpcResponseHeaderProto::SUCCESS) {
    p->body = f->body.value_or("");
  } else {
    p->status = RemoteErrorStatus(f->header);  // an application error: the connection stays usable
  }
  p->done = true;
  c->pending.erase(it);
  c->last_active = Clock::now();
  cv.notify_all();
  return Status::Ok();
}

// Marks the connection dead and fails every call waiting on it with `why`.
void IpcClient::Impl::Kill(Connection* c, const Status& why) {
  {
    std::lock_guard lock(mu);
    c->dead = true;
    for (auto& [id, p] : c->pending) {
      p->status = why;
      p->done = true;
    }
    c->pending.clear();
    cv.notify_all();
  }
  c->io.socket.Shutdown();
}

void IpcClient::Impl::Close() {
  std::lock_guard connect_lock(connect_mu);
  std::shared_ptr<Connection> c;
  {
    std::lock_guard lock(mu);
    c = std::move(conn);
  }
  if (!c) return;
  Kill(c.get(), Status::Unavailable("connection to " + Describe() + " closed by the client"));
  if (c->reader.joinable()) c->reader.join();
}

IpcClient::IpcClient(IpcOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
IpcClient::~IpcClient() = default;

Status IpcClient::Call(const std::string& method, const google::protobuf::Message& request,
                       google::protobuf::Message* response) {
  return impl_->Call(method, request, response);
}

void IpcClient::UpdateToken(const Token& token) {
  std::lock_guard lock(impl_->mu);
  impl_->token = token;
}

void IpcClient::Close() { impl_->Close(); }

std::string IpcClient::Describe() const { return impl_->Describe(); }

}  // namespace loom::hadoop
