#include "kernels/optimizers.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "kernels/optimizers_isa.h"
#include "kernels/reference/reference_ops.h"
#include "kernels/test_util.h"

namespace ringwork {
namespace {

TEST_CASE("SGD, momentum, Nesterov and weight decay follow Keras", "[optimizers]") {
  for (SgdOptions o :
       {SgdOptions{0.1f, 0.f, false}, SgdOptions{0.1f, 0.9f, false}, SgdOptions{0.05f, 0.9f, true},
        SgdOptions{0.1f, 0.f, false, 0.05f}, SgdOptions{0.05f, 0.9f, true, 0.01f}}) {
    const int64_t n = 257;
    auto p = RandomVector(n, 51);
    std::vector<float> v(n, 0.f);
    std::vector<double> rp(p.begin(), p.end()), rv(n, 0.0);
    for (int step = 0; step < 10; ++step) {
      auto g = RandomVector(n, 100 + step);
      std::vector<double> rg(g.begin(), g.end());
      SgdUpdate(o, p.data(), g.data(), v.data(), n);
      reference::SgdUpdate(o, rp.data(), rg.data(), rv.data(), n);
    }
    std::vector<float> want(rp.begin(), rp.end());
    INFO("momentum " << o.momentum << " nesterov " << o.nesterov << " weight decay "
                     << o.weight_decay);
    CHECK(MaxRelativeError(p, want) < 1e-5);
  }
}

TEST_CASE("Adam and AdamW follow Keras", "[optimizers]") {
  for (AdamOptions o : {AdamOptions{}, AdamOptions{0.01f, 0.9f, 0.999f, 1e-7f, 0.004f}}) {
    const int64_t n = 129;
    auto p = RandomVector(n, 61);
    std::vector<float> m(n), v(n);
    std::vector<double> rp(p.begin(), p.end()), rm(n), rv(n);
    for (int step = 1; step <= 10; ++step) {
      auto g = RandomVector(n, 200 + step);
      std::vector<double> rg(g.begin(), g.end());
      AdamUpdate(o, step, p.data(), g.data(), m.data(), v.data(), n);
      reference::AdamUpdate(o, step, rp.data(), rg.data(), rm.data(), rv.data(), n);
    }
    std::vector<float> want(rp.begin(), rp.end());
    INFO("weight decay " << o.weight_decay);
    CHECK(MaxRelativeError(p, want) < 1e-5);
  }
}

TEST_CASE("RMSprop (with momentum) and Adagrad follow Keras", "[optimizers]") {
  const int64_t n = 131;
  for (RmspropOptions o :
       {RmspropOptions{0.01f}, RmspropOptions{0.01f, 0.8f, 0.9f, 1e-7f, 0.01f}}) {
    auto p = RandomVector(n, 71);
    std::vector<float> v(n), m(n);
    std::vector<double> rp(p.begin(), p.end()), rv(n), rm(n);
    for (int step = 1; step <= 10; ++step) {
      auto g = RandomVector(n, 500 + step);
      std::vector<double> rg(g.begin(), g.end());
      RmspropUpdate(o, p.data(), g.data(), v.data(), m.data(), n);
      reference::RmspropUpdate(o, rp.data(), rg.data(), rv.data(), rm.data(), n);
    }
    INFO("rmsprop momentum " << o.momentum);
    CHECK(MaxRelativeError(p, std::vector<float>(rp.begin(), rp.end())) < 1e-5);
  }
  for (AdagradOptions o : {AdagradOptions{0.05f}, AdagradOptions{0.05f, 1e-7f, 0.01f}}) {
    auto p = RandomVector(n, 81);
    std::vector<float> a(n, 0.1f);
    std::vector<double> rp(p.begin(), p.end()), ra(n, 0.1f);
    for (int step = 1; step <= 10; ++step) {
      auto g = RandomVector(n, 600 + step);
      std::vector<double> rg(g.begin(), g.end());
      AdagradUpdate(o, p.data(), g.data(), a.data(), n);
      reference::AdagradUpdate(o, rp.data(), rg.data(), ra.data(), n);
    }
    INFO("adagrad weight decay " << o.weight_decay);
    CHECK(MaxRelativeError(p, std::vector<float>(rp.begin(), rp.end())) < 1e-5);
  }
}

TEST_CASE("Adam's first step moves each parameter by about the learning rate", "[optimizers]") {
  std::vector<float> p = {1.f, 1.f}, g = {0.5f, -3.f}, m(2), v(2);
  AdamUpdate(AdamOptions{}, 1, p.data(), g.data(), m.data(), v.data(), 2);
  CHECK(p[0] == Approx(1.f - 0.001f).epsilon(1e-4));
  CHECK(p[1] == Approx(1.f + 0.001f).epsilon(1e-4));
}

// Runs `update` with every instruction-set variant this CPU supports on the same
// inputs; returns the results, baseline first.
template <typename Update>
std::vector<std::vector<float>> EveryVariant(const std::vector<Update>& variants) {
  using optimizer_isa::Isa;
  const Isa isas[] = {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512};
  std::vector<std::vector<float>> results;
  for (size_t i = 0; i < variants.size(); ++i) {
    if (!optimizer_isa::Supported(isas[i])) {
      WARN("this CPU cannot run variant " << i << "; its bits are not compared here");
      continue;
    }
    results.push_back(variants[i]());
  }
  return results;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_CASE("every instruction-set variant of the updates gives the same bits", "[optimizers]") {
  const int64_t n = 4099;  // Vector bodies and scalar tails.
  for (AdamOptions o : {AdamOptions{}, AdamOptions{0.01f, 0.9f, 0.999f, 1e-7f, 0.004f}}) {
    auto adam = [&](auto variant) {
      return [=] {
        auto p = RandomVector(n, 7);
        std::vector<float> m(n), v(n);
        for (int64_t step = 1; step <= 20; ++step) {
          auto g = RandomVector(n, 300 + step);
          variant(o, step, p.data(), g.data(), m.data(), v.data(), n);
        }
        return p;
      };
    };
    auto results = EveryVariant<std::function<std::vector<float>()>>(
        {adam(optimizer_isa::AdamBaseline), adam(optimizer_isa::AdamAvx2),
         adam(optimizer_isa::AdamAvx512)});
    for (size_t i = 1; i < results.size(); ++i) CHECK(SameBits(results[0], results[i]));
  }
  for (SgdOptions o :
       {SgdOptions{0.1f, 0.f, false}, SgdOptions{0.1f, 0.9f, false}, SgdOptions{0.05f, 0.9f, true},
        SgdOptions{0.1f, 0.f, false, 0.05f}, SgdOptions{0.05f, 0.9f, true, 0.01f}}) {
    auto sgd = [&](auto variant) {
      return [=] {
        auto p = RandomVector(n, 8);
        std::vector<float> velocity(n);
        for (int step = 0; step < 20; ++step) {
          auto g = RandomVector(n, 400 + step);
          variant(o, p.data(), g.data(), velocity.data(), n);
        }
        return p;
      };
    };
    auto results = EveryVariant<std::function<std::vector<float>()>>(
        {sgd(optimizer_isa::SgdBaseline), sgd(optimizer_isa::SgdAvx2),
         sgd(optimizer_isa::SgdAvx512)});
    for (size_t i = 1; i < results.size(); ++i) CHECK(SameBits(results[0], results[i]));
  }
  for (RmspropOptions o :
       {RmspropOptions{0.01f}, RmspropOptions{0.01f, 0.8f, 0.9f, 1e-7f, 0.01f}}) {
    auto rmsprop = [&](auto variant) {
      return [=] {
        auto p = RandomVector(n, 9);
        std::vector<float> v(n), m(n);
        for (int step = 0; step < 20; ++step) {
          auto g = RandomVector(n, 700 + step);
          variant(o, p.data(), g.data(), v.data(), o.momentum != 0 ? m.data() : nullptr, n);
        }
        return p;
      };
    };
    auto results = EveryVariant<std::function<std::vector<float>()>>(
        {rmsprop(optimizer_isa::RmspropBaseline), rmsprop(optimizer_isa::RmspropAvx2),
         rmsprop(optimizer_isa::RmspropAvx512)});
    for (size_t i = 1; i < results.size(); ++i) CHECK(SameBits(results[0], results[i]));
  }
  auto adagrad = [&](auto variant) {
    return [=] {
      auto p = RandomVector(n, 10);
      std::vector<float> a(n, 0.1f);
      for (int step = 0; step < 20; ++step) {
        auto g = RandomVector(n, 800 + step);
        variant(AdagradOptions{0.05f, 1e-7f, 0.01f}, p.data(), g.data(), a.data(), n);
      }
      return p;
    };
  };
  auto results = EveryVariant<std::function<std::vector<float>()>>(
      {adagrad(optimizer_isa::AdagradBaseline), adagrad(optimizer_isa::AdagradAvx2),
       adagrad(optimizer_isa::AdagradAvx512)});
  for (size_t i = 1; i < results.size(); ++i) CHECK(SameBits(results[0], results[i]));
}

}  // namespace
}  // namespace ringwork
