#include "data/pipeline/tfrecord_source.h"

#include "absl/strings/str_cat.h"
#include "io/record_reader.h"

namespace ringwork {
namespace {

class TFRecordNode : public PipelineNode {
 public:
  TFRecordNode(std::vector<std::string> files, std::optional<Compression> compression)
      : files_(std::move(files)),
        compression_(compression),
        spec_({{"record", ValueType::kString, {}}}) {}
  const ElementSpec& spec() const override { return spec_; }
  std::string name() const override { return "tfrecord"; }
  Kind kind() const override { return Kind::kSource; }
  int64_t file_count() const override { return static_cast<int64_t>(files_.size()); }

  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    class It : public ElementIterator {
     public:
      It(const TFRecordNode* node, const IterateOptions& options)
          : node_(node),
            shards_(std::max(options.num_shards, 1)),
            next_file_(options.shard_index),
            ignore_errors_(options.ignore_errors),
            stats_(options.count_source_skips ? options.stats : nullptr) {}
      absl::StatusOr<bool> Next(Element* out) override {
        while (true) {
          if (reader_ == nullptr) {
            if (next_file_ >= static_cast<int64_t>(node_->files_.size())) return false;
            file_ = &node_->files_[static_cast<size_t>(next_file_)];
            next_file_ += shards_;
            absl::StatusOr<std::unique_ptr<RecordReader>> opened =
                RecordReader::Open(*file_, node_->compression_);
            if (!opened.ok()) return opened.status();
            reader_ = std::move(*opened);
          }
          out->values.resize(1);
          TypedTensor& record = out->values[0];
          record.Reset(ValueType::kString, {});  // Its string's buffer is reused.
          const int64_t at = reader_->records();
          absl::StatusOr<bool> more = reader_->Next(&record.strings()[0]);
          if (!more.ok()) {
            if (!ignore_errors_) return more.status();
            if (stats_ != nullptr) stats_->AddSkipped(1);
            // Past a record whose data alone failed, the next; past broken
            // framing nothing in this file can be trusted: the next file.
            if (!reader_->can_continue()) reader_.reset();
            continue;
          }
          if (!*more) {
            reader_.reset();
            continue;
          }
          out->file = file_;
          out->record = at;
          out->record_is_line = false;
          out->index = index_++;
          return true;
        }
      }

     private:
      const TFRecordNode* node_;
      const int shards_;
      int64_t next_file_;
      const bool ignore_errors_;
      PipelineStats* stats_;
      const std::string* file_ = nullptr;
      std::unique_ptr<RecordReader> reader_;
      int64_t index_ = 0;
    };
    return std::make_unique<It>(this, options);
  }

 private:
  const std::vector<std::string> files_;
  const std::optional<Compression> compression_;
  ElementSpec spec_;
};

}  // namespace

Pipeline TFRecordPipeline(std::vector<std::string> files, std::optional<Compression> compression) {
  return Pipeline(std::make_shared<TFRecordNode>(std::move(files), compression));
}

ElementSpec ParsedSpec(const ExampleParser& parser) {
  ElementSpec spec;
  for (const FeatureSpec& f : parser.specs()) {
    spec.push_back({f.name, f.type, f.var_len ? Shape{-1} : f.shape});
  }
  return spec;
}

MapFn ParseExamplesFn(ExampleParser parser) {
  return [parser = std::move(parser)](Element* e) -> absl::Status {
    // The features are parsed from the record in place: the values are sized
    // first (so the record's string does not move), and a value that becomes a
    // number keeps its strings (TypedTensor::Reset), the record among them.
    e->values.resize(std::max<size_t>(parser.specs().size(), 1));
    const std::string& held = e->values[0].strings()[0];
    if (parser.specs()[0].type == ValueType::kString) {
      // Strings would be written over the record's own: parse a copy.
      const std::string copy = held;
      return parser.Parse(copy, &e->values);
    }
    return parser.Parse(absl::string_view(held.data(), held.size()), &e->values);
  };
}

}  // namespace ringwork
