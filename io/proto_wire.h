// Just enough of protobuf's wire format to write and read TensorBoard's few
// messages (Event, Summary, HistogramProto) by field number, without their .proto
// files: varints, 64- and 32-bit fixed fields, length-delimited fields.
//
//   WireWriter event;
//   event.Double(1, wall_time);  event.Varint(2, step);  event.Bytes(5, summary.data());
//   WireReader reader(bytes);
//   while (reader.Next()) { if (reader.Is(2, kVarint)) step = reader.varint(); ... }
//   if (!reader.ok()) ...malformed...
//
// The reader never reads outside its input; a field of a number or wire type a
// caller does not expect is skipped, as protobuf skips unknown fields.
#ifndef RINGWORK_IO_PROTO_WIRE_H_
#define RINGWORK_IO_PROTO_WIRE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ringwork {

enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

class WireWriter {
 public:
  void Varint(int field, uint64_t value);
  void Double(int field, double value);  // fixed64
  void Float(int field, float value);    // fixed32
  void Bytes(int field, absl::string_view value);
  void PackedDoubles(int field, const std::vector<double>& values);
  const std::string& data() const { return data_; }

 private:
  void Tag(int field, int wire_type);
  void RawVarint(uint64_t value);
  std::string data_;
};

class WireReader {
 public:
  explicit WireReader(absl::string_view data) : data_(data) {}
  // Advances to the next field; false at the end or on malformed input (ok()):
  // a cut field, field number 0 or above 2^29 - 1, wire types 3, 4, 6, 7.
  bool Next();
  bool ok() const { return ok_; }
  int field() const { return field_; }
  WireType wire_type() const { return wire_type_; }
  bool Is(int field, WireType type) const { return field_ == field && wire_type_ == type; }
  uint64_t varint() const { return varint_; }
  double as_double() const;  // Of a kFixed64 field.
  float as_float() const;    // Of a kFixed32 field.
  absl::string_view bytes() const { return bytes_; }
  // Appends a repeated double field's values, packed or not; false (and the
  // reader not ok()) for another wire type or a packed size not a multiple of 8.
  bool AppendDoubles(std::vector<double>* values);

 private:
  bool ReadVarint(uint64_t* value);
  absl::string_view data_;
  size_t at_ = 0;
  bool ok_ = true;
  int field_ = 0;
  WireType wire_type_ = kVarint;
  uint64_t varint_ = 0;  // Varint fields, and the bits of fixed ones.
  absl::string_view bytes_;
};

}  // namespace ringwork

#endif  // RINGWORK_IO_PROTO_WIRE_H_
