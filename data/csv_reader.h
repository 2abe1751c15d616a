// Reads labelled examples from CSV files: every column is a float feature except
// the label column (an integer class). Several files make one set of examples that
// remembers which file each example came from (for sharding by file).
//
//   absl::StatusOr<Examples> e = ReadCsv({"a.csv", "b.csv"}, {.label_column = -1});
#ifndef RINGWORK_DATA_CSV_READER_H_
#define RINGWORK_DATA_CSV_READER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/examples.h"

namespace ringwork {

struct CsvOptions {
  int label_column = -1;  // Negative: from the end (-1 is the last column).
  bool header = true;     // Skip the first line of each file.
  char separator = ',';
};

// Errors name the file, the line and the column.
absl::StatusOr<Examples> ReadCsv(const std::vector<std::string>& paths, const CsvOptions& options);

}  // namespace ringwork

#endif  // RINGWORK_DATA_CSV_READER_H_
