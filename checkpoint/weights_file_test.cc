// Weights files: .npz written by NumPy (float64, 0-d and 1-d arrays) read back;
// what we write, read back; damaged files refused naming the file and the tensor.
#include "checkpoint/weights_file.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <iterator>

#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

TEST_CASE("arrays NumPy writes are read as float32, in the archive's order", "[weights]") {
  const std::string path = FreshTestDir("weights_numpy") + "/w.npz";
  const SubprocessResult r = RunSubprocess(
      {"/usr/bin/python3", "-c",
       "import numpy as np, sys; np.savez_compressed(sys.argv[1], **{'a/kernel': "
       "np.arange(6, dtype=np.float64).reshape(2, 3) / 4, 'a/bias': np.float32([1.5, -2]), "
       "'s': np.float32(7)})",
       path},
      Subprocess::Options{});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  absl::StatusOr<std::vector<NamedTensor>> read = ReadWeightsFile(path);
  REQUIRE(read.ok());
  REQUIRE(read->size() == 3);
  CHECK((*read)[0].name == "a/kernel");
  CHECK((*read)[0].shape == std::vector<int64_t>{2, 3});
  CHECK((*read)[0].values == std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1, 1.25f});
  CHECK((*read)[1].values == std::vector<float>{1.5f, -2});
  CHECK((*read)[2].shape.empty());
  CHECK((*read)[2].values == std::vector<float>{7});
}

TEST_CASE("what is written reads back, and damage is refused naming file and tensor", "[weights]") {
  const std::string dir = FreshTestDir("weights_round_trip");
  const std::vector<NamedTensor> weights = {{"dense/kernel", {2, 2}, {1, 2, 3, 4}},
                                            {"dense/bias", {2}, {-1, 0.5f}}};
  for (const std::string file : {"w.npz", "w.safetensors"}) {
    INFO(file);
    REQUIRE(WriteWeightsFile(weights, dir + "/" + file).ok());
    absl::StatusOr<std::vector<NamedTensor>> read = ReadWeightsFile(dir + "/" + file);
    REQUIRE(read.ok());
    REQUIRE(read->size() == 2);
    CHECK((*read)[0].name == "dense/kernel");
    CHECK((*read)[1].values == weights[1].values);
  }
  // The last byte of the data cut off: the second tensor no longer fits.
  std::ifstream in(dir + "/w.safetensors", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes.pop_back();
  std::ofstream(dir + "/cut.safetensors", std::ios::binary) << bytes;
  absl::StatusOr<std::vector<NamedTensor>> cut = ReadWeightsFile(dir + "/cut.safetensors");
  REQUIRE(cut.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(cut.status().message()),
             Contains("cut.safetensors, tensor dense/bias: data_offsets"));
  // A header size larger than the file.
  uint64_t huge = 1 << 30;
  std::memcpy(bytes.data(), &huge, 8);
  std::ofstream(dir + "/huge.safetensors", std::ios::binary) << bytes;
  CHECK(ReadWeightsFile(dir + "/huge.safetensors").status().code() == absl::StatusCode::kDataLoss);
  CHECK(ReadWeightsFile(dir + "/none.npz").status().code() == absl::StatusCode::kNotFound);
  CHECK(ReadWeightsFile(dir + "/none.safetensors").status().code() == absl::StatusCode::kNotFound);
  CHECK(WriteWeightsFile({{"a", {2}, {1, 2}}, {"a", {1}, {3}}}, dir + "/twice.npz").code() ==
        absl::StatusCode::kInvalidArgument);
}

// A safetensors file of `header` (JSON) and `data` bytes.
void WriteSafetensors(const std::string& path, const std::string& header, size_t data) {
  const uint64_t size = header.size();
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &size, 8);
  std::ofstream(path, std::ios::binary) << bytes << header << std::string(data, '\0');
}

TEST_CASE("crafted headers are refused before they size anything", "[weights]") {
  const std::string dir = FreshTestDir("weights_crafted");
  struct Case {
    const char* what;
    std::string header;
    size_t data;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"a shape whose bytes overflow",
       R"({"w": {"dtype": "F32", "shape": [4611686018427387905], "data_offsets": [0, 4]}})", 4,
       "do not fit its shape"},
      {"a dimension above int64",
       R"({"w": {"dtype": "F32", "shape": [18446744073709551615], "data_offsets": [0, 4]}})", 4,
       "a bad shape"},
      {"a name twice",
       R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
       8, "twice"},
      {"a hole", R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8, "holes"},
      {"bytes left over", R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 8,
       "after its last tensor"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    WriteSafetensors(dir + "/c.safetensors", c.header, c.data);
    absl::StatusOr<std::vector<NamedTensor>> read = ReadWeightsFile(dir + "/c.safetensors");
    CHECK(read.status().code() == absl::StatusCode::kDataLoss);
    CHECK_THAT(std::string(read.status().message()), Contains(c.message));
  }
  // An .npy header announcing 2^62 + 1 floats over 4 bytes of data, and one whose
  // member is shorter than its shape.
  const SubprocessResult r = RunSubprocess(
      {"/usr/bin/python3", "-c",
       "import sys, zipfile\n"
       "def npy(shape, data):\n"
       "  h = \"{'descr': '<f4', 'fortran_order': False, 'shape': %s, }\" % shape\n"
       "  h = h + ' ' * (63 - (10 + len(h)) % 64) + '\\n'\n"
       "  return b'\\x93NUMPY\\x01\\x00' + len(h).to_bytes(2, 'little') + h.encode() + data\n"
       "for name, shape, data in (('huge', '(4611686018427387905,)', b'\\0' * 4),\n"
       "                          ('short', '(3,)', b'\\0' * 8)):\n"
       "  with zipfile.ZipFile(sys.argv[1] + '/' + name + '.npz', 'w') as z:\n"
       "    z.writestr('w.npy', npy(shape, data))\n",
       dir},
      Subprocess::Options{});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  absl::StatusOr<std::vector<NamedTensor>> huge = ReadWeightsFile(dir + "/huge.npz");
  CHECK(huge.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(huge.status().message()), Contains("huge.npz, array w: shape"));
  absl::StatusOr<std::vector<NamedTensor>> short_one = ReadWeightsFile(dir + "/short.npz");
  CHECK(short_one.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(short_one.status().message()), Contains("its header and shape make"));
  // No tensors at all: an empty archive NumPy opens.
  REQUIRE(WriteWeightsFile({}, dir + "/empty.npz").ok());
  absl::StatusOr<std::vector<NamedTensor>> empty = ReadWeightsFile(dir + "/empty.npz");
  REQUIRE(empty.ok());
  CHECK(empty->empty());
}

}  // namespace
}  // namespace ringwork
