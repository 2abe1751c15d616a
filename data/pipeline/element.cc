#include "data/pipeline/element.h"

#include "absl/strings/str_cat.h"
#include "base/fnv1a.h"

namespace ringwork {

int FeatureIndex(const ElementSpec& spec, const std::string& name) {
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::string SpecString(const ElementSpec& spec) {
  std::string out;
  for (const FeatureInfo& f : spec) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", f.name, ": ", ValueTypeName(f.type), " ",
                    ShapeString(f.shape));
  }
  return out;
}

std::string OriginOf(const Element& element) {
  if (element.file == nullptr) return "";
  if (element.record < 0) return absl::StrCat(*element.file, ": ");
  return absl::StrCat(*element.file, element.record_is_line ? ", line " : ", record ",
                      element.record, ": ");
}

uint64_t ElementKey(const Element& element) {
  if (element.file == nullptr) return static_cast<uint64_t>(element.index);
  return Fnv1a64(element.file->data(), element.file->size()) ^
         (static_cast<uint64_t>(element.record + 1) * 0x9e3779b97f4a7c15ULL);
}

uint64_t ElementDraw(uint64_t seed, int64_t pass, uint64_t key) {
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  return mix(mix(mix(seed) ^ static_cast<uint64_t>(pass)) ^ key);
}

}  // namespace ringwork
