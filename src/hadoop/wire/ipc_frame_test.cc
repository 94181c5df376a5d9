// Holds the framing code, and our .proto files, to the bytes a Hadoop 3.3.6 cluster exchanged
// (tests/data/yarn-captures): every frame of every recorded IPC connection must split, parse and
// re-encode exactly, and every YARN/common message must decode to the same text as protoc gave
// with Hadoop's own descriptors.

#include "hadoop/wire/ipc_frame.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "core/files.h"
#include "core/testing.h"
#include "hadoop/proto/yarn.pb.h"
#include "hadoop/testing/captures.h"

namespace loom::hadoop {
namespace {

namespace fs = std::filesystem;
namespace pb = google::protobuf;
using ::testing::HasSubstr;

const std::string kCaptures = testing::CaptureDir();

// One varint-delimited message as the .txt describes it.
struct Described {
  std::string type;   // full name, from "protoc --decode=<type>"
  std::string text;   // the typed decode, de-indented; "" for an empty message
};

// Where a message lies: "<stem>.c2s.bin" or ".s2c.bin", and its body's byte range.
using Where = std::tuple<std::string, size_t, size_t>;

// A token identifier the .txt found inside a message (a TokenProto, or a token in an HDTS blob).
struct EmbeddedIdentifier {
  std::string file;
  size_t offset = 0, size = 0;
  std::string kind;  // the token's kind, which names the identifier's type
  std::string text;  // its typed decode
};

struct Transcript {
  std::map<Where, Described> messages;
  std::vector<EmbeddedIdentifier> identifiers;
  std::map<std::string, uint8_t> preamble_auth;  // file -> auth byte the .txt names
};

// Reads "<stem>.txt": each "-- <name>: varint length prefix ... body at 0xA..0xB" block and the
// "protoc --decode=<type>:" block that follows it.
Transcript ParseTranscript(const std::string& dir, const std::string& stem) {
  Transcript t;
  Result<std::string> text = ReadFile(dir + "/" + stem + ".txt");
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  std::vector<std::string> lines;
  std::istringstream in(text.value_or(""));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  static const std::regex kFrame(R"(^\[t=[0-9.]+s\] (C->S|S->C)\s+(c2s|s2c)@0x[0-9a-f]+\s+(\w+).*)");
  static const std::regex kPreamble(R"(.*PREAMBLE \(7 bytes\).*authProtocol=0x([0-9a-f]{2}).*)");
  static const std::regex kBlock(R"(^  -- (.+): varint length prefix at \+0x[0-9a-f]+ \(\d+ byte\(s\)\) = (\d+); body at 0x([0-9a-f]+)\.\.0x([0-9a-f]+)$)");
  static const std::regex kDecode(R"(^     protoc --decode=([A-Za-z0-9_.$]+):$)");
  static const std::regex kKind(R"(.* kind='([A-Za-z_]+)'.*)");
  static const std::regex kIdentifier(R"(^( +)identifier @0x([0-9a-f]+) len (\d+): [0-9a-f]+$)");
  std::string file, kind;
  std::optional<Where> pending;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    std::smatch m;
    if (std::regex_match(line, m, kFrame)) {
      file = stem + "." + m[2].str() + ".bin";
      pending.reset();
      if (std::regex_match(line, m, kPreamble)) t.preamble_auth[file] = static_cast<uint8_t>(std::stoi(m[1], nullptr, 16));
    } else if (std::regex_match(line, m, kBlock)) {
      size_t begin = std::stoul(m[3], nullptr, 16), end = std::stoul(m[4], nullptr, 16);
      EXPECT_EQ(end - begin, std::stoul(m[2])) << line;
      pending = Where{file, begin, end};
    } else if (std::regex_match(line, m, kKind)) {
      kind = m[1];
    } else if (std::regex_match(line, m, kIdentifier)) {
      // "identifier @..", "password @..", then the decode indented two more spaces.
      EmbeddedIdentifier e{file, std::stoul(m[2], nullptr, 16), std::stoul(m[3]), kind, ""};
      std::string indent = m[1].str() + "  ";
      EXPECT_TRUE(i + 1 < lines.size() && lines[i + 1].find("password   @") != std::string::npos) << line;
      for (i += 2; i < lines.size() && lines[i].rfind(indent, 0) == 0; ++i) e.text += lines[i].substr(indent.size()) + "\n";
      --i;
      t.identifiers.push_back(std::move(e));
    } else if (pending && std::regex_match(line, m, kDecode)) {
      Described d{m[1].str(), ""};
      // The typed decode: the following lines indented by at least 7 spaces.
      for (; i + 1 < lines.size() && lines[i + 1].rfind("       ", 0) == 0; ++i) {
        std::string content = lines[i + 1].substr(7);
        // The two sessions' transcripts word an empty message differently.
        if (content != "(empty message: 0 bytes = all fields absent)" && content != "(empty message: no fields)") {
          d.text += content + "\n";
        }
      }
      EXPECT_TRUE(t.messages.emplace(*pending, d).second) << "described twice: " << std::get<0>(*pending);
      pending.reset();
    }
  }
  return t;
}

// Types our protos leave out on purpose (Loom never calls these methods), and HDFS's.
bool Undeclared(const std::string& type) {
  static const std::set<std::string> kSkipped = {"hadoop.yarn.GetAllResourceProfilesRequestProto",
                                                  "hadoop.yarn.GetAllResourceProfilesResponseProto"};
  return type.rfind("hadoop.hdfs.", 0) == 0 || kSkipped.count(type) > 0;
}

std::unique_ptr<pb::Message> NewMessage(const std::string& type) {
  const pb::Descriptor* d = pb::DescriptorPool::generated_pool()->FindMessageTypeByName(type);
  if (d == nullptr) return nullptr;
  return std::unique_ptr<pb::Message>(pb::MessageFactory::generated_factory()->GetPrototype(d)->New());
}

std::vector<std::string> StemsIn(const std::string& dir) {
  std::vector<std::string> stems;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.size() > 8 && name.substr(name.size() - 8) == ".c2s.bin") stems.push_back(name.substr(0, name.size() - 8));
  }
  std::sort(stems.begin(), stems.end());
  return stems;
}

struct Totals {
  int files = 0, frames = 0, messages = 0, typed = 0, skipped = 0, reencoded_frames = 0;
  std::vector<std::string> errors;  // "<file> callId <id>: <status>"
};

// Walks one direction of one connection.
void CheckStream(const std::string& dir, const std::string& stem, bool c2s, const Transcript& tr, Totals* totals) {
  std::string file = stem + (c2s ? ".c2s.bin" : ".s2c.bin");
  SCOPED_TRACE(file);
  Result<std::string> bytes = ReadFile(dir + "/" + file);
  ASSERT_OK(bytes);
  ++totals->files;
  size_t pos = 0;
  if (c2s) {
    // Every recorded client connection starts with the preamble.
    Result<AuthProtocol> auth = ParsePreamble(std::string_view(*bytes).substr(0, 7));
    ASSERT_OK(auth);
    ASSERT_TRUE(tr.preamble_auth.count(file));
    EXPECT_EQ(static_cast<uint8_t>(*auth), tr.preamble_auth.at(file));
    EXPECT_EQ(Preamble(*auth), bytes->substr(0, 7));
    pos = 7;
  }
  FrameReader reader;
  std::set<Where> seen;
  // Feed in 13-byte pieces so that frames straddle reads.
  for (size_t fed = pos; fed < bytes->size() || reader.buffered() > 0;) {
    if (fed < bytes->size()) {
      size_t n = std::min<size_t>(13, bytes->size() - fed);
      reader.Feed(std::string_view(*bytes).substr(fed, n));
      fed += n;
    }
    while (true) {
      Result<std::optional<std::string>> next = reader.Next();
      ASSERT_OK(next);
      if (!next->has_value()) break;
      const std::string& body = **next;
      size_t body_at = pos + 4;
      ++totals->frames;
      Result<std::vector<std::string_view>> parts = SplitDelimited(body);
      ASSERT_OK(parts);
      ASSERT_GE(parts->size(), 1u);
      std::vector<std::unique_ptr<pb::Message>> decoded;
      bool all_typed = true;
      for (std::string_view part : *parts) {
        size_t begin = body_at + static_cast<size_t>(part.data() - body.data());
        Where where{file, begin, begin + part.size()};
        seen.insert(where);
        ++totals->messages;
        auto it = tr.messages.find(where);
        if (it == tr.messages.end()) {
          ADD_FAILURE() << "message at " << begin << " is not in the transcript";
          all_typed = false;
          continue;
        }
        const Described& d = it->second;
        SCOPED_TRACE(d.type + " at " + std::to_string(begin));
        if (Undeclared(d.type)) {
          ++totals->skipped;
          all_typed = false;
          continue;
        }
        std::unique_ptr<pb::Message> msg = NewMessage(d.type);
        ASSERT_NE(msg, nullptr) << d.type << " is not declared in src/cluster/yarn/proto";
        ASSERT_TRUE(msg->ParseFromString(std::string(part))) << msg->InitializationErrorString();
        std::string printed;
        ASSERT_TRUE(pb::TextFormat::PrintToString(*msg, &printed));
        EXPECT_EQ(printed, d.text);
        EXPECT_EQ(msg->SerializeAsString(), part) << "re-serialization differs";
        ++totals->typed;
        decoded.push_back(std::move(msg));
      }
      // The header, then the error replies.
      if (c2s) {
        RpcRequestHeaderProto h;
        ASSERT_TRUE(h.ParseFromString(std::string((*parts)[0])));
        RpcRequestHeaderProto made = MakeRequestHeader(h.callid(), h.clientid(), h.retrycount());
        // The `yarn` CLI (ipc-queue/) names itself in every header; Loom's client does not.
        if (h.has_callercontext()) *made.mutable_callercontext() = h.callercontext();
        EXPECT_EQ(made.SerializeAsString(), (*parts)[0]) << "call " << h.callid();
        EXPECT_EQ(h.retrycount(), h.callid() < 0 ? -1 : 0);
        EXPECT_EQ(h.clientid().empty(), h.callid() == kSaslCallId);
        std::string header_only = EncodeFrame({&made});
        EXPECT_EQ(header_only.substr(4), body.substr(0, header_only.size() - 4));
        if (all_typed) {
          // The whole frame again, from our header and the decoded bodies.
          std::string frame = bytes->substr(pos, 4 + body.size());
          ASSERT_TRUE(decoded.size() == 2 || decoded.size() == 3) << decoded.size();
          std::string again = decoded.size() == 2 ? EncodeFrame({&made, decoded[1].get()})
                                                  : EncodeFrame({&made, decoded[1].get(), decoded[2].get()});
          EXPECT_EQ(again, frame);
          ++totals->reencoded_frames;
        }
      } else {
        RpcResponseHeaderProto h;
        ASSERT_TRUE(h.ParseFromString(std::string((*parts)[0])));
        EXPECT_EQ(h.serveripcversionnum(), 9u);
        if (h.status() != RpcResponseHeaderProto::SUCCESS) {
          EXPECT_EQ(parts->size(), 1u) << "error replies carry no body";
          Status s = RemoteErrorStatus(h);
          totals->errors.push_back(file + " callId " + std::to_string(ResponseCallId(h)) + ": " + s.ToString());
          EXPECT_EQ(RemoteExceptionClass(s), h.exceptionclassname());
        }
      }
      pos += 4 + body.size();
    }
  }
  EXPECT_EQ(pos, bytes->size()) << "the stream is not consumed exactly";
  EXPECT_EQ(reader.buffered(), 0u);
  // Every message the transcript describes for this file was found by walking the frames.
  for (const auto& [where, d] : tr.messages) {
    if (std::get<0>(where) == file) {
      EXPECT_TRUE(seen.count(where)) << d.type << " at " << std::get<1>(where);
    }
  }
}

// Checks both streams of every connection recorded in the captures' folder `sub`; returns how many.
int CheckConnections(const std::string& sub, Totals* totals) {
  int connections = 0;
  std::string dir = kCaptures + sub;
  for (const std::string& stem : StemsIn(dir)) {
    SCOPED_TRACE(sub + "/" + stem);
    Transcript tr = ParseTranscript(dir, stem);
    EXPECT_FALSE(tr.messages.empty());
    CheckStream(dir, stem, /*c2s=*/true, tr, totals);
    CheckStream(dir, stem, /*c2s=*/false, tr, totals);
    ++connections;
  }
  return connections;
}

TEST(IpcCaptures, EveryFrameSplitsParsesAndDecodesLikeHadoop) {
  // Link yarn.pb.cc so that its descriptors are in the generated pool for the lookups by name.
  ASSERT_NE(::hadoop::yarn::AllocateResponseProto::descriptor(), nullptr);
  Totals totals;
  int connections = CheckConnections("dshell", &totals);
  connections += CheckConnections("negative", &totals);  // after dshell: `expected` lists the errors in this order
  EXPECT_EQ(connections, 17);
  EXPECT_EQ(totals.files, 34);
  std::cout << "checked " << connections << " connections, " << totals.frames << " frames, " << totals.messages
            << " messages: " << totals.typed << " decoded and compared with protoc's text, " << totals.skipped
            << " of HDFS or undeclared types skipped; " << totals.reencoded_frames
            << " request frames re-encoded whole\n";
  // All 397 messages of the transcripts; the 39 of HDFS or undeclared types are skipped.
  EXPECT_EQ(totals.messages, 397);
  EXPECT_EQ(totals.skipped, 39);

  // Every non-SUCCESS reply in the recordings, as the client will report it.
  std::vector<std::string> expected = {
      "01-client-rm-8032.s2c.bin callId 5: ABORTED: org.apache.hadoop.yarn.exceptions.YARNFeatureNotEnabledException: "
      "Resource profile is not enabled, please enable resource profile feature before using its functions. (by "
      "setting yarn.resourcemanager.resource-profiles.enabled to true)",
      "01-none-auth-register-8030.s2c.bin callId -1: UNAUTHENTICATED: "
      "org.apache.hadoop.security.AccessControlException: SIMPLE authentication is not enabled.  Available:[TOKEN]",
      "02-sasl-madeup-identifier-8030.s2c.bin callId -33: UNAUTHENTICATED: "
      "org.apache.hadoop.security.token.SecretManager$InvalidToken: appattempt_1795263045862_4242_000001 not found "
      "in AMRMTokenSecretManager.",
      "03-sasl-real-identifier-wrong-password-8030.s2c.bin callId -33: UNAUTHENTICATED: "
      "javax.security.sasl.SaslException: DIGEST-MD5: digest response format violation. Mismatched response.",
      "04-sasl-ok-then-register-again-8030.s2c.bin callId 0: ABORTED: "
      "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException: Application Master is already "
      "registered : application_1795263045862_0002",
  };
  EXPECT_EQ(totals.errors, expected);
}

// The second session's `yarn` CLI connections (README section 12): getQueueInfo (a busy queue
// with its applications, an unknown queue, an idle queue), getApplications and
// forceKillApplication. No message is skipped.
TEST(IpcCaptures, QueueAndKillConnectionsDecodeLikeHadoop) {
  ASSERT_NE(::hadoop::yarn::GetQueueInfoResponseProto::descriptor(), nullptr);
  Totals totals;
  EXPECT_EQ(CheckConnections("ipc-queue", &totals), 6);
  EXPECT_EQ(totals.skipped, 0);
  EXPECT_EQ(totals.typed, totals.messages);
  EXPECT_EQ(totals.reencoded_frames, 16);  // 6 contexts and 10 calls, every one rebuilt byte for byte
  EXPECT_TRUE(totals.errors.empty());      // an unknown queue is a SUCCESS with an empty body

  // The unknown queue's reply: a body of zero bytes, so no queueInfo.
  Result<std::string> nosuch = ReadFile(kCaptures + "ipc-queue/02-cli-rm-8032-queue-status-nosuch.s2c.bin");
  ASSERT_OK(nosuch);
  FrameReader reader;
  reader.Feed(*nosuch);
  Result<std::optional<std::string>> frame = reader.Next();
  ASSERT_OK(frame);
  ASSERT_TRUE(frame->has_value());
  Result<std::vector<std::string_view>> parts = SplitDelimited(**frame);
  ASSERT_OK(parts);
  ASSERT_EQ(parts->size(), 2u);
  ::hadoop::yarn::GetQueueInfoResponseProto empty;
  ASSERT_TRUE(empty.ParseFromString(std::string((*parts)[1])));
  EXPECT_FALSE(empty.has_queueinfo());
}

// The token identifiers inside the recorded messages (HDTS blobs, ContainerTokens, NMTokens).
TEST(IpcCaptures, EmbeddedTokenIdentifiersDecodeLikeHadoop) {
  const std::map<std::string, std::string> kTypes = {{"YARN_AM_RM_TOKEN", "hadoop.yarn.AMRMTokenIdentifierProto"},
                                                     {"NMToken", "hadoop.yarn.NMTokenIdentifierProto"},
                                                     {"ContainerToken", "hadoop.yarn.ContainerTokenIdentifierProto"}};
  ASSERT_NE(::hadoop::yarn::AMRMTokenIdentifierProto::descriptor(), nullptr);
  std::map<std::string, int> checked;
  for (const char* sub : {"dshell", "negative"}) {
    std::string dir = kCaptures + sub;
    for (const std::string& stem : StemsIn(dir)) {
      for (const EmbeddedIdentifier& e : ParseTranscript(dir, stem).identifiers) {
        SCOPED_TRACE(e.file + " @" + std::to_string(e.offset) + " " + e.kind);
        Result<std::string> bytes = ReadFile(dir + "/" + e.file);
        ASSERT_OK(bytes);
        ASSERT_LE(e.offset + e.size, bytes->size());
        ASSERT_TRUE(kTypes.count(e.kind));
        std::unique_ptr<pb::Message> msg = NewMessage(kTypes.at(e.kind));
        ASSERT_NE(msg, nullptr);
        ASSERT_TRUE(msg->ParseFromString(bytes->substr(e.offset, e.size)));
        std::string printed;
        ASSERT_TRUE(pb::TextFormat::PrintToString(*msg, &printed));
        EXPECT_EQ(printed, e.text);
        ++checked[e.kind];
      }
    }
  }
  std::cout << "checked " << checked["YARN_AM_RM_TOKEN"] << " AMRMToken, " << checked["NMToken"] << " NMToken and "
            << checked["ContainerToken"] << " ContainerToken identifiers\n";
  EXPECT_EQ(checked["YARN_AM_RM_TOKEN"], 3);
  EXPECT_EQ(checked["NMToken"], 1);
  EXPECT_EQ(checked["ContainerToken"], 6);
}

TEST(IpcFrame, PreambleAndHeaderBytes) {
  EXPECT_EQ(Preamble(AuthProtocol::kSasl), std::string("hrpc\x09\x00\xdf", 7));
  EXPECT_EQ(Preamble(AuthProtocol::kNone), std::string("hrpc\x09\x00\x00", 7));
  EXPECT_STATUS(ParsePreamble(std::string("hrpc\x08\x00\x00", 7)), kInvalidArgument, HasSubstr("version 8"));
  EXPECT_STATUS(ParsePreamble("HTTP/1."), kInvalidArgument, HasSubstr("hrpc"));
  EXPECT_STATUS(ParsePreamble(std::string("hrpc\x09\x00\x01", 7)), kInvalidArgument, HasSubstr("auth protocol 1"));
  // README fact 3/4/5: the SASL header is 08 02 10 00 18 41 22 00 28 01.
  EXPECT_EQ(MakeRequestHeader(kSaslCallId, "", -1).SerializeAsString(),
            std::string("\x08\x02\x10\x00\x18\x41\x22\x00\x28\x01", 10));
}

TEST(IpcFrame, ReaderAndSplitRejectBadInput) {
  FrameReader r;
  r.Feed(std::string("\x00\x00\x00", 3));
  Result<std::optional<std::string>> none = r.Next();
  ASSERT_OK(none);
  EXPECT_FALSE(none->has_value());
  FrameReader big;
  big.Feed(std::string("\x04\x00\x00\x01", 4));
  EXPECT_STATUS(big.Next(), kInvalidArgument, HasSubstr("exceeds"));
  EXPECT_STATUS(SplitDelimited(std::string("\x05\x01", 2)), kInvalidArgument, HasSubstr("overruns"));
  EXPECT_STATUS(SplitDelimited(std::string("\x80", 1)), kInvalidArgument, HasSubstr("length prefix"));
}

}  // namespace
}  // namespace loom::hadoop
