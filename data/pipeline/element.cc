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

}  // namespace ringwork
