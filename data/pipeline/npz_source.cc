#include "data/pipeline/npz_source.h"

#include <zip.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/exit_code.h"
#include "base/status_macros.h"

namespace ringwork {
namespace {

constexpr size_t kChunkBytes = 256 << 10;  // Read from an array at a time.

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using ZipArchive = std::unique_ptr<zip_t, ZipCloser>;
using ZipMember = std::unique_ptr<zip_file_t, ZipFileCloser>;

absl::StatusOr<ZipArchive> OpenArchive(const std::string& path) {
  int code = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (z == nullptr) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    const std::string what = zip_error_strerror(&error);
    zip_error_fini(&error);
    if (code == ZIP_ER_NOENT || code == ZIP_ER_OPEN) {
      return absl::NotFoundError(absl::StrCat(path, ": ", what));
    }
    return InvalidDataError(absl::StrCat(path, ": not a .npz (zip) archive: ", what));
  }
  return ZipArchive(z);
}

// NumPy's descr -> the pipeline's type and the stored item's bytes.
absl::StatusOr<std::pair<ValueType, int>> TypeOf(const std::string& descr) {
  static const struct {
    const char* descr;
    ValueType type;
    int bytes;
  } kTypes[] = {{"<f4", ValueType::kFloat32, 4}, {"<f8", ValueType::kFloat32, 8},
                {"<i4", ValueType::kInt32, 4},   {"<i8", ValueType::kInt64, 8},
                {"|u1", ValueType::kUInt8, 1},   {"|b1", ValueType::kUInt8, 1},
                {"|i1", ValueType::kInt32, 1},   {"<i2", ValueType::kInt32, 2},
                {"<u2", ValueType::kInt32, 2},   {"<u4", ValueType::kInt64, 4}};
  for (const auto& t : kTypes) {
    if (descr == t.descr) return std::pair{t.type, t.bytes};
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "dtype '", descr,
      "' is not read (float32/64, int8/16/32/64, uint8/16/32 and bool, little-endian)"));
}

// The value of `key` in the header's dict literal, up to the next top-level comma.
absl::StatusOr<std::string> HeaderValue(const std::string& header, const std::string& key) {
  const size_t at = header.find(absl::StrCat("'", key, "':"));
  if (at == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("its header has no '", key, "'"));
  }
  size_t begin = at + key.size() + 3;
  while (begin < header.size() && header[begin] == ' ') ++begin;
  size_t end = begin;
  int depth = 0;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if ((c == ',' || c == '}') && depth == 0) break;
  }
  return std::string(absl::StripAsciiWhitespace(header.substr(begin, end - begin)));
}

// Reads exactly `size` bytes of a member (fewer: a cut archive).
absl::Status ReadExactly(zip_file_t* f, void* out, size_t size, const std::string& where) {
  size_t got = 0;
  while (got < size) {
    const zip_int64_t n = zip_fread(f, static_cast<char*>(out) + got, size - got);
    if (n < 0) return InvalidDataError(absl::StrCat(where, zip_file_strerror(f)));
    if (n == 0) return InvalidDataError(absl::StrCat(where, "the array ends early"));
    got += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// The .npy header of an open member: the array's dtype, shape and data offset.
absl::StatusOr<NpyArray> ReadHeader(zip_file_t* f, const std::string& name,
                                    const std::string& where) {
  unsigned char head[10];
  RW_RETURN_IF_ERROR(ReadExactly(f, head, sizeof(head), where));
  if (std::memcmp(head, "\x93NUMPY", 6) != 0) {
    return InvalidDataError(absl::StrCat(where, "not a .npy array"));
  }
  if (head[6] < 1 || head[6] > 3) {
    return InvalidDataError(absl::StrCat(where, ".npy format version ", head[6], " is not read"));
  }
  NpyArray array;
  array.name = name;
  size_t header_bytes = head[8] | (head[9] << 8);
  array.offset = 10;
  if (head[6] >= 2) {  // Versions 2 and 3: a 4-byte header length.
    unsigned char more[2];
    RW_RETURN_IF_ERROR(ReadExactly(f, more, 2, where));
    header_bytes |= (static_cast<size_t>(more[0]) << 16) | (static_cast<size_t>(more[1]) << 24);
    array.offset = 12;
  }
  if (header_bytes > (1 << 20)) {
    return InvalidDataError(absl::StrCat(where, "a header of ", header_bytes, " bytes"));
  }
  std::string header(header_bytes, '\0');
  RW_RETURN_IF_ERROR(ReadExactly(f, header.data(), header.size(), where));
  array.offset += static_cast<int64_t>(header_bytes);
  auto fail = [&](const absl::Status& s) {
    return InvalidDataError(absl::StrCat(where, s.message()));
  };
  absl::StatusOr<std::string> descr = HeaderValue(header, "descr");
  absl::StatusOr<std::string> fortran = HeaderValue(header, "fortran_order");
  absl::StatusOr<std::string> shape = HeaderValue(header, "shape");
  for (const auto* s : {&descr, &fortran, &shape}) {
    if (!s->ok()) return fail(s->status());
  }
  array.dtype = std::string(absl::StripSuffix(absl::StripPrefix(*descr, "'"), "'"));
  if (array.dtype.size() == 3 && array.dtype[0] == '=') array.dtype[0] = '<';
  auto type = TypeOf(array.dtype);
  if (!type.ok()) return fail(type.status());
  array.type = type->first;
  if (*fortran != "False") {
    return fail(absl::InvalidArgumentError(
        "an array in Fortran order (save np.ascontiguousarray(a) instead)"));
  }
  const absl::string_view dims = absl::StripSuffix(absl::StripPrefix(*shape, "("), ")");
  for (absl::string_view d : absl::StrSplit(dims, ',', absl::SkipWhitespace())) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(d), &v) || v < 0) {
      return fail(absl::InvalidArgumentError(absl::StrCat("a shape ", *shape, " not understood")));
    }
    array.shape.push_back(v);
  }
  if (array.shape.empty()) {
    return fail(absl::InvalidArgumentError("a scalar, not an array of rows"));
  }
  return array;
}

int ItemBytes(const NpyArray& a) { return TypeOf(a.dtype)->second; }

int64_t RowItems(const NpyArray& a) {
  int64_t n = 1;
  for (size_t i = 1; i < a.shape.size(); ++i) n *= a.shape[i];
  return n;
}

// Stored items -> the pipeline's type.
void Convert(const std::string& dtype, const char* in, int64_t n, TypedTensor* out) {
  if (dtype == "<f8") {
    for (int64_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, in + 8 * i, 8);
      out->data<float>()[i] = static_cast<float>(v);
    }
  } else if (dtype == "|i1" || dtype == "<i2" || dtype == "<u2") {
    for (int64_t i = 0; i < n; ++i) {
      int32_t v = 0;
      if (dtype == "|i1") v = static_cast<int8_t>(in[i]);
      if (dtype == "<i2")
        v = static_cast<int16_t>(static_cast<uint8_t>(in[2 * i]) |
                                 (static_cast<uint8_t>(in[2 * i + 1]) << 8));
      if (dtype == "<u2")
        v = static_cast<uint8_t>(in[2 * i]) | (static_cast<uint8_t>(in[2 * i + 1]) << 8);
      out->data<int32_t>()[i] = v;
    }
  } else if (dtype == "<u4") {
    for (int64_t i = 0; i < n; ++i) {
      uint32_t v;
      std::memcpy(&v, in + 4 * i, 4);
      out->data<int64_t>()[i] = v;
    }
  } else if (dtype == "|b1") {
    for (int64_t i = 0; i < n; ++i) out->data<uint8_t>()[i] = in[i] != 0;
  } else {
    std::memcpy(out->raw(), in, static_cast<size_t>(n) * ValueTypeSize(out->type()));
  }
}

// The archive's arrays, in its order; every array with the same rows.
absl::StatusOr<std::vector<NpyArray>> Describe(zip_t* z, const std::string& path) {
  std::vector<NpyArray> arrays;
  const zip_int64_t entries = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < entries; ++i) {
    const char* entry = zip_get_name(z, static_cast<zip_uint64_t>(i), 0);
    if (entry == nullptr || !absl::EndsWith(entry, ".npy")) continue;
    const std::string name(absl::StripSuffix(entry, ".npy"));
    const std::string where = absl::StrCat(path, ", array ", name, ": ");
    ZipMember f(zip_fopen_index(z, static_cast<zip_uint64_t>(i), 0));
    if (f == nullptr) {
      return InvalidDataError(absl::StrCat(where, zip_strerror(z)));
    }
    RW_ASSIGN_OR_RETURN(NpyArray array, ReadHeader(f.get(), name, where));
    arrays.push_back(std::move(array));
  }
  if (arrays.empty()) return InvalidDataError(absl::StrCat(path, ": holds no .npy array"));
  return arrays;
}

class NpzNode : public PipelineNode {
 public:
  NpzNode(std::vector<std::string> files, std::vector<NpyArray> arrays, ElementSpec spec,
          int64_t rows)
      : files_(std::move(files)), arrays_(std::move(arrays)), spec_(std::move(spec)), rows_(rows) {}
  const ElementSpec& spec() const override { return spec_; }
  std::string name() const override { return "npz"; }
  Kind kind() const override { return Kind::kSource; }
  int64_t file_count() const override { return static_cast<int64_t>(files_.size()); }
  int64_t cardinality() const override { return rows_; }

  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    class It : public ElementIterator {
     public:
      It(const NpzNode* node, const IterateOptions& options)
          : node_(node),
            shards_(std::max(options.num_shards, 1)),
            next_file_(options.shard_index),
            ignore_errors_(options.ignore_errors),
            stats_(options.count_source_skips ? options.stats : nullptr) {}
      absl::StatusOr<bool> Next(Element* out) override {
        while (true) {
          if (archive_ == nullptr) {
            if (next_file_ >= static_cast<int64_t>(node_->files_.size())) return false;
            file_ = &node_->files_[static_cast<size_t>(next_file_)];
            next_file_ += shards_;
            absl::Status opened = Open();
            if (!opened.ok()) {
              Close();
              if (!Skips(opened)) return opened;
              continue;
            }
          }
          if (row_ == rows_in_file_) {
            absl::Status ended = CheckEnds();
            Close();
            if (!ended.ok() && !Skips(ended)) return ended;
            continue;
          }
          absl::Status read = ReadRow(out);
          if (!read.ok()) {
            Close();
            if (!Skips(read)) return read;
            continue;
          }
          out->file = file_;
          out->record = row_++;
          out->record_is_line = false;
          out->index = index_++;
          return true;
        }
      }

     private:
      struct Stream {
        ZipMember member;
        NpyArray array;
        std::vector<char> buffer;
        size_t begin = 0, end = 0;
      };

      // Under ignore_errors: counts the rest of a bad archive as one skip.
      bool Skips(const absl::Status&) {
        if (!ignore_errors_) return false;
        if (stats_ != nullptr) stats_->AddSkipped(1);
        return true;
      }

      // The members close before their archive.
      void Close() {
        streams_.clear();
        archive_.reset();
      }

      std::string Where(const std::string& array) const {
        return absl::StrCat(*file_, ", array ", array, ", row ", row_, ": ");
      }

      absl::Status Open() {
        row_ = 0;
        RW_ASSIGN_OR_RETURN(archive_, OpenArchive(*file_));
        for (const NpyArray& want : node_->arrays_) {
          const std::string entry = want.name + ".npy";
          ZipMember f(zip_fopen(archive_.get(), entry.c_str(), 0));
          if (f == nullptr) {
            return InvalidDataError(
                absl::StrCat(*file_, ": no array ", want.name, " (the first archive has it)"));
          }
          RW_ASSIGN_OR_RETURN(NpyArray got, ReadHeader(f.get(), want.name, Where(want.name)));
          if (got.type != want.type || RowItems(got) != RowItems(want) ||
              Shape(got.shape.begin() + 1, got.shape.end()) !=
                  Shape(want.shape.begin() + 1, want.shape.end())) {
            return InvalidDataError(absl::StrCat(
                *file_, ", array ", want.name, ": ", got.dtype, " ", ShapeString(got.shape),
                " where the first archive has ", want.dtype, " rows of ",
                ShapeString(Shape(want.shape.begin() + 1, want.shape.end()))));
          }
          if (!streams_.empty() && got.shape[0] != streams_[0].array.shape[0]) {
            return InvalidDataError(absl::StrCat(*file_, ": arrays ", streams_[0].array.name,
                                                 " and ", got.name, " have different rows"));
          }
          Stream s;
          s.member = std::move(f);
          s.array = std::move(got);
          streams_.push_back(std::move(s));
        }
        rows_in_file_ = streams_[0].array.shape[0];
        return absl::OkStatus();
      }

      absl::Status ReadRow(Element* out) {
        out->values.resize(streams_.size());
        for (size_t k = 0; k < streams_.size(); ++k) {
          Stream& s = streams_[k];
          const size_t bytes = static_cast<size_t>(RowItems(s.array) * ItemBytes(s.array));
          if (s.end - s.begin < bytes) RW_RETURN_IF_ERROR(Refill(&s, bytes));
          TypedTensor& v = out->values[k];
          v.Reset(s.array.type, node_->spec_[k].shape);
          Convert(s.array.dtype, s.buffer.data() + s.begin, RowItems(s.array), &v);
          s.begin += bytes;
        }
        return absl::OkStatus();
      }

      // Moves what is left to the front and reads on, at least `bytes` in all.
      absl::Status Refill(Stream* s, size_t bytes) {
        const size_t left = s->end - s->begin;
        const size_t want = std::max(bytes, kChunkBytes);
        if (s->buffer.size() < want) s->buffer.resize(want);
        std::memmove(s->buffer.data(), s->buffer.data() + s->begin, left);
        s->begin = 0;
        s->end = left;
        // Not past the array's end: the last read leaves the member's CRC unchecked.
        const int64_t remaining_rows = rows_in_file_ - row_;
        const size_t row_bytes = static_cast<size_t>(RowItems(s->array) * ItemBytes(s->array));
        const size_t target = std::min(want, static_cast<size_t>(remaining_rows) * row_bytes);
        if (target <= left) return absl::OkStatus();
        RW_RETURN_IF_ERROR(ReadExactly(s->member.get(), s->buffer.data() + left, target - left,
                                       Where(s->array.name)));
        s->end = target;
        return absl::OkStatus();
      }

      // Every member read to its end, where libzip checks its CRC.
      absl::Status CheckEnds() {
        for (Stream& s : streams_) {
          char extra;
          const zip_int64_t n = zip_fread(s.member.get(), &extra, 1);
          if (n < 0) {
            return InvalidDataError(
                absl::StrCat(Where(s.array.name), zip_file_strerror(s.member.get())));
          }
          if (n > 0) {
            return InvalidDataError(
                absl::StrCat(Where(s.array.name), "more data than its shape holds"));
          }
        }
        return absl::OkStatus();
      }

      const NpzNode* node_;
      const int shards_;
      int64_t next_file_;
      const bool ignore_errors_;
      PipelineStats* stats_;
      const std::string* file_ = nullptr;
      ZipArchive archive_;           // Open while a file is read.
      std::vector<Stream> streams_;  // Its members, one per array (destroyed first).
      int64_t row_ = 0, rows_in_file_ = 0, index_ = 0;
    };
    return std::make_unique<It>(this, options);
  }

 private:
  const std::vector<std::string> files_;
  const std::vector<NpyArray> arrays_;  // The selected ones, as the first archive has them.
  const ElementSpec spec_;
  const int64_t rows_;
};

}  // namespace

absl::StatusOr<std::vector<NpyArray>> DescribeNpz(const std::string& path) {
  RW_ASSIGN_OR_RETURN(ZipArchive z, OpenArchive(path));
  return Describe(z.get(), path);
}

absl::StatusOr<Pipeline> NpzPipeline(std::vector<std::string> files,
                                     std::vector<std::string> select) {
  if (files.empty()) return absl::InvalidArgumentError("NpzPipeline: no files");
  RW_ASSIGN_OR_RETURN(const std::vector<NpyArray> first, DescribeNpz(files[0]));
  std::vector<NpyArray> arrays;
  if (select.empty()) {
    arrays = first;
  } else {
    for (const std::string& name : select) {
      auto it = std::find_if(first.begin(), first.end(),
                             [&](const NpyArray& a) { return a.name == name; });
      if (it == first.end()) {
        std::vector<std::string> names;
        for (const NpyArray& a : first) names.push_back(a.name);
        return absl::InvalidArgumentError(absl::StrCat(
            files[0], " has no array \"", name, "\" (it has ", absl::StrJoin(names, ", "), ")"));
      }
      arrays.push_back(*it);
    }
  }
  ElementSpec spec;
  for (const NpyArray& a : arrays) {
    spec.push_back({a.name, a.type, Shape(a.shape.begin() + 1, a.shape.end())});
  }
  // Every archive's rows (headers only), for the pass's length; the same arrays.
  int64_t rows = 0;
  for (const std::string& file : files) {
    RW_ASSIGN_OR_RETURN(const std::vector<NpyArray> described, DescribeNpz(file));
    int64_t file_rows = -1;
    for (const NpyArray& want : arrays) {
      auto got = std::find_if(described.begin(), described.end(),
                              [&](const NpyArray& a) { return a.name == want.name; });
      if (got == described.end()) {
        return InvalidDataError(
            absl::StrCat(file, ": no array ", want.name, " (", files[0], " has it)"));
      }
      if (got->type != want.type || Shape(got->shape.begin() + 1, got->shape.end()) !=
                                        Shape(want.shape.begin() + 1, want.shape.end())) {
        return InvalidDataError(absl::StrCat(
            file, ", array ", want.name, ": ", got->dtype, " ", ShapeString(got->shape), " where ",
            files[0], " has ", want.dtype, " rows of ",
            ShapeString(Shape(want.shape.begin() + 1, want.shape.end()))));
      }
    }
    for (const NpyArray& want : arrays) {
      const NpyArray& got = *std::find_if(described.begin(), described.end(),
                                          [&](const NpyArray& a) { return a.name == want.name; });
      if (file_rows >= 0 && got.shape[0] != file_rows) {
        return InvalidDataError(absl::StrCat(file, ": arrays ", arrays[0].name, " and ", got.name,
                                             " have ", file_rows, " and ", got.shape[0],
                                             " rows; the arrays read need one row per example"));
      }
      file_rows = got.shape[0];
    }
    rows += file_rows;
  }
  return Pipeline(
      std::make_shared<NpzNode>(std::move(files), std::move(arrays), std::move(spec), rows));
}

}  // namespace ringwork
