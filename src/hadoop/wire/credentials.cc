#include "hadoop/wire/credentials.h"

#include <algorithm>
#include <cstdint>

#include <google/protobuf/io/coded_stream.h>

#include "core/files.h"
#include "hadoop/proto/hadoop_rpc.pb.h"
#include "hadoop/wire/crypto_library.h"
#include "hadoop/wire/ipc_frame.h"

namespace loom::hadoop {

namespace {

constexpr std::string_view kMagic = "HDTS";
// OpenSSL's block functions take int lengths: feed them slices this big (a multiple of 3 and 4).
constexpr size_t kBase64Slice = size_t{3} << 20;

std::string Hex(uint8_t b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  return {kDigits[b >> 4], kDigits[b & 0xf]};
}

// A cursor over an HDTS stream: every failure names the absolute offset and what was being read.
class Cursor {
 public:
  explicit Cursor(std::string_view all) : all_(all), rest_(all) {}

  size_t offset() const { return all_.size() - rest_.size(); }
  std::string_view rest() const { return rest_; }
  void Skip(size_t n) { rest_.remove_prefix(n); }

  Status Fail(std::string_view what, std::string_view why) const { return FailAt(offset(), what, why); }
  static Status FailAt(size_t offset, std::string_view what, std::string_view why) {
    return Status::InvalidArgument("credentials: " + std::string(what) + " at offset " + std::to_string(offset) +
                                   ": " + std::string(why));
  }

  // A VInt (a VLong that fits in int32, as WritableUtils.readVInt insists) that is not negative.
  Result<int64_t> Count(std::string_view what) {
    std::string_view probe = rest_;
    Result<int64_t> v = ReadVLong(&probe);
    if (!v.ok()) return Fail(what, v.status().message());
    if (*v < 0 || *v > INT32_MAX) return Fail(what, "value " + std::to_string(*v) + " out of range");
    rest_ = probe;
    return *v;
  }

  // A VInt length, then that many bytes.
  Result<std::string> Bytes(std::string_view what) {
    size_t at = offset();
    LOOM_ASSIGN_OR_RETURN(int64_t len, Count(std::string(what) + " length"));
    if (static_cast<uint64_t>(len) > rest_.size()) {
      return FailAt(at, what, std::to_string(len) + " bytes, only " + std::to_string(rest_.size()) + " left");
    }
    std::string out(rest_.substr(0, static_cast<size_t>(len)));
    rest_.remove_prefix(static_cast<size_t>(len));
    return out;
  }

 private:
  std::string_view all_;
  std::string_view rest_;
};

Result<Credentials> ParseWritable(Cursor* c) {
  Credentials creds;
  LOOM_ASSIGN_OR_RETURN(int64_t ntokens, c->Count("token count"));
  for (int64_t i = 0; i < ntokens; ++i) {
    std::string alias;
    Token t;
    LOOM_ASSIGN_OR_RETURN(alias, c->Bytes("token alias"));
    LOOM_ASSIGN_OR_RETURN(t.identifier, c->Bytes("token identifier"));
    LOOM_ASSIGN_OR_RETURN(t.password, c->Bytes("token password"));
    LOOM_ASSIGN_OR_RETURN(t.kind, c->Bytes("token kind"));
    LOOM_ASSIGN_OR_RETURN(t.service, c->Bytes("token service"));
    creds.tokens.emplace_back(std::move(alias), std::move(t));
  }
  LOOM_ASSIGN_OR_RETURN(int64_t nsecrets, c->Count("secret count"));
  for (int64_t i = 0; i < nsecrets; ++i) {
    std::string alias, secret;
    LOOM_ASSIGN_OR_RETURN(alias, c->Bytes("secret alias"));
    LOOM_ASSIGN_OR_RETURN(secret, c->Bytes("secret"));
    creds.secrets.emplace_back(std::move(alias), std::move(secret));
  }
  return creds;
}

// Format 1: a single writeDelimitedTo(CredentialsProto).
Result<Credentials> ParseProtobuf(Cursor* c) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(c->rest().data()),
                                            static_cast<int>(std::min<size_t>(c->rest().size(), INT32_MAX)));
  uint32_t len = 0;
  if (!in.ReadVarint32(&len)) return c->Fail("CredentialsProto length", "malformed varint");
  size_t prefix = static_cast<size_t>(in.CurrentPosition());
  if (len > c->rest().size() - prefix) {
    return c->Fail("CredentialsProto", std::to_string(len) + " bytes, only " +
                                           std::to_string(c->rest().size() - prefix) + " left");
  }
  ::hadoop::common::CredentialsProto proto;
  // Parse partially and check the required fields ourselves: ParseFromArray would log them.
  if (!proto.ParsePartialFromArray(c->rest().data() + prefix, static_cast<int>(len))) {
    return c->Fail("CredentialsProto", "not a valid message");
  }
  if (!proto.IsInitialized()) {
    return c->Fail("CredentialsProto", "missing required fields: " + proto.InitializationErrorString());
  }
  Credentials creds;
  for (const auto& kv : proto.tokens()) {
    if (!kv.has_token()) return c->Fail("CredentialsProto", "token entry '" + kv.alias() + "' has no token");
    const auto& p = kv.token();
    creds.tokens.emplace_back(kv.alias(), Token{p.identifier(), p.password(), p.kind(), p.service()});
  }
  for (const auto& kv : proto.secrets()) creds.secrets.emplace_back(kv.alias(), kv.secret());
  c->Skip(prefix + len);
  return creds;
}

bool IsBase64Char(char ch) {
  return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '+' || ch == '/';
}

}  // namespace

void AppendVLong(std::string* out, int64_t v) {
  if (v >= -112 && v <= 127) {
    out->push_back(static_cast<char>(v));
    return;
  }
  // Negatives store their one's complement, so the magnitude bytes never carry a sign.
  bool negative = v < 0;
  uint64_t mag = negative ? ~static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  int n = 0;
  for (uint64_t t = mag; t != 0; t >>= 8) ++n;
  out->push_back(static_cast<char>((negative ? -120 : -112) - n));
  for (int i = n - 1; i >= 0; --i) out->push_back(static_cast<char>((mag >> (8 * i)) & 0xff));
}

Result<int64_t> ReadVLong(std::string_view* in) {
  if (in->empty()) return Status::InvalidArgument("VLong: no bytes left");
  int8_t first = static_cast<int8_t>((*in)[0]);
  if (first >= -112) {
    in->remove_prefix(1);
    return int64_t{first};
  }
  bool negative = first < -120;
  size_t n = static_cast<size_t>(negative ? -(first + 120) : -(first + 112));  // 1..8
  if (in->size() - 1 < n) {
    return Status::InvalidArgument("VLong: marker 0x" + Hex(static_cast<uint8_t>(first)) + " needs " +
                                   std::to_string(n) + " more bytes, " + std::to_string(in->size() - 1) + " left");
  }
  uint64_t v = 0;
  for (size_t i = 1; i <= n; ++i) v = (v << 8) | static_cast<uint8_t>((*in)[i]);
  in->remove_prefix(1 + n);
  // Like WritableUtils, a positive marker over 8 bytes with the top bit set reads as negative.
  return static_cast<int64_t>(negative ? ~v : v);
}

void AppendText(std::string* out, std::string_view s) {
  AppendVLong(out, static_cast<int64_t>(s.size()));
  out->append(s);
}

Result<std::string> ReadText(std::string_view* in) {
  std::string_view probe = *in;
  LOOM_ASSIGN_OR_RETURN(int64_t len, ReadVLong(&probe));
  if (len < 0 || len > INT32_MAX) return Status::InvalidArgument("Text: bad length " + std::to_string(len));
  if (static_cast<uint64_t>(len) > probe.size()) {
    return Status::InvalidArgument("Text: " + std::to_string(len) + " bytes, only " + std::to_string(probe.size()) +
                                   " left");
  }
  std::string out(probe.substr(0, static_cast<size_t>(len)));
  probe.remove_prefix(static_cast<size_t>(len));
  *in = probe;
  return out;
}

std::optional<Token> Credentials::FindKind(std::string_view kind) const {
  for (const auto& [alias, token] : tokens) {
    if (token.kind == kind) return token;
  }
  return std::nullopt;
}

std::optional<std::string> Credentials::FindSecret(std::string_view alias) const {
  for (const auto& [name, secret] : secrets) {
    if (name == alias) return secret;
  }
  return std::nullopt;
}

Result<Credentials> ParseCredentials(std::string_view bytes) {
  Cursor c(bytes);
  if (bytes.size() < 5) return c.Fail("header", "truncated (" + std::to_string(bytes.size()) + " of 5 bytes)");
  if (bytes.substr(0, 4) != kMagic) return c.Fail("header", "no HDTS magic");
  c.Skip(4);
  uint8_t version = static_cast<uint8_t>(bytes[4]);
  if (version != static_cast<uint8_t>(CredentialsFormat::kWritable) &&
      version != static_cast<uint8_t>(CredentialsFormat::kProtobuf)) {
    return c.Fail("format version", std::to_string(version) + " is unknown (expected 0 or 1)");
  }
  c.Skip(1);
  Result<Credentials> creds =
      version == static_cast<uint8_t>(CredentialsFormat::kWritable) ? ParseWritable(&c) : ParseProtobuf(&c);
  if (!creds.ok()) return creds;
  // Java stops reading here; trailing bytes mean the file is not what we think it is.
  if (!c.rest().empty()) return c.Fail("end", std::to_string(c.rest().size()) + " trailing bytes");
  return creds;
}

std::string SerializeCredentials(const Credentials& creds, CredentialsFormat format) {
  std::string out(kMagic);
  out.push_back(static_cast<char>(format));
  if (format == CredentialsFormat::kProtobuf) {
    ::hadoop::common::CredentialsProto proto;
    for (const auto& [alias, t] : creds.tokens) {
      auto* kv = proto.add_tokens();
      kv->set_alias(alias);
      auto* p = kv->mutable_token();
      p->set_identifier(t.identifier);
      p->set_password(t.password);
      p->set_kind(t.kind);
      p->set_service(t.service);
    }
    for (const auto& [alias, secret] : creds.secrets) {
      auto* kv = proto.add_secrets();
      kv->set_alias(alias);
      kv->set_secret(secret);
    }
    AppendDelimited(&out, proto);
    return out;
  }
  AppendVLong(&out, static_cast<int64_t>(creds.tokens.size()));
  for (const auto& [alias, t] : creds.tokens) {
    AppendText(&out, alias);
    AppendText(&out, t.identifier);  // the identifier and password are VInt-prefixed bytes, same encoding
    AppendText(&out, t.password);
    AppendText(&out, t.kind);
    AppendText(&out, t.service);
  }
  AppendVLong(&out, static_cast<int64_t>(creds.secrets.size()));
  for (const auto& [alias, secret] : creds.secrets) {
    AppendText(&out, alias);
    AppendText(&out, secret);
  }
  return out;
}

Result<Credentials> ReadCredentialsFile(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  Result<Credentials> creds = ParseCredentials(bytes);
  if (!creds.ok()) return creds.status().WithContext(path);
  return creds;
}

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  while (!bytes.empty()) {
    std::string_view slice = bytes.substr(0, kBase64Slice);
    size_t at = out.size();
    out.resize(at + (slice.size() + 2) / 3 * 4 + 1);  // EVP_EncodeBlock writes a trailing NUL
    int n = Crypto().encode_block(reinterpret_cast<unsigned char*>(out.data() + at),
                            reinterpret_cast<const unsigned char*>(slice.data()), static_cast<int>(slice.size()));
    out.resize(at + static_cast<size_t>(n));
    bytes.remove_prefix(slice.size());
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  // EVP_DecodeBlock tolerates surrounding whitespace and counts padding as zero bytes; check the
  // text strictly here so that only canonical, padded Base64 gets through.
  if (text.size() % 4 != 0) {
    return Status::InvalidArgument("Base64: length " + std::to_string(text.size()) + " is not a multiple of 4");
  }
  size_t pad = 0;
  while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=') ++pad;
  for (size_t i = 0; i < text.size() - pad; ++i) {
    if (!IsBase64Char(text[i])) {
      return Status::InvalidArgument("Base64: invalid character 0x" + Hex(static_cast<uint8_t>(text[i])) +
                                     " at offset " + std::to_string(i));
    }
  }
  std::string padded(text);
  for (size_t i = 0; i < pad; ++i) padded[padded.size() - 1 - i] = 'A';  // decoded, then cut off below
  std::string out;
  out.reserve(padded.size() / 4 * 3);
  for (std::string_view rest = padded; !rest.empty();) {
    std::string_view slice = rest.substr(0, kBase64Slice / 3 * 4);
    size_t at = out.size();
    out.resize(at + slice.size() / 4 * 3);
    int n = Crypto().decode_block(reinterpret_cast<unsigned char*>(out.data() + at),
                            reinterpret_cast<const unsigned char*>(slice.data()), static_cast<int>(slice.size()));
    if (n < 0 || static_cast<size_t>(n) != slice.size() / 4 * 3) return Status::Internal("Base64: OpenSSL rejected input");
    rest.remove_prefix(slice.size());
  }
  out.resize(out.size() - pad);
  return out;
}

namespace {

void AppendBytes(std::string* out, std::string_view bytes) {
  AppendVLong(out, static_cast<int64_t>(bytes.size()));
  out->append(bytes);
}

Result<std::string> ReadBytes(std::string_view* in, const char* what) {
  LOOM_ASSIGN_OR_RETURN(int64_t n, ReadVLong(in));
  if (n < 0 || static_cast<uint64_t>(n) > in->size()) {
    return Status::InvalidArgument(std::string("token: the ") + what + " length " + std::to_string(n) +
                                   " runs past the end");
  }
  std::string out(in->substr(0, static_cast<size_t>(n)));
  in->remove_prefix(static_cast<size_t>(n));
  return out;
}

}  // namespace

std::string EncodeTokenUrlString(const Token& token) {
  std::string raw;
  AppendBytes(&raw, token.identifier);
  AppendBytes(&raw, token.password);
  AppendText(&raw, token.kind);
  AppendText(&raw, token.service);
  std::string text = Base64Encode(raw);
  while (!text.empty() && text.back() == '=') text.pop_back();
  for (char& c : text) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return text;
}

Result<Token> DecodeTokenUrlString(std::string_view text) {
  std::string b64(text);
  for (char& c : b64) {
    if (c == '-') c = '+';
    else if (c == '_') c = '/';
  }
  while (b64.size() % 4 != 0) b64 += '=';
  Result<std::string> raw = Base64Decode(b64);
  if (!raw.ok()) return Status::InvalidArgument("token URL string: " + raw.status().message());
  std::string_view in = *raw;
  Token token;
  LOOM_ASSIGN_OR_RETURN(token.identifier, ReadBytes(&in, "identifier"));
  LOOM_ASSIGN_OR_RETURN(token.password, ReadBytes(&in, "password"));
  LOOM_ASSIGN_OR_RETURN(token.kind, ReadText(&in));
  LOOM_ASSIGN_OR_RETURN(token.service, ReadText(&in));
  if (!in.empty()) {
    return Status::InvalidArgument("token URL string: " + std::to_string(in.size()) + " bytes after the token");
  }
  return token;
}

std::string SerializeDelegationTokenIdentifier(const DelegationTokenIdentifier& id) {
  std::string out(1, '\0');  // version 0
  AppendText(&out, id.owner);
  AppendText(&out, id.renewer);
  AppendText(&out, id.real_user);
  AppendVLong(&out, id.issue_date_ms);
  AppendVLong(&out, id.max_date_ms);
  AppendVLong(&out, id.sequence_number);
  AppendVLong(&out, id.master_key_id);
  return out;
}

Result<DelegationTokenIdentifier> ParseDelegationTokenIdentifier(std::string_view bytes) {
  if (bytes.empty() || bytes[0] != '\0') {
    return Status::InvalidArgument("delegation token identifier: not version 0");
  }
  bytes.remove_prefix(1);
  DelegationTokenIdentifier id;
  LOOM_ASSIGN_OR_RETURN(id.owner, ReadText(&bytes));
  LOOM_ASSIGN_OR_RETURN(id.renewer, ReadText(&bytes));
  LOOM_ASSIGN_OR_RETURN(id.real_user, ReadText(&bytes));
  LOOM_ASSIGN_OR_RETURN(id.issue_date_ms, ReadVLong(&bytes));
  LOOM_ASSIGN_OR_RETURN(id.max_date_ms, ReadVLong(&bytes));
  LOOM_ASSIGN_OR_RETURN(int64_t seq, ReadVLong(&bytes));
  LOOM_ASSIGN_OR_RETURN(int64_t key, ReadVLong(&bytes));
  if (!bytes.empty()) {
    return Status::InvalidArgument("delegation token identifier: " + std::to_string(bytes.size()) + " bytes left over");
  }
  id.sequence_number = static_cast<int32_t>(seq);
  id.master_key_id = static_cast<int32_t>(key);
  return id;
}

}  // namespace loom::hadoop
