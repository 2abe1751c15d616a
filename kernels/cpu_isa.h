// The x86-64 instruction sets Ringwork's hand-written loops are compiled for, and the
// pick of the widest one this CPU runs. Loops that must give the same bits on every
// CPU are compiled once per set (function `target` attributes) from one body, built
// without fused multiply-add contraction and vectorised only across independent
// elements, so the pick changes speed, never results; tests run every supported set.
//
//   static const auto fn = PickForCpu(&LoopAvx512, &LoopAvx2, &LoopBaseline);
//   fn(...);
//   if (IsaSupported(Isa::kAvx512)) { ... }
#ifndef RINGWORK_KERNELS_CPU_ISA_H_
#define RINGWORK_KERNELS_CPU_ISA_H_

namespace ringwork {

enum class Isa { kAvx512, kAvx2, kBaseline };

inline bool IsaSupported(Isa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f");
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2");
    case Isa::kBaseline:
      return true;
  }
  return false;
}

template <typename T>
T PickForCpu(T avx512, T avx2, T baseline) {
  if (IsaSupported(Isa::kAvx512)) return avx512;
  if (IsaSupported(Isa::kAvx2)) return avx2;
  return baseline;
}

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_CPU_ISA_H_
