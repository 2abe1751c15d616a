// The per-instruction-set variants of the optimizer updates (kernels/optimizers.h
// picks one for the CPU it runs on), exposed so that a test can run every variant
// the CPU supports on the same inputs and compare the bits: replicas on hosts with
// and without AVX-512 must compute the same weights from the same gradients.
//
//   if (optimizer_isa::Supported(optimizer_isa::Isa::kAvx512)) {
//     optimizer_isa::AdamAvx512(options, step, p, g, m, v, n);
//   }
#ifndef RINGWORK_KERNELS_OPTIMIZERS_ISA_H_
#define RINGWORK_KERNELS_OPTIMIZERS_ISA_H_

#include <cstdint>

#include "kernels/cpu_isa.h"
#include "kernels/optimizers.h"

namespace ringwork {
namespace optimizer_isa {

using ::ringwork::Isa;
inline bool Supported(Isa isa) { return IsaSupported(isa); }

void SgdAvx512(const SgdOptions& o, float* param, const float* grad, float* velocity,
               int64_t count);
void SgdAvx2(const SgdOptions& o, float* param, const float* grad, float* velocity, int64_t count);
void SgdBaseline(const SgdOptions& o, float* param, const float* grad, float* velocity,
                 int64_t count);
void AdamAvx512(const AdamOptions& o, int64_t step, float* param, const float* grad, float* m,
                float* v, int64_t count);
void AdamAvx2(const AdamOptions& o, int64_t step, float* param, const float* grad, float* m,
              float* v, int64_t count);
void AdamBaseline(const AdamOptions& o, int64_t step, float* param, const float* grad, float* m,
                  float* v, int64_t count);

void RmspropAvx512(const RmspropOptions& o, float* param, const float* grad, float* velocity,
                   float* momentum, int64_t count);
void RmspropAvx2(const RmspropOptions& o, float* param, const float* grad, float* velocity,
                 float* momentum, int64_t count);
void RmspropBaseline(const RmspropOptions& o, float* param, const float* grad, float* velocity,
                     float* momentum, int64_t count);
void AdagradAvx512(const AdagradOptions& o, float* param, const float* grad, float* accumulator,
                   int64_t count);
void AdagradAvx2(const AdagradOptions& o, float* param, const float* grad, float* accumulator,
                 int64_t count);
void AdagradBaseline(const AdagradOptions& o, float* param, const float* grad, float* accumulator,
                     int64_t count);

}  // namespace optimizer_isa
}  // namespace ringwork

#endif  // RINGWORK_KERNELS_OPTIMIZERS_ISA_H_
