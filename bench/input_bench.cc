// input_bench: how fast an input pipeline feeds training, without training: a
// folder of images (decode, resize, RandomFlip, batch, prefetch) or TFRecord
// files of tf.train.Example (read, parse, batch, prefetch), in elements per
// second per pass, and the median of the passes after the first (which warms
// the page cache). bench/compare_input.sh runs it beside PyTorch's DataLoader.
//
//   bazel-bin/bench/input_bench --images=DIR [--size=0] [--random_flip=true]
//   bazel-bin/bench/input_bench --tfrecord=GLOB --features=image:784,label
//       [--batch=256] [--threads=0] [--passes=5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "base/cpu_cores.h"
#include "base/exit_code.h"
#include "base/flags.h"
#include "data/pipeline/image_augment.h"
#include "data/pipeline/image_folder.h"
#include "data/pipeline/pipeline_stats.h"
#include "data/pipeline/tfrecord_source.h"
#include "data/tf_example.h"

namespace ringwork {
namespace {

struct Source {
  Pipeline pipeline;
  std::string what;
};

absl::StatusOr<Source> Images(const std::string& dir, int64_t size, bool flip, int threads) {
  ImageFolderOptions options{.height = size, .width = size, .color_mode = "", .seed = 1};
  auto folder = ImageFolderPipeline(dir, options, threads);
  if (!folder.ok()) return folder.status();
  Source out{folder->pipeline, ""};
  if (flip) {
    auto fn = RandomFlipFn(0, "horizontal");
    if (!fn.ok()) return fn.status();
    // On the decoding threads' heels: a cheap Map, one thread.
    out.pipeline = out.pipeline.MapRandom(*fn, 7, 1, {}, "random_flip");
  }
  const Shape& shape = out.pipeline.spec()[0].shape;
  out.what = absl::StrCat("images ", dir, " (", folder->files, " files, decoded to ",
                          ShapeString(shape), flip ? ", random flip" : "", ")");
  return out;
}

// "image:784,label": float32 [784] and int64 [] (a count: float32, none: int64).
absl::StatusOr<Source> Records(const std::string& glob, const std::string& features, int threads) {
  std::vector<FeatureSpec> specs;
  for (absl::string_view item : absl::StrSplit(features, ',')) {
    std::vector<std::string> parts = absl::StrSplit(item, ':');
    FeatureSpec spec{.name = parts[0], .type = ValueType::kInt64, .shape = {}};
    int64_t count = 0;
    if (parts.size() == 2) {
      if (!absl::SimpleAtoi(parts[1], &count) || count < 1) {
        return absl::InvalidArgumentError(absl::StrCat("--features: \"", item, "\""));
      }
      spec.type = ValueType::kFloat32;
      spec.shape = {count};
    }
    specs.push_back(spec);
  }
  auto parser = ExampleParser::Create(specs);
  if (!parser.ok()) return parser.status();
  auto files = ExpandGlob(glob);
  if (!files.ok()) return files.status();
  Source out{
      TFRecordPipeline(*files).Map(ParseExamplesFn(*parser), threads, ParsedSpec(*parser), "parse"),
      absl::StrCat("TFRecord ", glob, " (", files->size(), " files)")};
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int Main(int argc, char** argv) {
  FlagSet flags("input_bench: an input pipeline's throughput, without training");
  std::string images, tfrecord, features = "image:784,label";
  int64_t batch = 256, threads = 0, passes = 5, size = 0;
  bool random_flip = true;
  flags.String("images", &images, "a folder of class folders of PNG/JPEG files");
  flags.String("tfrecord", &tfrecord, "a glob of TFRecord files of tf.train.Example");
  flags.String("features", &features, "with --tfrecord: NAME:COUNT (float32) or NAME (int64)");
  flags.Int("size", &size, "with --images: resize to SIZE x SIZE (0: the first image's size)");
  flags.Bool("random_flip", &random_flip, "with --images: a RandomFlip(horizontal) Map");
  flags.Int("batch", &batch, "elements per batch");
  flags.Int("threads", &threads, "the decoding/parsing Map's threads (0: this machine's cores)");
  flags.Int("passes", &passes, "passes over the data; the median leaves the first out");
  absl::StatusOr<std::vector<std::string>> args = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::cout << flags.HelpText("input_bench");
    return kOk;
  }
  if (!args.ok()) ExitWithStatus(args.status());
  if (images.empty() == tfrecord.empty() || batch < 1 || passes < 2 || threads < 0) {
    ExitWithStatus(absl::InvalidArgumentError(
        "one of --images or --tfrecord; --batch >= 1, --passes >= 2, --threads >= 0"));
  }
  const int map_threads = threads > 0 ? static_cast<int>(threads) : AvailableCores();
  absl::StatusOr<Source> source = images.empty() ? Records(tfrecord, features, map_threads)
                                                 : Images(images, size, random_flip, map_threads);
  if (!source.ok()) ExitWithStatus(source.status());
  const Pipeline pipeline = source->pipeline.Batch(batch).Prefetch(2);
  std::printf("# input_bench: %s\n# batch %lld, %d Map threads, %d cores\n", source->what.c_str(),
              static_cast<long long>(batch), map_threads, AvailableCores());
  std::printf("%6s %10s %10s %12s\n", "pass", "elements", "seconds", "elements/s");
  std::vector<double> rates;
  auto stats = std::make_unique<PipelineStats>();  // The last pass's.
  for (int64_t pass = 0; pass < passes; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    auto it = pipeline.Iterate({.pass = pass, .stats = pass + 1 == passes ? stats.get() : nullptr});
    Element e;
    int64_t elements = 0;
    while (true) {
      absl::StatusOr<bool> more = it->Next(&e);
      if (!more.ok()) ExitWithStatus(more.status());
      if (!*more) break;
      elements += e.values[0].shape()[0];
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%6lld %10lld %10.3f %12.0f\n", static_cast<long long>(pass + 1),
                static_cast<long long>(elements), s, elements / s);
    if (pass > 0) rates.push_back(elements / s);
  }
  std::printf("# median elements/s (passes 2-%lld): %.0f\n", static_cast<long long>(passes),
              Median(rates));
  for (const auto& s : stats->Snapshot()) {
    std::printf("# stage %-16s elements %8lld  busy %.2f s  upstream %.2f s\n", s.name.c_str(),
                static_cast<long long>(s.elements), s.busy_s, s.input_s);
  }
  return kOk;
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) { return ringwork::Main(argc, argv); }
