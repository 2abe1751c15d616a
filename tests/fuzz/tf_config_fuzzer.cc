// libFuzzer target: the TF_CONFIG parser. Any input either fails with a status or
// gives a config that survives a round trip through ToTfConfigJson unchanged.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "runtime/config/tf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<ringwork::ClusterConfig> config = ringwork::ParseTfConfig(json);
  if (!config.ok()) {
    if (config.status().message().empty()) std::abort();  // Every refusal says why.
    return 0;
  }
  const std::string again = ringwork::ToTfConfigJson(*config);
  absl::StatusOr<ringwork::ClusterConfig> reparsed = ringwork::ParseTfConfig(again);
  if (!reparsed.ok() || reparsed->Fingerprint() != config->Fingerprint() ||
      reparsed->rank() != config->rank()) {
    std::abort();
  }
  return 0;
}
