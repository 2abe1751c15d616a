#include "io/proto_wire.h"

#include <cstring>

namespace ringwork {
namespace {

constexpr uint64_t kMaxField = (uint64_t{1} << 29) - 1;

uint64_t LittleEndian(const char* p, size_t size) {
  uint64_t value = 0;
  for (size_t i = 0; i < size; ++i)
    value |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return value;
}

double DoubleOf(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, 8);
  return value;
}

}  // namespace

void WireWriter::RawVarint(uint64_t value) {
  while (value >= 0x80) {
    data_.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  data_.push_back(static_cast<char>(value));
}

void WireWriter::Tag(int field, int wire_type) {
  RawVarint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
}

void WireWriter::Varint(int field, uint64_t value) {
  Tag(field, kVarint);
  RawVarint(value);
}

void WireWriter::Double(int field, double value) {
  Tag(field, kFixed64);
  uint64_t bits;
  std::memcpy(&bits, &value, 8);
  for (int i = 0; i < 8; ++i) data_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

void WireWriter::Float(int field, float value) {
  Tag(field, kFixed32);
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  for (int i = 0; i < 4; ++i) data_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

void WireWriter::Bytes(int field, absl::string_view value) {
  Tag(field, kLengthDelimited);
  RawVarint(value.size());
  data_.append(value.data(), value.size());
}

void WireWriter::PackedDoubles(int field, const std::vector<double>& values) {
  WireWriter packed;
  for (double v : values) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    for (int i = 0; i < 8; ++i) packed.data_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }
  Bytes(field, packed.data_);
}

bool WireReader::ReadVarint(uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at_ >= data_.size()) return false;
    const uint8_t byte = static_cast<uint8_t>(data_[at_++]);
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

bool WireReader::Next() {
  if (!ok_ || at_ >= data_.size()) return false;
  uint64_t tag = 0;
  if (!ReadVarint(&tag)) return ok_ = false;
  if ((tag >> 3) == 0 || (tag >> 3) > kMaxField) return ok_ = false;
  field_ = static_cast<int>(tag >> 3);
  switch (tag & 7) {
    case kVarint:
      wire_type_ = kVarint;
      if (!ReadVarint(&varint_)) return ok_ = false;
      return true;
    case kFixed64:
    case kFixed32: {
      wire_type_ = (tag & 7) == kFixed64 ? kFixed64 : kFixed32;
      const size_t size = wire_type_ == kFixed64 ? 8 : 4;
      if (data_.size() - at_ < size) return ok_ = false;
      varint_ = LittleEndian(data_.data() + at_, size);
      at_ += size;
      return true;
    }
    case kLengthDelimited: {
      wire_type_ = kLengthDelimited;
      uint64_t size = 0;
      if (!ReadVarint(&size) || size > data_.size() - at_) return ok_ = false;
      bytes_ = data_.substr(at_, size);
      at_ += size;
      return true;
    }
  }
  return ok_ = false;
}

double WireReader::as_double() const { return DoubleOf(varint_); }

float WireReader::as_float() const {
  const uint32_t bits = static_cast<uint32_t>(varint_);
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

bool WireReader::AppendDoubles(std::vector<double>* values) {
  if (wire_type_ == kFixed64) {
    values->push_back(as_double());
    return true;
  }
  if (wire_type_ != kLengthDelimited || bytes_.size() % 8 != 0) return ok_ = false;
  for (size_t i = 0; i < bytes_.size(); i += 8)
    values->push_back(DoubleOf(LittleEndian(bytes_.data() + i, 8)));
  return true;
}

}  // namespace ringwork
