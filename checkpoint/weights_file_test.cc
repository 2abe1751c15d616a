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
  CHECK(WriteWeightsFile({{"a", {2}, {1, 2}}, {"a", {1}, {3}}}, dir + "/twice.npz").code() ==
        absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringwork
