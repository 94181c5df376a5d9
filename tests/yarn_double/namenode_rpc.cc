#include "namenode_rpc.h"

#include "hadoop/proto/hadoop_rpc.pb.h"
#include "hadoop/wire/sasl_digest.h"

namespace loom::yarn_double {

namespace {

namespace hc = ::hadoop::common;

constexpr char kInvalidToken[] = "org.apache.hadoop.security.token.SecretManager$InvalidToken";
constexpr char kAccessControl[] = "org.apache.hadoop.security.AccessControlException";

hadoop::Token FromProto(const hc::TokenProto& p) {
  return hadoop::Token{p.identifier(), p.password(), p.kind(), p.service()};
}

// The store's refusal as the NameNode throws it: AccessControlException when the caller may not
// (renewer, canceller), InvalidToken when the token is not (or no longer) good.
RpcError StoreError(const Status& s) {
  const std::string& m = s.message();
  bool access = m.find("non-matching renewer") != std::string::npos ||
                m.find("is not authorized") != std::string::npos || m.find("without a renewer") != std::string::npos;
  return RpcError{access ? kAccessControl : kInvalidToken, m};
}

RpcError BadRequest(const std::string& method) {
  return RpcError{"java.io.IOException", "malformed " + method + " request"};
}

}  // namespace

NameNodeRpc::NameNodeRpc(NameNodeRpcOptions options) : options_(std::move(options)) {}

NameNodeRpc::~NameNodeRpc() { Stop(); }

int NameNodeRpc::port() const { return server_ ? server_->port() : 0; }

void NameNodeRpc::Stop() {
  if (server_) server_->Stop();
}

Status NameNodeRpc::Start() {
  if (options_.kerberos_principal.empty() || options_.kerberos_keytab.empty() || options_.tokens == nullptr) {
    return Status::InvalidArgument("NameNodeRpc needs a Kerberos principal, its keytab and a token store");
  }
  IpcServerOptions o;
  o.name = "namenode";
  o.protocol = kNameNodeClientProtocol;
  o.bind_ip = options_.bind_ip;
  o.idle_close_ms = options_.idle_close_ms;
  o.rpc_protection = options_.rpc_protection;
  o.kerberos_principal = options_.kerberos_principal;
  o.kerberos_keytab = options_.kerberos_keytab;
  o.next_nonce = [] { return hadoop::NewCnonce(); };
  DelegationTokenStore* store = options_.tokens;
  o.password_for = [store](const std::string& identifier) -> PasswordLookup {
    Result<std::string> password = store->RetrievePassword(identifier);
    if (!password.ok()) return RpcError{kInvalidToken, password.status().message()};
    return *password;
  };
  // A TOKEN connection acts as the token's owner.
  o.token_user = [](const std::string& identifier) {
    Result<hadoop::DelegationTokenIdentifier> id = hadoop::ParseDelegationTokenIdentifier(identifier);
    return id.ok() ? id->owner : std::string();
  };
  o.handle = [this](const std::string& method, std::string_view request, const ConnectionInfo& conn) {
    return Handle(method, request, conn);
  };
  server_ = std::make_unique<IpcServer>(std::move(o));
  return server_->Start();
}

CallResult NameNodeRpc::Handle(const std::string& method, std::string_view request, const ConnectionInfo& conn) {
  DelegationTokenStore& store = *options_.tokens;
  // FSNamesystem: issuing and renewing need the caller's own Kerberos identity, not a token.
  bool kerberos = !conn.kerberos_principal.empty();
  if (method == "getDelegationToken") {
    hc::GetDelegationTokenRequestProto req;
    if (!req.ParseFromArray(request.data(), static_cast<int>(request.size()))) return BadRequest(method);
    if (!kerberos) {
      return RpcError{"java.io.IOException", "Delegation Token can be issued only with kerberos or web authentication"};
    }
    hadoop::Token token = store.Mint(conn.kerberos_principal, req.renewer());
    hc::GetDelegationTokenResponseProto resp;
    hc::TokenProto* t = resp.mutable_token();
    t->set_identifier(token.identifier);
    t->set_password(token.password);
    t->set_kind(token.kind);
    t->set_service("");  // rpc/02: the client sets the service
    return resp.SerializeAsString();
  }
  if (method == "renewDelegationToken") {
    hc::RenewDelegationTokenRequestProto req;
    if (!req.ParseFromArray(request.data(), static_cast<int>(request.size()))) return BadRequest(method);
    if (!kerberos) {
      return RpcError{"java.io.IOException", "Delegation Token can be renewed only with kerberos or web authentication"};
    }
    Result<int64_t> expiry = store.Renew(FromProto(req.token()), conn.kerberos_principal);
    if (!expiry.ok()) return StoreError(expiry.status());
    hc::RenewDelegationTokenResponseProto resp;
    resp.set_newexpirytime(static_cast<uint64_t>(*expiry));
    return resp.SerializeAsString();
  }
  if (method == "cancelDelegationToken") {
    hc::CancelDelegationTokenRequestProto req;
    if (!req.ParseFromArray(request.data(), static_cast<int>(request.size()))) return BadRequest(method);
    Status s = store.Cancel(FromProto(req.token()), conn.user);
    if (!s.ok()) return StoreError(s);
    return hc::CancelDelegationTokenResponseProto().SerializeAsString();
  }
  return RpcError{"org.apache.hadoop.ipc.RpcNoSuchMethodException",
                  "Unknown method " + method + " called on " + std::string(kNameNodeClientProtocol) + " protocol.",
                  hc::RpcResponseHeaderProto::ERROR_NO_SUCH_METHOD};
}

}  // namespace loom::yarn_double
