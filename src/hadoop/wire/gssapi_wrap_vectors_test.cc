// The RFC 4121 Wrap tokens of the Kerberized cluster's recordings (tests/data/yarn-captures/
// kerberos, README K4.6-10), decrypted and checked. GSSAPI sealing is not deterministic (a random
// confounder), so these bytes cannot be reproduced; instead every recorded token is opened with
// the recorded initiator subkey (keys.json) through MIT's own RFC 3961 code (libkrb5's
// krb5_c_decrypt / krb5_c_verify_checksum, the reference), its header held to what K4 says, and
// the plaintext held to the .plain.*.bin streams byte for byte.
//
// Then the same bytes go through Loom's own layer (MakeGssapiSecurityLayer, what the IPC client
// unwraps with after SASL SUCCESS): an MIT acceptor context is built from the recorded AP-REQ
// and the service keytab, and Loom's Unwrap must open the client's recorded WRAP tokens in order.
#include <krb5/krb5.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "hadoop/wire/gssapi_library.h"

#include "core/files.h"
#include "core/testing.h"
#include "hadoop/testing/captures.h"
#include "hadoop/wire/ipc_frame.h"
#include "hadoop/wire/sasl_gssapi.h"
#include "hadoop/wire/test_hex.h"
#include "hadoop/wire/test_sasl_frames.h"

namespace loom::hadoop {
namespace {

const std::string kKerberos = testing::CaptureDir() + "kerberos/";

// RFC 4121 section 2 key usages.
constexpr krb5_keyusage kAcceptorSeal = 22;
constexpr krb5_keyusage kInitiatorSeal = 24;
constexpr krb5_cksumtype kHmacSha1_96Aes256 = 16;  // RFC 3962
constexpr size_t kHeaderBytes = 16;
constexpr size_t kChecksumBytes = 12;  // HMAC-SHA1-96

uint64_t BigEndian(std::string_view b) {
  uint64_t v = 0;
  for (char c : b) v = (v << 8) | static_cast<uint8_t>(c);
  return v;
}

// The 16-byte RFC 4121 section 4.2.6.2 header.
struct WrapHeader {
  uint8_t flags = 0;
  uint16_t ec = 0, rrc = 0;
  uint64_t seq = 0;
};

Result<WrapHeader> ParseWrapHeader(std::string_view token) {
  if (token.size() < kHeaderBytes) return Status::InvalidArgument("token of " + std::to_string(token.size()) + " bytes");
  if (Hex(token.substr(0, 2)) != "0504") return Status::InvalidArgument("TOK_ID " + Hex(token.substr(0, 2)));
  if (static_cast<uint8_t>(token[3]) != 0xff) return Status::InvalidArgument("filler " + Hex(token.substr(3, 1)));
  WrapHeader h;
  h.flags = static_cast<uint8_t>(token[2]);
  h.ec = static_cast<uint16_t>(BigEndian(token.substr(4, 2)));
  h.rrc = static_cast<uint16_t>(BigEndian(token.substr(6, 2)));
  h.seq = BigEndian(token.substr(8, 8));
  return h;
}

// MIT's RFC 3961 functions over one recorded key (aes256-cts-hmac-sha1-96).
class Krb5Key {
 public:
  explicit Krb5Key(const std::string& key) : bytes_(key) {
    EXPECT_EQ(krb5_init_context(&ctx_), 0);
    block_.magic = KV5M_KEYBLOCK;
    block_.enctype = ENCTYPE_AES256_CTS_HMAC_SHA1_96;
    block_.length = static_cast<unsigned int>(bytes_.size());
    block_.contents = reinterpret_cast<krb5_octet*>(bytes_.data());
  }
  ~Krb5Key() { krb5_free_context(ctx_); }

  // The plaintext (confounder removed) of `cipher`, or MIT's error text.
  Result<std::string> Decrypt(krb5_keyusage usage, std::string_view cipher) const {
    krb5_enc_data in{};
    in.magic = KV5M_ENC_DATA;
    in.enctype = block_.enctype;
    in.ciphertext.length = static_cast<unsigned int>(cipher.size());
    in.ciphertext.data = const_cast<char*>(cipher.data());
    std::string out(cipher.size(), '\0');
    krb5_data plain{KV5M_DATA, static_cast<unsigned int>(out.size()), out.data()};
    krb5_error_code rc = krb5_c_decrypt(ctx_, &block_, usage, nullptr, &in, &plain);
    if (rc != 0) return Status::Unauthenticated(Error(rc));
    out.resize(plain.length);
    return out;
  }

  // krb5_c_verify_checksum of `data` against the 12-byte `mac` (hmac-sha1-96-aes256).
  Status VerifyChecksum(krb5_keyusage usage, std::string_view data, std::string_view mac) const {
    krb5_data d{KV5M_DATA, static_cast<unsigned int>(data.size()), const_cast<char*>(data.data())};
    krb5_checksum c{};
    c.magic = KV5M_CHECKSUM;
    c.checksum_type = kHmacSha1_96Aes256;
    c.length = static_cast<unsigned int>(mac.size());
    c.contents = reinterpret_cast<krb5_octet*>(const_cast<char*>(mac.data()));
    krb5_boolean valid = 0;
    krb5_error_code rc = krb5_c_verify_checksum(ctx_, &block_, usage, &d, &c, &valid);
    if (rc != 0) return Status::Unauthenticated(Error(rc));
    return valid ? Status::Ok() : Status::Unauthenticated("checksum does not match");
  }

 private:
  std::string Error(krb5_error_code rc) const {
    const char* m = krb5_get_error_message(ctx_, rc);
    std::string s = m;
    krb5_free_error_message(ctx_, m);
    return s;
  }
  krb5_context ctx_ = nullptr;
  std::string bytes_;
  krb5_keyblock block_{};
};

// An unsealed token's checksum input: payload || header with EC and RRC zeroed (RFC 4121 4.2.4).
std::string ChecksumInput(std::string_view token) {
  std::string header(token.substr(0, kHeaderBytes));
  for (int i = 4; i < 8; ++i) header[i] = 0;
  return std::string(token.substr(kHeaderBytes, token.size() - kHeaderBytes - kChecksumBytes)) + header;
}

struct Recording {
  nlohmann::json gss;
  std::vector<SaslFrame> c2s, s2c;
  std::string plain_c2s, plain_s2c;
};

Result<Recording> Load(const std::string& stem) {
  LOOM_ASSIGN_OR_RETURN(std::string keys_text, ReadFile(kKerberos + "keys.json"));
  Recording r;
  r.gss = nlohmann::json::parse(keys_text).at(stem).at("gssapi");
  LOOM_ASSIGN_OR_RETURN(std::string c2s, ReadFile(kKerberos + stem + ".c2s.bin"));
  LOOM_ASSIGN_OR_RETURN(std::string s2c, ReadFile(kKerberos + stem + ".s2c.bin"));
  LOOM_ASSIGN_OR_RETURN(r.plain_c2s, ReadFile(kKerberos + stem + ".plain.c2s.bin"));
  LOOM_ASSIGN_OR_RETURN(r.plain_s2c, ReadFile(kKerberos + stem + ".plain.s2c.bin"));
  r.c2s = RecordedSaslFrames(c2s, true);
  r.s2c = RecordedSaslFrames(s2c, false);
  return r;
}

// The K4 order: c2s NEGOTIATE, INITIATE, RESPONSE(""), RESPONSE(layer), WRAP...;
// s2c NEGOTIATE, CHALLENGE(AP-REP), CHALLENGE(layer), SUCCESS, WRAP...
struct Exchange {
  std::string initiate;                   // the AP-REQ token
  std::string layer_offer, layer_choice;  // steps 6 and 7
  std::vector<std::string> c2s_wraps, s2c_wraps;
};

Exchange Split(const Recording& r) {
  Exchange e;
  std::vector<RpcSaslProto::SaslState> c2s_states, s2c_states;
  for (const SaslFrame& f : r.c2s) {
    EXPECT_EQ(f.call_id, kSaslCallId);
    // Java's WRAP request headers repeat the SASL header fields (K4.10).
    EXPECT_EQ(f.retry_count, -1);
    EXPECT_EQ(f.client_id, "");
    c2s_states.push_back(f.sasl.state());
    if (f.sasl.state() == RpcSaslProto::WRAP) e.c2s_wraps.push_back(f.sasl.token());
  }
  for (const SaslFrame& f : r.s2c) {
    EXPECT_EQ(f.call_id, kSaslCallId);
    s2c_states.push_back(f.sasl.state());
    if (f.sasl.state() == RpcSaslProto::WRAP) e.s2c_wraps.push_back(f.sasl.token());
  }
  using S = RpcSaslProto;
  const std::vector<S::SaslState> c2s_pre{S::NEGOTIATE, S::INITIATE, S::RESPONSE, S::RESPONSE};
  const std::vector<S::SaslState> s2c_pre{S::NEGOTIATE, S::CHALLENGE, S::CHALLENGE, S::SUCCESS};
  EXPECT_GE(c2s_states.size(), c2s_pre.size() + 1);
  EXPECT_GE(s2c_states.size(), s2c_pre.size() + 1);
  if (c2s_states.size() <= c2s_pre.size() || s2c_states.size() <= s2c_pre.size()) return e;
  EXPECT_EQ(std::vector<S::SaslState>(c2s_states.begin(), c2s_states.begin() + 4), c2s_pre);
  EXPECT_EQ(std::vector<S::SaslState>(s2c_states.begin(), s2c_states.begin() + 4), s2c_pre);
  // After SUCCESS nothing but WRAP, both ways (K4.9, K5.2).
  EXPECT_EQ(e.c2s_wraps.size(), c2s_states.size() - 4);
  EXPECT_EQ(e.s2c_wraps.size(), s2c_states.size() - 4);
  e.initiate = r.c2s[1].sasl.token();
  EXPECT_TRUE(r.c2s[2].sasl.has_token());  // present and empty (K4.5)
  EXPECT_EQ(r.c2s[2].sasl.token(), "");
  e.layer_choice = r.c2s[3].sasl.token();
  e.layer_offer = r.s2c[2].sasl.token();
  EXPECT_FALSE(r.s2c[3].sasl.has_token());
  return e;
}

class RecordedWrap : public ::testing::TestWithParam<std::string> {};

// Steps 6/7: the layer offer and choice are Wrap tokens without encryption, their HMAC-SHA1-96
// over payload || header (EC=RRC=0) with the acceptor's/initiator's seal usage.
TEST_P(RecordedWrap, LayerNegotiationChecksumsVerify) {
  Result<Recording> r = Load(GetParam());
  ASSERT_OK(r);
  Exchange e = Split(*r);
  const Krb5Key subkey(FromHex(r->gss.at("initiator_subkey").get<std::string>()));
  const uint64_t n_init = r->gss.at("initiator_seq").get<uint64_t>();
  const uint64_t n_acc = r->gss.at("acceptor_seq").get<uint64_t>();
  ASSERT_EQ(r->gss.at("initiator_subkey_type").get<int>(), ENCTYPE_AES256_CTS_HMAC_SHA1_96);

  struct Case {
    const char* name;
    std::string token;
    uint8_t flags;
    uint64_t seq;
    krb5_keyusage usage, other_usage;
  };
  for (const Case& c : {Case{"offer", e.layer_offer, 0x01, n_acc, kAcceptorSeal, kInitiatorSeal},
                        Case{"choice", e.layer_choice, 0x00, n_init, kInitiatorSeal, kAcceptorSeal}}) {
    SCOPED_TRACE(c.name);
    Result<WrapHeader> h = ParseWrapHeader(c.token);
    ASSERT_OK(h);
    EXPECT_EQ(h->flags, c.flags);
    EXPECT_EQ(h->ec, kChecksumBytes);  // EC = checksum length when not sealed
    EXPECT_EQ(h->rrc, 0);
    EXPECT_EQ(h->seq, c.seq);
    ASSERT_EQ(c.token.size(), kHeaderBytes + 4 + kChecksumBytes);
    const std::string payload = c.token.substr(kHeaderBytes, 4);
    Result<GssapiLayerMessage> m = ParseGssapiLayerMessage(payload);
    ASSERT_OK(m);
    EXPECT_EQ(m->layers, kGssapiLayerPrivacy);
    EXPECT_EQ(m->max_buffer, kGssapiMaxBuffer);
    EXPECT_EQ(m->authzid, "");
    // What Loom's client answers with is the recorded choice's payload.
    if (c.flags == 0x00) {
      EXPECT_EQ(Hex(BuildGssapiLayerMessage(kGssapiLayerPrivacy, kGssapiMaxBuffer)), Hex(payload));
    }
    const std::string mac = c.token.substr(c.token.size() - kChecksumBytes);
    EXPECT_OK(subkey.VerifyChecksum(c.usage, ChecksumInput(c.token), mac));
    // Negatives: the other direction's usage, the header with its wire EC, one flipped payload bit.
    EXPECT_FALSE(subkey.VerifyChecksum(c.other_usage, ChecksumInput(c.token), mac).ok());
    EXPECT_FALSE(subkey.VerifyChecksum(c.usage, payload + c.token.substr(0, kHeaderBytes), mac).ok());
    std::string flipped = c.token;
    flipped[kHeaderBytes] ^= 0x01;
    EXPECT_FALSE(subkey.VerifyChecksum(c.usage, ChecksumInput(flipped), mac).ok());
  }
}

// Steps 9/10: every WRAP after SUCCESS is sealed with the initiator subkey, SND_SEQ counting on
// from the layer tokens' n, and the plaintexts concatenate to the recorded stream.
TEST_P(RecordedWrap, SealedTokensDecryptToTheRecordedPlaintext) {
  Result<Recording> r = Load(GetParam());
  ASSERT_OK(r);
  Exchange e = Split(*r);
  const Krb5Key subkey(FromHex(r->gss.at("initiator_subkey").get<std::string>()));
  const Krb5Key session_key(FromHex(r->gss.at("session_key").get<std::string>()));
  const uint64_t n_init = r->gss.at("initiator_seq").get<uint64_t>();
  const uint64_t n_acc = r->gss.at("acceptor_seq").get<uint64_t>();
  ASSERT_FALSE(e.c2s_wraps.empty());
  ASSERT_FALSE(e.s2c_wraps.empty());

  auto check_direction = [&](const std::vector<std::string>& tokens, uint8_t flags, uint64_t first_seq,
                             krb5_keyusage usage, krb5_keyusage other_usage, const std::string& recorded) {
    std::string opened;
    for (size_t i = 0; i < tokens.size(); ++i) {
      SCOPED_TRACE("token " + std::to_string(i));
      const std::string& token = tokens[i];
      Result<WrapHeader> h = ParseWrapHeader(token);
      ASSERT_OK(h);
      EXPECT_EQ(h->flags, flags);  // 0x02 Sealed (| 0x01 SentByAcceptor); never 0x04 AcceptorSubkey
      EXPECT_EQ(h->ec, 0);
      EXPECT_EQ(h->rrc, 0);
      EXPECT_EQ(h->seq, first_seq + i);
      const std::string cipher = token.substr(kHeaderBytes);
      // confounder(16) || plaintext || header(16), CTS (no padding), + 12-byte HMAC.
      Result<std::string> plain = subkey.Decrypt(usage, cipher);
      ASSERT_OK(plain);
      EXPECT_EQ(cipher.size(), 16 + plain->size() + kChecksumBytes);
      ASSERT_GE(plain->size(), kHeaderBytes);
      EXPECT_EQ(Hex(plain->substr(plain->size() - kHeaderBytes)), Hex(token.substr(0, kHeaderBytes)));
      opened += plain->substr(0, plain->size() - kHeaderBytes);

      // Negatives: one flipped ciphertext byte (first, middle, last), the other direction's
      // usage, the session key (an acceptor would use it only without a subkey).
      for (size_t at : {size_t{0}, cipher.size() / 2, cipher.size() - 1}) {
        std::string bad = cipher;
        bad[at] ^= 0x80;
        EXPECT_FALSE(subkey.Decrypt(usage, bad).ok()) << "byte " << at;
      }
      EXPECT_FALSE(subkey.Decrypt(other_usage, cipher).ok());
      Result<std::string> wrong_key = session_key.Decrypt(usage, cipher);
      ASSERT_FALSE(wrong_key.ok());
      EXPECT_THAT(std::string(wrong_key.status().message()), ::testing::HasSubstr("integrity"));
    }
    EXPECT_EQ(Hex(opened), Hex(recorded));
    // The plaintext is whole ordinary RPC frames (K4.10).
    FrameReader inner;
    inner.Feed(opened);
    size_t frames = 0;
    for (;;) {
      Result<std::optional<std::string>> f = inner.Next();
      ASSERT_OK(f);
      if (!*f) break;
      ++frames;
    }
    EXPECT_GT(frames, 0u);
    EXPECT_EQ(inner.buffered(), 0u);
  };
  {
    SCOPED_TRACE("client to server");
    check_direction(e.c2s_wraps, 0x02, n_init + 1, kInitiatorSeal, kAcceptorSeal, r->plain_c2s);
  }
  {
    SCOPED_TRACE("server to client");
    check_direction(e.s2c_wraps, 0x03, n_acc + 1, kAcceptorSeal, kInitiatorSeal, r->plain_s2c);
  }
}

// Loom's own GSSAPI layer on the recorded bytes. The recorded AP-REQ is accepted by MIT with
// the service keytab (its ticket is long expired: a krb5.conf with a 10-year clock skew, and no
// replay cache), which gives an acceptor context keyed and numbered exactly as the recorded
// server's. After the unsealed layer choice (step 7, sequence n), Loom's Unwrap must open the
// client's WRAP tokens in order (n+1, ...) into the recorded plaintext, and refuse a replay.
TEST_P(RecordedWrap, LoomLayerUnwrapsTheRecordedClientTokens) {
  Result<Recording> r = Load(GetParam());
  ASSERT_OK(r);
  Exchange e = Split(*r);
  ASSERT_FALSE(e.c2s_wraps.empty());
  Result<const GssapiLibrary*> gss = Gssapi();
  ASSERT_OK(gss);
  const std::string service = r->gss.at("service").get<std::string>();
  const std::string keytab = kKerberos + "keytabs/" + service.substr(0, service.find('/')) + ".service.keytab";
  char dir_template[] = "/tmp/loom-gssapi-vectors-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string conf = std::string(dir_template) + "/krb5.conf";
  ASSERT_OK(WriteFileAtomic(conf, "[libdefaults]\n  default_realm = LOOM.TEST\n  clockskew = 315360000\n"
                            "  dns_lookup_realm = false\n  dns_lookup_kdc = false\n"));
  ::setenv("KRB5_CONFIG", conf.c_str(), 1);
  ::setenv("KRB5_KTNAME", ("FILE:" + keytab).c_str(), 1);
  ::setenv("KRB5RCACHETYPE", "none", 1);

  gss_ctx_id_t ctx = GSS_C_NO_CONTEXT;
  gss_buffer_desc in{e.initiate.size(), e.initiate.data()};
  gss_buffer_desc out{0, nullptr};
  OM_uint32 minor = 0, flags = 0;
  OM_uint32 major = (*gss)->accept_sec_context(&minor, &ctx, GSS_C_NO_CREDENTIAL, &in, GSS_C_NO_CHANNEL_BINDINGS,
                                               nullptr, nullptr, &out, &flags, nullptr, nullptr);
  ::unlink(conf.c_str());
  ::rmdir(dir_template);
  ASSERT_EQ(major, GSS_S_COMPLETE) << GssapiError(**gss, major, minor);
  (*gss)->release_buffer(&minor, &out);  // our AP-REP: its acceptor seq is random, not the recorded one
  EXPECT_EQ(flags & 0x3e, 0x3eu);        // MUTUAL|REPLAY|SEQUENCE|CONF|INTEG, as the 0x8003 checksum says

  // Step 7 through MIT directly (Loom's privacy layer rightly refuses an unsealed token).
  gss_buffer_desc choice{e.layer_choice.size(), e.layer_choice.data()};
  gss_buffer_desc payload{0, nullptr};
  int conf_state = -1;
  major = (*gss)->unwrap(&minor, ctx, &choice, &payload, &conf_state, nullptr);
  ASSERT_EQ(major, GSS_S_COMPLETE) << GssapiError(**gss, major, minor);
  EXPECT_EQ(conf_state, 0);
  EXPECT_EQ(Hex(std::string(static_cast<const char*>(payload.value), payload.length)), "04010000");
  (*gss)->release_buffer(&minor, &payload);

  std::unique_ptr<SaslSecurityLayer> layer = MakeGssapiSecurityLayer(ctx, /*privacy=*/true);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->Qop(), "auth-conf");
  std::string opened;
  for (const std::string& token : e.c2s_wraps) {
    Result<std::string> plain = layer->Unwrap(token);
    ASSERT_OK(plain);
    opened += *plain;
  }
  EXPECT_EQ(Hex(opened), Hex(r->plain_c2s));

  // The acceptor's Wrap: sealed, EC 0, RRC 0 as recorded, but MIT's acceptor (unlike the
  // recorded Java server, K4.4) put a subkey of its own in its AP-REP and seals with it: flags
  // 07 (AcceptorSubkey), and the recorded initiator subkey does not open the token.
  Result<std::string> token = layer->Wrap(r->plain_s2c);
  ASSERT_OK(token);
  Result<WrapHeader> h = ParseWrapHeader(*token);
  ASSERT_OK(h);
  EXPECT_EQ(h->flags, 0x07);
  EXPECT_EQ(h->ec, 0);
  EXPECT_EQ(h->rrc, 0);
  const Krb5Key subkey(FromHex(r->gss.at("initiator_subkey").get<std::string>()));
  EXPECT_FALSE(subkey.Decrypt(kAcceptorSeal, token->substr(kHeaderBytes)).ok());

  // A replayed client token is refused (the layer is unusable afterwards, as sasl_layer.h says).
  Result<std::string> replay = layer->Unwrap(e.c2s_wraps.back());
  ASSERT_FALSE(replay.ok());
  EXPECT_THAT(std::string(replay.status().message()), ::testing::HasSubstr("out of sequence"));
}

INSTANTIATE_TEST_SUITE_P(Kerberos, RecordedWrap,
                         ::testing::Values("rpc/01-client-rm-18032-app-list", "rpc/02-client-nn-19000-fetchdt"),
                         [](const auto& info) { return "rpc" + info.param.substr(4, 2); });

}  // namespace
}  // namespace loom::hadoop
