// Fuzzes the configuration path a user's tony.xml takes: XML parsing, validation of every key
// and value, the job spec, and writing the final config back out. Nothing may crash, leak or
// hit undefined behaviour, whatever the file holds.

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/config/config.h"
#include "core/config/key_registry.h"
#include "core/job_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string xml(reinterpret_cast<const char*>(data), size);
  loom::config::Config conf;
  if (!conf.MergeXmlString(xml, "fuzz.xml").ok()) return 0;
  (void)loom::config::Validate(conf);
  auto spec = loom::BuildJobSpec(conf, "/nonexistent", /*check_files=*/false);
  if (spec.ok()) {
    (void)spec->AllTasks();
    (void)spec->TotalResources();
  }
  loom::config::Config again;
  (void)again.MergeXmlString(loom::config::WithDefaults(conf).ToXml(), "roundtrip");
  return 0;
}
