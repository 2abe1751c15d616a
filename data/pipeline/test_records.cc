#include "data/pipeline/test_records.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "io/proto_wire.h"
#include "io/record_file.h"

namespace ringwork {
namespace {

// Features' map entry: key, and the Feature with its list in field `kind`.
std::string Entry(const std::string& name, int kind, const std::string& list) {
  WireWriter feature, entry;
  feature.Bytes(kind, list);
  entry.Bytes(1, name);
  entry.Bytes(2, feature.data());
  return entry.data();
}

}  // namespace

std::string SerializeExample(const FloatFeatures& floats, const IntFeatures& ints) {
  WireWriter features;
  for (const auto& [name, values] : floats) {
    std::string packed(4 * values.size(), '\0');
    if (!values.empty()) std::memcpy(packed.data(), values.data(), packed.size());
    WireWriter list;
    list.Bytes(1, packed);
    features.Bytes(1, Entry(name, 2, list.data()));
  }
  for (const auto& [name, values] : ints) {
    WireWriter list;
    for (int64_t v : values) list.Varint(1, static_cast<uint64_t>(v));
    features.Bytes(1, Entry(name, 3, list.data()));
  }
  WireWriter example;
  example.Bytes(1, features.data());
  return example.data();
}

std::vector<std::string> WriteExampleFiles(const std::string& dir,
                                           const std::vector<int64_t>& sizes,
                                           const std::function<std::string(int64_t)>& make) {
  std::vector<std::string> files;
  int64_t i = 0;
  for (size_t f = 0; f < sizes.size(); ++f) {
    const std::string path = dir + "/f" + std::to_string(f) + ".tfrecord";
    std::remove(path.c_str());
    auto writer = RecordWriter::Append(path);
    if (!writer.ok()) throw std::runtime_error(std::string(writer.status().message()));
    for (int64_t k = 0; k < sizes[f]; ++k) {
      absl::Status written = (*writer)->Write(make(i++));
      if (!written.ok()) throw std::runtime_error(std::string(written.message()));
    }
    files.push_back(path);
  }
  return files;
}

absl::StatusOr<std::vector<Element>> ReadAll(const Pipeline& pipeline,
                                             const IterateOptions& options) {
  std::unique_ptr<ElementIterator> it = pipeline.Iterate(options);
  std::vector<Element> out;
  Element e;
  while (true) {
    absl::StatusOr<bool> more = it->Next(&e);
    if (!more.ok()) return more.status();
    if (!*more) return out;
    out.push_back(e);
  }
}

}  // namespace ringwork
