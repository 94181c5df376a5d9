// Walks the whole key registry: every key Loom accepts either does what it says (some source
// file under src/ reads it) or is refused at submit (BuildJobSpec fails naming it). A key that
// is accepted and then ignored fails this test.

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "core/config/key_registry.h"
#include "core/files.h"
#include "core/job_spec.h"
#include "core/strings.h"
#include "core/testing.h"

namespace loom::config {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

struct SourceFile {
  std::string path;
  std::string text;
  std::vector<std::string> helpers;  // ReadingHelpers(text)
};
std::vector<std::string> ReadingHelpers(const std::string& text);

// Loom's own non-test sources, but the registry itself (which names every key).
const std::vector<SourceFile>& Sources() {
  static const std::vector<SourceFile> kFiles = [] {
    std::vector<SourceFile> files;
    std::filesystem::path root = std::filesystem::path(LOOM_TEST_SOURCE_DIR) / "src";
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
      std::string path = e.path().string();
      std::string name = e.path().filename().string();
      if (!e.is_regular_file() || !(EndsWith(name, ".cc") || EndsWith(name, ".h"))) continue;
      if (EndsWith(name, "_test.cc") || StartsWith(name, "fake_") || name == "testing.h" ||
          name == "test_hooks.h" || path.find("/testing/") != std::string::npos || name == "key_registry.cc") {
        continue;
      }
      std::ifstream in(path);
      std::stringstream ss;
      ss << in.rdbuf();
      files.push_back({path, ss.str(), ReadingHelpers(ss.str())});
    }
    return files;
  }();
  return kFiles;
}

std::string RegexEscape(const std::string& s) {
  static const std::regex kSpecial(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(s, kSpecial, R"(\$&)");
}

// A read hands the key to a Config accessor (conf.Get("loom.x"), conf.IsExplicit(k + "memory"))
// or to a function together with the config (GetString(conf, "loom.x"), CheckCap(conf,
// "loom.x", ...): the first argument's name holds "conf"). A key that only appears in a message
// (Spelled(conf, "loom.x"), key("loom.x"), "set loom.x=...") is not read.
const char kAccessor[] =
    R"((\.(Get|Has|IsExplicit|Entry)\s*\(\s*|\b(?!Spelled\b)\w+\s*\(\s*\w*conf\w*\s*,\s*))";

// Of a global key: its literal as the accessor's key.
std::regex GlobalReader(const std::string& key) {
  return std::regex(std::string(kAccessor) + "\"" + RegexEscape(key) + R"("\s*[,)])");
}
// Of a per-type attribute: a key built as `k + "<attr>"` or `... + ".<attr>"`.
std::regex AttributeReader(const std::string& attr) {
  return std::regex(std::string(kAccessor) + R"([^;()]*\+\s*"\.?)" + RegexEscape(attr) + R"("\s*[,)])");
}

// How each pattern key is read, and one key of its shape. A new pattern needs an entry here.
struct PatternCase {
  std::string example;
  std::regex reader;
  std::string needle;  // a substring of every match
};
const std::map<std::string, PatternCase>& PatternCases() {
  static const std::map<std::string, PatternCase> kCases = {
      {"loom.docker.<type>.image",
       {"loom.docker.worker.image", std::regex(std::string(kAccessor) + R"([^;()]*\+\s*"\.image"\s*[,)])"), ".image\""}},
      {"loom.application.group.<G>",
       {"loom.application.group.g", std::regex(std::string(kAccessor) + R"("loom\.application\.group\."\s*\+)"), "loom.application.group."}},
      // Read by walking the entries that start with the prefix.
      {"loom.application.dependency.<X>.timeout.after.<G>",
       {"loom.application.dependency.worker.timeout.after.g",
        std::regex(R"(StartsWith\(\s*\w+\s*,\s*"loom\.application\.dependency\.")"), "loom.application.dependency."}},
      {"loom.application.dependency.<X>.timeout.after.<G>.ignored",
       {"loom.application.dependency.worker.timeout.after.g.ignored",
        std::regex(std::string(kAccessor) + R"([^;()]*\+\s*"\.ignored"\s*[,)])"), ".ignored\""}},
      {"loom.task.max-total-<resource>", {"loom.task.max-total-fpgas", std::regex("$^"), ""}},
      {"loom.version-info.<x>", {"loom.version-info.version", std::regex("$^"), ""}},
  };
  return kCases;
}

// A local helper that reads the key it is given, as
//   auto path = [&](const char* key) { std::string p = config::GetString(conf, key); ... };
// makes `path("loom.x")` a read of loom.x. Returns the helpers' names in `text`.
std::vector<std::string> ReadingHelpers(const std::string& text) {
  static const std::regex kLambda(R"(auto\s+(\w+)\s*=\s*\[[^\]]*\]\s*\(\s*(const\s+)?[\w:]+\s*[&*]?\s*(\w+)\s*\)[^{;]*\{)");
  std::vector<std::string> names;
  for (std::sregex_iterator it(text.begin(), text.end(), kLambda), end; it != end; ++it) {
    // The lambda's body: up to the brace that closes the one the match ends with.
    size_t open = it->position(0) + it->length(0), close = open;
    for (int depth = 1; close < text.size() && depth > 0; ++close) {
      depth += text[close] == '{' ? 1 : text[close] == '}' ? -1 : 0;
    }
    std::string body = text.substr(open, close - open);
    std::regex reads(std::string(kAccessor) + (*it)[3].str() + R"(\s*[,)])");
    if (std::regex_search(body, reads)) names.push_back((*it)[1].str());
  }
  return names;
}

// Whether `text` (whose reading helpers are `helpers`) reads the global key `key`, directly or
// through a helper.
bool ReadsGlobalKey(const std::string& text, const std::vector<std::string>& helpers, const std::string& key) {
  if (std::regex_search(text, GlobalReader(key))) return true;
  for (const std::string& helper : helpers) {
    if (std::regex_search(text, std::regex("\\b" + helper + R"(\s*\(\s*")" + RegexEscape(key) + R"("\s*\))"))) {
      return true;
    }
  }
  return false;
}
bool ReadsGlobalKey(const std::string& text, const std::string& key) {
  return ReadsGlobalKey(text, ReadingHelpers(text), key);
}

// The files that match `reader`; `needle` is a plain substring every match holds (std::regex is
// slow: it only runs on files that hold the needle).
std::vector<std::string> FilesMatching(const std::regex& reader, const std::string& needle) {
  std::vector<std::string> hits;
  for (const SourceFile& f : Sources()) {
    if (f.text.find(needle) != std::string::npos && std::regex_search(f.text, reader)) hits.push_back(f.path);
  }
  return hits;
}

bool SomeFileReadsGlobalKey(const std::string& key) {
  for (const SourceFile& f : Sources()) {
    if (f.text.find("\"" + key + "\"") != std::string::npos && ReadsGlobalKey(f.text, f.helpers, key)) return true;
  }
  return false;
}

// A value of the key's type that its refusal does not let through.
std::string RefusedSample(const KeyInfo& info) {
  for (const char* v : {"true", "1", "7", "some-value", "2g", "1025-2000"}) {
    if (ValidateValue(info, info.name, v).ok() && !info.Harmless(v)) return v;
  }
  return "";
}

class KeyWalkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("loom_key_walk_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "train.py") << "print('hi')\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A job that builds, plus `key`=`value`.
  Config JobWith(const std::string& key, const std::string& value) const {
    Config c;
    c.Set("loom.worker.instances", "1", "--conf");
    c.Set("loom.application.executes", (dir_ / "train.py").string(), "--executes");
    c.Set(key, value, "--conf");
    return c;
  }

  // The same, written in tony.* keys: messages then name keys in tony.*.
  Config TonyJobWith(const std::string& key, const std::string& value) const {
    Config c = JobWith(key, value);
    c.Set("tony.worker.instances", "1", "--conf");
    return c;
  }

  // A refused key, in both spellings, fails the build naming it and its value; its harmless
  // default passes.
  void ExpectRefused(const std::string& key, const KeyInfo& info) {
    std::string sample = RefusedSample(info);
    ASSERT_FALSE(sample.empty()) << key << ": no value of its type is refused";
    // Passwords and secrets are refused without being echoed.
    bool hidden = key.find("password") != std::string::npos || key.find("secret") != std::string::npos;
    for (const std::string& spelt : {key, "tony." + key.substr(5)}) {
      Result<JobSpec> spec = BuildJobSpec(JobWith(spelt, sample), dir_.string());
      EXPECT_STATUS(spec, kInvalidArgument,
                    HasSubstr(spelt + "=" + (hidden ? "<hidden>" : sample) + " (from --conf): "));
    }
    if (!info.default_value.empty()) {
      EXPECT_OK(BuildJobSpec(JobWith(key, info.default_value), dir_.string()));
    }
  }

  std::filesystem::path dir_;
};

TEST_F(KeyWalkTest, TheSourcesAreThere) {
  // Without the tree every key would look unread.
  ASSERT_GT(Sources().size(), 20u) << LOOM_TEST_SOURCE_DIR;
}

TEST_F(KeyWalkTest, EveryGlobalKeyIsReadOrRefused) {
  std::vector<std::string> unread;
  for (const KeyInfo& k : GlobalKeys()) {
    SCOPED_TRACE(k.name);
    if (k.refused()) {
      ExpectRefused(k.name, k);
    } else if (!SomeFileReadsGlobalKey(k.name)) {
      unread.push_back(k.name);
    }
  }
  EXPECT_TRUE(unread.empty()) << "accepted but read nowhere under src/ (read it, or refuse it in "
                                 "key_registry.cc):\n  " << Join(unread, "\n  ");
}

TEST_F(KeyWalkTest, EveryTaskTypeAttributeIsReadOrRefused) {
  std::vector<std::string> unread;
  for (const KeyInfo& a : TaskTypeAttributes()) {
    SCOPED_TRACE(a.name);
    if (a.refused()) {
      ExpectRefused("loom.worker." + a.name, a);
    } else if (FilesMatching(AttributeReader(a.name), a.name + "\"").empty()) {
      unread.push_back("loom.<type>." + a.name);
    }
  }
  EXPECT_TRUE(unread.empty()) << "accepted but read nowhere under src/:\n  " << Join(unread, "\n  ");
}

TEST_F(KeyWalkTest, EveryPatternKeyIsReadOrRefused) {
  std::vector<std::string> unread;
  for (const KeyInfo& p : PatternKeys()) {
    SCOPED_TRACE(p.name);
    auto it = PatternCases().find(p.name);
    ASSERT_NE(it, PatternCases().end()) << p.name << ": a new pattern key; add how it is read to PatternCases";
    // The example is a key of this very pattern.
    EXPECT_EQ(FindKey(it->second.example), &p) << it->second.example;
    if (p.refused()) {
      ExpectRefused(it->second.example, p);
    } else if (FilesMatching(it->second.reader, it->second.needle).empty()) {
      unread.push_back(p.name);
    }
  }
  EXPECT_TRUE(unread.empty()) << "accepted but read nowhere under src/:\n  " << Join(unread, "\n  ");
}

// ---- TonY's own tony-default.xml, as users copy it (tests/data/tony/README.md names its source) ----

struct TonyProperty {
  std::string name;
  std::optional<std::string> value;  // nullopt: the property has no <value>
};

// The files: TonY's current tony-default.xml and an earlier one with tony.application.single-node.
std::vector<std::string> TonyDefaultFiles() {
  std::string dir = std::string(LOOM_TEST_SOURCE_DIR) + "/tests/data/tony/";
  return {dir + "tony-default.xml", dir + "tony-default-single-node.xml"};
}

// Every property of a Hadoop configuration file, in order (the files are plain: no CDATA, no
// attributes on <name> or <value>).
std::vector<TonyProperty> PropertiesOf(const std::string& path) {
  std::string text = ReadFile(path).value_or("");
  auto inner = [](const std::string& block, const std::string& tag) -> std::optional<std::string> {
    size_t open = block.find("<" + tag + ">");
    if (open == std::string::npos) return std::nullopt;
    size_t begin = open + tag.size() + 2, end = block.find("</" + tag + ">", begin);
    return Trim(block.substr(begin, end - begin));
  };
  std::vector<TonyProperty> props;
  for (size_t at = text.find("<property>"); at != std::string::npos; at = text.find("<property>", at + 1)) {
    std::string block = text.substr(at, text.find("</property>", at) - at);
    props.push_back({inner(block, "name").value_or(""), inner(block, "value")});
  }
  return props;
}

TEST_F(KeyWalkTest, TonyDefaultFilesAreThere) {
  // Without them the walks below would walk nothing.
  EXPECT_EQ(PropertiesOf(TonyDefaultFiles()[0]).size(), 59u);
  EXPECT_EQ(PropertiesOf(TonyDefaultFiles()[1]).size(), 49u);
}

// The whole file as a --conf_file: read (a property without <value> leaves its key unset, as in
// Hadoop's Configuration) and built into a job.
TEST_F(KeyWalkTest, TonyDefaultXmlIsAWholeValidConfFile) {
  for (const std::string& file : TonyDefaultFiles()) {
    SCOPED_TRACE(file);
    Config c;
    ASSERT_OK(c.MergeXmlFile(file));
    EXPECT_FALSE(c.Has("tony.other.namenodes"));
    EXPECT_FALSE(c.Has("tony.application.node-label"));
    EXPECT_TRUE(c.Has("tony.application.tags"));  // <value></value>: set, empty
    c.Set("loom.worker.instances", "1", "--conf");
    c.Set("loom.application.executes", (dir_ / "train.py").string(), "--executes");
    Result<JobSpec> spec = BuildJobSpec(c, dir_.string());
    ASSERT_OK(spec);
    EXPECT_EQ(spec->name, "TensorFlowApplication");
  }
}

// Each key of the file: known, and either read by Loom (and its value in the file valid) or
// refused, with the file's own value let through and the refusal naming what to do instead.
TEST_F(KeyWalkTest, EveryKeyOfTonyDefaultXmlIsAcceptedWithItsMeaningOrRefusedWithAnEquivalent) {
  std::vector<std::string> problems;
  for (const std::string& file : TonyDefaultFiles()) {
    for (const TonyProperty& p : PropertiesOf(file)) {
      SCOPED_TRACE(file + ": " + p.name);
      ASSERT_TRUE(StartsWith(p.name, "tony.")) << p.name;
      std::string canonical = CanonicalKey(p.name);
      const KeyInfo* info = FindKey(canonical);
      if (!info) {
        problems.push_back(p.name + ": unknown");
        continue;
      }
      std::string value = p.value.value_or("");
      if (p.value) EXPECT_OK(ValidateValue(*info, p.name, value));
      if (info->refused()) {
        EXPECT_TRUE(info->Harmless(value)) << p.name << "=" << value << " is refused, though TonY ships it";
        // The reason, and what to do instead: a Loom key or command, or that nothing is needed.
        EXPECT_TRUE(info->refusal.find("loom") != std::string::npos || info->refusal.find("Remove the key") != std::string::npos)
            << info->refusal;
        ExpectRefused(canonical, *info);
        continue;
      }
      bool global = StartsWith(info->name, "loom.");
      bool read = global ? SomeFileReadsGlobalKey(info->name)
                         : !FilesMatching(AttributeReader(info->name), info->name + "\"").empty();
      if (!read) problems.push_back(p.name + ": accepted but read nowhere under src/");
    }
  }
  EXPECT_TRUE(problems.empty()) << Join(problems, "\n");
}

// TonY's name for the execution timeout before TonY#596, as its older tony-default.xml sets it.
TEST_F(KeyWalkTest, TonyWorkerTimeoutIsTheExecutionTimeout) {
  Result<JobSpec> spec = BuildJobSpec(JobWith("tony.worker.timeout", "5000"), dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->execution_timeout_ms, 5000);
  Config both = JobWith("tony.worker.timeout", "5000");
  both.Set("tony.task.executor.execution-timeout-ms", "7000", "--conf");
  spec = BuildJobSpec(both, dir_.string());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->execution_timeout_ms, 7000);  // the current name wins
  EXPECT_STATUS(BuildJobSpec(JobWith("tony.worker.timeout", "soon"), dir_.string()), kInvalidArgument,
                HasSubstr("tony.worker.timeout='soon': expected an integer"));
}

TEST_F(KeyWalkTest, SingleNodeModeIsRefusedWithTheOneTaskEquivalent) {
  EXPECT_OK(BuildJobSpec(JobWith("tony.application.single-node", "false"), dir_.string()));
  EXPECT_STATUS(BuildJobSpec(TonyJobWith("tony.application.single-node", "true"), dir_.string()), kInvalidArgument,
                AllOf(HasSubstr("tony.application.single-node=true (from --conf): TonY's single-node mode runs the "
                                "training inside the AM's own container"),
                      HasSubstr("tony.worker.instances=1"), HasSubstr("--cluster local")));
}

// TonY's Horovod README documents the driver debug mode for users: refused as what it is, not
// as a test hook, with what Loom does instead.
TEST_F(KeyWalkTest, HorovodDriverDebugModeIsRefusedAsTheUserFeatureItIs) {
  EXPECT_OK(BuildJobSpec(JobWith("tony.horovod.driver.mode.debug", "false"), dir_.string()));
  Result<JobSpec> spec = BuildJobSpec(TonyJobWith("tony.horovod.driver.mode.debug", "true"), dir_.string());
  EXPECT_STATUS(spec, kInvalidArgument,
                AllOf(HasSubstr("tony.horovod.driver.mode.debug=true (from --conf): TonY's Horovod driver debug mode"),
                      HasSubstr("tony.application.framework=horovod its AM serves horovodrun's gloo rendezvous"),
                      HasSubstr("tony.<type>.command")));
  EXPECT_THAT(spec.status().message(), Not(HasSubstr("test")));
}

TEST(KeyReaders, OnlyAccessorsCountAsReads) {
  auto reads = [](const std::regex& r, const std::string& code) { return std::regex_search(code, r); };
  std::regex queue = GlobalReader("loom.yarn.queue");
  EXPECT_TRUE(reads(queue, R"(asc.set_queue(config::GetString(conf, "loom.yarn.queue"));)"));
  EXPECT_TRUE(reads(queue, R"(if (auto v = conf.Get("loom.yarn.queue")) {)"));
  EXPECT_FALSE(reads(queue, R"(return Status::InvalidArgument("loom.yarn.queue=" + name);)"));
  EXPECT_FALSE(reads(queue, R"(problems.push_back(key("loom.yarn.queue") + ": no such queue");)"));
  EXPECT_FALSE(reads(queue, R"(config::Spelled(conf, "loom.yarn.queue"))"));
  EXPECT_TRUE(reads(queue, R"(CheckQueue(job_conf_, "loom.yarn.queue", problems);)"));
  EXPECT_FALSE(reads(queue, R"(GetString(conf, "loom.yarn.queues"))"));
  const std::string lambda = R"(
    auto path = [&](const char* key) {
      std::string p = config::GetString(conf, key);
      return p;
    };
    return {path("loom.yarn.queue")};)";
  EXPECT_TRUE(ReadsGlobalKey(lambda, "loom.yarn.queue"));
  EXPECT_FALSE(ReadsGlobalKey(lambda, "loom.application.name"));
  EXPECT_FALSE(ReadsGlobalKey(R"(auto shown = [&](const char* key) { return Spelled(conf, key); };
                                 shown("loom.yarn.queue");)",
                              "loom.yarn.queue"));
  std::regex memory = AttributeReader("memory");
  EXPECT_TRUE(reads(memory, R"(t.resources = {GetMemoryMib(conf, k + "memory"), 1};)"));
  EXPECT_TRUE(reads(memory, R"(if (!conf.IsExplicit(k + "memory")) {)"));
  EXPECT_TRUE(reads(memory, R"(GetString(conf, "loom." + type + ".memory"))"));
  EXPECT_FALSE(reads(memory, R"(key(k + "memory") + " is too large")"));
  EXPECT_FALSE(reads(memory, R"(GetInt(conf, k + "memory-limit"))"));
}

}  // namespace
}  // namespace loom::config
