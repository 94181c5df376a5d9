#pragma once
// Hadoop's Writable encodings and its credentials ("HDTS") files: what the NodeManager writes to
// $HADOOP_TOKEN_FILE_LOCATION (the AM's AMRMToken lives there) and what a ContainerLaunchContext
// carries in `tokens`. Both formats: 0 (Writable, what the RM and NM write) and 1 (protobuf).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace loom::hadoop {

// Hadoop WritableUtils VLong/VInt: -112..127 in one byte, else a length marker and 1-8
// big-endian bytes (negatives one's-complemented). Not a protobuf varint: 200 is 8F C8.
void AppendVLong(std::string* out, int64_t v);
// Reads one VLong from the front of `in` and advances it.
Result<int64_t> ReadVLong(std::string_view* in);
// Writable Text: VInt byte length, then UTF-8 bytes.
void AppendText(std::string* out, std::string_view s);
Result<std::string> ReadText(std::string_view* in);

struct Token {
  std::string identifier;  // bytes: a serialized *TokenIdentifierProto
  std::string password;    // bytes
  std::string kind;        // "YARN_AM_RM_TOKEN", "NMToken", "ContainerToken", "HDFS_DELEGATION_TOKEN"
  std::string service;     // "ip:port" or empty
  bool operator==(const Token&) const = default;
};

struct Credentials {
  std::vector<std::pair<std::string, Token>> tokens;         // alias -> token, in file order
  std::vector<std::pair<std::string, std::string>> secrets;  // alias -> secret bytes
  // The first token of this kind.
  std::optional<Token> FindKind(std::string_view kind) const;
  // The secret key stored under `alias`.
  std::optional<std::string> FindSecret(std::string_view alias) const;
  bool operator==(const Credentials&) const = default;
};

enum class CredentialsFormat : uint8_t { kWritable = 0, kProtobuf = 1 };

// Parses an HDTS stream; InvalidArgument names the offset and what is malformed. Unlike Java,
// bytes after the credentials are an error (they mean the blob is not what it claims to be).
Result<Credentials> ParseCredentials(std::string_view bytes);
std::string SerializeCredentials(const Credentials& creds, CredentialsFormat format = CredentialsFormat::kWritable);
Result<Credentials> ReadCredentialsFile(const std::string& path);

// A token as Hadoop's Token.encodeToUrlString writes it (WebHDFS's `delegation=` parameter and
// its GETDELEGATIONTOKEN answer): the Writable token (VInt length + identifier, VInt length +
// password, Text kind, Text service) in URL-safe Base64 without padding.
std::string EncodeTokenUrlString(const Token& token);
// InvalidArgument naming what is malformed (bad Base64, truncated fields, bytes left over).
Result<Token> DecodeTokenUrlString(std::string_view text);

// The identifier of an HDFS delegation token (AbstractDelegationTokenIdentifier's Writable
// form): version byte 0, Text owner, renewer and realUser, VLong issueDate and maxDate (ms),
// VInt sequenceNumber and masterKeyId. The NameNode stores the renewer's short name ("rm"),
// the owner as the caller authenticated (RPC: "root@LOOM.TEST"; WebHDFS: "root").
struct DelegationTokenIdentifier {
  std::string owner;
  std::string renewer;
  std::string real_user;
  int64_t issue_date_ms = 0;
  int64_t max_date_ms = 0;
  int32_t sequence_number = 0;
  int32_t master_key_id = 0;
  bool operator==(const DelegationTokenIdentifier&) const = default;
};
std::string SerializeDelegationTokenIdentifier(const DelegationTokenIdentifier& id);
Result<DelegationTokenIdentifier> ParseDelegationTokenIdentifier(std::string_view bytes);
inline constexpr char kHdfsDelegationKind[] = "HDFS_DELEGATION_TOKEN";

// Standard Base64 (with '=' padding, no line breaks), as Hadoop encodes SASL user names. The
// decoder is strict: padded, no whitespace, nothing outside the alphabet.
std::string Base64Encode(std::string_view bytes);
Result<std::string> Base64Decode(std::string_view text);

}  // namespace loom::hadoop
