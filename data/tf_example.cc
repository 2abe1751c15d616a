#include "data/tf_example.h"

#include <cstring>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "io/proto_wire.h"

namespace ringwork {
namespace {

// tensorflow/core/example/{example,feature}.proto, by field number.
constexpr int kExampleFeatures = 1;  // Example.features: Features
constexpr int kFeaturesFeature = 1;  // Features.feature: map<string, Feature>
constexpr int kMapKey = 1, kMapValue = 2;
constexpr int kBytesList = 1, kFloatList = 2, kInt64List = 3;  // Feature.kind
constexpr int kListValue = 1;                                  // {Bytes,Float,Int64}List.value

bool ReadRawVarint(absl::string_view data, size_t* at, uint64_t* value) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && *at < data.size(); shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(data[(*at)++]);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = v;
      return true;
    }
  }
  return false;
}

absl::string_view ListKindName(int kind) {
  return kind == kBytesList ? "bytes_list" : kind == kFloatList ? "float_list" : "int64_list";
}

int ListKindFor(ValueType type) {
  switch (type) {
    case ValueType::kFloat32:
      return kFloatList;
    case ValueType::kString:
      return kBytesList;
    default:
      return kInt64List;
  }
}

// An int64's value in `type` (int32, uint8 or int64), false when out of its range.
bool StoreInt(int64_t v, ValueType type, TypedTensor* out, int64_t i) {
  switch (type) {
    case ValueType::kInt64:
      out->data<int64_t>()[i] = v;
      return true;
    case ValueType::kInt32:
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
        return false;
      }
      out->data<int32_t>()[i] = static_cast<int32_t>(v);
      return true;
    case ValueType::kUInt8:
      if (v < 0 || v > 255) return false;
      out->data<uint8_t>()[i] = static_cast<uint8_t>(v);
      return true;
    default:
      return false;
  }
}

}  // namespace

absl::StatusOr<std::vector<ExampleFeature>> DescribeExample(absl::string_view record) {
  std::vector<ExampleFeature> out;
  const absl::Status malformed = absl::InvalidArgumentError("a malformed Example");
  WireReader example(record);
  while (example.Next()) {
    if (!example.Is(kExampleFeatures, kLengthDelimited)) continue;
    WireReader features(example.bytes());
    while (features.Next()) {
      if (!features.Is(kFeaturesFeature, kLengthDelimited)) continue;
      ExampleFeature f;
      absl::string_view feature;
      WireReader entry(features.bytes());
      while (entry.Next()) {
        if (entry.Is(kMapKey, kLengthDelimited)) f.name = std::string(entry.bytes());
        if (entry.Is(kMapValue, kLengthDelimited)) feature = entry.bytes();
      }
      if (!entry.ok()) return malformed;
      WireReader kind(feature);
      while (kind.Next()) {
        if (kind.wire_type() != kLengthDelimited || kind.field() < kBytesList ||
            kind.field() > kInt64List) {
          continue;
        }
        f.type = kind.field() == kFloatList   ? ValueType::kFloat32
                 : kind.field() == kInt64List ? ValueType::kInt64
                                              : ValueType::kString;
        WireReader values(kind.bytes());
        while (values.Next()) {
          if (values.field() != kListValue) continue;
          if (f.type == ValueType::kFloat32 && values.wire_type() == kLengthDelimited) {
            f.count += static_cast<int64_t>(values.bytes().size() / 4);
          } else if (f.type == ValueType::kInt64 && values.wire_type() == kLengthDelimited) {
            size_t at = 0;
            uint64_t v = 0;
            while (at < values.bytes().size() && ReadRawVarint(values.bytes(), &at, &v)) ++f.count;
          } else {
            ++f.count;
          }
        }
        if (!values.ok()) return malformed;
      }
      if (!kind.ok()) return malformed;
      out.push_back(std::move(f));
    }
    if (!features.ok()) return malformed;
  }
  if (!example.ok()) return malformed;
  return out;
}

absl::StatusOr<ExampleParser> ExampleParser::Create(std::vector<FeatureSpec> specs) {
  if (specs.empty()) return absl::InvalidArgumentError("a feature spec needs a feature");
  std::set<std::string> names;
  for (const FeatureSpec& s : specs) {
    const std::string where = absl::StrCat("feature \"", s.name, "\"");
    if (s.name.empty()) return absl::InvalidArgumentError("a feature spec without a name");
    if (!names.insert(s.name).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, " is in the spec twice"));
    }
    for (int64_t d : s.shape) {
      if (d < 0) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": shape ", ShapeString(s.shape),
                                                       " (a dimension below 0; use var_len)"));
      }
    }
    const int64_t n = NumElements(s.shape);
    if (s.default_value.has_value()) {
      const size_t size = s.default_value->size();
      if (s.type == ValueType::kString || s.var_len ||
          (size != 1 && size != static_cast<size_t>(n))) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": a default of ", size, " numbers for ", ValueTypeName(s.type),
                         s.var_len ? " values of any length"
                                   : absl::StrCat(" of shape ", ShapeString(s.shape))));
      }
    }
    if (s.default_string.has_value() && (s.type != ValueType::kString || s.var_len)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": a string default for ", ValueTypeName(s.type), " values"));
    }
  }
  return ExampleParser(std::move(specs));
}

absl::Status ExampleParser::FillDefault(size_t i, TypedTensor* value) const {
  const FeatureSpec& s = specs_[i];
  if (s.var_len) {
    value->Reset(s.type, {0});
    return absl::OkStatus();
  }
  if (!s.default_value.has_value() && !s.default_string.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("feature \"", s.name, "\" is missing (and the spec gives no default)"));
  }
  value->Reset(s.type, s.shape);
  for (int64_t k = 0; k < value->size(); ++k) {
    if (s.type == ValueType::kString) {
      value->strings()[static_cast<size_t>(k)] = *s.default_string;
      continue;
    }
    const std::vector<double>& d = *s.default_value;
    const double v = d.size() == 1 ? d[0] : d[static_cast<size_t>(k)];
    if (s.type == ValueType::kFloat32) {
      value->data<float>()[k] = static_cast<float>(v);
    } else if (!StoreInt(static_cast<int64_t>(v), s.type, value, k)) {
      return absl::InvalidArgumentError(absl::StrCat("feature \"", s.name, "\": default ", v,
                                                     " is outside ", ValueTypeName(s.type)));
    }
  }
  return absl::OkStatus();
}

absl::Status ExampleParser::ParseFeature(size_t i, absl::string_view feature,
                                         TypedTensor* value) const {
  const FeatureSpec& s = specs_[i];
  const std::string where = absl::StrCat("feature \"", s.name, "\"");
  const int want = ListKindFor(s.type);
  absl::string_view list;
  int kind = 0;
  WireReader reader(feature);
  while (reader.Next()) {
    if (reader.wire_type() == kLengthDelimited && reader.field() >= kBytesList &&
        reader.field() <= kInt64List) {
      kind = reader.field();
      list = reader.bytes();
    }
  }
  if (!reader.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": a malformed Feature"));
  if (kind == 0) return FillDefault(i, value);  // A Feature with no list: as if missing.
  if (kind != want) {
    return absl::InvalidArgumentError(absl::StrCat(where, " is a ", ListKindName(kind),
                                                   "; the spec asks for ", ValueTypeName(s.type),
                                                   " (a ", ListKindName(want), ")"));
  }
  // The values: packed (one length-delimited field) or one field each.
  std::vector<absl::string_view> strings;
  absl::string_view packed;
  std::vector<uint64_t> loose;  // Unpacked numbers' bits.
  WireReader items(list);
  while (items.Next()) {
    if (items.field() != kListValue) continue;
    if (kind == kBytesList && items.wire_type() == kLengthDelimited) {
      strings.push_back(items.bytes());
    } else if (kind != kBytesList && items.wire_type() == kLengthDelimited) {
      if (!packed.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": two packed value lists"));
      }
      packed = items.bytes();
    } else if (kind == kFloatList && items.wire_type() == kFixed32) {
      loose.push_back(items.varint());
    } else if (kind == kInt64List && items.wire_type() == kVarint) {
      loose.push_back(items.varint());
    } else {
      return absl::InvalidArgumentError(absl::StrCat(where, ": a value of the wrong wire type"));
    }
  }
  if (!items.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": a malformed list"));
  if (kind == kFloatList && packed.size() % 4 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": a packed float list of ", packed.size(), " bytes"));
  }
  std::vector<int64_t> ints;
  if (kind == kInt64List) {
    size_t at = 0;
    uint64_t v = 0;
    while (at < packed.size()) {
      if (!ReadRawVarint(packed, &at, &v)) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": a malformed packed int64 list"));
      }
      ints.push_back(static_cast<int64_t>(v));
    }
    for (uint64_t bits : loose) ints.push_back(static_cast<int64_t>(bits));
  }
  const int64_t count = kind == kBytesList ? static_cast<int64_t>(strings.size())
                        : kind == kFloatList
                            ? static_cast<int64_t>(packed.size() / 4 + loose.size())
                            : static_cast<int64_t>(ints.size());
  if (s.var_len) {
    value->Reset(s.type, {count});
  } else {
    if (count != NumElements(s.shape)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", count, " values; its shape ",
                                                     ShapeString(s.shape), " needs ",
                                                     NumElements(s.shape)));
    }
    value->Reset(s.type, s.shape);
  }
  if (kind == kBytesList) {
    for (int64_t k = 0; k < count; ++k) value->strings()[k] = std::string(strings[k]);
  } else if (kind == kFloatList) {
    float* out = value->data<float>();
    std::memcpy(out, packed.data(), packed.size());
    float* more = out + packed.size() / 4;
    for (size_t k = 0; k < loose.size(); ++k) {
      const uint32_t bits = static_cast<uint32_t>(loose[k]);
      std::memcpy(more + k, &bits, 4);
    }
  } else {
    for (int64_t k = 0; k < count; ++k) {
      if (!StoreInt(ints[k], s.type, value, k)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": value ", ints[k], " is outside ", ValueTypeName(s.type)));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ExampleParser::Parse(absl::string_view record,
                                  std::vector<TypedTensor>* values) const {
  values->resize(specs_.size());
  std::vector<char> found(specs_.size(), 0);
  WireReader example(record);
  while (example.Next()) {
    if (!example.Is(kExampleFeatures, kLengthDelimited)) continue;
    WireReader features(example.bytes());
    while (features.Next()) {
      if (!features.Is(kFeaturesFeature, kLengthDelimited)) continue;
      absl::string_view key, feature;
      WireReader entry(features.bytes());
      while (entry.Next()) {
        if (entry.Is(kMapKey, kLengthDelimited)) key = entry.bytes();
        if (entry.Is(kMapValue, kLengthDelimited)) feature = entry.bytes();
      }
      if (!entry.ok()) return absl::InvalidArgumentError("a malformed Example (a feature entry)");
      for (size_t i = 0; i < specs_.size(); ++i) {
        if (found[i] || specs_[i].name != key) continue;
        found[i] = 1;
        absl::Status parsed = ParseFeature(i, feature, &(*values)[i]);
        if (!parsed.ok()) return parsed;
        break;
      }
    }
    if (!features.ok()) return absl::InvalidArgumentError("a malformed Example (its features)");
  }
  if (!example.ok()) return absl::InvalidArgumentError("a malformed Example (not its wire format)");
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (found[i]) continue;
    absl::Status filled = FillDefault(i, &(*values)[i]);
    if (!filled.ok()) return filled;
  }
  return absl::OkStatus();
}

}  // namespace ringwork
