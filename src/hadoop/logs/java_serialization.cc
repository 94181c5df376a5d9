#include "hadoop/logs/java_serialization.h"

#include <cstring>
#include <map>

namespace loom::hadoop {
namespace {

// Type codes of the stream grammar (java.io.ObjectStreamConstants).
constexpr uint8_t kTcNull = 0x70;
constexpr uint8_t kTcReference = 0x71;
constexpr uint8_t kTcClassDesc = 0x72;
constexpr uint8_t kTcObject = 0x73;
constexpr uint8_t kTcString = 0x74;
constexpr uint8_t kTcArray = 0x75;
constexpr uint8_t kTcClass = 0x76;
constexpr uint8_t kTcBlockData = 0x77;
constexpr uint8_t kTcEndBlockData = 0x78;
constexpr uint8_t kTcReset = 0x79;
constexpr uint8_t kTcBlockDataLong = 0x7A;
constexpr uint8_t kTcException = 0x7B;
constexpr uint8_t kTcLongString = 0x7C;
constexpr uint8_t kTcProxyClassDesc = 0x7D;
constexpr uint8_t kTcEnum = 0x7E;
constexpr int32_t kBaseWireHandle = 0x7E0000;

constexpr uint8_t kScWriteMethod = 0x01;
constexpr uint8_t kScSerializable = 0x02;
constexpr uint8_t kScExternalizable = 0x04;
constexpr uint8_t kScBlockData = 0x08;

std::string Hex(uint8_t b) {
  static const char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[b >> 4] + kHex[b & 15];
}

void AppendUtf8(uint32_t cp, std::string& out) {
  out += static_cast<char>(0xF0 | (cp >> 18));
  out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
  out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  out += static_cast<char>(0x80 | (cp & 0x3F));
}

}  // namespace

std::string ModifiedUtf8ToUtf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  auto byte = [&](size_t i) { return static_cast<uint8_t>(in[i]); };
  for (size_t i = 0; i < in.size(); ++i) {
    if (byte(i) == 0xC0 && i + 1 < in.size() && byte(i + 1) == 0x80) {
      out += '\0';
      ++i;
      continue;
    }
    // A surrogate pair, each half written as its own 3-byte sequence (ED A0-AF xx, ED B0-BF xx).
    if (byte(i) == 0xED && i + 5 < in.size() && (byte(i + 1) & 0xF0) == 0xA0 && byte(i + 3) == 0xED &&
        (byte(i + 4) & 0xF0) == 0xB0) {
      uint32_t high = 0xD000 | ((byte(i + 1) & 0x3F) << 6) | (byte(i + 2) & 0x3F);
      uint32_t low = 0xD000 | ((byte(i + 4) & 0x3F) << 6) | (byte(i + 5) & 0x3F);
      AppendUtf8(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), out);
      i += 5;
      continue;
    }
    out += in[i];
  }
  return out;
}

const JavaValue* JavaValue::Field(std::string_view name) const {
  for (const JavaClassData& data : class_data) {
    for (const auto& [field, value] : data.fields) {
      if (field == name) return value;
    }
  }
  return nullptr;
}

std::vector<const JavaValue*> JavaValue::WrittenObjects() const {
  std::vector<const JavaValue*> out;
  for (const JavaClassData& data : class_data) {
    for (const JavaValue* v : data.annotations) {
      if (v->kind != Kind::kBlockData) out.push_back(v);
    }
  }
  return out;
}

// Recursive descent over the grammar of the specification's section 6.4. Each method either
// consumes its production or fails; the stream owns every value it creates.
class JavaStreamParser {
 public:
  JavaStreamParser(std::string_view bytes, JavaObjectStream& out) : in_(bytes), out_(out) {}

  Status ParseStream() {
    uint16_t magic = 0, version = 0;
    if (!ReadU16(magic) || !ReadU16(version) || magic != 0xACED) {
      return Status::InvalidArgument("not a Java serialization stream (no AC ED magic)");
    }
    if (version != 5) return Error("unsupported stream version " + std::to_string(version));
    while (pos_ < in_.size()) {
      const JavaValue* v = nullptr;
      LOOM_RETURN_IF_ERROR(ReadContent(0, &v));
      if (v != nullptr) out_.contents_.push_back(v);
    }
    return Status::Ok();
  }

 private:
  Status Error(const std::string& what) const {
    return Status::InvalidArgument("Java serialization stream, byte " + std::to_string(pos_) + ": " + what);
  }
  Status Truncated() const { return Error("truncated"); }

  bool ReadBytes(size_t n, std::string_view& out) {
    if (in_.size() - pos_ < n) return false;
    out = in_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  template <typename T>
  bool ReadBig(T& out) {  // big-endian unsigned
    std::string_view b;
    if (!ReadBytes(sizeof(T), b)) return false;
    T v = 0;
    for (char c : b) v = static_cast<T>((v << 8) | static_cast<uint8_t>(c));
    out = v;
    return true;
  }
  bool ReadU8(uint8_t& v) { return ReadBig(v); }
  bool ReadU16(uint16_t& v) { return ReadBig(v); }
  bool ReadI32(int32_t& v) {
    uint32_t u;
    if (!ReadBig(u)) return false;
    v = static_cast<int32_t>(u);
    return true;
  }
  bool ReadI64(int64_t& v) {
    uint64_t u;
    if (!ReadBig(u)) return false;
    v = static_cast<int64_t>(u);
    return true;
  }
  bool PeekU8(uint8_t& v) const {
    if (pos_ >= in_.size()) return false;
    v = static_cast<uint8_t>(in_[pos_]);
    return true;
  }
  Status ReadUtf(std::string& out, bool long_form) {
    uint64_t n = 0;
    if (long_form) {
      int64_t len;
      if (!ReadI64(len)) return Truncated();
      if (len < 0) return Error("negative string length");
      n = static_cast<uint64_t>(len);
    } else {
      uint16_t len;
      if (!ReadU16(len)) return Truncated();
      n = len;
    }
    std::string_view raw;
    if (n > in_.size() - pos_ || !ReadBytes(static_cast<size_t>(n), raw)) return Truncated();
    out = ModifiedUtf8ToUtf8(raw);
    return Status::Ok();
  }

  JavaValue* NewValue(JavaValue::Kind kind) {
    out_.values_.push_back(std::make_unique<JavaValue>());
    out_.values_.back()->kind = kind;
    return out_.values_.back().get();
  }
  void NewHandle(const JavaValue* v) { handles_.push_back(v); }

  Status ReadHandle(const JavaValue** out) {
    int32_t handle;
    if (!ReadI32(handle)) return Truncated();
    int64_t index = static_cast<int64_t>(handle) - kBaseWireHandle;
    if (index < 0 || index >= static_cast<int64_t>(handles_.size())) {
      return Error("reference to unknown handle " + std::to_string(handle));
    }
    *out = handles_[static_cast<size_t>(index)];
    return Status::Ok();
  }

  // content: an object or block data. TC_RESET in between is consumed (yielding nothing).
  Status ReadContent(int depth, const JavaValue** out) {
    uint8_t tc;
    if (!PeekU8(tc)) return Truncated();
    if (tc == kTcBlockData || tc == kTcBlockDataLong) {
      ++pos_;
      uint64_t n = 0;
      if (tc == kTcBlockData) {
        uint8_t len;
        if (!ReadU8(len)) return Truncated();
        n = len;
      } else {
        int32_t len;
        if (!ReadI32(len)) return Truncated();
        if (len < 0) return Error("negative block data length");
        n = static_cast<uint64_t>(len);
      }
      std::string_view raw;
      if (n > in_.size() - pos_ || !ReadBytes(static_cast<size_t>(n), raw)) return Truncated();
      JavaValue* v = NewValue(JavaValue::Kind::kBlockData);
      v->text = std::string(raw);
      *out = v;
      return Status::Ok();
    }
    if (tc == kTcReset) {
      ++pos_;
      handles_.clear();
      *out = nullptr;
      return Status::Ok();
    }
    return ReadObject(depth, out);
  }

  // The contents up to and including TC_ENDBLOCKDATA (a class or object annotation).
  Status ReadAnnotation(int depth, std::vector<const JavaValue*>* into) {
    while (true) {
      uint8_t tc;
      if (!PeekU8(tc)) return Truncated();
      if (tc == kTcEndBlockData) {
        ++pos_;
        return Status::Ok();
      }
      const JavaValue* v = nullptr;
      LOOM_RETURN_IF_ERROR(ReadContent(depth, &v));
      if (v != nullptr && into != nullptr) into->push_back(v);
    }
  }

  Status ReadObject(int depth, const JavaValue** out) {
    if (depth > JavaObjectStream::kMaxDepth) return Error("nested too deeply");
    uint8_t tc;
    if (!ReadU8(tc)) return Truncated();
    switch (tc) {
      case kTcNull: {
        *out = NewValue(JavaValue::Kind::kNull);
        return Status::Ok();
      }
      case kTcReference:
        return ReadHandle(out);
      case kTcString:
      case kTcLongString: {
        JavaValue* v = NewValue(JavaValue::Kind::kString);
        NewHandle(v);
        LOOM_RETURN_IF_ERROR(ReadUtf(v->text, tc == kTcLongString));
        *out = v;
        return Status::Ok();
      }
      case kTcClassDesc: {
        --pos_;
        const JavaClassDesc* desc = nullptr;
        LOOM_RETURN_IF_ERROR(ReadClassDesc(depth + 1, &desc));
        *out = desc_values_.at(desc);
        return Status::Ok();
      }
      case kTcObject:
        return ReadNewObject(depth, out);
      case kTcArray:
        return ReadNewArray(depth, out);
      case kTcEnum: {
        JavaValue* v = NewValue(JavaValue::Kind::kEnum);
        LOOM_RETURN_IF_ERROR(ReadClassDesc(depth + 1, &v->desc));
        NewHandle(v);
        const JavaValue* name = nullptr;
        LOOM_RETURN_IF_ERROR(ReadObject(depth + 1, &name));
        if (!name->IsString()) return Error("an enum constant name that is not a string");
        v->text = name->text;
        *out = v;
        return Status::Ok();
      }
      case kTcClass: {
        JavaValue* v = NewValue(JavaValue::Kind::kClass);
        LOOM_RETURN_IF_ERROR(ReadClassDesc(depth + 1, &v->desc));
        NewHandle(v);
        *out = v;
        return Status::Ok();
      }
      case kTcProxyClassDesc:
        return Error("proxy class descriptors are not supported");
      case kTcException:
        return Error("the stream holds an exception thrown while it was written");
      default:
        return Error("unexpected type code " + Hex(tc));
    }
  }

  // classDesc: newClassDesc, TC_NULL or a reference to a class descriptor.
  Status ReadClassDesc(int depth, const JavaClassDesc** out) {
    if (depth > JavaObjectStream::kMaxDepth) return Error("nested too deeply");
    uint8_t tc;
    if (!ReadU8(tc)) return Truncated();
    if (tc == kTcNull) {
      *out = nullptr;
      return Status::Ok();
    }
    if (tc == kTcReference) {
      const JavaValue* v = nullptr;
      LOOM_RETURN_IF_ERROR(ReadHandle(&v));
      if (v->kind != JavaValue::Kind::kClassDesc) return Error("a class descriptor reference to a non-descriptor");
      *out = v->desc;
      return Status::Ok();
    }
    if (tc == kTcProxyClassDesc) return Error("proxy class descriptors are not supported");
    if (tc != kTcClassDesc) return Error("expected a class descriptor, got " + Hex(tc));
    out_.descs_.push_back(std::make_unique<JavaClassDesc>());
    JavaClassDesc* desc = out_.descs_.back().get();
    LOOM_RETURN_IF_ERROR(ReadUtf(desc->name, false));
    if (!ReadI64(desc->serial_version_uid)) return Truncated();
    JavaValue* handle_value = NewValue(JavaValue::Kind::kClassDesc);
    handle_value->desc = desc;
    NewHandle(handle_value);
    desc_values_[desc] = handle_value;
    uint16_t count;
    if (!ReadU8(desc->flags) || !ReadU16(count)) return Truncated();
    for (uint16_t i = 0; i < count; ++i) {
      JavaField f;
      uint8_t type;
      if (!ReadU8(type)) return Truncated();
      f.type = static_cast<char>(type);
      LOOM_RETURN_IF_ERROR(ReadUtf(f.name, false));
      if (f.type == 'L' || f.type == '[') {
        const JavaValue* cls = nullptr;
        LOOM_RETURN_IF_ERROR(ReadObject(depth + 1, &cls));
        if (!cls->IsString()) return Error("field " + f.name + ": a type name that is not a string");
        f.class_name = cls->text;
      } else if (std::strchr("BCDFIJSZ", f.type) == nullptr || f.type == 0) {
        return Error("field " + f.name + ": unknown type code " + Hex(type));
      }
      desc->fields.push_back(std::move(f));
    }
    LOOM_RETURN_IF_ERROR(ReadAnnotation(depth + 1, nullptr));
    LOOM_RETURN_IF_ERROR(ReadClassDesc(depth + 1, &desc->super));
    // A descriptor can only name an earlier one as its super class, so the chain is finite,
    // but it may still be long; kMaxDepth bounds what ReadNewObject walks.
    *out = desc;
    return Status::Ok();
  }

  // An integral primitive: the big-endian `Bits` of the stream, as Java's type `Value`.
  template <typename Bits, typename Value>
  Status ReadInteger(JavaValue* v) {
    Bits bits;
    if (!ReadBig(bits)) return Truncated();
    v->integer = static_cast<Value>(bits);
    return Status::Ok();
  }

  Status ReadPrimitive(char type, JavaValue* v) {
    v->primitive_type = type;
    switch (type) {
      case 'B': return ReadInteger<uint8_t, int8_t>(v);
      case 'Z': return ReadInteger<uint8_t, bool>(v);  // any byte but 0 is true
      case 'C': return ReadInteger<uint16_t, uint16_t>(v);
      case 'S': return ReadInteger<uint16_t, int16_t>(v);
      case 'I': return ReadInteger<uint32_t, int32_t>(v);
      case 'J': return ReadInteger<uint64_t, int64_t>(v);
      case 'F': {
        uint32_t bits;
        if (!ReadBig(bits)) return Truncated();
        float f;
        std::memcpy(&f, &bits, sizeof f);
        v->real = f;
        return Status::Ok();
      }
      case 'D': {
        uint64_t bits;
        if (!ReadBig(bits)) return Truncated();
        std::memcpy(&v->real, &bits, sizeof v->real);
        return Status::Ok();
      }
      default:
        return Error(std::string("unknown primitive type ") + type);
    }
  }

  Status ReadNewObject(int depth, const JavaValue** out) {
    JavaValue* v = NewValue(JavaValue::Kind::kObject);
    LOOM_RETURN_IF_ERROR(ReadClassDesc(depth + 1, &v->desc));
    if (v->desc == nullptr) return Error("an object without a class");
    NewHandle(v);
    std::vector<const JavaClassDesc*> chain;
    for (const JavaClassDesc* d = v->desc; d != nullptr; d = d->super) {
      if (static_cast<int>(chain.size()) > JavaObjectStream::kMaxDepth) return Error("class hierarchy too deep");
      chain.insert(chain.begin(), d);
    }
    for (const JavaClassDesc* d : chain) {
      JavaClassData data;
      data.desc = d;
      if (d->flags & kScExternalizable) {
        if (!(d->flags & kScBlockData)) return Error(d->name + ": externalizable without block data");
        LOOM_RETURN_IF_ERROR(ReadAnnotation(depth + 1, &data.annotations));
      } else if (d->flags & kScSerializable) {
        for (const JavaField& f : d->fields) {
          const JavaValue* value = nullptr;
          if (f.type == 'L' || f.type == '[') {
            LOOM_RETURN_IF_ERROR(ReadObject(depth + 1, &value));
          } else {
            JavaValue* p = NewValue(JavaValue::Kind::kPrimitive);
            LOOM_RETURN_IF_ERROR(ReadPrimitive(f.type, p));
            value = p;
          }
          data.fields.emplace_back(f.name, value);
        }
        if (d->flags & kScWriteMethod) LOOM_RETURN_IF_ERROR(ReadAnnotation(depth + 1, &data.annotations));
      }
      v->class_data.push_back(std::move(data));
    }
    *out = v;
    return Status::Ok();
  }

  Status ReadNewArray(int depth, const JavaValue** out) {
    JavaValue* v = NewValue(JavaValue::Kind::kArray);
    LOOM_RETURN_IF_ERROR(ReadClassDesc(depth + 1, &v->desc));
    if (v->desc == nullptr || v->desc->name.size() < 2 || v->desc->name[0] != '[') {
      return Error("an array whose class is not an array type");
    }
    NewHandle(v);
    int32_t size;
    if (!ReadI32(size)) return Truncated();
    // Every element takes at least one byte, so a size beyond the rest is corrupt.
    if (size < 0 || static_cast<size_t>(size) > in_.size() - pos_) return Error("bad array length " + std::to_string(size));
    char element = v->desc->name[1];
    for (int32_t i = 0; i < size; ++i) {
      const JavaValue* e = nullptr;
      if (element == 'L' || element == '[') {
        LOOM_RETURN_IF_ERROR(ReadObject(depth + 1, &e));
      } else {
        JavaValue* p = NewValue(JavaValue::Kind::kPrimitive);
        LOOM_RETURN_IF_ERROR(ReadPrimitive(element, p));
        e = p;
      }
      v->elements.push_back(e);
    }
    *out = v;
    return Status::Ok();
  }

  std::string_view in_;
  size_t pos_ = 0;
  JavaObjectStream& out_;
  std::vector<const JavaValue*> handles_;
  std::map<const JavaClassDesc*, const JavaValue*> desc_values_;  // the handle of each descriptor
};

Result<JavaObjectStream> JavaObjectStream::Parse(std::string_view bytes) {
  JavaObjectStream stream;
  JavaStreamParser parser(bytes, stream);
  LOOM_RETURN_IF_ERROR(parser.ParseStream());
  return stream;
}

}  // namespace loom::hadoop
