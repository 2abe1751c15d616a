#include "tensor/reduce.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace ringwork {
namespace {

// The plain reference every optimised loop is compared with.
template <typename T>
T Reference(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      return a + b;
    case ReduceOp::kMin:
      return std::min(a, b);
    case ReduceOp::kMax:
      return std::max(a, b);
    case ReduceOp::kProduct:
      return a * b;
  }
  return a;
}

template <typename T>
void CheckAgainstReference(DataType dtype) {
  for (ReduceOp op :
       {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    for (size_t n : {0, 1, 7, 16, 33, 1000, 4099}) {
      std::vector<T> dst(n), src(n), expected(n);
      for (size_t i = 0; i < n; ++i) {
        dst[i] = static_cast<T>(static_cast<int>(i % 13) - 6);
        src[i] = static_cast<T>(static_cast<int>((i * 7) % 11) - 5);
        expected[i] = Reference(op, dst[i], src[i]);
      }
      Accumulate(dtype, op, dst.data(), src.data(), n);
      INFO(DataTypeName(dtype) << " " << ReduceOpName(op) << " n=" << n);
      CHECK(dst == expected);
    }
  }
}

TEST_CASE("accumulate matches the reference for every dtype and op", "[reduce]") {
  CheckAgainstReference<float>(DataType::kFloat32);
  CheckAgainstReference<double>(DataType::kFloat64);
  CheckAgainstReference<int32_t>(DataType::kInt32);
  CheckAgainstReference<int64_t>(DataType::kInt64);
}

TEST_CASE("bfloat16 reduces through float32 with round-to-nearest-even", "[reduce]") {
  std::vector<uint16_t> dst = {BFloat16::FromFloat(1.0f).bits, BFloat16::FromFloat(-2.5f).bits,
                               BFloat16::FromFloat(256.0f).bits};
  std::vector<uint16_t> src = {BFloat16::FromFloat(2.0f).bits, BFloat16::FromFloat(0.5f).bits,
                               BFloat16::FromFloat(1.0f).bits};
  Accumulate(DataType::kBFloat16, ReduceOp::kSum, dst.data(), src.data(), 3);
  CHECK(BFloat16{dst[0]}.ToFloat() == 3.0f);
  CHECK(BFloat16{dst[1]}.ToFloat() == -2.0f);
  CHECK(BFloat16{dst[2]}.ToFloat() == 256.0f);  // 257 is not representable: ties to even
  Accumulate(DataType::kBFloat16, ReduceOp::kMax, dst.data(), src.data(), 3);
  CHECK(BFloat16{dst[1]}.ToFloat() == 0.5f);
}

TEST_CASE("bfloat16 conversion rounds and keeps NaN", "[reduce]") {
  CHECK(BFloat16::FromFloat(1.0f).bits == 0x3f80);
  CHECK(BFloat16::FromFloat(1.00390625f).bits == 0x3f80);  // halfway: to even
  CHECK(BFloat16::FromFloat(1.01171875f).bits == 0x3f82);  // halfway: to even (up)
  CHECK(std::isnan(BFloat16::FromFloat(std::numeric_limits<float>::quiet_NaN()).ToFloat()));
  CHECK(std::isinf(BFloat16::FromFloat(std::numeric_limits<float>::infinity()).ToFloat()));
}

TEST_CASE("bulk bfloat16 conversion rounds to nearest even, for every kind of float", "[reduce]") {
  // Bit patterns across the whole range (normals, subnormals, infinities, NaNs of
  // both signs), plus every tie and near-tie around a few values.
  std::vector<uint32_t> patterns;
  for (uint64_t f = 0; f <= 0xffffffffull; f += 65521) patterns.push_back(static_cast<uint32_t>(f));
  for (uint32_t base : {0x3f800000u, 0x3f810000u, 0x7f7f0000u, 0x00010000u, 0xbf800000u}) {
    for (uint32_t low : {0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x0u}) patterns.push_back(base | low);
  }
  for (uint32_t special :
       {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7f7fffffu}) {
    patterns.push_back(special);
  }
  std::vector<float> in(patterns.size());
  std::memcpy(in.data(), patterns.data(), patterns.size() * sizeof(float));
  std::vector<BFloat16> bf(in.size());
  ConvertToBFloat16(in.data(), bf.data(), in.size());
  for (size_t i = 0; i < patterns.size(); ++i) {
    const uint32_t f = patterns[i];
    INFO("float bits " << std::hex << f << " -> " << bf[i].bits);
    if ((f & 0x7fffffffu) > 0x7f800000u) {  // NaN: stays NaN, sign kept, quiet.
      CHECK(std::isnan(bf[i].ToFloat()));
      CHECK((bf[i].bits & 0x8000u) == ((f >> 16) & 0x8000u));
      CHECK((bf[i].bits & 0x0040u) != 0);
      continue;
    }
    // Round half to even, written out: keep the top half, add one when the rest is
    // above half, or exactly half with an odd top half.
    const uint32_t top = f >> 16, rest = f & 0xffffu;
    const uint32_t expected = top + ((rest > 0x8000u || (rest == 0x8000u && (top & 1u))) ? 1u : 0u);
    CHECK(bf[i].bits == static_cast<uint16_t>(expected));
    CHECK(BFloat16::FromFloat(in[i]).bits == bf[i].bits);
  }
  std::vector<float> back(in.size());
  ConvertFromBFloat16(bf.data(), back.data(), bf.size());
  for (size_t i = 0; i < bf.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &back[i], sizeof(bits));
    CHECK(bits == static_cast<uint32_t>(bf[i].bits)
                      << 16);  // Exact: bfloat16 is a float's top half.
  }
}

TEST_CASE("mean divides once, truncating integers", "[reduce]") {
  std::vector<float> f = {3, 6, -9};
  FinishMean(DataType::kFloat32, f.data(), 3, 3);
  CHECK(f == std::vector<float>{1, 2, -3});
  std::vector<int32_t> i = {7, -7};
  FinishMean(DataType::kInt32, i.data(), 2, 2);
  CHECK(i == std::vector<int32_t>{3, -3});
}

}  // namespace
}  // namespace ringwork
