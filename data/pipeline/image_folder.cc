#include "data/pipeline/image_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "data/image_decode.h"

namespace ringwork {
namespace {

bool IsImage(const std::filesystem::path& p) {
  const std::string ext = absl::AsciiStrToLower(p.extension().string());
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

// Files and their labels as elements {"path": string, "label": int64}.
class ImageFilesNode : public PipelineNode {
 public:
  ImageFilesNode(std::vector<std::string> files, std::vector<int64_t> labels)
      : files_(std::move(files)),
        labels_(std::move(labels)),
        spec_({{"path", ValueType::kString, {}}, {"label", ValueType::kInt64, {}}}) {}
  const ElementSpec& spec() const override { return spec_; }
  std::string name() const override { return "image files"; }
  Kind kind() const override { return Kind::kSource; }
  int64_t file_count() const override { return static_cast<int64_t>(files_.size()); }
  int64_t cardinality() const override { return static_cast<int64_t>(files_.size()); }
  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    class It : public ElementIterator {
     public:
      It(const ImageFilesNode* node, const IterateOptions& options)
          : node_(node), shards_(std::max(options.num_shards, 1)), next_(options.shard_index) {}
      absl::StatusOr<bool> Next(Element* out) override {
        if (next_ >= static_cast<int64_t>(node_->files_.size())) return false;
        const size_t i = static_cast<size_t>(next_);
        next_ += shards_;
        out->values.resize(2);
        out->values[0].Reset(ValueType::kString, {});
        out->values[0].strings()[0] = node_->files_[i];
        out->values[1].Reset(ValueType::kInt64, {});
        out->values[1].data<int64_t>()[0] = node_->labels_[i];
        out->file = &node_->files_[i];
        out->record = -1;
        out->index = index_++;
        return true;
      }

     private:
      const ImageFilesNode* node_;
      const int shards_;
      int64_t next_;
      int64_t index_ = 0;
    };
    return std::make_unique<It>(this, options);
  }

 private:
  const std::vector<std::string> files_;
  const std::vector<int64_t> labels_;
  ElementSpec spec_;
};

// The file's bytes into `*out` (its capacity reused): one open, fstat and read.
absl::Status ReadWholeFile(const std::string& path, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::InvalidArgumentError(absl::StrCat("cannot open: ", strerror(errno)));
  struct stat st;
  absl::Status status;
  if (::fstat(fd, &st) != 0) {
    status = absl::InvalidArgumentError(absl::StrCat("cannot stat: ", strerror(errno)));
  } else {
    out->resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < out->size()) {
      const ssize_t n = ::read(fd, out->data() + got, out->size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        status = absl::InvalidArgumentError(n < 0 ? absl::StrCat("cannot read: ", strerror(errno))
                                                  : "the file shrank while read");
        break;
      }
      got += static_cast<size_t>(n);
    }
  }
  ::close(fd);
  return status;
}

}  // namespace

absl::StatusOr<ImageFolder> ImageFolderPipeline(const std::string& dir,
                                                const ImageFolderOptions& options,
                                                int num_parallel_calls) {
  int channels = options.color_mode == "grayscale" ? 1
                 : options.color_mode == "rgb"     ? 3
                 : options.color_mode == "rgba"    ? 4
                 : options.color_mode.empty()      ? 0
                                                   : -1;
  if (channels < 0) {
    return absl::InvalidArgumentError(absl::StrCat("color_mode \"", options.color_mode,
                                                   "\": expected rgb, grayscale, rgba or \"\""));
  }
  const std::string& mode = options.label_mode;
  if (mode != "int" && mode != "categorical" && mode != "binary" && mode != "none") {
    return absl::InvalidArgumentError(
        absl::StrCat("label_mode \"", mode, "\": expected int, categorical, binary or none"));
  }
  if (options.height < 0 || options.width < 0 || (options.height == 0) != (options.width == 0)) {
    return absl::InvalidArgumentError(
        "image_size: height and width must be at least 1 (or both 0: the first image's)");
  }
  const bool split = options.validation_split > 0;
  if (options.validation_split < 0 || options.validation_split >= 1 ||
      split != (options.subset == "training" || options.subset == "validation") ||
      (!split && !options.subset.empty())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "validation_split ", options.validation_split, " with subset \"", options.subset,
        "\": a split in [0, 1) goes with subset training or validation, and only with it"));
  }
  std::error_code error;
  ImageFolder folder{Pipeline(nullptr)};
  std::vector<std::string> files;
  std::vector<int64_t> labels;
  std::vector<std::filesystem::path> classes;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.is_directory()) classes.push_back(entry.path());
  }
  if (error) {
    return absl::NotFoundError(absl::StrCat("cannot read the folder ", dir, ": ", error.message()));
  }
  std::sort(classes.begin(), classes.end());
  if (classes.empty()) {
    return absl::NotFoundError(absl::StrCat(dir, " has no class folders (one per class)"));
  }
  if (!options.class_names.empty()) {
    std::vector<std::string> found, wanted = options.class_names;
    for (const auto& c : classes) found.push_back(c.filename().string());
    std::sort(wanted.begin(), wanted.end());
    if (found != wanted) {
      return absl::InvalidArgumentError(absl::StrCat(dir, " has the class folders ",
                                                     absl::StrJoin(found, ", "), "; expected ",
                                                     absl::StrJoin(options.class_names, ", ")));
    }
    classes.clear();
    for (const std::string& name : options.class_names)
      classes.push_back(std::filesystem::path(dir) / name);
  }
  if (mode == "binary" && classes.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("label_mode binary needs 2 class folders; ", dir, " has ", classes.size()));
  }
  for (size_t c = 0; c < classes.size(); ++c) {
    folder.class_names.push_back(classes[c].filename().string());
    std::vector<std::string> in_class;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(classes[c], error)) {
      if (entry.is_regular_file() && IsImage(entry.path()))
        in_class.push_back(entry.path().string());
    }
    if (error) {
      return absl::NotFoundError(
          absl::StrCat("cannot read the folder ", classes[c].string(), ": ", error.message()));
    }
    std::sort(in_class.begin(), in_class.end());
    for (std::string& f : in_class) {
      files.push_back(std::move(f));
      labels.push_back(static_cast<int64_t>(c));
    }
  }
  if (files.empty()) return absl::NotFoundError(absl::StrCat(dir, " holds no PNG or JPEG file"));
  int64_t height = options.height, width = options.width;
  if (height == 0 || channels == 0) {
    // The first file's size and channels, for a folder of alike images.
    std::string bytes;
    absl::Status read = ReadWholeFile(files[0], &bytes);
    absl::StatusOr<Image> first = read.ok() ? DecodeImage(bytes, 0) : read;
    if (!first.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(files[0], ": ", first.status().message()));
    }
    if (height == 0) std::tie(height, width) = std::pair{first->height, first->width};
    if (channels == 0) channels = first->channels;
  }
  if (split) {
    // As Keras: the files in a seeded order, the last fraction held out.
    std::vector<size_t> order(files.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::mt19937_64 rng(options.seed);
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
    const size_t held = static_cast<size_t>(options.validation_split * files.size());
    const size_t begin = options.subset == "validation" ? files.size() - held : 0;
    const size_t end = options.subset == "validation" ? files.size() : files.size() - held;
    std::vector<std::string> kept_files;
    std::vector<int64_t> kept_labels;
    for (size_t k = begin; k < end; ++k) {
      kept_files.push_back(files[order[k]]);
      kept_labels.push_back(labels[order[k]]);
    }
    files = std::move(kept_files);
    labels = std::move(kept_labels);
  }
  folder.files = static_cast<int64_t>(files.size());
  const int64_t classes_count = static_cast<int64_t>(classes.size());
  ElementSpec spec = {{"image", ValueType::kFloat32, {height, width, channels}}};
  if (mode == "int") spec.push_back({"label", ValueType::kInt64, {}});
  if (mode == "categorical") spec.push_back({"label", ValueType::kFloat32, {classes_count}});
  if (mode == "binary") spec.push_back({"label", ValueType::kFloat32, {}});
  const float rescale = options.rescale;
  MapFn decode = [height, width, channels, rescale, mode,
                  classes_count](Element* e) -> absl::Status {
    const std::string path = e->values[0].strings()[0];
    const int64_t label = e->values[1].data<int64_t>()[0];
    thread_local std::string bytes;  // Each decoding thread reuses its buffer.
    RW_RETURN_IF_ERROR(ReadWholeFile(path, &bytes));
    absl::StatusOr<Image> image = DecodeImage(bytes, channels);
    if (!image.ok()) return image.status();
    e->values.resize(mode == "none" ? 1 : 2);
    e->values[0].Reset(ValueType::kFloat32, {height, width, channels});
    ResizeBilinear(*image, height, width, e->values[0].data<float>(), rescale);
    if (mode == "int") {
      e->values[1].Reset(ValueType::kInt64, {});
      e->values[1].data<int64_t>()[0] = label;
    } else if (mode == "categorical") {
      e->values[1].Reset(ValueType::kFloat32, {classes_count});
      for (int64_t c = 0; c < classes_count; ++c) e->values[1].data<float>()[c] = c == label;
    } else if (mode == "binary") {
      e->values[1].Reset(ValueType::kFloat32, {});
      e->values[1].data<float>()[0] = static_cast<float>(label);
    }
    return absl::OkStatus();
  };
  const int64_t count = folder.files;
  folder.pipeline = Pipeline(std::make_shared<ImageFilesNode>(std::move(files), std::move(labels)));
  if (options.shuffle) folder.pipeline = folder.pipeline.Shuffle(count, options.seed);
  folder.pipeline = folder.pipeline.Map(std::move(decode), num_parallel_calls, spec, "decode");
  return folder;
}

}  // namespace ringwork
