#include "data/csv_reader.h"

#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace ringwork {

absl::StatusOr<Examples> ReadCsv(const std::vector<std::string>& paths, const CsvOptions& options) {
  if (paths.empty()) return absl::InvalidArgumentError("no CSV files given");
  std::vector<float> features;
  Examples examples;
  int64_t columns = -1;
  for (size_t f = 0; f < paths.size(); ++f) {
    std::ifstream in(paths[f]);
    if (!in) return absl::NotFoundError(absl::StrCat(paths[f], ": cannot open"));
    std::string line;
    int64_t line_number = 0;
    while (std::getline(in, line)) {
      ++line_number;
      if (options.header && line_number == 1) continue;
      absl::string_view text = absl::StripAsciiWhitespace(line);
      if (text.empty()) continue;
      std::vector<absl::string_view> cells = absl::StrSplit(text, options.separator);
      const int64_t n = static_cast<int64_t>(cells.size());
      if (columns < 0) {
        columns = n;
        if (columns < 2) {
          return absl::InvalidArgumentError(absl::StrCat(
              paths[f], ":", line_number, ": need a label and at least one feature column"));
        }
      }
      if (n != columns) {
        return absl::InvalidArgumentError(
            absl::StrCat(paths[f], ":", line_number, ": ", n, " columns, expected ", columns));
      }
      const int64_t label_at =
          options.label_column < 0 ? n + options.label_column : options.label_column;
      if (label_at < 0 || label_at >= n) {
        return absl::InvalidArgumentError(absl::StrCat("label column ", options.label_column,
                                                       " does not exist in ", n, " columns"));
      }
      for (int64_t c = 0; c < n; ++c) {
        absl::string_view cell = absl::StripAsciiWhitespace(cells[c]);
        if (c == label_at) {
          int32_t label = 0;
          if (!absl::SimpleAtoi(cell, &label) || label < 0) {
            return absl::InvalidArgumentError(absl::StrCat(paths[f], ":", line_number, ": column ",
                                                           c + 1, ": label \"", cell,
                                                           "\" is not a non-negative integer"));
          }
          examples.labels.push_back(label);
        } else {
          float value = 0;
          if (!absl::SimpleAtof(cell, &value)) {
            return absl::InvalidArgumentError(absl::StrCat(paths[f], ":", line_number, ": column ",
                                                           c + 1, ": \"", cell,
                                                           "\" is not a number"));
          }
          features.push_back(value);
        }
      }
      examples.file_index.push_back(static_cast<int32_t>(f));
    }
    examples.files.push_back(paths[f]);
  }
  const int64_t count = examples.count();
  examples.features = Tensor({count, columns - 1}, features);
  return examples;
}

}  // namespace ringwork
