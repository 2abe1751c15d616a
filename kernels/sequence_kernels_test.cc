// The sequence kernels against their reference twins (kernels/reference/
// sequence_reference.h): one LSTM step and one GRU step (both reset_after forms),
// forward and backward, and scaled dot-product attention on its fast and plain
// paths, with and without a key mask.
#include <catch2/catch.hpp>

#include "kernels/attention.h"
#include "kernels/recurrent_cells.h"
#include "kernels/reference/sequence_reference.h"
#include "kernels/test_util.h"

namespace ringwork {
namespace {

using V = std::vector<float>;

TEST_CASE("an LSTM step matches the reference, forward and backward", "[sequence]") {
  for (auto [batch, units] : {std::pair<int64_t, int64_t>{1, 1}, {5, 7}, {3, 64}}) {
    INFO(batch << "x" << units);
    const int64_t n = batch * units;
    const V a = RandomVector(4 * n, 1, -4.f, 4.f), c_prev = RandomVector(n, 2, -2.f, 2.f);
    const V dh = RandomVector(n, 3), dc_next = RandomVector(n, 4);
    V act(4 * n), c(n), tanh_c(n), h(n), da(4 * n), dc_prev(n);
    V r_act(4 * n), r_c(n), r_tanh_c(n), r_h(n), r_da(4 * n), r_dc_prev(n);
    LstmStepForward(batch, units, a.data(), c_prev.data(), act.data(), c.data(), tanh_c.data(),
                    h.data());
    reference::LstmStepForward(batch, units, a.data(), c_prev.data(), r_act.data(), r_c.data(),
                               r_tanh_c.data(), r_h.data());
    CHECK(MaxRelativeError(act, r_act) < 1e-6);
    CHECK(MaxRelativeError(c, r_c) < 1e-6);
    CHECK(MaxRelativeError(h, r_h) < 1e-6);
    LstmStepBackward(batch, units, dh.data(), dc_next.data(), act.data(), c_prev.data(),
                     tanh_c.data(), da.data(), dc_prev.data());
    reference::LstmStepBackward(batch, units, dh.data(), dc_next.data(), r_act.data(),
                                c_prev.data(), r_tanh_c.data(), r_da.data(), r_dc_prev.data());
    CHECK(MaxRelativeError(da, r_da) < 1e-5);
    CHECK(MaxRelativeError(dc_prev, r_dc_prev) < 1e-5);
  }
}

TEST_CASE("a GRU step matches the reference, both reset_after forms", "[sequence]") {
  for (bool reset_after : {true, false}) {
    for (auto [batch, units] : {std::pair<int64_t, int64_t>{1, 1}, {5, 7}, {3, 64}}) {
      INFO(batch << "x" << units << " reset_after " << reset_after);
      const int64_t n = batch * units;
      const V xw = RandomVector(3 * n, 5, -3.f, 3.f), hu = RandomVector(3 * n, 6, -3.f, 3.f);
      const V h_prev = RandomVector(n, 7), dh = RandomVector(n, 8);
      // The candidate's recurrent term: hu's third block with reset_after, else
      // (r h_prev) U_h, which the layer computes after the gates: any values here.
      const V other = RandomVector(n, 9, -2.f, 2.f);
      const float* recurrent = reset_after ? hu.data() + 2 * units : other.data();
      const int64_t stride = reset_after ? 3 * units : units;
      V act(3 * n), h(n), r_act(3 * n), r_h(n);
      GruGates(batch, units, xw.data(), hu.data(), act.data());
      GruCandidate(batch, units, xw.data(), recurrent, stride, reset_after, h_prev.data(),
                   act.data(), h.data());
      reference::GruStepForward(batch, units, xw.data(), hu.data(), recurrent, stride, reset_after,
                                h_prev.data(), r_act.data(), r_h.data());
      CHECK(MaxRelativeError(act, r_act) < 1e-6);
      CHECK(MaxRelativeError(h, r_h) < 1e-6);
      const V dr = RandomVector(n, 10);
      V da(3 * n), dh_prev(n), r_da(3 * n), r_dh_prev(n);
      GruStepBackward(batch, units, dh.data(), act.data(), h_prev.data(), da.data(),
                      dh_prev.data());
      GruResetBackward(batch, units, dr.data(), units, act.data(), da.data());
      reference::GruStepBackward(batch, units, dh.data(), r_act.data(), h_prev.data(), dr.data(),
                                 units, r_da.data(), r_dh_prev.data());
      CHECK(MaxRelativeError(da, r_da) < 1e-5);
      CHECK(MaxRelativeError(dh_prev, r_dh_prev) < 1e-6);
    }
  }
}

TEST_CASE("attention matches the reference on both paths, with and without a key mask",
          "[sequence]") {
  // key_dim and value_dim multiples of 16 take the fast path; others the plain one.
  for (const AttentionShape s : {AttentionShape{2, 5, 2, 16, 16}, AttentionShape{3, 7, 3, 4, 6},
                                 AttentionShape{1, 1, 1, 3, 2}, AttentionShape{2, 9, 1, 32, 16}}) {
    for (bool masked : {false, true}) {
      INFO("batch " << s.batch << " steps " << s.steps << " heads " << s.heads << " key_dim "
                    << s.key_dim << " value_dim " << s.value_dim << " masked " << masked);
      const int64_t rows = s.batch * s.steps;
      const V q = RandomVector(rows * s.heads * s.key_dim, 11, -2.f, 2.f);
      const V k = RandomVector(rows * s.heads * s.key_dim, 12, -2.f, 2.f);
      const V v = RandomVector(rows * s.heads * s.value_dim, 13);
      const V dcontext = RandomVector(rows * s.heads * s.value_dim, 14);
      std::vector<uint8_t> mask(static_cast<size_t>(rows), 1);
      // Padding at the end of each sequence but its first step.
      for (int64_t b = 0; masked && b < s.batch; ++b) {
        for (int64_t j = s.steps - b - 1; j > 0 && j < s.steps; ++j) mask[b * s.steps + j] = 0;
      }
      const uint8_t* key_mask = masked ? mask.data() : nullptr;
      const int64_t np = s.batch * s.heads * s.steps * s.steps;
      V p(np), context(v.size()), r_p(np), r_context(v.size());
      AttentionForward(s, q.data(), k.data(), v.data(), p.data(), context.data(), key_mask);
      reference::AttentionForward(s, q.data(), k.data(), v.data(), r_p.data(), r_context.data(),
                                  key_mask);
      CHECK(MaxRelativeError(p, r_p) < 1e-5);
      CHECK(MaxRelativeError(context, r_context) < 1e-5);
      V dq(q.size()), dk(k.size()), dv(v.size()), r_dq(q.size()), r_dk(k.size()), r_dv(v.size());
      AttentionBackward(s, q.data(), k.data(), v.data(), p.data(), dcontext.data(), dq.data(),
                        dk.data(), dv.data());
      reference::AttentionBackward(s, q.data(), k.data(), v.data(), r_p.data(), dcontext.data(),
                                   r_dq.data(), r_dk.data(), r_dv.data());
      CHECK(MaxRelativeError(dq, r_dq) < 1e-5);
      CHECK(MaxRelativeError(dk, r_dk) < 1e-5);
      CHECK(MaxRelativeError(dv, r_dv) < 1e-5);
    }
  }
}

}  // namespace
}  // namespace ringwork
