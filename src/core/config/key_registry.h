#pragma once
// KeyRegistry: every configuration key Loom understands, its type, default and meaning.
// The `loom.*` names are a compatibility contract, and so are their `tony.*` aliases: every key
// of TonY's tony-default.xml and TonyConfigurationKeys is accepted, and each either does what
// TonY documents or is refused (KeyInfo::refusal): no key is accepted and then ignored.
// key_walk_test.cc holds the registry to that: every key that is not refused has a reader.

#include <optional>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/status.h"

namespace loom::config {

enum class ValueType {
  kString,
  kBool,
  kInt,          // any integer
  kNonNegative,  // integer >= 0
  kPositive,     // integer >= 1
  kTimeoutMs,    // integer; <= 0 means off
  kMemory,       // "2g", "512m", "2048" (MiB)
  kList,         // comma-separated
  kEnvList,      // comma-separated K=V
  kEnum,         // one of `choices`
  kPortRange,    // "LOW-HIGH"
};

struct KeyInfo {
  std::string name;  // loom.* name; for per-type attributes, "<attr>"; for patterns, "loom.x.<y>.z"
  ValueType type;
  std::string default_value;  // empty: no default
  std::string description;
  std::vector<std::string> choices;  // kEnum only
  // Non-empty: Loom does not do what this key asks, so Validate refuses every value but the
  // harmless ones (empty, default_value, harmless_values: what TonY's own files set, which ask
  // for nothing). The text says why and what to do instead; its loom.* keys are respelt in the
  // user's prefix.
  std::string refusal;
  std::vector<std::string> harmless_values;

  bool refused() const { return !refusal.empty(); }
  // Whether `value` is one the refusal lets through.
  bool Harmless(const std::string& value) const;
};

// Attributes every task type accepts as loom.<type>.<attr>.
const std::vector<KeyInfo>& TaskTypeAttributes();
// Global keys (not per type).
const std::vector<KeyInfo>& GlobalKeys();
// Keys matched by shape (loom.docker.<type>.image, loom.application.group.<G>, ...); `name`
// shows the shape.
const std::vector<KeyInfo>& PatternKeys();

// Task types Loom gives a meaning of its own (TensorFlow's, MXNet's, Horovod's and TonY's
// roles). Any other type is the user's, and must not be a near-miss of one of these (a typo):
// see BuildJobSpec.
const std::vector<std::string>& WellKnownTaskTypes();

// The key's definition, resolving per-type and pattern keys; nullptr if unknown.
const KeyInfo* FindKey(const std::string& canonical_key);

// The default of a key, or nullopt.
std::optional<std::string> DefaultValue(const std::string& canonical_key);

// Task type names found via loom.<type>.instances, in config order.
std::vector<std::string> TaskTypeNames(const Config& conf);

// {type, attr} of a per-type key loom.<type>.<attr> (any attribute name), else nullopt.
std::optional<std::pair<std::string, std::string>> SplitTypeKey(const std::string& canonical_key);

// Checks every key and value; returns InvalidArgument listing every problem, one per line,
// each naming the key (as the user wrote it), its source, the value and what was expected.
// A refused key (KeyInfo::refusal) with a value that is not harmless is one such problem.
Status Validate(const Config& conf);

// Checks one value against its key's type; the message names key, value and expectation.
Status ValidateValue(const KeyInfo& info, const std::string& key_as_written, const std::string& value);

// The nearest known key to an unknown one, for "did you mean".
std::optional<std::string> SuggestKey(const std::string& canonical_key);

// Value accessors that apply defaults. They assume Validate() passed.
std::string GetString(const Config& conf, const std::string& key);
int64_t GetInt(const Config& conf, const std::string& key);
bool GetBool(const Config& conf, const std::string& key);
int64_t GetMemoryMib(const Config& conf, const std::string& key);
std::vector<std::string> GetList(const Config& conf, const std::string& key);

// The config with every default filled in: what the job directory records as its final config.
// Refused keys are left out (their defaults do nothing).
Config WithDefaults(const Config& conf);

}  // namespace loom::config
