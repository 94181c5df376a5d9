#include "hadoop/logs/aggregated_log_file.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <ctime>
#include <set>

#include "core/strings.h"
#include "hadoop/logs/java_serialization.h"

namespace loom::hadoop {
namespace {

// BCFile's magic, at the start and at the very end of every TFile.
constexpr unsigned char kBcFileMagic[16] = {0xd1, 0x11, 0xd3, 0x68, 0x91, 0xb5, 0xd7, 0xb6,
                                            0x39, 0xdf, 0x41, 0x40, 0x92, 0xba, 0xe1, 0x50};
constexpr size_t kBcFileTail = 8 + 4 + 16;  // MetaIndex offset, version, magic
// AggregatedLogFormat's reserved keys; every other key is a container id.
constexpr char kVersionKey[] = "VERSION";
constexpr char kAclKey[] = "APPLICATION_ACL";
constexpr char kOwnerKey[] = "APPLICATION_OWNER";

bool IsBcFileMagic(std::string_view b) {
  return b.size() == sizeof kBcFileMagic && std::equal(b.begin(), b.end(), kBcFileMagic,
                                                       [](char c, unsigned char m) { return static_cast<unsigned char>(c) == m; });
}

// A bounds-checked reader of the big-endian encodings TFile and java.io.DataOutput use.
class Cursor {
 public:
  Cursor(std::string_view data, std::string what) : data_(data), what_(std::move(what)) {}
  bool done() const { return pos_ >= data_.size(); }
  size_t pos() const { return pos_; }

  Status Error(const std::string& why) const {
    return Status::InvalidArgument(what_ + ", byte " + std::to_string(pos_) + ": " + why);
  }
  Status Bytes(size_t n, std::string_view& out) {
    if (data_.size() - pos_ < n) return Error("truncated (" + std::to_string(n) + " bytes wanted)");
    out = data_.substr(pos_, n);
    pos_ += n;
    return Status::Ok();
  }
  Status Unsigned(size_t n, uint64_t& out) {
    std::string_view b;
    LOOM_RETURN_IF_ERROR(Bytes(n, b));
    out = 0;
    for (char c : b) out = (out << 8) | static_cast<uint8_t>(c);
    return Status::Ok();
  }
  Status Int32(int32_t& out) {
    uint64_t u;
    LOOM_RETURN_IF_ERROR(Unsigned(4, u));
    out = static_cast<int32_t>(static_cast<uint32_t>(u));
    return Status::Ok();
  }
  // org.apache.hadoop.io.file.tfile.Utils.readVLong: one byte for -32..127, else the first
  // byte says how many follow.
  Status VLong(int64_t& out) {
    uint64_t first_u = 0;
    LOOM_RETURN_IF_ERROR(Unsigned(1, first_u));
    int first = static_cast<int8_t>(first_u);
    if (first >= -32) {
      out = first;
      return Status::Ok();
    }
    uint64_t rest = 0;
    switch ((first + 128) / 8) {
      case 11: case 10: case 9: case 8: case 7:
        LOOM_RETURN_IF_ERROR(Unsigned(1, rest));
        out = static_cast<int64_t>((static_cast<uint64_t>(static_cast<int64_t>(first + 52)) << 8) | rest);
        return Status::Ok();
      case 6: case 5: case 4: case 3:
        LOOM_RETURN_IF_ERROR(Unsigned(2, rest));
        out = static_cast<int64_t>((static_cast<uint64_t>(static_cast<int64_t>(first + 88)) << 16) | rest);
        return Status::Ok();
      case 2: case 1:
        LOOM_RETURN_IF_ERROR(Unsigned(3, rest));
        out = static_cast<int64_t>((static_cast<uint64_t>(static_cast<int64_t>(first + 112)) << 24) | rest);
        return Status::Ok();
      default: {  // 0: the next first+129 bytes (4..8) are a signed big-endian number
        int len = first + 129;
        if (len < 4 || len > 8) return Error("corrupt VLong");
        LOOM_RETURN_IF_ERROR(Unsigned(static_cast<size_t>(len), rest));
        int shift = 64 - 8 * len;
        out = shift == 0 ? static_cast<int64_t>(rest) : static_cast<int64_t>(rest << shift) >> shift;
        return Status::Ok();
      }
    }
  }
  Status NonNegativeVLong(int64_t& out, const char* what) {
    LOOM_RETURN_IF_ERROR(VLong(out));
    if (out < 0) return Error(std::string("negative ") + what);
    return Status::Ok();
  }
  // Utils.writeString: VInt byte length (-1: null), then the UTF-8 bytes.
  Status TString(std::string& out) {
    int64_t n = 0;
    LOOM_RETURN_IF_ERROR(VLong(n));
    if (n == -1) {
      out.clear();
      return Status::Ok();
    }
    if (n < 0) return Error("negative string length");
    std::string_view b;
    LOOM_RETURN_IF_ERROR(Bytes(static_cast<size_t>(n), b));
    out = std::string(b);
    return Status::Ok();
  }
  // java.io.DataOutput.writeUTF: u16 length, modified UTF-8.
  Status Utf(std::string& out) {
    uint64_t n = 0;
    LOOM_RETURN_IF_ERROR(Unsigned(2, n));
    std::string_view b;
    LOOM_RETURN_IF_ERROR(Bytes(static_cast<size_t>(n), b));
    out = ModifiedUtf8ToUtf8(b);
    return Status::Ok();
  }

 private:
  std::string_view data_;
  std::string what_;
  size_t pos_ = 0;
};

struct Region {
  int64_t offset = 0, compressed = 0, raw = 0;
  std::string compression;
};

Status ReadRegion(Cursor& c, Region& r) {
  LOOM_RETURN_IF_ERROR(c.NonNegativeVLong(r.offset, "block offset"));
  LOOM_RETURN_IF_ERROR(c.NonNegativeVLong(r.compressed, "block size"));
  return c.NonNegativeVLong(r.raw, "block size");
}

// A region must lie between the leading magic and `end`, and be stored uncompressed.
Status CheckRegion(const Region& r, int64_t end, const std::string& what) {
  if (r.offset < 16 || r.compressed > end - r.offset) {
    return Status::InvalidArgument("TFile: " + what + " [" + std::to_string(r.offset) + ", +" +
                                   std::to_string(r.compressed) + ") lies outside the file");
  }
  if (r.compression != "none") {
    return Status::Unimplemented("TFile: " + what + " is compressed with '" + r.compression +
                                 "'; only uncompressed aggregated logs (yarn.nodemanager.log-aggregation."
                                 "compression-type=none, the default) can be read");
  }
  if (r.raw != r.compressed) return Status::InvalidArgument("TFile: " + what + ": raw and stored sizes differ");
  return Status::Ok();
}

// One container's value: for each log file writeUTF(name), writeUTF(decimal length), bytes.
Status ParseContainerValue(const std::string& container_id, std::string_view value, AggregatedLogFile& out) {
  Cursor c(value, "TFile: container " + container_id);
  while (!c.done()) {
    AggregatedLogEntry e;
    e.container_id = container_id;
    std::string length_text;
    LOOM_RETURN_IF_ERROR(c.Utf(e.file_name));
    LOOM_RETURN_IF_ERROR(c.Utf(length_text));
    Result<int64_t> length = ParseInt(length_text);
    if (!length.ok() || *length < 0) return c.Error("log file " + e.file_name + ": bad length '" + length_text + "'");
    e.length = *length;
    std::string_view bytes;
    LOOM_RETURN_IF_ERROR(c.Bytes(static_cast<size_t>(e.length), bytes));
    e.bytes = std::string(bytes);
    out.entries.push_back(std::move(e));
  }
  return Status::Ok();
}

// The key/value entries of one data block: VInt key length, key, then the value as chunks
// (VInt n and |n| bytes; n < 0: more chunks follow).
Status ParseDataBlock(std::string_view block, int index, AggregatedLogFile& out) {
  Cursor c(block, "TFile data block " + std::to_string(index));
  while (!c.done()) {
    int64_t key_length = 0;
    LOOM_RETURN_IF_ERROR(c.NonNegativeVLong(key_length, "key length"));
    std::string_view key_bytes;
    LOOM_RETURN_IF_ERROR(c.Bytes(static_cast<size_t>(key_length), key_bytes));
    std::string key;
    Cursor kc(key_bytes, "TFile key");
    LOOM_RETURN_IF_ERROR(kc.Utf(key));
    if (!kc.done()) return c.Error("a key with bytes after its string");
    std::string value;
    for (bool last = false; !last;) {
      int64_t n = 0;
      LOOM_RETURN_IF_ERROR(c.VLong(n));
      last = n >= 0;
      if (n == INT64_MIN) return c.Error("corrupt chunk length");
      std::string_view chunk;
      LOOM_RETURN_IF_ERROR(c.Bytes(static_cast<size_t>(last ? n : -n), chunk));
      value.append(chunk);
    }
    if (key == kOwnerKey) {
      Cursor vc(value, "TFile APPLICATION_OWNER");
      LOOM_RETURN_IF_ERROR(vc.Utf(out.owner));
    } else if (key == kVersionKey || key == kAclKey) {
      // The format version (1) and the application's ACLs: nothing a reader of logs needs.
    } else {
      LOOM_RETURN_IF_ERROR(ParseContainerValue(key, value, out));
    }
  }
  return Status::Ok();
}

// ---- IFile index ----------------------------------------------------------------------------

Result<std::string> StringField(const JavaValue& obj, const char* name, bool nullable) {
  const JavaValue* v = obj.Field(name);
  if (v != nullptr && v->IsString()) return v->text;
  if (nullable && (v == nullptr || v->IsNull())) return std::string();
  return Status::InvalidArgument(std::string("IFile index: no string field ") + name + " in " +
                                 (obj.desc ? obj.desc->name : "an object"));
}

Result<int64_t> LongField(const JavaValue& obj, const char* name) {
  const JavaValue* v = obj.Field(name);
  if (v == nullptr || v->kind != JavaValue::Kind::kPrimitive || v->primitive_type != 'J') {
    return Status::InvalidArgument(std::string("IFile index: no long field ") + name);
  }
  return v->integer;
}

// A serialized java.util.List (ArrayList, LinkedList, Arrays$ArrayList) or array.
Result<std::vector<const JavaValue*>> ListElements(const JavaValue* list, const std::string& what) {
  if (list == nullptr || list->IsNull()) return std::vector<const JavaValue*>{};
  if (list->kind == JavaValue::Kind::kArray) return list->elements;
  if (list->kind == JavaValue::Kind::kObject) {
    if (const JavaValue* a = list->Field("a"); a != nullptr && a->kind == JavaValue::Kind::kArray) return a->elements;
    return list->WrittenObjects();
  }
  return Status::InvalidArgument("IFile index: " + what + " is not a list");
}

// A serialized java.util.Map (HashMap, LinkedHashMap, TreeMap): key, value, key, value, ...
Result<std::vector<const JavaValue*>> MapEntries(const JavaValue* map, const std::string& what) {
  if (map == nullptr || map->IsNull()) return std::vector<const JavaValue*>{};
  if (map->kind != JavaValue::Kind::kObject) return Status::InvalidArgument("IFile index: " + what + " is not a map");
  std::vector<const JavaValue*> kv = map->WrittenObjects();
  if (kv.size() % 2 != 0) return Status::InvalidArgument("IFile index: " + what + " has a key without a value");
  return kv;
}

bool ClassIs(const JavaValue* v, std::string_view simple_name) {
  return v != nullptr && v->kind == JavaValue::Kind::kObject && v->desc != nullptr &&
         (EndsWith(v->desc->name, std::string("$") + std::string(simple_name)) ||
          EndsWith(v->desc->name, std::string(".") + std::string(simple_name)));
}

int64_t ReadI32At(std::string_view b) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(b[i]);
  return static_cast<int32_t>(v);
}

}  // namespace

std::vector<std::string> AggregatedLogFile::ContainerIds() const {
  std::vector<std::string> ids;
  std::set<std::string> seen;
  for (const AggregatedLogEntry& e : entries) {
    if (seen.insert(e.container_id).second) ids.push_back(e.container_id);
  }
  return ids;
}

Result<std::string> AggregatedLogFile::Contents(const std::string& container_id, const std::string& file) const {
  std::string bytes;
  bool found = false, container = false;
  std::vector<std::string> names;
  for (const AggregatedLogEntry& e : entries) {
    if (e.container_id != container_id) continue;
    container = true;
    if (e.file_name == file) {
      found = true;
      bytes += e.bytes;
    } else if (std::find(names.begin(), names.end(), e.file_name) == names.end()) {
      names.push_back(e.file_name);
    }
  }
  if (!container) return Status::NotFound("no container " + container_id + " in the aggregated log file");
  if (!found) {
    return Status::NotFound("container " + container_id + " has no log file '" + file + "' (it has: " +
                            Join(names, ", ") + ")");
  }
  return bytes;
}

Result<AggregatedLogFormat> DetectAggregatedLogFormat(std::string_view head, std::string_view tail) {
  if (head.size() >= 16 && tail.size() >= 16 && IsBcFileMagic(head.substr(0, 16)) &&
      IsBcFileMagic(tail.substr(tail.size() - 16))) {
    return AggregatedLogFormat::kTFile;
  }
  if (head.size() >= kIFileIdSize && tail.size() >= kIFileIdSize &&
      head.substr(0, kIFileIdSize) == tail.substr(tail.size() - kIFileIdSize)) {
    return AggregatedLogFormat::kIFile;
  }
  return Status::InvalidArgument(
      "not an aggregated log file: neither a TFile (BCFile magic at both ends) nor an IFile "
      "(the same 32-byte id at both ends)");
}

Result<AggregatedLogFile> ParseAggregatedLogFile(std::string_view bytes) {
  LOOM_ASSIGN_OR_RETURN(AggregatedLogFormat format, DetectAggregatedLogFormat(bytes, bytes));
  return format == AggregatedLogFormat::kTFile ? ParseTFileLogs(bytes) : ParseIFileLogs(bytes);
}

Result<AggregatedLogFile> ParseTFileLogs(std::string_view bytes) {
  if (bytes.size() < 16 + kBcFileTail) return Status::InvalidArgument("TFile: " + std::to_string(bytes.size()) + " bytes is too short");
  if (!IsBcFileMagic(bytes.substr(0, 16)) || !IsBcFileMagic(bytes.substr(bytes.size() - 16))) {
    return Status::InvalidArgument("TFile: no BCFile magic at its start and end");
  }
  Cursor tail(bytes.substr(bytes.size() - kBcFileTail), "TFile trailer");
  uint64_t meta_index_offset = 0, major = 0, minor = 0;
  LOOM_RETURN_IF_ERROR(tail.Unsigned(8, meta_index_offset));
  LOOM_RETURN_IF_ERROR(tail.Unsigned(2, major));
  LOOM_RETURN_IF_ERROR(tail.Unsigned(2, minor));
  if (major != 1) return Status::Unimplemented("TFile: BCFile version " + std::to_string(major) + "." + std::to_string(minor));
  const int64_t meta_end = static_cast<int64_t>(bytes.size() - kBcFileTail);
  if (meta_index_offset < 16 || meta_index_offset > static_cast<uint64_t>(meta_end)) {
    return Status::InvalidArgument("TFile: MetaIndex offset " + std::to_string(meta_index_offset) + " lies outside the file");
  }
  const int64_t index_at = static_cast<int64_t>(meta_index_offset);

  // MetaIndex: the named meta blocks ("data:" + name), each with its compression and region.
  Cursor meta(bytes.substr(index_at, meta_end - index_at), "TFile MetaIndex");
  int64_t count = 0;
  LOOM_RETURN_IF_ERROR(meta.NonNegativeVLong(count, "meta block count"));
  Region data_index;
  bool have_data_index = false;
  for (int64_t i = 0; i < count; ++i) {
    std::string name;
    Region r;
    LOOM_RETURN_IF_ERROR(meta.TString(name));
    LOOM_RETURN_IF_ERROR(meta.TString(r.compression));
    LOOM_RETURN_IF_ERROR(ReadRegion(meta, r));
    if (name == "data:BCFile.index") data_index = r, have_data_index = true;
  }
  if (!have_data_index) return Status::InvalidArgument("TFile: no BCFile.index meta block");
  LOOM_RETURN_IF_ERROR(CheckRegion(data_index, index_at, "meta block BCFile.index"));

  // BCFile.index: the data blocks' default compression and regions.
  Cursor di(bytes.substr(data_index.offset, data_index.compressed), "TFile BCFile.index");
  std::string compression;
  int64_t blocks = 0;
  LOOM_RETURN_IF_ERROR(di.TString(compression));
  LOOM_RETURN_IF_ERROR(di.NonNegativeVLong(blocks, "data block count"));
  AggregatedLogFile out;
  out.format = AggregatedLogFormat::kTFile;
  for (int64_t i = 0; i < blocks; ++i) {
    Region r;
    r.compression = compression;
    LOOM_RETURN_IF_ERROR(ReadRegion(di, r));
    LOOM_RETURN_IF_ERROR(CheckRegion(r, index_at, "data block " + std::to_string(i)));
    LOOM_RETURN_IF_ERROR(ParseDataBlock(bytes.substr(r.offset, r.compressed), static_cast<int>(i), out));
  }
  return out;
}

Result<int64_t> IFileIndexLength(std::string_view trailer, int64_t file_length) {
  if (trailer.size() != static_cast<size_t>(kIFileTrailerSize)) {
    return Status::InvalidArgument("IFile: a trailer is " + std::to_string(kIFileTrailerSize) + " bytes");
  }
  int64_t length = ReadI32At(trailer);
  if (length <= 0 || length > file_length - kIFileIdSize - kIFileTrailerSize) {
    return Status::InvalidArgument("IFile: index length " + std::to_string(length) + " does not fit a " +
                                   std::to_string(file_length) + "-byte file");
  }
  return length;
}

Result<AggregatedLogFile> ParseIFileIndex(std::string_view index) {
  LOOM_ASSIGN_OR_RETURN(JavaObjectStream stream, JavaObjectStream::Parse(index));
  if (stream.contents().empty() || !ClassIs(stream.contents()[0], "IndexedLogsMeta")) {
    return Status::InvalidArgument("IFile index: the stream does not start with an IndexedLogsMeta");
  }
  const JavaValue& meta = *stream.contents()[0];
  AggregatedLogFile out;
  out.format = AggregatedLogFormat::kIFile;
  LOOM_ASSIGN_OR_RETURN(std::string compression, StringField(meta, "compressName", true));
  if (!compression.empty() && compression != "none") {
    return Status::Unimplemented("IFile: the logs are compressed with '" + compression +
                                 "'; only uncompressed aggregated logs (yarn.nodemanager.log-aggregation."
                                 "compression-type=none, the default) can be read");
  }
  LOOM_ASSIGN_OR_RETURN(out.owner, StringField(meta, "user", true));
  LOOM_ASSIGN_OR_RETURN(out.node_id, StringField(meta, "nodeId", true));
  LOOM_ASSIGN_OR_RETURN(std::vector<const JavaValue*> cycles, ListElements(meta.Field("logMetas"), "logMetas"));
  for (const JavaValue* cycle : cycles) {
    if (!ClassIs(cycle, "IndexedPerAggregationLogMeta")) {
      return Status::InvalidArgument("IFile index: logMetas holds something else than IndexedPerAggregationLogMeta");
    }
    LOOM_ASSIGN_OR_RETURN(std::vector<const JavaValue*> kv, MapEntries(cycle->Field("logMetas"), "a cycle's logMetas"));
    for (size_t i = 0; i < kv.size(); i += 2) {
      if (!kv[i]->IsString()) return Status::InvalidArgument("IFile index: a container id that is not a string");
      const std::string& container = kv[i]->text;
      LOOM_ASSIGN_OR_RETURN(std::vector<const JavaValue*> files, ListElements(kv[i + 1], "the files of " + container));
      for (const JavaValue* f : files) {
        if (!ClassIs(f, "IndexedFileLogMeta")) {
          return Status::InvalidArgument("IFile index: container " + container + " lists something else than IndexedFileLogMeta");
        }
        AggregatedLogEntry e;
        e.container_id = container;
        LOOM_ASSIGN_OR_RETURN(e.file_name, StringField(*f, "fileName", false));
        LOOM_ASSIGN_OR_RETURN(e.length, LongField(*f, "fileSize"));
        LOOM_ASSIGN_OR_RETURN(int64_t stored, LongField(*f, "fileCompressedSize"));
        LOOM_ASSIGN_OR_RETURN(e.mtime_ms, LongField(*f, "lastModifiedTime"));
        LOOM_ASSIGN_OR_RETURN(e.offset, LongField(*f, "startIndex"));
        if (e.length < 0 || e.offset < 0 || stored != e.length) {
          return Status::InvalidArgument("IFile index: " + container + "/" + e.file_name + ": bad size or position");
        }
        out.entries.push_back(std::move(e));
      }
    }
  }
  return out;
}

Result<AggregatedLogFile> ParseIFileLogs(std::string_view bytes) {
  const int64_t size = static_cast<int64_t>(bytes.size());
  if (size < kIFileIdSize + kIFileTrailerSize) return Status::InvalidArgument("IFile: " + std::to_string(size) + " bytes is too short");
  if (bytes.substr(0, kIFileIdSize) != bytes.substr(size - kIFileIdSize)) {
    return Status::InvalidArgument("IFile: the 32-byte ids at its start and end differ");
  }
  LOOM_ASSIGN_OR_RETURN(int64_t index_length, IFileIndexLength(bytes.substr(size - kIFileTrailerSize), size));
  const int64_t index_at = size - kIFileTrailerSize - index_length;
  LOOM_ASSIGN_OR_RETURN(AggregatedLogFile out, ParseIFileIndex(bytes.substr(index_at, index_length)));
  for (AggregatedLogEntry& e : out.entries) {
    if (e.offset < kIFileIdSize || e.length > index_at - e.offset) {
      return Status::InvalidArgument("IFile: " + e.container_id + "/" + e.file_name + " [" + std::to_string(e.offset) +
                                     ", +" + std::to_string(e.length) + ") lies outside the log bytes");
    }
    e.bytes = std::string(bytes.substr(e.offset, e.length));
  }
  return out;
}

std::string FormatLogTime(int64_t ms) {
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::time_t seconds = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s %s %02d %02d:%02d:%02d +0000 %d", kDays[tm.tm_wday % 7], kMonths[tm.tm_mon % 12],
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, tm.tm_year + 1900);
  return buf;
}

std::string RenderYarnLogs(const AggregatedLogFile& file, const std::string& node_file, int64_t file_mtime_ms) {
  std::string out;
  for (const AggregatedLogEntry& e : file.entries) {
    std::string header = "Container: " + e.container_id + " on " + node_file;
    out += header + "\nLogAggregationType: AGGREGATED\n" + std::string(header.size(), '=') + "\n";
    out += "LogType:" + e.file_name + "\n";
    out += "LogLastModifiedTime:" + FormatLogTime(file.format == AggregatedLogFormat::kIFile ? e.mtime_ms : file_mtime_ms) + "\n";
    out += "LogLength:" + std::to_string(e.length) + "\nLogContents:\n";
    out += e.bytes;
    std::string end = "End of LogType:" + e.file_name;
    out += "\n" + end + "\n" + std::string(end.size() + 50, '*') + "\n\n";
  }
  return out;
}

}  // namespace loom::hadoop
