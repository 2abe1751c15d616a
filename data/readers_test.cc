#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "data/csv_reader.h"
#include "data/fashion_mnist.h"
#include "data/idx_reader.h"

namespace ringwork {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST_CASE("Debian's Fashion-MNIST loads with the right shapes and ranges", "[readers]") {
  auto data = LoadFashionMnist(kFashionMnistDir);
  REQUIRE(data.ok());
  CHECK(data->train.features.shape() == Shape{60000, 28, 28, 1});
  CHECK(data->test.features.shape() == Shape{10000, 28, 28, 1});
  CHECK(data->train.count() == 60000);
  std::vector<int> per_class(10);
  for (int32_t label : data->train.labels) {
    REQUIRE(label >= 0);
    REQUIRE(label < 10);
    ++per_class[label];
  }
  for (int c : per_class) CHECK(c == 6000);  // Fashion-MNIST is balanced.
  float lo = 1, hi = 0;
  for (int64_t i = 0; i < data->test.features.size(); ++i) {
    lo = std::min(lo, data->test.features[i]);
    hi = std::max(hi, data->test.features[i]);
  }
  CHECK(lo == 0.f);
  CHECK(hi == 1.f);
}

TEST_CASE("a missing data directory names the package", "[readers]") {
  auto data = LoadFashionMnist("/no/such/dir");
  REQUIRE_FALSE(data.ok());
  CHECK(std::string(data.status().message()).find("dataset-fashion-mnist") != std::string::npos);
}

TEST_CASE("corrupt IDX files are refused before anything is allocated", "[readers]") {
  const std::string path = TempPath("bad.idx");
  // A header that claims a billion 4096x4096 images in a 16-byte file.
  Write(path, std::string("\x00\x00\x08\x03\x3b\x9a\xca\x00\x00\x00\x10\x00\x00\x00\x10\x00", 16));
  auto images = ReadIdxImages(path);
  REQUIRE_FALSE(images.ok());
  CHECK(std::string(images.status().message()).find("header says 1000000000 images of 4096x4096") !=
        std::string::npos);
  Write(path, std::string("\x00\x00\x08\x01\x00\x00\x00\x05\x01\x02", 10));
  auto labels = ReadIdxLabels(path);
  REQUIRE_FALSE(labels.ok());
  CHECK(std::string(labels.status().message()) ==
        path + ": header says 5 labels but the file has 2");
  Write(path, "garbage!");
  auto wrong = ReadIdxImages(path);
  REQUIRE_FALSE(wrong.ok());
  CHECK(std::string(wrong.status().message()).find("is too short") != std::string::npos);
}

TEST_CASE("CSV files become examples that remember their file", "[readers]") {
  const std::string a = TempPath("a.csv"), b = TempPath("b.csv");
  Write(a, "x,y,label\n1,2,0\n3,4,1\n");
  Write(b, "x,y,label\n5,6,2\n");
  auto e = ReadCsv({a, b}, CsvOptions());
  REQUIRE(e.ok());
  CHECK(e->count() == 3);
  CHECK(e->features.shape() == Shape{3, 2});
  CHECK(e->features[4] == 5.f);
  CHECK(e->labels == std::vector<int32_t>{0, 1, 2});
  CHECK(e->file_index == std::vector<int32_t>{0, 0, 1});
  Write(b, "x,y,label\n5,six,2\n");
  auto bad = ReadCsv({a, b}, CsvOptions());
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()) == b + ":2: column 2: \"six\" is not a number");
}

}  // namespace
}  // namespace ringwork
