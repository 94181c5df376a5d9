// FakeHdfs's Kerberos: SPNEGO on the NameNode (hadoop-auth's AuthenticationFilter with its
// signed hadoop.auth cookie) and WebHDFS's delegation tokens (GET, RENEW, CANCEL, and the
// `delegation=` parameter that stands for the user).

#include <map>
#include <memory>
#include <optional>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "core/strings.h"
#include "fake_hdfs.h"
#include "fake_hdfs_internal.h"
#include "hadoop/testing/gss_acceptor.h"
#include "hadoop/wire/credentials.h"

namespace loom::yarn_double {

using hadoop::testing::GssAcceptor;  // shared with the IPC server (src/hadoop/testing)

namespace {

// hadoop-auth's AuthenticationFilter refusing a request (sendError: Jetty's HTML page, the
// message as the reason phrase), byte for byte as webhdfs/01 for the 401; the cookie emptied.
std::string FilterRefusal(int code, const std::string& message, const std::string& uri_path, bool negotiate,
                          bool close) {
  std::string page = "<html>\n<head>\n<meta http-equiv=\"Content-Type\" content=\"text/html;charset=ISO-8859-1\"/>\n"
                     "<title>Error " + std::to_string(code) + " " + message + "</title>\n</head>\n<body><h2>HTTP ERROR " +
                     std::to_string(code) + " " + message + "</h2>\n<table>\n<tr><th>URI:</th><td>" + uri_path +
                     "</td></tr>\n<tr><th>STATUS:</th><td>" + std::to_string(code) +
                     "</td></tr>\n<tr><th>MESSAGE:</th><td>" + message +
                     "</td></tr>\n<tr><th>SERVLET:</th><td>com.sun.jersey.spi.container.servlet.ServletContainer-f9d87b"
                     "</td></tr>\n</table>\n\n</body>\n</html>\n";
  std::string out = "HTTP/1.1 " + std::to_string(code) + " " + message +
                    "\r\nPragma: no-cache\r\nX-Content-Type-Options: nosniff\r\nX-FRAME-OPTIONS: SAMEORIGIN\r\n"
                    "X-XSS-Protection: 1; mode=block\r\n";
  if (negotiate) out += "WWW-Authenticate: Negotiate\r\n";
  out += "Set-Cookie: hadoop.auth=; Path=/; Secure; HttpOnly\r\n"
         "Cache-Control: must-revalidate,no-cache,no-store\r\nContent-Type: text/html;charset=iso-8859-1\r\n";
  if (close) out += "Connection: close\r\n";
  return out + "Content-Length: " + std::to_string(page.size()) + "\r\n\r\n" + page;
}

// One line of text for a reason phrase and the HTML page (no CR/LF, no markup).
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\r' || c == '\n' || c == '<' || c == '>') c = ' ';
  }
  return text;
}

}  // namespace

// ---- Kerberos (SPNEGO) and delegation tokens ----------------------------------------------

Status FakeHdfs::RequireSpnego(const std::string& keytab, const std::string& http_principal) {
  // Fail now, not on the first request, when the keytab cannot accept for the principal.
  LOOM_RETURN_IF_ERROR(GssAcceptor::Create(keytab, http_principal).status());
  unsigned char secret[32];
  if (RAND_bytes(secret, sizeof secret) != 1) return Status::Internal("RAND_bytes failed");
  spnego_keytab_ = keytab;
  spnego_principal_ = http_principal;
  cookie_secret_.assign(reinterpret_cast<const char*>(secret), sizeof secret);
  spnego_ = true;
  return Status::Ok();
}

// hadoop-auth's Signer: Base64(HMAC-SHA256(secret, "u=..&p=..&t=..&e=..")).
std::string FakeHdfs::SignCookie(const std::string& data) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), cookie_secret_.data(), static_cast<int>(cookie_secret_.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &len);
  return hadoop::Base64Encode(std::string_view(reinterpret_cast<const char*>(mac), len));
}

Result<std::string> FakeHdfs::DelegationUser(const Request& req) {
  Result<hadoop::Token> token = hadoop::DecodeTokenUrlString(req.Param("delegation"));
  if (!token.ok()) return Status::InvalidArgument(token.status().message());
  LOOM_ASSIGN_OR_RETURN(hadoop::DelegationTokenIdentifier id, tokens_.Verify(*token));
  return ShortName(id.owner);
}

std::optional<std::string> FakeHdfs::Authenticate(Request* req, std::string* auth_headers) {
  bool close = ToLower(req->Header("connection")) == "close";
  std::string uri_path = req->target.substr(0, req->target.find('?'));
  // 1. A delegation token: WebHDFS's AuthFilter passes the request on, the servlet checks it.
  if (!req->Param("delegation").empty()) {
    Result<std::string> user = DelegationUser(*req);
    if (!user.ok()) {
      Reply reply = user.status().code() == StatusCode::kInvalidArgument
                        ? IllegalArgument("Invalid value for webhdfs parameter \"delegation\": " + user.status().message())
                        : InvalidToken(user.status().message());
      return NameNodeResponse(reply, "", close, auth_headers);
    }
    req->auth_user = *user;
    req->auth_principal = *user;
    req->via_delegation = true;
  } else {
    // 2. A hadoop.auth cookie this server signed, not expired (else ignored, as the filter does).
    std::string cookies = req->Header("cookie");
    size_t at = cookies.find("hadoop.auth=");
    if (at != std::string::npos) {
      std::string value = cookies.substr(at + 12, cookies.find(';', at) == std::string::npos
                                                      ? std::string::npos
                                                      : cookies.find(';', at) - at - 12);
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
      size_t sig = value.rfind("&s=");
      if (sig != std::string::npos && SignCookie(value.substr(0, sig)) == value.substr(sig + 3)) {
        std::map<std::string, std::string> fields;
        for (const std::string& kv : Split(value.substr(0, sig), '&')) {
          size_t eq = kv.find('=');
          if (eq != std::string::npos) fields[kv.substr(0, eq)] = kv.substr(eq + 1);
        }
        if (ParseInt(fields["e"]).value_or(0) > NowMs() && fields["t"] == "kerberos") {
          req->auth_user = fields["u"];
          req->auth_principal = fields["p"];
        }
      }
    }
    // 3. Negotiate.
    std::string authorization = req->Header("authorization");
    if (req->auth_user.empty() && ToLower(authorization.substr(0, 10)) == "negotiate ") {
      Result<std::string> token = hadoop::Base64Decode(Trim(authorization.substr(10)));
      Result<std::unique_ptr<GssAcceptor>> acceptor = GssAcceptor::Create(spnego_keytab_, spnego_principal_);
      Result<GssAcceptor::Step> step = !token.ok() ? Result<GssAcceptor::Step>(token.status())
                                       : !acceptor.ok() ? Result<GssAcceptor::Step>(acceptor.status())
                                                        : (*acceptor)->Accept(*token);
      if (!step.ok()) {
        // KerberosAuthenticationHandler's GSSException -> AuthenticationException: fatal, 403.
        return FilterRefusal(403, OneLine("GSSException: " + step.status().message()), uri_path, false, close);
      }
      std::string mutual = step->output.empty() ? "" : " " + hadoop::Base64Encode(step->output);
      if (!step->complete) {  // another leg: never with Kerberos under SPNEGO
        return FilterRefusal(403, "GSSException: the SPNEGO context needs another leg", uri_path, false, close);
      }
      ++spnego_accepts_;
      std::string principal = (*acceptor)->client_principal();
      req->auth_user = ShortName(principal);
      req->auth_principal = principal;
      std::string data = "u=" + req->auth_user + "&p=" + principal + "&t=kerberos&e=" +
                         std::to_string(NowMs() + cookie_validity_ms_.load());
      *auth_headers = "WWW-Authenticate: Negotiate" + mutual + "\r\nSet-Cookie: hadoop.auth=\"" + data + "&s=" +
                      SignCookie(data) + "\"; Path=/; Secure; HttpOnly\r\n";
    }
    // 4. Nothing valid: the challenge.
    if (req->auth_user.empty()) return FilterRefusal(401, "Authentication required", uri_path, true, close);
  }
  // user.name is not trusted: JspHelper.checkUsername.
  std::string named = req->Param("user.name");
  if (!named.empty() && named != req->auth_user) {
    return NameNodeResponse(RemoteException(403, "SecurityException", "java.lang.SecurityException",
                                            "Failed to obtain user group information: java.io.IOException: "
                                            "Usernames not matched: name=" + named + " != expected=" + req->auth_user),
                            "", close, auth_headers);
  }
  return std::nullopt;
}

Reply FakeHdfs::GetDelegationToken(const Request& req) {
  if (!spnego_) return {200, "{\"Token\":null}", ""};  // security off: no token
  if (req.via_delegation) {
    return RemoteException(403, "IOException", "java.io.IOException",
                           "Delegation Token can be issued only with kerberos or web authentication");
  }
  std::string renewer = req.Param("renewer", req.auth_user);
  hadoop::Token token = tokens_.Mint(req.auth_user, renewer);
  token.kind = "WEBHDFS delegation";
  token.service = "127.0.0.1:" + std::to_string(rpc_port_);
  ordered_json urlstring;
  urlstring["urlString"] = hadoop::EncodeTokenUrlString(token);
  ordered_json j;
  j["Token"] = urlstring;
  return {200, Dump(j), ""};
}

Reply FakeHdfs::RenewDelegationToken(const Request& req) {
  Result<hadoop::Token> token = hadoop::DecodeTokenUrlString(req.Param("token"));
  if (!token.ok()) return IllegalArgument("Invalid value for webhdfs parameter \"token\": " + token.status().message());
  Result<int64_t> expiry = tokens_.Renew(*token, req.auth_principal.empty() ? req.user() : req.auth_principal);
  if (!expiry.ok()) {
    return RemoteException(403, "AccessControlException", "org.apache.hadoop.security.AccessControlException",
                           expiry.status().message());
  }
  ordered_json j;
  j["long"] = *expiry;
  return {200, Dump(j), ""};
}

Reply FakeHdfs::CancelDelegationToken(const Request& req) {
  Result<hadoop::Token> token = hadoop::DecodeTokenUrlString(req.Param("token"));
  if (!token.ok()) return IllegalArgument("Invalid value for webhdfs parameter \"token\": " + token.status().message());
  Status cancelled = tokens_.Cancel(*token, req.auth_principal.empty() ? req.user() : req.auth_principal);
  if (!cancelled.ok()) {
    return RemoteException(403, "AccessControlException", "org.apache.hadoop.security.AccessControlException",
                           cancelled.message());
  }
  return {200, "", ""};
}

}  // namespace loom::yarn_double
