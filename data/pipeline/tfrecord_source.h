// TFRecord files as a pipeline source: elements {"record": string}, one per
// record, in file order (tf.data.TFRecordDataset). The files are read one after
// the other through bounded buffers; a worker with the FILE policy reads only its
// own (IterateOptions' shard). ParseExamplesFn turns the records into features.
//
//   RW_ASSIGN_OR_RETURN(std::vector<std::string> files, ExpandGlob("train-*.tfrecord"));
//   RW_ASSIGN_OR_RETURN(ExampleParser parser, ExampleParser::Create(specs));
//   Pipeline train = TFRecordPipeline(files).Map(ParseExamplesFn(parser),
//                                                 kAutotune, ParsedSpec(parser));
//
// A corrupt record (a CRC, a cut file) is an error naming the file and record;
// with ignore_errors the rest of that file is skipped (its framing cannot be
// trusted past it) and counted. A record that does not match the spec is an
// error of the Map naming the file, the record and the feature.
#ifndef RINGWORK_DATA_PIPELINE_TFRECORD_SOURCE_H_
#define RINGWORK_DATA_PIPELINE_TFRECORD_SOURCE_H_

#include <optional>
#include <string>
#include <vector>

#include "data/pipeline/pipeline.h"
#include "data/tf_example.h"
#include "io/input_stream.h"

namespace ringwork {

// `compression`: nullopt detects each file's.
Pipeline TFRecordPipeline(std::vector<std::string> files,
                          std::optional<Compression> compression = std::nullopt);

// A Map function: {"record"} -> the parser's features.
MapFn ParseExamplesFn(ExampleParser parser);
// The spec of its elements.
ElementSpec ParsedSpec(const ExampleParser& parser);

}  // namespace ringwork

#endif  // RINGWORK_DATA_PIPELINE_TFRECORD_SOURCE_H_
