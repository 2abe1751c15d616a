#include "data/pipeline/csv_source.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "io/input_stream.h"

namespace ringwork {
namespace {

// The fields of `line` (quotes removed, "" inside quotes a quote); false when a
// quote is not closed.
bool SplitFields(absl::string_view line, char separator, std::vector<std::string>* fields) {
  fields->clear();
  std::string field;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"' && field.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == separator) {
      fields->push_back(std::move(field));
      field.clear();
      was_quoted = false;
    } else if (c != '\r' || i + 1 != line.size()) {
      field += c;
    }
  }
  if (quoted) return false;
  fields->push_back(std::move(field));
  return true;
}

// Reads `path` (GZIP when its first bytes say so) line by line.
class LineReader {
 public:
  static absl::StatusOr<std::unique_ptr<LineReader>> Open(const std::string& path) {
    char magic[2] = {0, 0};
    {
      RW_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> raw,
                          InputStream::Open(path, Compression::kNone, 4096));
      RW_ASSIGN_OR_RETURN(size_t got, raw->Read(magic, 2));
      (void)got;
    }
    const Compression c =
        DetectCompression(absl::string_view(magic, 2), false) == Compression::kGzip
            ? Compression::kGzip
            : Compression::kNone;
    RW_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, InputStream::Open(path, c));
    return std::unique_ptr<LineReader>(new LineReader(std::move(in)));
  }
  // The next line (without its newline) into `*line`; false at the end.
  absl::StatusOr<bool> Next(std::string* line) {
    line->clear();
    while (true) {
      if (at_ == end_) {
        if (ended_) return !line->empty();
        RW_ASSIGN_OR_RETURN(size_t got, in_->Read(buffer_.data(), buffer_.size()));
        at_ = 0;
        end_ = got;
        if (got == 0) {
          ended_ = true;
          return !line->empty();
        }
      }
      const char* start = buffer_.data() + at_;
      const void* newline = std::memchr(start, '\n', end_ - at_);
      if (newline == nullptr) {
        line->append(start, end_ - at_);
        at_ = end_;
        continue;
      }
      const size_t n = static_cast<const char*>(newline) - start;
      line->append(start, n);
      at_ += n + 1;
      return true;
    }
  }

 private:
  explicit LineReader(std::unique_ptr<InputStream> in) : in_(std::move(in)), buffer_(64 << 10) {}
  std::unique_ptr<InputStream> in_;
  std::vector<char> buffer_;
  size_t at_ = 0, end_ = 0;
  bool ended_ = false;
};

class LinesNode : public PipelineNode {
 public:
  LinesNode(std::vector<std::string> files, bool skip_header)
      : files_(std::move(files)),
        skip_header_(skip_header),
        spec_({{"line", ValueType::kString, {}}}) {}
  const ElementSpec& spec() const override { return spec_; }
  std::string name() const override { return "csv lines"; }
  Kind kind() const override { return Kind::kSource; }
  int64_t file_count() const override { return static_cast<int64_t>(files_.size()); }
  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    class It : public ElementIterator {
     public:
      It(const LinesNode* node, const IterateOptions& options)
          : node_(node), shards_(std::max(options.num_shards, 1)), next_(options.shard_index) {}
      absl::StatusOr<bool> Next(Element* out) override {
        while (true) {
          if (reader_ == nullptr) {
            if (next_ >= static_cast<int64_t>(node_->files_.size())) return false;
            file_ = &node_->files_[static_cast<size_t>(next_)];
            next_ += shards_;
            RW_ASSIGN_OR_RETURN(reader_, LineReader::Open(*file_));
            line_number_ = 0;
          }
          out->values.resize(1);
          TypedTensor& line = out->values[0];
          line.Reset(ValueType::kString, {});
          RW_ASSIGN_OR_RETURN(bool more, reader_->Next(&line.strings()[0]));
          if (!more) {
            reader_.reset();
            continue;
          }
          ++line_number_;
          if (line_number_ == 1 && node_->skip_header_) continue;
          if (absl::StripAsciiWhitespace(line.strings()[0]).empty()) continue;
          out->file = file_;
          out->record = line_number_;
          out->record_is_line = true;
          out->index = index_++;
          return true;
        }
      }

     private:
      const LinesNode* node_;
      const int shards_;
      int64_t next_;
      const std::string* file_ = nullptr;
      std::unique_ptr<LineReader> reader_;
      int64_t line_number_ = 0, index_ = 0;
    };
    return std::make_unique<It>(this, options);
  }

 private:
  const std::vector<std::string> files_;
  const bool skip_header_;
  ElementSpec spec_;
};

struct Column {
  std::string name;
  int field = 0;  // Its position in a line.
  ValueType type = ValueType::kFloat32;
  bool has_default = false;
  std::string default_text;
};

bool IsInt(absl::string_view s) {
  int64_t v;
  return absl::SimpleAtoi(s, &v);
}

bool IsNumber(absl::string_view s) {
  double v;
  return absl::SimpleAtod(s, &v);
}

}  // namespace

absl::StatusOr<Pipeline> CsvPipeline(const std::vector<std::string>& files,
                                     const CsvPipelineOptions& options, int num_parallel_calls) {
  if (files.empty()) return absl::InvalidArgumentError("a CSV pipeline of no files");
  // The columns: from the first file's header (or the options), and the first
  // rows for their types.
  RW_ASSIGN_OR_RETURN(std::unique_ptr<LineReader> first, LineReader::Open(files[0]));
  std::vector<std::string> names = options.column_names;
  std::string line;
  std::vector<std::string> fields;
  if (options.header) {
    RW_ASSIGN_OR_RETURN(bool any, first->Next(&line));
    if (!any || !SplitFields(line, options.separator, &fields)) {
      return absl::InvalidArgumentError(absl::StrCat(files[0], ": no header line"));
    }
    names.clear();
    for (const std::string& f : fields) names.push_back(std::string(absl::StripAsciiWhitespace(f)));
  }
  std::vector<std::vector<std::string>> sample;
  for (int64_t r = 0; r < options.infer_rows; ++r) {
    RW_ASSIGN_OR_RETURN(bool more, first->Next(&line));
    if (!more) break;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    if (!SplitFields(line, options.separator, &fields)) continue;
    if (names.empty()) {
      for (size_t c = 0; c < fields.size(); ++c) names.push_back(absl::StrCat("c", c));
    }
    sample.push_back(fields);
  }
  if (names.empty()) return absl::InvalidArgumentError(absl::StrCat(files[0], ": no columns"));
  std::vector<std::string> keep = options.select.empty() ? names : options.select;
  std::vector<Column> columns;
  for (const std::string& name : keep) {
    const auto at = std::find(names.begin(), names.end(), name);
    if (at == names.end()) {
      return absl::InvalidArgumentError(absl::StrCat(files[0], " has no column \"", name,
                                                     "\" (its header names ",
                                                     absl::StrJoin(names, ", "), ")"));
    }
    Column c;
    c.name = name;
    c.field = static_cast<int>(at - names.begin());
    const auto given = options.types.find(name);
    if (given != options.types.end()) {
      RW_ASSIGN_OR_RETURN(c.type, ParseValueType(given->second));
    } else {
      bool ints = true, numbers = true;
      for (const auto& row : sample) {
        if (static_cast<size_t>(c.field) >= row.size()) continue;
        const std::string v(absl::StripAsciiWhitespace(row[static_cast<size_t>(c.field)]));
        if (v.empty() || v == options.na_value) continue;
        ints = ints && IsInt(v);
        numbers = numbers && IsNumber(v);
      }
      c.type = ints ? ValueType::kInt64 : numbers ? ValueType::kFloat32 : ValueType::kString;
    }
    const auto d = options.defaults.find(name);
    if (d != options.defaults.end()) {
      c.has_default = true;
      c.default_text = d->second;
    }
    columns.push_back(std::move(c));
  }
  ElementSpec spec;
  for (const Column& c : columns) spec.push_back({c.name, c.type, {}});
  const size_t field_count = names.size();
  const char separator = options.separator;
  const std::string na = options.na_value;
  MapFn parse = [columns, field_count, separator, na](Element* e) -> absl::Status {
    std::vector<std::string> fields;
    const std::string line = std::move(e->values[0].strings()[0]);
    if (!SplitFields(line, separator, &fields)) {
      return absl::InvalidArgumentError("a quote is not closed");
    }
    if (fields.size() != field_count) {
      return absl::InvalidArgumentError(
          absl::StrCat(fields.size(), " fields; the header has ", field_count));
    }
    e->values.resize(columns.size());
    for (size_t k = 0; k < columns.size(); ++k) {
      const Column& c = columns[k];
      std::string text(absl::StripAsciiWhitespace(fields[static_cast<size_t>(c.field)]));
      if (text.empty() || (!na.empty() && text == na)) {
        if (!c.has_default) {
          return absl::InvalidArgumentError(absl::StrCat(
              "column \"", c.name, "\" (field ", c.field + 1, ") is missing and has no default"));
        }
        text = c.default_text;
      }
      TypedTensor& v = e->values[k];
      v.Reset(c.type, {});
      bool ok = true;
      if (c.type == ValueType::kString) {
        v.strings()[0] = text;
      } else if (c.type == ValueType::kFloat32) {
        float f = 0;
        ok = absl::SimpleAtof(text, &f);
        v.data<float>()[0] = f;
      } else {
        int64_t i = 0;
        ok = absl::SimpleAtoi(text, &i);
        if (c.type == ValueType::kInt64) {
          v.data<int64_t>()[0] = i;
        } else if (c.type == ValueType::kInt32) {
          v.data<int32_t>()[0] = static_cast<int32_t>(i);
        } else {
          v.data<uint8_t>()[0] = static_cast<uint8_t>(i);
        }
      }
      if (!ok) {
        return absl::InvalidArgumentError(
            absl::StrCat("column \"", c.name, "\" (field ", c.field + 1, "): \"", text,
                         "\" is not ", c.type == ValueType::kFloat32 ? "a number" : "an integer"));
      }
    }
    return absl::OkStatus();
  };
  return Pipeline(std::make_shared<LinesNode>(files, options.header))
      .Map(std::move(parse), num_parallel_calls, spec, "parse_csv");
}

absl::StatusOr<ElementSpec> PackedSpec(const ElementSpec& spec,
                                       const std::vector<std::string>& names,
                                       const std::string& into) {
  ElementSpec out;
  int64_t width = 0;
  for (const std::string& name : names) {
    const int i = FeatureIndex(spec, name);
    if (i < 0) return absl::InvalidArgumentError(absl::StrCat("no feature \"", name, "\" to pack"));
    const FeatureInfo& f = spec[static_cast<size_t>(i)];
    if (f.type == ValueType::kString || NumElements(f.shape) < 0 ||
        std::any_of(f.shape.begin(), f.shape.end(), [](int64_t d) { return d < 0; })) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature \"", name, "\" cannot be packed into numbers (",
                       ValueTypeName(f.type), " ", ShapeString(f.shape), ")"));
    }
    width += NumElements(f.shape);
  }
  out.push_back({into, ValueType::kFloat32, {width}});
  for (const FeatureInfo& f : spec) {
    if (std::find(names.begin(), names.end(), f.name) == names.end()) out.push_back(f);
  }
  return out;
}

MapFn PackFeaturesFn(const ElementSpec& spec, const std::vector<std::string>& names,
                     const std::string& into) {
  std::vector<int> packed, kept;
  int64_t width = 0;
  for (const std::string& name : names) {
    const int i = FeatureIndex(spec, name);
    packed.push_back(i);
    width += NumElements(spec[static_cast<size_t>(i)].shape);
  }
  for (size_t i = 0; i < spec.size(); ++i) {
    if (std::find(packed.begin(), packed.end(), static_cast<int>(i)) == packed.end()) {
      kept.push_back(static_cast<int>(i));
    }
  }
  (void)into;
  return [packed, kept, width](Element* e) -> absl::Status {
    TypedTensor vector(ValueType::kFloat32, {width});
    float* out = vector.data<float>();
    for (int i : packed) {
      const TypedTensor& v = e->values[static_cast<size_t>(i)];
      for (int64_t k = 0; k < v.size(); ++k) *out++ = static_cast<float>(v.ValueAsDouble(k));
    }
    std::vector<TypedTensor> values;
    values.reserve(1 + kept.size());
    values.push_back(std::move(vector));
    for (int i : kept) values.push_back(std::move(e->values[static_cast<size_t>(i)]));
    e->values = std::move(values);
    return absl::OkStatus();
  };
}

}  // namespace ringwork
