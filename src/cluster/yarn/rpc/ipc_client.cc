#include "cluster/yarn/rpc/ipc_client.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <system_error>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include "cluster/yarn/proto/hadoop_rpc.pb.h"
#include "cluster/yarn/hdfs/hadoop_conf.h"
#include "cluster/yarn/rpc/ipc_test_hooks.h"
#include "cluster/yarn/wire/ipc_frame.h"
#include "cluster/yarn/wire/sasl_digest.h"
#include "cluster/yarn/wire/sasl_gssapi.h"
#include "cluster/yarn/wire/sasl_layer.h"
#include "core/host_resolver.h"

namespace loom::cluster::yarn {

using hadoop::common::IpcConnectionContextProto;
using hadoop::common::RequestHeaderProto;
using Clock = std::chrono::steady_clock;

namespace {

std::atomic<int32_t> g_next_call_id{0};

std::mutex g_test_identity_mu;
std::string g_test_client_id;
std::string g_test_cnonce;

// Java's ipc.Client closes a connection idle for ipc.client.connection.maxidletime (10 s),
// before the server's own idle close (20 s); doing the same avoids writing a call into a socket
// the server is closing at that moment.
constexpr std::chrono::seconds kClientIdleClose{10};

constexpr size_t kReadChunk = 64 * 1024;

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

std::string TestCnonce() {
  std::lock_guard lock(g_test_identity_mu);
  return g_test_cnonce;
}

// The conf key naming the server's Kerberos principal (Java's SecurityInfo/KerberosInfo for the
// protocol); empty for protocols that are TOKEN only (scheduler, NodeManagers: K5.4).
std::string KerberosPrincipalKey(const std::string& protocol) {
  if (protocol == kClientProtocol) return "yarn.resourcemanager.principal";
  if (protocol == "org.apache.hadoop.hdfs.protocol.ClientProtocol") return "dfs.namenode.kerberos.principal";
  return "";
}

std::string ShortProtocolName(const std::string& protocol) {
  size_t dot = protocol.rfind('.');
  return dot == std::string::npos ? protocol : protocol.substr(dot + 1);
}

int MillisUntil(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return left > 1000000 ? 1000000 : static_cast<int>(left);
}

// A connected TCP socket: blocking writes, reads with an optional deadline.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Socket& operator=(Socket&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Socket() { Reset(); }

  static Result<Socket> Connect(const std::string& host, int port, std::chrono::milliseconds timeout);

  Status WriteAll(std::string_view bytes) const {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::FromErrno("send", errno);
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return Status::Ok();
  }

  // Appends what arrives to `into`; waits until `deadline` (forever when nullopt).
  Status ReadSome(std::string* into, std::optional<Clock::time_point> deadline) const {
    pollfd p{fd_, POLLIN, 0};
    for (;;) {
      int r = ::poll(&p, 1, deadline ? MillisUntil(*deadline) : -1);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Status::FromErrno("poll", errno);
      if (r == 0) return Status::DeadlineExceeded("no data from the server in time");
      break;
    }
    char buf[kReadChunk];
    ssize_t n;
    do {
      n = ::recv(fd_, buf, sizeof buf, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return Status::FromErrno("recv", errno);
    if (n == 0) return Status::Unavailable("connection closed by the server");
    into->append(buf, static_cast<size_t>(n));
    return Status::Ok();
  }

  // True when the server has already closed its end (a FIN or RST is queued), without
  // consuming anything the reader thread has not read yet.
  bool PeerClosed() const {
    char c;
    ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }

  // Bounds a write the server does not read (a stuck server with a full receive buffer).
  void SetSendTimeout(std::chrono::milliseconds timeout) const {
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }

  // Wakes a thread blocked in ReadSome (it then sees end of stream); the fd stays open.
  void Shutdown() const {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
  }

 private:
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

Result<Socket> Socket::Connect(const std::string& host, int port, std::chrono::milliseconds timeout) {
  Result<std::vector<IpAddress>> addresses = ResolveHost(host);
  if (!addresses.ok()) return Status::Unavailable(addresses.status().message());
  const Clock::time_point deadline = Clock::now() + timeout;
  Status last = Status::Unavailable("no address for " + host);
  for (const IpAddress& address : *addresses) {
    socklen_t length = 0;
    sockaddr_storage target = address.SocketAddress(port, &length);
    Socket s(::socket(address.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (s.fd_ < 0) {
      last = Status::FromErrno("socket", errno);
      continue;
    }
    int rc = ::connect(s.fd_, reinterpret_cast<const sockaddr*>(&target), length);
    if (rc < 0 && errno == EINPROGRESS) {
      pollfd p{s.fd_, POLLOUT, 0};
      int r;
      do {
        r = ::poll(&p, 1, MillisUntil(deadline));
      } while (r < 0 && errno == EINTR);
      if (r == 0) {
        last = Status::Unavailable("connect timed out after " + std::to_string(timeout.count()) + " ms");
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(s.fd_, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc < 0) {
      last = Status::FromErrno("connect", errno);
      continue;
    }
    // Back to blocking; no Nagle delay, as Java's ipc.client.tcpnodelay=true.
    ::fcntl(s.fd_, F_SETFL, ::fcntl(s.fd_, F_GETFL) & ~O_NONBLOCK);
    int one = 1;
    ::setsockopt(s.fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return s;
  }
  return last;
}

// Reads one frame body from `s`, buffering extra bytes in `reader`.
Result<std::string> ReadFrame(const Socket& s, FrameReader* reader, std::optional<Clock::time_point> deadline) {
  for (;;) {
    LOOM_ASSIGN_OR_RETURN(std::optional<std::string> body, reader->Next());
    if (body) return std::move(*body);
    std::string chunk;
    LOOM_RETURN_IF_ERROR(s.ReadSome(&chunk, deadline));
    reader->Feed(chunk);
  }
}

// A server frame split into its header and the (optional) message after it.
struct ServerFrame {
  RpcResponseHeaderProto header;
  std::optional<std::string> body;
};

Result<ServerFrame> ParseServerFrame(const std::string& frame) {
  LOOM_ASSIGN_OR_RETURN(std::vector<std::string_view> parts, SplitDelimited(frame));
  ServerFrame out;
  if (parts.empty() || !out.header.ParseFromArray(parts[0].data(), static_cast<int>(parts[0].size()))) {
    return Status(StatusCode::kDataLoss, "malformed RPC response header");
  }
  if (parts.size() > 1) out.body = std::string(parts[1]);
  return out;
}

std::string SaslFrame(const RpcSaslProto& sasl) {
  RpcRequestHeaderProto header = MakeRequestHeader(kSaslCallId, "", -1);
  return EncodeFrame({&header, &sasl});
}

const char* SaslStateName(RpcSaslProto::SaslState s) {
  switch (s) {
    case RpcSaslProto::SUCCESS: return "SUCCESS";
    case RpcSaslProto::NEGOTIATE: return "NEGOTIATE";
    case RpcSaslProto::INITIATE: return "INITIATE";
    case RpcSaslProto::CHALLENGE: return "CHALLENGE";
    case RpcSaslProto::RESPONSE: return "RESPONSE";
    case RpcSaslProto::WRAP: return "WRAP";
  }
  return "?";
}

// A call waiting for its response; lives on the caller's stack, filled by the reader thread.
struct Pending {
  bool done = false;
  Status status;
  std::string body;
};

// An opened, authenticated connection: what Java sends in one segment with the first call
// (the preamble for SIMPLE, the connection context) is still in `unsent`.
struct Opened {
  Socket socket;
  FrameReader reader;
  std::string unsent;
  // Set when SASL negotiated integrity or privacy: every later frame, both ways, is wrapped.
  struct Wrapping {
    std::mutex mu;  // the layer's calls are serialised (sasl_layer.h): writers and the reader
    std::unique_ptr<SaslSecurityLayer> layer;
    FrameReader plain;  // unwrapped bytes; a frame may span WRAP tokens
  };
  std::unique_ptr<Wrapping> wrapping;
};

// hadoop.rpc.protection of $HADOOP_CONF_DIR, read once: what Java's SaslPropertiesResolver
// takes from the process's Configuration (an AM's container gets HADOOP_CONF_DIR from the
// NodeManager's env whitelist).
std::string DefaultRpcProtection() {
  static const std::string value = [] {
    if (const char* dir = std::getenv("HADOOP_CONF_DIR"); dir == nullptr || *dir == '\0') return std::string();
    // The user only names the staging directory, which is not read here.
    Result<HadoopConf> conf = HadoopConf::FromEnvironment("loom");
    if (!conf.ok()) {
      spdlog::warn("cannot read hadoop.rpc.protection from HADOOP_CONF_DIR ({}); using authentication",
                   conf.status().message());
      return std::string();
    }
    return conf->rpc_protection;
  }();
  return value;
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

int32_t NextCallId() { return g_next_call_id.fetch_add(1) & 0x7fffffff; }  // wraps like Java's

void SetNextCallIdForTest(int32_t id) { g_next_call_id.store(id); }

void SetIpcIdentityForTest(std::string client_id, std::string cnonce) {
  std::lock_guard lock(g_test_identity_mu);
  g_test_client_id = std::move(client_id);
  g_test_cnonce = std::move(cnonce);
}

struct IpcClient::Impl {
  // A long-lived connection with its reader thread.
  struct Connection {
    Opened io;
    std::thread reader;
    std::mutex write_mu;                   // one frame at a time; guards io.unsent
    bool dead = false;                     // guarded by Impl::mu
    std::map<int32_t, Pending*> pending;   // guarded by Impl::mu
    Clock::time_point last_active;         // guarded by Impl::mu
  };

  explicit Impl(IpcOptions o) : options(std::move(o)), token(options.token), kerberos(options.kerberos) {
    client_id = !options.client_id_for_test.empty() ? options.client_id_for_test : TestClientId();
    if (client_id.empty()) client_id = RandomClientId();
    if (!kerberos && !options.token && !KerberosPrincipalKey(options.protocol).empty()) kerberos = ProcessKerberos();
  }
  ~Impl() { Close(); }

  Status Call(const std::string& method, const google::protobuf::Message& request,
              google::protobuf::Message* response);
  Status CallOnOwnConnection(int32_t call_id, const std::string& frame, const std::string& method,
                             Clock::time_point deadline, google::protobuf::Message* response);
  Result<std::shared_ptr<Connection>> Connected(Clock::time_point deadline);
  Status Send(Connection& c, const std::string& frame);
  Status Await(Connection& c, int32_t call_id, Pending* p, const std::string& method, Clock::time_point deadline,
               google::protobuf::Message* response);
  void ReadLoop(Connection* c);
  Status Dispatch(Connection* c, const std::string& frame);
  void Kill(Connection* c, const Status& why);
  void Close();

  Result<Opened> Open(Clock::time_point deadline);
  Result<bool> Sasl(Opened* o, const Token& token, Clock::time_point deadline);
  Status SaslKerberos(Opened* o, Clock::time_point deadline);
  Result<RpcSaslProto> ReadSasl(Opened* o, Clock::time_point deadline);
  Result<std::string> NextFrame(Opened* o, std::optional<Clock::time_point> deadline);
  std::string ContextFrame(bool token_auth) const;
  std::string CallFrame(int32_t call_id, const std::string& method, const google::protobuf::Message& request) const;

  // The remote error of a FATAL reply, naming the server (the class stays first for
  // RemoteExceptionClass).
  Status Fatal(const RpcResponseHeaderProto& h) const {
    Status s = RemoteErrorStatus(h);
    return Status(s.code(), s.message() + " [" + Describe() + "]");
  }
  Status Lost(const Status& why) const {
    return Status::Unavailable("connection to " + Describe() + " lost: " + why.message());
  }
  std::string Describe() const {
    return options.host + ":" + std::to_string(options.port) + " (" + ShortProtocolName(options.protocol) + ")";
  }

  const IpcOptions options;
  std::string client_id;
  std::mutex connect_mu;  // one (re)connection at a time
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Token> token;         // guarded by mu
  std::shared_ptr<const KerberosClientConf> kerberos;  // set once, in the constructor
  std::shared_ptr<Connection> conn;   // guarded by mu
};

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

Result<RpcSaslProto> IpcClient::Impl::ReadSasl(Opened* o, Clock::time_point deadline) {
  Result<std::string> frame = ReadFrame(o->socket, &o->reader, deadline);
  if (!frame.ok()) return Lost(frame.status().WithContext("during SASL"));
  Result<ServerFrame> f = ParseServerFrame(*frame);
  if (!f.ok()) return f.status().WithContext(Describe() + ": during SASL");
  if (f->header.status() != RpcResponseHeaderProto::SUCCESS) return Fatal(f->header);
  if (ResponseCallId(f->header) != kSaslCallId) {
    return Status(StatusCode::kDataLoss, Describe() + ": reply with call id " +
                                             std::to_string(ResponseCallId(f->header)) + " during SASL");
  }
  RpcSaslProto sasl;
  if (!f->body || !sasl.ParseFromString(*f->body)) {
    return Status(StatusCode::kDataLoss, Describe() + ": malformed SASL reply");
  }
  return sasl;
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

// Runs SASL as Java's SaslRpcClient does; true when TOKEN (DIGEST-MD5) authenticated us, false
// when the server switched us to SIMPLE.
Result<bool> IpcClient::Impl::Sasl(Opened* o, const Token& tok, Clock::time_point deadline) {
  RpcSaslProto negotiate;
  negotiate.set_state(RpcSaslProto::NEGOTIATE);
  if (Status s = o->socket.WriteAll(Preamble(AuthProtocol::kSasl) + SaslFrame(negotiate)); !s.ok()) return Lost(s);
  LOOM_ASSIGN_OR_RETURN(RpcSaslProto offer, ReadSasl(o, deadline));
  // A server without security answers NEGOTIATE with SUCCESS: go on as SIMPLE.
  if (offer.state() == RpcSaslProto::SUCCESS) return false;
  if (offer.state() != RpcSaslProto::NEGOTIATE) {
    return Status::Unauthenticated(Describe() + ": SASL " + SaslStateName(offer.state()) + " instead of NEGOTIATE");
  }
  const RpcSaslProto::SaslAuth* chosen = nullptr;
  bool simple_offered = false;
  std::string offered;
  for (const auto& auth : offer.auths()) {
    if (auth.method() == "TOKEN" && auth.mechanism() == "DIGEST-MD5" && !chosen) chosen = &auth;
    if (auth.method() == "SIMPLE") simple_offered = true;
    offered += (offered.empty() ? "" : ",") + auth.method() + "/" + auth.mechanism();
  }
  if (!chosen && simple_offered) {
    // What Java sent to the NameNode in dshell/04: INITIATE naming SIMPLE, no token, no reply.
    RpcSaslProto initiate;
    initiate.set_state(RpcSaslProto::INITIATE);
    auto* simple = initiate.add_auths();
    simple->set_method("SIMPLE");
    simple->set_mechanism("");
    if (Status s = o->socket.WriteAll(SaslFrame(initiate)); !s.ok()) return Lost(s);
    return false;
  }
  if (!chosen) {
    return Status::Unauthenticated(Describe() + ": server offers no TOKEN/DIGEST-MD5 auth (offered: " + offered + ")");
  }

  const std::string cnonce = !options.cnonce_for_test.empty() ? options.cnonce_for_test
                             : !TestCnonce().empty()          ? TestCnonce()
                                                              : NewCnonce();
  const std::string digest_uri = chosen->protocol() + "/" + chosen->serverid();
  std::optional<DigestResult> digest;
  auto respond = [&](std::string_view challenge_text) -> Status {
    LOOM_ASSIGN_OR_RETURN(DigestChallenge challenge, ParseDigestChallenge(challenge_text));
    LOOM_ASSIGN_OR_RETURN(std::vector<std::string> wanted,
                          QopsFromRpcProtection(options.rpc_protection.empty() ? DefaultRpcProtection()
                                                                               : options.rpc_protection));
    LOOM_ASSIGN_OR_RETURN(DigestResult r, DigestRespond(tok, challenge, cnonce, digest_uri, wanted));
    digest = std::move(r);
    return Status::Ok();
  };

  // The server compares the echoed auth with its own challenge-less entry, field presence
  // included: clear the challenge and keep `protocol` present even when empty.
  RpcSaslProto initiate;
  initiate.set_state(RpcSaslProto::INITIATE);
  auto* echo = initiate.add_auths();
  *echo = *chosen;
  echo->clear_challenge();
  echo->set_protocol(chosen->protocol());
  if (chosen->has_challenge()) {
    if (Status s = respond(chosen->challenge()); !s.ok()) return s.WithContext(Describe());
    initiate.set_token(digest->response_token);
  }
  if (Status s = o->socket.WriteAll(SaslFrame(initiate)); !s.ok()) return Lost(s);

  for (;;) {
    LOOM_ASSIGN_OR_RETURN(RpcSaslProto reply, ReadSasl(o, deadline));
    if (reply.state() == RpcSaslProto::CHALLENGE) {
      if (Status s = respond(reply.token()); !s.ok()) return s.WithContext(Describe());
      RpcSaslProto response;
      response.set_state(RpcSaslProto::RESPONSE);
      response.set_token(digest->response_token);
      if (Status s = o->socket.WriteAll(SaslFrame(response)); !s.ok()) return Lost(s);
      continue;
    }
    if (reply.state() != RpcSaslProto::SUCCESS) {
      return Status::Unauthenticated(Describe() + ": unexpected SASL " + SaslStateName(reply.state()));
    }
    if (!digest) return Status::Unauthenticated(Describe() + ": SASL SUCCESS before any DIGEST-MD5 challenge");
    // The server proves it knows the password too (Java checks rspauth as well).
    if (Status s = VerifyRspAuth(*digest, reply.token()); !s.ok()) {
      return Status::Unauthenticated(Describe() + ": " + s.message());
    }
    Result<std::unique_ptr<SaslSecurityLayer>> layer =
        NewDigestSecurityLayer(digest->qop, digest->cipher, digest->ha1, DigestSide::kClient);
    if (!layer.ok()) return layer.status().WithContext(Describe());
    if (*layer) {
      o->wrapping = std::make_unique<Opened::Wrapping>();
      o->wrapping->layer = std::move(*layer);
    }
    return true;
  }
}

// SASL GSSAPI (sasl_gssapi.h, K4): NEGOTIATE, INITIATE, then CHALLENGE/RESPONSE rounds until
// SUCCESS. Errors the user must fix (no principal configured, a server that is not the
// configured one, a QOP the cluster does not offer, expired credentials) are InvalidArgument.
Status IpcClient::Impl::SaslKerberos(Opened* o, Clock::time_point deadline) {
  RpcSaslProto negotiate;
  negotiate.set_state(RpcSaslProto::NEGOTIATE);
  if (Status s = o->socket.WriteAll(Preamble(AuthProtocol::kSasl) + SaslFrame(negotiate)); !s.ok()) return Lost(s);
  LOOM_ASSIGN_OR_RETURN(RpcSaslProto offer, ReadSasl(o, deadline));
  if (offer.state() == RpcSaslProto::SUCCESS) {
    return Status::Unauthenticated(Describe() + ": the server has no security (SIMPLE), but this client's "
                                                "hadoop.security.authentication is kerberos");
  }
  if (offer.state() != RpcSaslProto::NEGOTIATE) {
    return Status::Unauthenticated(Describe() + ": SASL " + SaslStateName(offer.state()) + " instead of NEGOTIATE");
  }
  const RpcSaslProto::SaslAuth* kerberos_offer = FindKerberosOffer(offer);
  if (!kerberos_offer) {
    std::string offered;
    for (const auto& auth : offer.auths()) offered += (offered.empty() ? "" : ",") + auth.method() + "/" + auth.mechanism();
    return Status::Unauthenticated(Describe() + ": server offers no KERBEROS/GSSAPI auth (offered: " + offered + ")");
  }
  GssapiSaslClient::Options gopts;
  gopts.login = kerberos->login;
  gopts.principal_key = KerberosPrincipalKey(options.protocol);
  gopts.principal_conf = gopts.principal_key == "dfs.namenode.kerberos.principal" ? kerberos->nn_principal
                                                                                  : kerberos->rm_principal;
  gopts.server_host = CanonicalHostName(options.host);
  gopts.rpc_protection = kerberos->rpc_protection;
  gopts.server = Describe();
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<GssapiSaslClient> gss, GssapiSaslClient::Start(gopts, *kerberos_offer));
  LOOM_ASSIGN_OR_RETURN(RpcSaslProto initiate, gss->Initiate());
  if (Status s = o->socket.WriteAll(SaslFrame(initiate)); !s.ok()) return Lost(s);
  for (;;) {
    LOOM_ASSIGN_OR_RETURN(RpcSaslProto reply, ReadSasl(o, deadline));
    if (reply.state() == RpcSaslProto::CHALLENGE) {
      LOOM_ASSIGN_OR_RETURN(RpcSaslProto response, gss->Respond(reply.token()));
      if (Status s = o->socket.WriteAll(SaslFrame(response)); !s.ok()) return Lost(s);
      continue;
    }
    if (reply.state() != RpcSaslProto::SUCCESS) {
      return Status::Unauthenticated(Describe() + ": unexpected SASL " + SaslStateName(reply.state()));
    }
    LOOM_ASSIGN_OR_RETURN(std::unique_ptr<SaslSecurityLayer> layer, gss->Finish());
    if (layer) {
      o->wrapping = std::make_unique<Opened::Wrapping>();
      o->wrapping->layer = std::move(layer);
    }
    return Status::Ok();
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

}  // namespace loom::cluster::yarn
