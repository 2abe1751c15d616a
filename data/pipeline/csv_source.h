// CSV files as a pipeline source, as tf.data's make_csv_dataset reads them: a
// header names the columns, fields may be quoted ("a, b" and "" for a quote),
// missing fields take a per-column default, and each column's type (int64,
// float32 or string) is inferred from the first rows unless given. The files are
// read line by line through bounded buffers (GZIP too); a worker with the FILE
// policy reads only its own.
//
//   RW_ASSIGN_OR_RETURN(Pipeline rows, CsvPipeline(files, {.defaults = {{"age", "0"}}}));
//   // rows.spec(): one scalar feature per column ("age": int64, "income": float32, ...)
//
// The source gives each line as it is ({"line": string}); a Map parses it, so
// that a worker with the DATA policy parses only its own lines. A line that
// cannot be parsed (another number of fields, a value that is not a number, a
// missing value without a default) is an error naming the file, the line and
// the column; with ignore_errors it is skipped and counted.
#ifndef RINGWORK_DATA_PIPELINE_CSV_SOURCE_H_
#define RINGWORK_DATA_PIPELINE_CSV_SOURCE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/pipeline/pipeline.h"

namespace ringwork {

struct CsvPipelineOptions {
  bool header = true;  // The first line of each file names the columns.
  char separator = ',';
  // Without a header: the columns' names (default "c0", "c1", ...).
  std::vector<std::string> column_names;
  // Columns to keep, in this order (empty: all).
  std::vector<std::string> select;
  // Types by column name ("float32", "int64", "string"); others are inferred from
  // the first rows of the first file.
  std::map<std::string, std::string> types;
  // A missing field ("" or na_value) takes its column's default; a column without
  // one refuses it.
  std::map<std::string, std::string> defaults;
  std::string na_value;
  int64_t infer_rows = 100;
};

// The pipeline of parsed rows: the source of lines and the Map that parses them
// (`num_parallel_calls` threads). INVALID_ARGUMENT naming the file for a header
// that does not match the first file's, a selected column that is missing;
// NOT_FOUND for a file that cannot be read.
absl::StatusOr<Pipeline> CsvPipeline(const std::vector<std::string>& files,
                                     const CsvPipelineOptions& options = {},
                                     int num_parallel_calls = kAutotune);

// A Map function that puts the numbers of features `names` (scalars or vectors,
// any numeric type) side by side into one float32 vector feature `into`, which
// replaces them; the spec it makes is PackedSpec's.
MapFn PackFeaturesFn(const ElementSpec& spec, const std::vector<std::string>& names,
                     const std::string& into);
absl::StatusOr<ElementSpec> PackedSpec(const ElementSpec& spec,
                                       const std::vector<std::string>& names,
                                       const std::string& into);

}  // namespace ringwork

#endif  // RINGWORK_DATA_PIPELINE_CSV_SOURCE_H_
