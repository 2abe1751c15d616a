// libFuzzer target: the checkpoint reader (header, manifest, tensor extents and
// CRCs). Any file either is refused with a status naming it or opens with every
// tensor inside the file, and each read either verifies or is refused; nothing is
// allocated from a size the file states before it is checked against the file.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_file.h"
#include "tests/fuzz/memory_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const MemoryFile file(data, size);
  const std::string path = file.path();
  absl::StatusOr<std::unique_ptr<ringwork::CheckpointReader>> reader =
      ringwork::CheckpointReader::Open(path);
  if (!reader.ok()) {
    if (reader.status().message().find(path) == std::string::npos) std::abort();  // Names the file.
  } else {
    for (const ringwork::CheckpointTensor& t : (*reader)->manifest().tensors) {
      if (t.bytes > size) std::abort();  // Extents were checked against the file.
      std::vector<char> buffer(t.bytes);
      (void)(*reader)->Read(t, buffer.data());
    }
  }
  return 0;
}
