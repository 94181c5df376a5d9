#pragma once
// A decoder for the java.io object serialization stream (Java Object Serialization
// Specification, chapter 6: what ObjectOutputStream writes), enough for the index of YARN's
// IFile aggregated logs: objects of Serializable classes (fields, then what a writeObject
// method added, e.g. HashMap's and ArrayList's elements), strings, enums, arrays, classes,
// back references and block data. Externalizable objects written without block data,
// proxy classes and exceptions in the stream are refused (they never occur in that index).
// Malformed input gives InvalidArgument, never a crash; nesting is limited to kMaxDepth.
// A parsed stream is immutable, so it may be read from several threads.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace loom::hadoop {

struct JavaValue;

struct JavaField {
  char type = 0;           // 'B','C','D','F','I','J','S','Z' (primitive), 'L' (object), '[' (array)
  std::string name;
  std::string class_name;  // 'L' and '[': the JVM type signature, e.g. "Ljava/lang/String;"
};

struct JavaClassDesc {
  std::string name;  // e.g. "java.util.HashMap", "[J"
  int64_t serial_version_uid = 0;
  uint8_t flags = 0;  // SC_WRITE_METHOD 0x01, SC_SERIALIZABLE 0x02, SC_EXTERNALIZABLE 0x04, SC_BLOCK_DATA 0x08, SC_ENUM 0x10
  std::vector<JavaField> fields;
  const JavaClassDesc* super = nullptr;
};

// One class's part of an object: its serializable fields, then (SC_WRITE_METHOD) what its
// writeObject wrote after them: block data and further objects, in order.
struct JavaClassData {
  const JavaClassDesc* desc = nullptr;
  std::vector<std::pair<std::string, const JavaValue*>> fields;
  std::vector<const JavaValue*> annotations;
};

struct JavaValue {
  enum class Kind { kNull, kPrimitive, kString, kObject, kArray, kEnum, kClass, kClassDesc, kBlockData };
  Kind kind = Kind::kNull;
  char primitive_type = 0;  // kPrimitive: the type code
  int64_t integer = 0;      // kPrimitive B C I J S Z
  double real = 0;          // kPrimitive D F
  std::string text;         // kString (UTF-8), kEnum (the constant's name), kBlockData (raw bytes)
  const JavaClassDesc* desc = nullptr;  // kObject, kArray, kEnum, kClass, kClassDesc
  std::vector<JavaClassData> class_data;   // kObject: most super class first
  std::vector<const JavaValue*> elements;  // kArray

  // kObject: the field `name` of any class in its hierarchy; nullptr if absent.
  const JavaValue* Field(std::string_view name) const;
  // kObject: the objects its writeObject methods wrote (block data left out), in order:
  // the elements of an ArrayList or LinkedList, the keys and values of a HashMap (k1 v1 k2 v2 ...).
  std::vector<const JavaValue*> WrittenObjects() const;
  bool IsString() const { return kind == Kind::kString; }
  bool IsNull() const { return kind == Kind::kNull; }
};

class JavaObjectStream {
 public:
  static constexpr int kMaxDepth = 64;

  // Parses a whole stream (magic AC ED, version 5, then its contents).
  static Result<JavaObjectStream> Parse(std::string_view bytes);

  // The top-level contents: objects and block data, in order.
  const std::vector<const JavaValue*>& contents() const { return contents_; }

 private:
  friend class JavaStreamParser;
  std::vector<std::unique_ptr<JavaValue>> values_;
  std::vector<std::unique_ptr<JavaClassDesc>> descs_;
  std::vector<const JavaValue*> contents_;
};

// java.io.DataInput's modified UTF-8 (writeUTF's encoding) as standard UTF-8: "C0 80" is NUL
// and surrogate pairs become 4-byte sequences; anything else passes through unchanged.
std::string ModifiedUtf8ToUtf8(std::string_view in);

}  // namespace loom::hadoop
