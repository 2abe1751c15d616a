#include "data/pipeline/element.h"

#include "absl/strings/str_cat.h"

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

uint64_t ElementDraw(uint64_t seed, int64_t pass, int64_t index) {
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  return mix(mix(mix(seed) ^ static_cast<uint64_t>(pass)) ^ static_cast<uint64_t>(index));
}

}  // namespace ringwork
