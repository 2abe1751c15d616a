// Image folders decoded as Keras reads them, against Pillow (an independent
// encoder and decoder): PNG pixels exactly, JPEG within a step, the classes from
// the folder names, resizing, splits, and a file that is not an image.
#include "data/pipeline/image_folder.h"

#include <array>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "data/image_decode.h"
#include "data/pipeline/image_augment.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

// Writes the folders with Pillow; the pixels it reads back, by relative path.
std::map<std::string, std::vector<int>> WriteFolders(const std::string& dir) {
  SubprocessResult r = RunSubprocess({"/usr/bin/python3", "data/testdata/write_images.py", dir},
                                     Subprocess::Options{});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::map<std::string, std::vector<int>> truth;
  // Pillow's JSON is the last line; anything before it is diagnostics.
  const std::string json_line = r.output.substr(r.output.rfind('{'));
  const nlohmann::json parsed = nlohmann::json::parse(json_line);
  for (auto it = parsed.begin(); it != parsed.end(); ++it) {
    truth[it.key()] = it.value().get<std::vector<int>>();
  }
  return truth;
}

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_CASE("PNG and JPEG decode as Pillow reads them", "[images]") {
  const std::string dir = FreshTestDir("images");
  const auto truth = WriteFolders(dir);
  for (const auto& [rel, want] : truth) {
    INFO(rel);
    const int channels = want[2];
    absl::StatusOr<Image> image = DecodeImage(Read(dir + "/" + rel), channels);
    REQUIRE(image.ok());
    CHECK(DecodeImage(Read(dir + "/" + rel), 0)->channels == channels);  // The file's own.
    CHECK(image->height == want[0]);
    CHECK(image->width == want[1]);
    int worst = 0;
    for (size_t i = 0; i < image->pixels.size(); ++i) {
      worst = std::max(worst, std::abs(image->pixels[i] - want[3 + i]));
    }
    // libjpeg-turbo on both sides; a different IDCT could differ by a step.
    CHECK(worst <= (rel.find(".jpg") != std::string::npos ? 2 : 0));
  }
  CHECK(DecodeImage("nope", 3).status().message() == "neither a PNG nor a JPEG image");
  std::string cut = Read(dir + "/cats/0.png");
  cut.resize(cut.size() / 2);
  CHECK(DecodeImage(cut, 3).status().code() == absl::StatusCode::kInvalidArgument);
  // A cut JPEG is only a warning to libjpeg (gray fill): an error here.
  std::string cut_jpeg = Read(dir + "/cats/0.jpg");
  cut_jpeg.resize(cut_jpeg.size() * 2 / 3);
  const absl::Status jpeg = DecodeImage(cut_jpeg, 3).status();
  CHECK(jpeg.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(jpeg.message()).find("a corrupt JPEG image (") == 0);
}

TEST_CASE("bilinear resizing with half-pixel centers", "[images]") {
  Image two;
  two.height = 1;
  two.width = 2;
  two.channels = 1;
  two.pixels = {0, 100};
  std::vector<float> four(4);
  ResizeBilinear(two, 1, 4, four.data());
  // Samples at x = -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped).
  CHECK(four == std::vector<float>{0, 25, 75, 100});
}

TEST_CASE("an image folder: classes by folder name, labels, splits", "[images]") {
  const std::string dir = FreshTestDir("image_folder");
  WriteFolders(dir);
  std::filesystem::remove(dir + "/not-an-image.png");
  auto folder = ImageFolderPipeline(
      dir, {.height = 4, .width = 6, .color_mode = "grayscale", .shuffle = false}, 2);
  REQUIRE(folder.ok());
  CHECK(folder->class_names == std::vector<std::string>{"cats", "dogs"});
  CHECK(folder->files == 18);
  auto it = folder->pipeline.Iterate();
  Element e;
  std::vector<int64_t> labels;
  while (*it->Next(&e)) {
    CHECK(e.values[0].shape() == Shape{4, 6, 1});
    labels.push_back(e.values[1].data<int64_t>()[0]);
  }
  CHECK(labels == std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  // Shuffled: every file once per pass, each pass in its own order.
  auto shuffled = ImageFolderPipeline(dir, {.height = 0, .width = 0, .color_mode = "", .seed = 5});
  REQUIRE(shuffled.ok());
  CHECK(shuffled->pipeline.spec()[0].shape == Shape{4, 5, 1});  // cats/0.gray.png's.
  std::array<std::vector<std::vector<float>>, 2> passes;
  for (int64_t pass = 0; pass < 2; ++pass) {
    auto p = shuffled->pipeline.Iterate({.pass = pass});
    while (*p->Next(&e)) {
      const float* px = e.values[0].data<float>();
      passes[pass].emplace_back(px, px + e.values[0].size());
    }
  }
  CHECK(passes[0] != passes[1]);
  auto sorted = passes;
  for (auto& p : sorted) std::sort(p.begin(), p.end());
  CHECK(sorted[0] == sorted[1]);
  CHECK(passes[0].size() == 18);
  // A split: training and validation together are every file, once.
  auto train = ImageFolderPipeline(
      dir, {.height = 4, .width = 6, .validation_split = 0.25, .subset = "training", .seed = 3});
  auto val = ImageFolderPipeline(
      dir, {.height = 4, .width = 6, .validation_split = 0.25, .subset = "validation", .seed = 3});
  REQUIRE(train.ok());
  REQUIRE(val.ok());
  CHECK(train->files == 14);
  CHECK(val->files == 4);
  auto categorical =
      ImageFolderPipeline(dir, {.height = 2, .width = 2, .label_mode = "categorical"});
  REQUIRE(categorical.ok());
  CHECK(categorical->pipeline.spec()[1].shape == Shape{2});
  // Given names order the classes, and must be the folders.
  std::filesystem::remove(dir + "/cats/0.png");  // 8 cats, 9 dogs.
  auto reordered = ImageFolderPipeline(
      dir, {.height = 2, .width = 2, .shuffle = false, .class_names = {"dogs", "cats"}}, 1);
  REQUIRE(reordered.ok());
  auto in_order = reordered->pipeline.Iterate();
  labels.clear();
  while (*in_order->Next(&e)) labels.push_back(e.values[1].data<int64_t>()[0]);
  CHECK(labels == std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1});
  CHECK(reordered->class_names == std::vector<std::string>{"dogs", "cats"});
  CHECK(ImageFolderPipeline(dir, {.class_names = {"cats", "birds"}}).status().message() ==
        dir + " has the class folders cats, dogs; expected cats, birds");
  CHECK(ImageFolderPipeline(dir, {.color_mode = "cmyk"}).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a file that is not an image is named, or skipped with ignore_errors", "[images]") {
  const std::string dir = FreshTestDir("image_folder_bad");
  WriteFolders(dir);
  std::filesystem::rename(dir + "/not-an-image.png", dir + "/dogs/zz.png");
  auto folder = ImageFolderPipeline(dir, {.height = 4, .width = 4, .shuffle = false}, 1);
  REQUIRE(folder.ok());
  auto it = folder->pipeline.Iterate();
  Element e;
  absl::StatusOr<bool> more = true;
  int n = 0;
  while (more.ok() && *more) {
    more = it->Next(&e);
    if (more.ok() && *more) ++n;
  }
  REQUIRE_FALSE(more.ok());
  CHECK(std::string(more.status().message()) ==
        dir + "/dogs/zz.png: neither a PNG nor a JPEG image");
  PipelineStats stats;
  auto skipping = folder->pipeline.Iterate({.ignore_errors = true, .stats = &stats});
  n = 0;
  while (*skipping->Next(&e)) ++n;
  CHECK(n == 18);
  CHECK(stats.skipped() == 1);
}

TEST_CASE("RandomFlip: half the images mirrored, alike on any threads, anew each pass",
          "[images]") {
  // 400 images of 2 x 3 pixels, two channels: (x, 10 * y + c).
  TypedTensor images(ValueType::kUInt8, {400, 2, 3, 2});
  for (int64_t i = 0; i < 400 * 12; ++i) {
    const int64_t y = (i / 6) % 2, x = (i / 2) % 3, c = i % 2;
    images.data<uint8_t>()[i] = static_cast<uint8_t>(c == 0 ? x : 10 * y + c);
  }
  auto slices = TensorSlicesPipeline({{"image", images}});
  REQUIRE(slices.ok());
  auto flip = RandomFlipFn(0, "horizontal_and_vertical");
  REQUIRE(flip.ok());
  // Per image: mirrored across (x 0 at the right), mirrored down (row 1 on top).
  auto run = [&](int threads, int64_t pass) {
    std::vector<std::pair<bool, bool>> flips;
    auto it = slices->MapRandom(*flip, 9, threads).Iterate({.pass = pass});
    Element e;
    while (*it->Next(&e)) {
      const uint8_t* px = e.values[0].data<uint8_t>();
      CHECK(px[2] == 1);                   // x 1 stays in the middle.
      CHECK((px[0] == 0 || px[0] == 2));   // Whole rows move...
      CHECK(px[0] + px[4] == 2);           // ...mirrored,
      CHECK((px[1] == 1 || px[1] == 11));  // channels kept together.
      flips.emplace_back(px[0] == 2, px[1] == 11);
    }
    return flips;
  };
  const auto one = run(1, 0);
  CHECK(one == run(3, 0));
  CHECK(one != run(1, 1));
  int across = 0, down = 0;
  for (const auto& [a, d] : one) across += a, down += d;
  CHECK(across > 150);
  CHECK(across < 250);
  CHECK(down > 150);
  CHECK(down < 250);
  CHECK(RandomFlipFn(0, "sideways").status().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringwork
