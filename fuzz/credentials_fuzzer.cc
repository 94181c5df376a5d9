// Fuzzes Loom's readers of Hadoop's Writable encodings, credentials (HDTS) files, Base64 and the
// SASL DIGEST-MD5 texts of both sides. Beyond not crashing, every accepted input must survive a
// round trip: credentials re-serialize (both formats) to the same values, VLongs re-encode to
// the same number, and a response to any accepted challenge for realm "default" verifies.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "hadoop/wire/credentials.h"
#include "hadoop/wire/sasl_digest.h"

namespace {

using namespace loom::hadoop;

void Require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "credentials_fuzzer: property violated: %s\n", what);
  std::abort();
}

void CheckCredentials(std::string_view in) {
  auto creds = ParseCredentials(in);
  if (!creds.ok()) return;
  for (CredentialsFormat f : {CredentialsFormat::kWritable, CredentialsFormat::kProtobuf}) {
    auto again = ParseCredentials(SerializeCredentials(*creds, f));
    Require(again.ok() && *again == *creds, "credentials round trip");
  }
}

void CheckVLongs(std::string_view in) {
  while (!in.empty()) {
    auto v = ReadVLong(&in);
    if (!v.ok()) return;
    std::string enc;
    AppendVLong(&enc, *v);
    std::string_view back = enc;
    auto w = ReadVLong(&back);
    Require(w.ok() && *w == *v && back.empty(), "VLong round trip");
  }
}

void CheckBase64(std::string_view in) {
  auto decoded = Base64Decode(in);
  if (!decoded.ok()) return;
  auto again = Base64Decode(Base64Encode(*decoded));
  Require(again.ok() && *again == *decoded, "Base64 round trip");
}

void CheckDigest(std::string_view in) {
  (void)ParseDirectives(in);
  // The input as a client's INITIATE token, against a fixed server state.
  (void)DigestVerifyWithPassword(in, "nonce", "identifier", "password");
  auto lookup = [](const std::string& id) -> loom::Result<std::string> { return id + "-password"; };
  (void)DigestVerify(in, "nonce", lookup);

  // The input as a server's challenge: whatever we answer must satisfy our own server side.
  auto challenge = ParseDigestChallenge(in);
  if (!challenge.ok()) return;
  Token token{std::string("\x00\xff identifier", 13), "password", "YARN_AM_RM_TOKEN", ""};
  auto r = DigestRespond(token, *challenge, "cnonce", "/default");
  if (!r.ok() || challenge->realm != "default") return;
  auto v = DigestVerifyWithPassword(r->response_token, challenge->nonce, token.identifier, token.password);
  Require(v.ok(), "our response to an accepted challenge verifies");
  Require(VerifyRspAuth(*r, v->success_token).ok(), "rspauth verifies");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  CheckCredentials(in);
  CheckVLongs(in);
  std::string text;  // the same bytes as a Text, as the Writable parser sees a string
  AppendText(&text, in);
  std::string_view t = text;
  auto read = ReadText(&t);
  Require(read.ok() && *read == in && t.empty(), "Text round trip");
  CheckBase64(in);
  CheckDigest(in);
  return 0;
}
