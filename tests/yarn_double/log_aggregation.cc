#include "log_aggregation.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include <openssl/evp.h>

#include "core/files.h"
#include "core/strings.h"
#include "fake_hdfs.h"
#include "yarn_double_impl.h"

namespace loom::yarn_double {
namespace {

// ---- java.io.DataOutput and TFile's encodings ----------------------------------------------------

void PutBig(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

// DataOutput.writeUTF's modified UTF-8 of a UTF-8 string: NUL as C0 80, code points above
// U+FFFF as two 3-byte surrogates.
std::string ModifiedUtf8(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    auto b = static_cast<uint8_t>(s[i]);
    uint32_t cp = b;
    size_t n = 1;
    if (b >= 0xF0 && i + 3 < s.size()) {
      cp = ((b & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu);
      n = 4;
    }
    if (cp == 0) {
      out += "\xC0\x80";
    } else if (n == 4) {
      uint32_t v = cp - 0x10000;
      for (uint32_t unit : {0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)}) {
        out += static_cast<char>(0xE0 | (unit >> 12));
        out += static_cast<char>(0x80 | ((unit >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (unit & 0x3F));
      }
    } else {
      out += s[i];  // ASCII, and the bytes of 2- and 3-byte sequences, are the same
    }
    i += n;
  }
  return out;
}

void PutUtf(std::string& out, std::string_view s) {
  std::string m = ModifiedUtf8(s);
  PutBig(out, m.size(), 2);
  out += m;
}

// org.apache.hadoop.io.file.tfile.Utils.writeVLong.
void PutVLong(std::string& out, int64_t n) {
  if (n < 128 && n >= -32) {
    out += static_cast<char>(n);
    return;
  }
  uint64_t un = n < 0 ? ~static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
  int bits = un == 0 ? 0 : 64 - __builtin_clzll(un);  // significant bits, the sign aside
  int len = bits / 8 + 1;
  int64_t first = n >> ((len - 1) * 8);
  switch (len) {
    case 1:
      first >>= 8;
      [[fallthrough]];
    case 2:
      if (first < 20 && first >= -20) {
        out += static_cast<char>(first - 52);
        out += static_cast<char>(n);
        return;
      }
      first >>= 8;
      [[fallthrough]];
    case 3:
      if (first < 16 && first >= -16) {
        out += static_cast<char>(first - 88);
        PutBig(out, static_cast<uint64_t>(n), 2);
        return;
      }
      first >>= 8;
      [[fallthrough]];
    case 4:
      if (first < 8 && first >= -8) {
        out += static_cast<char>(first - 112);
        PutBig(out, static_cast<uint64_t>(n), 3);
        return;
      }
      out += static_cast<char>(len - 129);
      PutBig(out, static_cast<uint64_t>(n), 4);
      return;
    default:
      out += static_cast<char>(len - 129);
      PutBig(out, static_cast<uint64_t>(n), len);
      return;
  }
}

void PutTString(std::string& out, std::string_view s) {
  PutVLong(out, static_cast<int64_t>(s.size()));
  out += s;
}

constexpr char kBcFileMagic[] = "\xd1\x11\xd3\x68\x91\xb5\xd7\xb6\x39\xdf\x41\x40\x92\xba\xe1\x50";

// TFile's ChunkEncoder: a value as chunks, each "VInt n, n bytes" with n < 0 for all but
// the last. It buffers up to tfile.io.chunk.size (1 MiB); a write that would fill the
// buffer goes out at once with what was buffered.
class ChunkEncoder {
 public:
  explicit ChunkEncoder(std::string& out) : out_(out) {}
  void WriteByte(char b) {  // write(int)
    if (buf_.size() >= kChunk) Flush();
    buf_ += b;
  }
  void Write(std::string_view data) {  // write(byte[], off, len)
    if (data.size() + buf_.size() >= kChunk) {
      if (!buf_.empty() || !data.empty()) {
        PutVLong(out_, -static_cast<int64_t>(buf_.size() + data.size()));
        out_ += buf_;
        out_ += data;
        buf_.clear();
      }
      return;
    }
    buf_ += data;
  }
  void Close() {
    PutVLong(out_, static_cast<int64_t>(buf_.size()));
    out_ += buf_;
    buf_.clear();
  }

 private:
  void Flush() {
    if (buf_.empty()) return;
    PutVLong(out_, -static_cast<int64_t>(buf_.size()));
    out_ += buf_;
    buf_.clear();
  }
  static constexpr size_t kChunk = 1 << 20;
  std::string& out_;
  std::string buf_;
};

// A TFile with unsorted keys and no compression, written the way TFile.Writer and
// BCFile.Writer lay it out.
class TFileWriter {
 public:
  TFileWriter() { out_.append(kBcFileMagic, 16); }

  template <typename WriteValue>
  void Append(std::string_view key_utf, WriteValue write_value) {
    std::string key;
    PutUtf(key, key_utf);
    if (!in_block_) {
      in_block_ = true;
      block_start_ = static_cast<int64_t>(out_.size());
      block_entries_ = 0;
    }
    PutVLong(out_, static_cast<int64_t>(key.size()));
    out_ += key;
    ChunkEncoder value(out_);
    write_value(value);
    value.Close();
    if (records_ == 0) first_key_ = key;
    ++records_;
    ++block_entries_;
    last_key_ = key;
    if (static_cast<int64_t>(out_.size()) - block_start_ >= kMinBlock) FinishBlock();
  }

  std::string Finish() {
    if (in_block_) FinishBlock();
    std::map<std::string, Region> meta;  // by name, as BCFile's MetaIndex (a TreeMap)
    int64_t at = Size();
    PutBig(out_, 1, 2);  // TFile.meta: API version 1.0, record count, comparator ("": unsorted)
    PutBig(out_, 0, 2);
    PutVLong(out_, records_);
    PutTString(out_, "");
    meta["TFile.meta"] = {at, Size() - at};
    at = Size();
    std::string record;  // TFile.index: the first key, then per block its last key and entry count
    PutVLong(record, static_cast<int64_t>(first_key_.size()));
    record += first_key_;
    PutVLong(out_, static_cast<int64_t>(record.size()));
    out_ += record;
    for (const Block& b : blocks_) {
      record.clear();
      PutVLong(record, static_cast<int64_t>(b.last_key.size()));
      record += b.last_key;
      PutVLong(record, b.entries);
      PutVLong(out_, static_cast<int64_t>(record.size()));
      out_ += record;
    }
    meta["TFile.index"] = {at, Size() - at};
    at = Size();
    PutTString(out_, "none");  // BCFile.index: the data blocks
    PutVLong(out_, static_cast<int64_t>(blocks_.size()));
    for (const Block& b : blocks_) {
      PutVLong(out_, b.offset);
      PutVLong(out_, b.size);
      PutVLong(out_, b.size);
    }
    meta["BCFile.index"] = {at, Size() - at};
    int64_t meta_index = Size();
    PutVLong(out_, static_cast<int64_t>(meta.size()));
    for (const auto& [name, r] : meta) {
      PutTString(out_, "data:" + name);
      PutTString(out_, "none");
      PutVLong(out_, r.offset);
      PutVLong(out_, r.size);
      PutVLong(out_, r.size);
    }
    PutBig(out_, static_cast<uint64_t>(meta_index), 8);
    PutBig(out_, 1, 2);
    PutBig(out_, 0, 2);
    out_.append(kBcFileMagic, 16);
    return std::move(out_);
  }

 private:
  struct Region {
    int64_t offset = 0, size = 0;
  };
  struct Block {
    int64_t offset = 0, size = 0;
    std::string last_key;
    int64_t entries = 0;
  };
  static constexpr int64_t kMinBlock = 256 * 1024;  // AggregatedLogFormat.LogWriter's minBlockSize

  int64_t Size() const { return static_cast<int64_t>(out_.size()); }
  void FinishBlock() {
    blocks_.push_back({block_start_, Size() - block_start_, last_key_, block_entries_});
    in_block_ = false;
  }

  std::string out_;
  bool in_block_ = false;
  int64_t block_start_ = 0, block_entries_ = 0, records_ = 0;
  std::string first_key_, last_key_;
  std::vector<Block> blocks_;
};

// ---- java.io.ObjectOutputStream, for IndexedLogsMeta ---------------------------------------------

struct JavaField {
  char type;
  const char* name;
  const char* signature;  // object fields: the interned type string
};

class JavaOut {
 public:
  JavaOut() {
    PutBig(out, 0xACED, 2);
    PutBig(out, 5, 2);
  }
  std::string out;

  void Byte(uint8_t b) { out += static_cast<char>(b); }
  void Int(int32_t v) { PutBig(out, static_cast<uint32_t>(v), 4); }
  void Long(int64_t v) { PutBig(out, static_cast<uint64_t>(v), 8); }
  void Float(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    PutBig(out, bits, 4);
  }
  void BlockData(std::initializer_list<int32_t> ints) {
    Byte(0x77);  // TC_BLOCKDATA
    Byte(static_cast<uint8_t>(4 * ints.size()));
    for (int32_t v : ints) Int(v);
  }
  void End() { Byte(0x78); }  // TC_ENDBLOCKDATA

  // A String; `identity` names the Java object, so that writing the same one again is a
  // back reference (ObjectOutputStream shares by identity, not by value). "" : a new object.
  void String(const std::string& s, const std::string& identity = "") {
    if (!identity.empty()) {
      auto it = string_handles_.find(identity);
      if (it != string_handles_.end()) return Ref(it->second);
    }
    Byte(0x74);  // TC_STRING
    int32_t h = next_handle_++;
    if (!identity.empty()) string_handles_[identity] = h;
    PutUtf(out, s);
  }

  // TC_OBJECT and its class descriptor (a back reference after the first time).
  void Object(const std::string& cls, int64_t suid, uint8_t flags, std::initializer_list<JavaField> fields) {
    Byte(0x73);
    auto it = class_handles_.find(cls);
    if (it != class_handles_.end()) {
      Ref(it->second);
    } else {
      Byte(0x72);  // TC_CLASSDESC
      PutUtf(out, cls);
      Long(suid);
      class_handles_[cls] = next_handle_++;
      Byte(flags);
      PutBig(out, fields.size(), 2);
      for (const JavaField& f : fields) {
        Byte(static_cast<uint8_t>(f.type));
        PutUtf(out, f.name);
        if (f.signature != nullptr) String(f.signature, std::string("interned:") + f.signature);
      }
      End();       // no class annotation
      Byte(0x70);  // no serializable super class
    }
    ++next_handle_;  // the object itself
  }

  void HashMapStart(int32_t threshold) {
    Object("java.util.HashMap", 0x0507dac1c31660d1LL, 0x03, {{'F', "loadFactor", nullptr}, {'I', "threshold", nullptr}});
    Float(0.75f);
    Int(threshold);
  }
  void ArrayListStart(int32_t size) {
    Object("java.util.ArrayList", 0x7881d21d99c7619dLL, 0x03, {{'I', "size", nullptr}});
    Int(size);
    BlockData({size});  // ArrayList.writeObject: the size again, "for compatibility with clone()"
  }

 private:
  void Ref(int32_t h) {
    Byte(0x71);  // TC_REFERENCE
    Int(h);
  }
  int32_t next_handle_ = 0x7e0000;
  std::map<std::string, int32_t> class_handles_, string_handles_;
};

int32_t JavaStringHash(std::string_view s) {  // String.hashCode for ASCII (container ids)
  uint32_t h = 0;
  for (char c : s) h = 31 * h + static_cast<uint8_t>(c);
  return static_cast<int32_t>(h);
}

constexpr char kController[] = "org.apache.hadoop.yarn.logaggregation.filecontroller.ifile.LogAggregationIndexedFileController";

std::string Sha256(const std::string& s) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(s.data(), s.size(), md, &n, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<char*>(md), n);
}

std::string NodeFile(std::string node_id) {
  std::replace(node_id.begin(), node_id.end(), ':', '_');
  return node_id;
}

}  // namespace

std::string WriteTFileLogs(const NodeLogsToAggregate& logs) {
  TFileWriter w;
  w.Append("VERSION", [](ChunkEncoder& v) {
    for (char b : std::string("\x00\x00\x00\x01", 4)) v.WriteByte(b);  // writeInt(1)
  });
  w.Append("APPLICATION_ACL", [](ChunkEncoder&) {});  // no ACLs: no (type, acl) pairs
  w.Append("APPLICATION_OWNER", [&](ChunkEncoder& v) {
    std::string owner;
    PutUtf(owner, logs.owner);
    v.Write(owner);
  });
  for (const ContainerLogsToAggregate& c : logs.containers) {
    std::vector<const LogFileToAggregate*> files;
    for (const LogFileToAggregate& f : c.files) files.push_back(&f);
    std::sort(files.begin(), files.end(), [](auto* a, auto* b) { return a->name < b->name; });
    w.Append(c.container_id, [&](ChunkEncoder& v) {
      for (const LogFileToAggregate* f : files) {
        std::string head;
        PutUtf(head, f->name);
        v.Write(head);
        head.clear();
        PutUtf(head, std::to_string(f->bytes.size()));
        v.Write(head);
        // LogValue copies through a 65535-byte buffer.
        for (size_t at = 0; at < f->bytes.size(); at += 65535) v.Write(std::string_view(f->bytes).substr(at, 65535));
      }
    });
  }
  return w.Finish();
}

std::string WriteIFileLogs(const NodeLogsToAggregate& logs) {
  const std::string id = Sha256(logs.app_id);
  std::string out = id;
  struct Placed {
    const LogFileToAggregate* file;
    int64_t start;
  };
  std::vector<std::vector<Placed>> placed;
  for (const ContainerLogsToAggregate& c : logs.containers) {
    placed.emplace_back();
    for (const LogFileToAggregate& f : c.files) {
      placed.back().push_back({&f, static_cast<int64_t>(out.size())});
      out += f.bytes;
    }
  }
  // IndexedPerAggregationLogMeta.logMetas is a HashMap: iteration goes by bucket
  // ((h ^ h >>> 16) & (capacity - 1)), insertion order within one; capacity doubles from 16
  // while size > 0.75 * capacity.
  size_t n = logs.containers.size();
  int32_t capacity = 16;
  while (n > static_cast<size_t>(capacity) * 3 / 4) capacity *= 2;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  auto bucket = [&](size_t i) {
    uint32_t h = static_cast<uint32_t>(JavaStringHash(logs.containers[i].container_id));
    return (h ^ (h >> 16)) & static_cast<uint32_t>(capacity - 1);
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bucket(a) < bucket(b); });

  JavaOut j;
  j.Object(std::string(kController) + "$IndexedLogsMeta", 5439875373LL, 0x02,
           {{'I', "version", nullptr},
            {'L', "acls", "Ljava/util/Map;"},
            {'L', "compressName", "Ljava/lang/String;"},
            {'L', "logMetas", "Ljava/util/List;"},
            {'L', "nodeId", "Ljava/lang/String;"},
            {'L', "user", "Ljava/lang/String;"}});
  j.Int(1);  // version
  j.HashMapStart(1);  // acls: an empty HashMap(0), as the NM's
  j.BlockData({1, 0});
  j.End();
  j.String("none");  // compressName
  j.ArrayListStart(1);  // logMetas: one upload cycle
  j.Object(std::string(kController) + "$IndexedPerAggregationLogMeta", 3929298383LL, 0x02,
           {{'J', "uploadTimeStamp", nullptr},
            {'L', "logMetas", "Ljava/util/Map;"},
            {'L', "remoteNodeLogFileName", "Ljava/lang/String;"}});
  j.Long(logs.upload_time_ms);
  j.HashMapStart(n == 0 ? 0 : capacity * 3 / 4);
  j.BlockData({n == 0 ? 16 : capacity, static_cast<int32_t>(n)});
  for (size_t i : order) {
    const ContainerLogsToAggregate& c = logs.containers[i];
    j.String(c.container_id, "container:" + c.container_id);  // the key; each file meta refers to it
    j.ArrayListStart(static_cast<int32_t>(c.files.size()));
    for (const Placed& p : placed[i]) {
      j.Object(std::string(kController) + "$IndexedFileLogMeta", 1, 0x02,
               {{'J', "fileCompressedSize", nullptr},
                {'J', "fileSize", nullptr},
                {'J', "lastModifiedTime", nullptr},
                {'J', "startIndex", nullptr},
                {'L', "containerId", "Ljava/lang/String;"},
                {'L', "fileName", "Ljava/lang/String;"}});
      j.Long(static_cast<int64_t>(p.file->bytes.size()));
      j.Long(static_cast<int64_t>(p.file->bytes.size()));
      j.Long(p.file->mtime_ms);
      j.Long(p.start);
      j.String(c.container_id, "container:" + c.container_id);
      j.String(p.file->name);
    }
    j.End();
  }
  j.End();
  j.String(NodeFile(logs.node_id));  // remoteNodeLogFileName
  j.End();
  j.String(logs.node_id);
  j.String(logs.owner);
  out += j.out;
  PutBig(out, j.out.size(), 4);
  out += id;
  return out;
}

// ---- the double's upload ----------------------------------------------------------------------

std::vector<int32_t> AppsDueForLogAggregationLocked(YarnDoubleImpl& d) {
  std::vector<int32_t> due;
  if (d.options_.log_aggregation.empty()) return due;
  for (auto& [id, app] : d.apps_) {
    if (!app->Final() || app->log_aggregation != 0) continue;
    bool done = true;
    for (const auto& [cid, c] : d.containers_) {
      if (c->app == id && c->start_requested && !c->complete) done = false;
    }
    if (done) due.push_back(id);
  }
  return due;
}

namespace {

// One NodeManager's part of an application: its containers' log dirs.
struct NodeShare {
  std::string node_id;
  std::vector<std::pair<std::string, std::string>> dirs;  // container id, log dir
};

ContainerLogsToAggregate ReadLogDir(const std::string& container_id, const std::string& dir) {
  ContainerLogsToAggregate c;
  c.container_id = container_id;
  DIR* dp = ::opendir(dir.c_str());
  if (dp == nullptr) return c;
  while (dirent* e = ::readdir(dp)) {  // directory order, like the NM's File.listFiles
    std::string path = dir + "/" + e->d_name;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    Result<std::string> bytes = ReadFile(path);
    if (!bytes.ok()) continue;
    c.files.push_back({e->d_name, std::move(*bytes),
                       static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000});
  }
  ::closedir(dp);
  return c;
}

}  // namespace

Status UploadAggregatedLogs(YarnDoubleImpl& d, int32_t app) {
  std::string app_id, owner;
  std::map<int, NodeShare> shares;  // by node index
  const std::string format = d.options_.log_aggregation;
  FakeHdfs* hdfs = d.options_.hdfs;
  {
    std::lock_guard<std::mutex> lock(d.mu_);
    App* a = d.FindAppLocked(app);
    if (a == nullptr) return Status::NotFound("no application " + std::to_string(app));
    app_id = a->id_str;
    owner = a->user;
    for (const auto& [cid, c] : d.containers_) {
      if (c->app != app || !c->start_requested || c->log_dir.empty()) continue;
      NodeShare& share = shares[c->node];
      share.node_id = d.nodes_.empty() ? d.options_.node_host + ":" + std::to_string(d.nm_server_->port())
                                       : d.nodes_[static_cast<size_t>(c->node)]->Address();
      share.dirs.emplace_back(cid, c->log_dir);
    }
  }
  if (hdfs == nullptr) return Status::FailedPrecondition("log aggregation needs Options::hdfs");
  if (format != "TFile" && format != "IFile") {
    return Status::InvalidArgument("Options::log_aggregation is '" + format + "', not TFile or IFile");
  }
  // <root> 1777, then the user, bucket-logs-<format>, bucket and app dirs 770, each file 640.
  char bucket[16];
  std::snprintf(bucket, sizeof bucket, "%04d", app % 10000);
  std::string dir = d.options_.remote_app_log_dir;
  LOOM_RETURN_IF_ERROR(hdfs->MakeDir(dir, "root", "1777"));
  for (const std::string& part : {owner, "bucket-logs-" + ToLower(format), std::string(bucket), app_id}) {
    dir += "/" + part;
    LOOM_RETURN_IF_ERROR(hdfs->MakeDir(dir, owner, "770"));
  }
  for (const auto& [node, share] : shares) {
    NodeLogsToAggregate logs;
    logs.app_id = app_id;
    logs.owner = owner;
    logs.node_id = share.node_id;
    for (const auto& [cid, log_dir] : share.dirs) logs.containers.push_back(ReadLogDir(cid, log_dir));
    logs.upload_time_ms = NowMs();
    std::string bytes = format == "IFile" ? WriteIFileLogs(logs) : WriteTFileLogs(logs);
    LOOM_RETURN_IF_ERROR(hdfs->PutFile(dir + "/" + NodeFile(logs.node_id), bytes, owner, "640"));
  }
  return Status::Ok();
}

}  // namespace loom::yarn_double
