#include "hadoop/hdfs/spnego.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>

#include <spdlog/spdlog.h>

#include "core/strings.h"
#include "hadoop/wire/credentials.h"
#include "hadoop/wire/gssapi_library.h"
#include "hadoop/wire/kerberos_login.h"
#include "hadoop/wire/sasl_gssapi.h"

namespace loom::hadoop {
namespace {

struct UrlParts {
  std::string origin;  // "http://host:port", the cookie jar's key
  std::string host;    // without brackets
};

Result<UrlParts> ParseUrl(const std::string& url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return Status::InvalidArgument("not an http(s) URL: " + RedactUrlSecrets(url));
  size_t start = scheme_end + 3;
  size_t end = url.find_first_of("/?#", start);
  std::string authority = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  UrlParts parts;
  parts.origin = url.substr(0, scheme_end + 3) + authority;
  if (!authority.empty() && authority[0] == '[') {
    size_t close = authority.find(']');
    if (close == std::string::npos) return Status::InvalidArgument("bad IPv6 host in " + RedactUrlSecrets(url));
    parts.host = authority.substr(1, close - 1);
  } else {
    parts.host = authority.substr(0, authority.find(':'));
  }
  if (parts.host.empty()) return Status::InvalidArgument("no host in URL " + RedactUrlSecrets(url));
  return parts;
}

// ---- the hadoop.auth cookie jar ----------------------------------------------------------

struct Cookie {
  std::string value;             // as the server wrote it, quotes included
  std::optional<int64_t> expiry;  // e= (ms since the epoch)
};

std::mutex g_cookie_mu;
std::map<std::string, Cookie>& Jar() {
  static auto* jar = new std::map<std::string, Cookie>();
  return *jar;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<std::string> CookieFor(const std::string& origin) {
  std::lock_guard lock(g_cookie_mu);
  auto it = Jar().find(origin);
  if (it == Jar().end()) return std::nullopt;
  // A minute's margin: a cookie about to expire would cost a 401 round trip.
  if (it->second.expiry && *it->second.expiry <= NowMs() + 60'000) {
    Jar().erase(it);
    return std::nullopt;
  }
  return it->second.value;
}

void DropCookie(const std::string& origin) {
  std::lock_guard lock(g_cookie_mu);
  Jar().erase(origin);
}

// Keeps the server's `Set-Cookie: hadoop.auth=...` (an empty value, as in the 401 of
// webhdfs/01, drops it).
void StoreCookies(const std::string& origin, const HttpResponse& response) {
  for (const std::string& header : response.HeaderValues("Set-Cookie")) {
    if (header.rfind("hadoop.auth=", 0) != 0) continue;
    std::string value = header.substr(12, header.find(';') == std::string::npos ? std::string::npos : header.find(';') - 12);
    std::lock_guard lock(g_cookie_mu);
    if (value.empty() || value == "\"\"") {
      Jar().erase(origin);
      continue;
    }
    Cookie cookie{value, std::nullopt};
    std::string inner = value;
    if (inner.size() >= 2 && inner.front() == '"' && inner.back() == '"') inner = inner.substr(1, inner.size() - 2);
    for (const std::string& field : Split(inner, '&')) {
      if (!StartsWith(field, "e=")) continue;
      if (Result<int64_t> e = ParseInt(std::string_view(field).substr(2)); e.ok()) cookie.expiry = *e;
    }
    Jar()[origin] = std::move(cookie);
  }
}

// ---- the GSS context --------------------------------------------------------------------

// The Negotiate token of a `WWW-Authenticate: Negotiate <token>` header; "" when bare.
std::optional<std::string> NegotiateToken(const HttpResponse& response) {
  for (const std::string& value : response.HeaderValues("WWW-Authenticate")) {
    if (ToLower(value.substr(0, 9)) != "negotiate") continue;
    size_t start = value.find_first_not_of(' ', 9);
    return start == std::string::npos ? "" : value.substr(start);
  }
  return std::nullopt;
}

class SpnegoContext {
 public:
  SpnegoContext(const GssapiLibrary* gss, std::string principal) : gss_(gss), principal_(std::move(principal)) {}
  ~SpnegoContext() {
    OM_uint32 minor = 0;
    if (context_ != GSS_C_NO_CONTEXT) gss_->delete_sec_context(&minor, &context_, GSS_C_NO_BUFFER);
    if (target_ != GSS_C_NO_NAME) gss_->release_name(&minor, &target_);
  }
  SpnegoContext(const SpnegoContext&) = delete;
  SpnegoContext& operator=(const SpnegoContext&) = delete;

  // The first token (raw bytes), or why the ticket for the service cannot be had.
  Result<std::string> Start(const KerberosLogin& login) {
    OM_uint32 minor = 0;
    gss_buffer_desc name{principal_.size(), const_cast<char*>(principal_.data())};
    OM_uint32 major = gss_->import_name(&minor, &name, gss_->krb5_principal_name, &target_);
    if (GSS_ERROR(major)) return Status::InvalidArgument("bad service principal " + principal_ + ": " + GssapiError(*gss_, major, minor));
    return Step(login.credential(), GSS_C_NO_BUFFER);
  }

  // Checks the server's mutual-auth token; OK once the context is complete.
  Status Finish(const KerberosLogin& login, const std::string& token) {
    gss_buffer_desc in{token.size(), const_cast<char*>(token.data())};
    Result<std::string> out = Step(login.credential(), &in);
    if (!out.ok()) return out.status();
    if (!complete_) return Status::Unauthenticated("the server's SPNEGO answer did not complete the context");
    return Status::Ok();
  }

  bool complete() const { return complete_; }

 private:
  Result<std::string> Step(gss_cred_id_t cred, gss_buffer_t in) {
    OM_uint32 minor = 0, ret_flags = 0;
    gss_buffer_desc out{0, nullptr};
    // Mutual authentication and replay detection, as curl asks (no credential delegation: the
    // NameNode has no use for the user's TGT).
    // The Kerberos mechanism itself, as Java's KerberosAuthenticator (GSS_KRB5_MECH_OID): the
    // login's credential is a krb5 one (a keytab's lives in a private memory cache that SPNEGO's
    // own credential lookup would not find), and Hadoop's filter accepts a raw krb5 token as
    // well as curl's SPNEGO-wrapped one (webhdfs/02).
    OM_uint32 major = gss_->init_sec_context(&minor, cred, &context_, target_, gss_->krb5_mech,
                                             GSS_C_MUTUAL_FLAG | GSS_C_REPLAY_FLAG, 0, GSS_C_NO_CHANNEL_BINDINGS,
                                             in, nullptr, &out, &ret_flags, nullptr);
    std::string token = TakeBuffer(*gss_, &out);
    if (GSS_ERROR(major)) return Status::Unauthenticated(GssapiError(*gss_, major, minor));
    complete_ = major == GSS_S_COMPLETE;
    return token;
  }

  const GssapiLibrary* gss_;
  std::string principal_;
  gss_name_t target_ = GSS_C_NO_NAME;
  gss_ctx_id_t context_ = GSS_C_NO_CONTEXT;
  bool complete_ = false;
};

std::string KinitHint(const KerberosLogin* login) {
  return login == nullptr ? "run kinit (or set loom.kerberos.keytab and loom.kerberos.principal) with "
                            "hadoop.security.authentication=kerberos in core-site.xml"
                          : "check that the KDC knows the principal and that " + login->principal() +
                                "'s ticket is valid (klist; kinit renews it)";
}

bool IsRemoteException(const std::string& body) {
  return body.find("\"RemoteException\"") != std::string::npos;
}

void Rewind(const HttpRequest& request) {
  if (request.seek_body != nullptr) request.seek_body(request.body, 0, SEEK_SET);
}

}  // namespace

Result<std::string> SpnegoServiceHost(const std::string& url) {
  LOOM_ASSIGN_OR_RETURN(UrlParts parts, ParseUrl(url));
  return ServicePrincipalHost(parts.host);
}

Result<HttpResponse> AuthenticatedExchange(const HttpRequest& request) {
  std::shared_ptr<const KerberosClientConf> kerberos = ProcessKerberos();
  return AuthenticatedExchange(request, kerberos && kerberos->login ? kerberos->login.get() : nullptr);
}

Result<HttpResponse> AuthenticatedExchange(const HttpRequest& request, const KerberosLogin* login) {
  LOOM_ASSIGN_OR_RETURN(UrlParts parts, ParseUrl(request.url));
  // 1. A cookie from an earlier exchange with this server stands for the Kerberos login.
  if (std::optional<std::string> cookie = CookieFor(parts.origin)) {
    HttpRequest with_cookie = request;
    with_cookie.headers.push_back("Cookie: hadoop.auth=" + *cookie);
    LOOM_ASSIGN_OR_RETURN(HttpResponse response, HttpExchange(with_cookie));
    if (response.code != 401) {
      StoreCookies(parts.origin, response);
      return response;
    }
    DropCookie(parts.origin);  // expired or signed with a key the server no longer has
    Rewind(request);
    spdlog::debug("{}: hadoop.auth cookie refused; negotiating again", parts.origin);
  }
  // 2. Without a login, the request as it is; a Negotiate demand is the user's to fix.
  if (login == nullptr) {
    LOOM_ASSIGN_OR_RETURN(HttpResponse response, HttpExchange(request));
    if (response.code == 401 && NegotiateToken(response)) {
      return Status::Unauthenticated(request.method + " " + RedactUrlSecrets(request.url) +
                                     ": the server requires Kerberos (SPNEGO, HTTP 401 Negotiate) and this "
                                     "process has no Kerberos login: " + KinitHint(nullptr));
    }
    return response;
  }
  // 3. Negotiate on the first request.
  LOOM_ASSIGN_OR_RETURN(std::string host, SpnegoServiceHost(request.url));
  std::string principal = "HTTP/" + host;
  LOOM_ASSIGN_OR_RETURN(const GssapiLibrary* gss, Gssapi());
  SpnegoContext context(gss, principal);
  Result<std::string> token = context.Start(*login);
  if (!token.ok()) {
    return Status::Unauthenticated(request.method + " " + RedactUrlSecrets(request.url) + ": no Kerberos ticket for " + principal +
                                   " (the server's SPNEGO principal): " + token.status().message() + "; " +
                                   KinitHint(login));
  }
  HttpRequest negotiated = request;
  negotiated.headers.push_back("Authorization: Negotiate " + Base64Encode(*token));
  LOOM_ASSIGN_OR_RETURN(HttpResponse response, HttpExchange(negotiated));
  if (response.code == 401) {
    return Status::Unauthenticated(request.method + " " + RedactUrlSecrets(request.url) + ": the server refused the Kerberos ticket for " +
                                   principal + " as " + login->principal() + " (HTTP 401); " + KinitHint(login) +
                                   ", and that the server's SPNEGO keytab holds " + principal);
  }
  if (response.code == 403 && !IsRemoteException(response.body)) {
    return Status::PermissionDenied(request.method + " " + RedactUrlSecrets(request.url) + ": the server refused " + login->principal() +
                                    " authenticated for " + principal + " (HTTP 403): " +
                                    response.body.substr(0, 200) + "; " + KinitHint(login));
  }
  if (std::optional<std::string> answer = NegotiateToken(response); answer && !answer->empty()) {
    Result<std::string> bytes = Base64Decode(*answer);
    Status mutual = bytes.ok() ? context.Finish(*login, *bytes) : bytes.status();
    if (!mutual.ok()) {
      return Status::Unauthenticated(request.method + " " + RedactUrlSecrets(request.url) + ": the server's SPNEGO mutual-authentication "
                                     "token for " + principal + " is not valid (" + mutual.message() +
                                     "): it is not the service the ticket was for");
    }
  }
  StoreCookies(parts.origin, response);
  return response;
}

void ClearSpnegoCookies() {
  std::lock_guard lock(g_cookie_mu);
  Jar().clear();
}

}  // namespace loom::hadoop
