#include "hadoop/wire/credentials.h"

#include "hadoop/wire/test_hex.h"

#include <limits>

#include "core/files.h"
#include "core/testing.h"
#include "hadoop/testing/captures.h"

namespace loom::hadoop {
namespace {

using ::testing::HasSubstr;
using testing::ReadCapture;

const std::string kCaptures = testing::CaptureDir();

std::string EncodeVLong(int64_t v) {
  std::string out;
  AppendVLong(&out, v);
  return out;
}

// Encodings computed with a transcription of WritableUtils.writeVLong.
TEST(VLong, KnownEncodings) {
  const std::pair<int64_t, const char*> cases[] = {
      {0, "00"},
      {1, "01"},
      {-1, "ff"},
      {127, "7f"},
      {-112, "90"},
      {-113, "8770"},
      {128, "8f80"},
      {200, "8fc8"},
      {255, "8fff"},
      {256, "8e0100"},
      {-256, "87ff"},
      {-257, "860100"},
      {65536, "8d010000"},
      {2147483647, "8c7fffffff"},
      {2147483648, "8c80000000"},
      {-2147483648LL, "847fffffff"},
      {4294967296LL, "8b0100000000"},
      {1795263045862LL, "8a01a1fe0420e6"},
      {std::numeric_limits<int64_t>::max(), "887fffffffffffffff"},
      {std::numeric_limits<int64_t>::min(), "807fffffffffffffff"},
  };
  for (const auto& [v, hex] : cases) {
    SCOPED_TRACE(v);
    EXPECT_EQ(EncodeVLong(v), FromHex(hex));
    std::string_view in = FromHex(hex);
    std::string bytes(in);
    in = bytes;
    Result<int64_t> got = ReadVLong(&in);
    ASSERT_OK(got);
    EXPECT_EQ(*got, v);
    EXPECT_TRUE(in.empty());
  }
}

TEST(VLong, RoundTripsEdgeValues) {
  std::vector<int64_t> values = {-113, -112, -111, -1, 0, 1, 126, 127, 128, 200, 255, 256,
                                 std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(),
                                 std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  for (int shift = 0; shift < 63; ++shift) {
    int64_t p = int64_t{1} << shift;
    for (int64_t v : {p - 1, p, p + 1, -p - 1, -p, -p + 1}) values.push_back(v);
  }
  std::string stream;
  for (int64_t v : values) {
    std::string one = EncodeVLong(v);
    ASSERT_GE(one.size(), 1u);
    ASSERT_LE(one.size(), 9u);
    EXPECT_EQ(one.size() == 1, v >= -112 && v <= 127) << v;
    stream += one;
  }
  // Read back as one stream: each read consumes exactly its own bytes.
  std::string_view in = stream;
  for (int64_t v : values) {
    Result<int64_t> got = ReadVLong(&in);
    ASSERT_OK(got);
    EXPECT_EQ(*got, v);
  }
  EXPECT_TRUE(in.empty());
}

TEST(VLong, TruncatedInputFailsAndDoesNotAdvance) {
  std::string_view empty;
  EXPECT_STATUS(ReadVLong(&empty), kInvalidArgument, HasSubstr("no bytes"));
  for (int64_t v : {int64_t{128}, int64_t{-113}, int64_t{1} << 40, std::numeric_limits<int64_t>::min()}) {
    std::string enc = EncodeVLong(v);
    for (size_t len = 1; len < enc.size(); ++len) {
      SCOPED_TRACE(::testing::Message() << v << " cut to " << len);
      std::string_view in(enc.data(), len);
      EXPECT_STATUS(ReadVLong(&in), kInvalidArgument, HasSubstr("more bytes"));
      EXPECT_EQ(in.size(), len);
    }
  }
}

TEST(Text, RoundTripAndTruncation) {
  std::string out;
  AppendText(&out, "YARN_AM_RM_TOKEN");
  AppendText(&out, "");
  AppendText(&out, std::string(300, 'x'));
  EXPECT_EQ(out.substr(0, 17), "\x10YARN_AM_RM_TOKEN");
  std::string_view in = out;
  EXPECT_EQ(*ReadText(&in), "YARN_AM_RM_TOKEN");
  EXPECT_EQ(*ReadText(&in), "");
  EXPECT_EQ(*ReadText(&in), std::string(300, 'x'));
  EXPECT_TRUE(in.empty());

  std::string_view cut = std::string_view(out).substr(0, 10);
  EXPECT_STATUS(ReadText(&cut), kInvalidArgument, HasSubstr("16 bytes, only 9 left"));
  EXPECT_EQ(cut.size(), 10u);
  std::string negative = "\xff";  // length -1
  std::string_view neg = negative;
  EXPECT_STATUS(ReadText(&neg), kInvalidArgument, HasSubstr("bad length -1"));
}

// README section 9: every field of the AM's credentials file.
TEST(Credentials, ParsesTheAmContainerTokens) {
  std::string file = ReadCapture("container/am-container_tokens.bin");
  ASSERT_EQ(file.size(), 74u);
  Result<Credentials> creds = ParseCredentials(file);
  ASSERT_OK(creds);
  ASSERT_EQ(creds->tokens.size(), 1u);
  EXPECT_TRUE(creds->secrets.empty());
  const auto& [alias, token] = creds->tokens[0];
  EXPECT_EQ(alias, "");
  EXPECT_EQ(token.identifier, FromHex("0a0d0a09080110e6c190f09f34100110eec1dfd2fbffffffff01"));
  EXPECT_EQ(token.identifier.size(), 26u);
  EXPECT_EQ(token.password, FromHex("1371fd2e4cfbe0167308831d61628651e7ddc81c"));
  EXPECT_EQ(token.kind, "YARN_AM_RM_TOKEN");
  EXPECT_EQ(token.service, "");
  ASSERT_TRUE(creds->FindKind("YARN_AM_RM_TOKEN").has_value());
  EXPECT_EQ(*creds->FindKind("YARN_AM_RM_TOKEN"), token);
  EXPECT_FALSE(creds->FindKind("NMToken").has_value());

  Result<Credentials> from_file = ReadCredentialsFile(kCaptures + "container/am-container_tokens.bin");
  ASSERT_OK(from_file);
  EXPECT_EQ(*from_file, *creds);
}

TEST(Credentials, ParsesApp2Tokens) {
  Result<Credentials> creds = ParseCredentials(ReadCapture("negative/app2-am-container_tokens.bin"));
  ASSERT_OK(creds);
  std::optional<Token> t = creds->FindKind("YARN_AM_RM_TOKEN");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->identifier, FromHex("0a0d0a09080210e6c190f09f34100110eec1dfd2fbffffffff01"));
  EXPECT_EQ(t->password, FromHex("c56d3e9c734348fd637924b2a4937543f21bd0d6"));
}

// README fact 18: the same 74 bytes travel inside the ContainerLaunchContexts sent to the NM.
TEST(Credentials, BlobsInsideCapturedLaunchContexts) {
  std::string file = ReadCapture("container/am-container_tokens.bin");
  for (const auto& [rel, offset] : {std::pair{"dshell/03-rm-nm-45454-startContainers-AM.c2s.bin", 847},
                                    {"dshell/06-am-nm-45454-startContainers-c02.c2s.bin", 588},
                                    {"dshell/08-am-nm-45454-startContainers-c03.c2s.bin", 588}}) {
    SCOPED_TRACE(rel);
    std::string blob = ReadCapture(rel).substr(offset, file.size());
    EXPECT_EQ(blob, file);
    ASSERT_OK(ParseCredentials(blob));
  }
}

TEST(Credentials, WritableReserializesByteForByte) {
  for (const char* rel : {"container/am-container_tokens.bin", "negative/app2-am-container_tokens.bin"}) {
    SCOPED_TRACE(rel);
    std::string file = ReadCapture(rel);
    Result<Credentials> creds = ParseCredentials(file);
    ASSERT_OK(creds);
    EXPECT_EQ(SerializeCredentials(*creds), file);
    EXPECT_EQ(SerializeCredentials(*creds, CredentialsFormat::kWritable), file);
  }
}

Credentials Sample() {
  Credentials c;
  c.tokens.push_back({"", Token{FromHex("0a0d0a09"), std::string("\x00\xff\x80", 3), "YARN_AM_RM_TOKEN", ""}});
  c.tokens.push_back({"nm", Token{std::string(200, '\x01'), "pw", "NMToken", "localhost:45454"}});
  c.secrets.push_back({"s1", std::string("\x00secret", 7)});
  c.secrets.push_back({"", std::string(1000, 'k')});
  return c;
}

TEST(Credentials, BothFormatsRoundTrip) {
  Credentials c = Sample();
  for (CredentialsFormat f : {CredentialsFormat::kWritable, CredentialsFormat::kProtobuf}) {
    SCOPED_TRACE(static_cast<int>(f));
    std::string bytes = SerializeCredentials(c, f);
    EXPECT_EQ(bytes.substr(0, 5), std::string("HDTS") + static_cast<char>(f));
    Result<Credentials> back = ParseCredentials(bytes);
    ASSERT_OK(back);
    EXPECT_EQ(*back, c);
  }
  // The protobuf form of the captured file parses to the same credentials.
  Result<Credentials> am = ParseCredentials(ReadCapture("container/am-container_tokens.bin"));
  ASSERT_OK(am);
  Result<Credentials> back = ParseCredentials(SerializeCredentials(*am, CredentialsFormat::kProtobuf));
  ASSERT_OK(back);
  EXPECT_EQ(*back, *am);
}

TEST(Credentials, Empty) {
  EXPECT_EQ(SerializeCredentials({}), std::string("HDTS\x00\x00\x00", 7));
  EXPECT_EQ(SerializeCredentials({}, CredentialsFormat::kProtobuf), std::string("HDTS\x01\x00", 6));
  for (std::string bytes : {std::string("HDTS\x00\x00\x00", 7), std::string("HDTS\x01\x00", 6)}) {
    Result<Credentials> c = ParseCredentials(bytes);
    ASSERT_OK(c);
    EXPECT_TRUE(c->tokens.empty());
    EXPECT_TRUE(c->secrets.empty());
  }
}

TEST(Credentials, EveryTruncationFailsCleanly) {
  for (std::string file : {ReadCapture("container/am-container_tokens.bin"),
                           SerializeCredentials(Sample(), CredentialsFormat::kWritable),
                           SerializeCredentials(Sample(), CredentialsFormat::kProtobuf)}) {
    for (size_t len = 0; len < file.size(); ++len) {
      SCOPED_TRACE(len);
      EXPECT_STATUS(ParseCredentials(std::string_view(file).substr(0, len)), kInvalidArgument, HasSubstr("offset"));
    }
    EXPECT_STATUS(ParseCredentials(file + "x"), kInvalidArgument, HasSubstr("1 trailing bytes"));
  }
}

TEST(Credentials, NamesWhatIsWrongAndWhere) {
  std::string file = ReadCapture("container/am-container_tokens.bin");
  EXPECT_STATUS(ParseCredentials(std::string_view(file).substr(0, 40)), kInvalidArgument,
                HasSubstr("token password at offset 34: 20 bytes, only 5 left"));
  std::string bad = file;
  bad[0] = 'X';
  EXPECT_STATUS(ParseCredentials(bad), kInvalidArgument, HasSubstr("no HDTS magic"));
  bad = file;
  bad[4] = 2;
  EXPECT_STATUS(ParseCredentials(bad), kInvalidArgument, HasSubstr("format version at offset 4: 2 is unknown"));
  bad = file;
  bad[5] = '\xff';  // token count -1
  EXPECT_STATUS(ParseCredentials(bad), kInvalidArgument, HasSubstr("token count at offset 5: value -1 out of range"));
  bad = file;
  bad[7] = '\x7f';  // identifier length 127 > what is left
  EXPECT_STATUS(ParseCredentials(bad), kInvalidArgument, HasSubstr("token identifier at offset 7: 127 bytes"));
  // A VInt length over int32 (5 payload bytes).
  std::string huge = std::string("HDTS\x00\x01\x00", 7) + FromHex("8b0100000000");
  EXPECT_STATUS(ParseCredentials(huge), kInvalidArgument, HasSubstr("token identifier length at offset 7"));
  // Protobuf format: a length past the end, and a message missing its required fields.
  EXPECT_STATUS(ParseCredentials(std::string("HDTS\x01\x05\x0a", 7)), kInvalidArgument,
                HasSubstr("5 bytes, only 1 left"));
  EXPECT_STATUS(ParseCredentials(std::string("HDTS\x01\x04\x0a\x02\x12\x00", 10)), kInvalidArgument,
                HasSubstr("CredentialsProto at offset 5"));
  EXPECT_STATUS(ParseCredentials(std::string("HDTS\x01\x80", 6)), kInvalidArgument, HasSubstr("malformed varint"));
  EXPECT_STATUS(ReadCredentialsFile(kCaptures + "no-such-file"), kNotFound, HasSubstr("no-such-file"));
}

TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> cases[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                       {"foo", "Zm9v"},  {"foob", "Zm9vYg=="},  {"fooba", "Zm9vYmE="},
                                                       {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, b64] : cases) {
    EXPECT_EQ(Base64Encode(plain), b64);
    Result<std::string> back = Base64Decode(b64);
    ASSERT_OK(back);
    EXPECT_EQ(*back, plain);
  }
  // The SASL user name of the captured AMRMToken (README section 6).
  EXPECT_EQ(Base64Encode(FromHex("0a0d0a09080110e6c190f09f34100110eec1dfd2fbffffffff01")),
            "Cg0KCQgBEObBkPCfNBABEO7B39L7/////wE=");
}

TEST(Base64, BinaryRoundTrip) {
  for (size_t len = 0; len < 70; ++len) {
    std::string bytes;
    for (size_t i = 0; i < len; ++i) bytes.push_back(static_cast<char>((i * 37 + len) & 0xff));
    std::string text = Base64Encode(bytes);
    EXPECT_EQ(text.size(), (len + 2) / 3 * 4);
    Result<std::string> back = Base64Decode(text);
    ASSERT_OK(back);
    EXPECT_EQ(*back, bytes);
  }
}

TEST(Base64, RejectsMalformed) {
  for (const char* bad : {"Zg=", "Zg", "Zg=A", "Z===", "====", "Zm9v\n", "Zm 9", "Zm9*", "=Zm9"}) {
    SCOPED_TRACE(bad);
    EXPECT_STATUS(Base64Decode(bad), kInvalidArgument, HasSubstr("Base64"));
  }
}

// webhdfs/03: the NameNode's GETDELEGATIONTOKEN answer, decoded and encoded back to the same text.
TEST(TokenUrlString, RecordedGetDelegationTokenAnswer) {
  auto reply = ReadFile(kCaptures + "kerberos/webhdfs/03-nn-19871-GETDELEGATIONTOKEN-spnego.s2c.bin");
  ASSERT_OK(reply);
  size_t at = reply->find("\"urlString\":\"");
  ASSERT_NE(at, std::string::npos);
  at += 13;
  std::string text = reply->substr(at, reply->find('"', at) - at);
  auto token = DecodeTokenUrlString(text);
  ASSERT_OK(token);
  EXPECT_EQ(token->kind, "SWEBHDFS delegation");
  EXPECT_EQ(token->service, "127.0.0.1:19000");
  EXPECT_EQ(token->password.size(), 20u);
  auto id = ParseDelegationTokenIdentifier(token->identifier);
  ASSERT_OK(id);
  EXPECT_EQ(id->owner, "root");  // WebHDFS stores the short name (K5.5)
  EXPECT_EQ(id->renewer, "rm");
  EXPECT_EQ(id->real_user, "");
  EXPECT_GT(id->max_date_ms, id->issue_date_ms);
  EXPECT_EQ(SerializeDelegationTokenIdentifier(*id), token->identifier);
  EXPECT_EQ(EncodeTokenUrlString(*token), text);
}

// container/am-container_tokens.bin: the HDFS delegation token the DS client got over RPC.
TEST(DelegationTokenIdentifier, RecordedContainerToken) {
  auto creds = ReadCredentialsFile(kCaptures + "kerberos/container/am-container_tokens.bin");
  ASSERT_OK(creds);
  std::optional<Token> hdfs = creds->FindKind(kHdfsDelegationKind);
  ASSERT_TRUE(hdfs.has_value());
  EXPECT_EQ(hdfs->service, "127.0.0.1:19000");
  auto id = ParseDelegationTokenIdentifier(hdfs->identifier);
  ASSERT_OK(id);
  EXPECT_EQ(id->owner, "root@LOOM.TEST");
  EXPECT_EQ(id->renewer, "rm");
  EXPECT_EQ(id->sequence_number, 2);
  EXPECT_EQ(id->master_key_id, 2);
  EXPECT_EQ(SerializeDelegationTokenIdentifier(*id), hdfs->identifier);
  auto back = DecodeTokenUrlString(EncodeTokenUrlString(*hdfs));
  ASSERT_OK(back);
  EXPECT_EQ(*back, *hdfs);
}

TEST(TokenUrlString, RejectsMalformed) {
  EXPECT_FALSE(DecodeTokenUrlString("!!!").ok());
  Token t{"id", "pw", "K", "S"};
  std::string text = EncodeTokenUrlString(t);
  EXPECT_FALSE(DecodeTokenUrlString(text.substr(0, text.size() - 3)).ok());
  EXPECT_FALSE(ParseDelegationTokenIdentifier("\x01").ok());
  EXPECT_FALSE(ParseDelegationTokenIdentifier(std::string("\0\x04ro", 4)).ok());
}

}  // namespace
}  // namespace loom::hadoop
