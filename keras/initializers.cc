#include "keras/initializers.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/fnv1a.h"
#include "base/status_macros.h"

namespace ringwork {

void GlorotUniform(Tensor& t, int64_t fan_in, int64_t fan_out, uint64_t seed,
                   const std::string& name) {
  // std::hash is not stable across builds; FNV-1a of the name is.
  std::mt19937_64 random(seed ^ Fnv1a64(name));
  const float limit = std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
  std::uniform_real_distribution<float> dist(-limit, limit);
  for (int64_t i = 0; i < t.size(); ++i) t[i] = dist(random);
}

void RandomUniform(Tensor& t, float limit, uint64_t seed, const std::string& name) {
  std::mt19937_64 random(seed ^ Fnv1a64(name));
  std::uniform_real_distribution<float> dist(-limit, limit);
  for (int64_t i = 0; i < t.size(); ++i) t[i] = dist(random);
}

void Orthogonal(Tensor& t, int64_t rows, int64_t cols, uint64_t seed, const std::string& name) {
  std::mt19937_64 random(seed ^ Fnv1a64(name));
  std::normal_distribution<double> normal(0.0, 1.0);
  const int64_t tall = std::max(rows, cols), narrow = std::min(rows, cols);
  // Columns of a [tall, narrow] normal matrix, made orthonormal in order.
  std::vector<std::vector<double>> q(static_cast<size_t>(narrow),
                                     std::vector<double>(static_cast<size_t>(tall)));
  for (int64_t r = 0; r < tall; ++r) {
    for (int64_t c = 0; c < narrow; ++c) q[c][r] = normal(random);
  }
  for (int64_t c = 0; c < narrow; ++c) {
    for (int64_t p = 0; p < c; ++p) {  // Modified Gram-Schmidt.
      double dot = 0;
      for (int64_t r = 0; r < tall; ++r) dot += q[c][r] * q[p][r];
      for (int64_t r = 0; r < tall; ++r) q[c][r] -= dot * q[p][r];
    }
    double norm = 0;
    for (int64_t r = 0; r < tall; ++r) norm += q[c][r] * q[c][r];
    norm = std::sqrt(norm);
    for (int64_t r = 0; r < tall; ++r) q[c][r] /= norm;
  }
  // [tall, narrow] as [rows, cols]: transposed when the rows are fewer.
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      t[r * cols + c] = static_cast<float>(rows >= cols ? q[c][r] : q[r][c]);
    }
  }
}

namespace {

// A normal draw redrawn until within two deviations of the mean (Keras'
// truncated_normal).
float TruncatedNormal(std::mt19937_64& random, float mean, float stddev) {
  std::normal_distribution<float> normal(mean, stddev);
  for (;;) {
    const float x = normal(random);
    if (std::fabs(x - mean) <= 2 * stddev) return x;
  }
}

const std::set<std::string>& Names() {
  static const auto* names = new std::set<std::string>{
      "glorot_uniform", "glorot_normal",  "he_uniform",       "he_normal", "lecun_uniform",
      "lecun_normal",   "random_uniform", "random_normal",    "zeros",     "ones",
      "constant",       "orthogonal",     "truncated_normal",
  };
  return *names;
}

}  // namespace

absl::Status CheckInitializer(const Initializer& init, const std::string& what) {
  if (!init.name.empty() && !Names().count(init.name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": unknown initializer \"", init.name,
        "\"; expected glorot_uniform, glorot_normal, he_uniform, he_normal, lecun_uniform, "
        "lecun_normal, random_uniform, random_normal, truncated_normal, zeros, ones, constant or "
        "orthogonal"));
  }
  if (!(init.stddev > 0) || !(init.minval <= init.maxval) || !std::isfinite(init.value) ||
      !std::isfinite(init.mean)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": initializer ", init.name, " needs stddev > 0, minval <= maxval ",
                     "and finite values (stddev ", init.stddev, ", minval ", init.minval,
                     ", maxval ", init.maxval, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckRegularizer(const Regularizer& r, const std::string& what) {
  if (r.l1 >= 0 && r.l2 >= 0 && std::isfinite(r.l1) && std::isfinite(r.l2)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": a regularizer's l1 and l2 must be finite and not negative, got ", r.l1,
                   " and ", r.l2));
}

void Initialize(const Initializer& init, const std::string& fallback, Tensor& t, int64_t fan_in,
                int64_t fan_out, uint64_t seed, const std::string& name) {
  const std::string& kind = init.name.empty() ? fallback : init.name;
  std::mt19937_64 random(init.seed.has_value() ? *init.seed : seed ^ Fnv1a64(name));
  const int64_t n = t.size();
  if (kind == "zeros" || kind == "ones" || kind == "constant") {
    const float v = kind == "zeros" ? 0.f : kind == "ones" ? 1.f : init.value;
    for (int64_t i = 0; i < n; ++i) t[i] = v;
    return;
  }
  if (kind == "orthogonal") {
    // Keras: the kernel as [everything but the last axis, the last axis].
    const int64_t cols = t.rank() > 0 ? std::max<int64_t>(t.shape().back(), 1) : 1;
    // Seeded: from the seed alone (Orthogonal mixes in the name it is given).
    Orthogonal(t, n / cols, cols, init.seed.has_value() ? *init.seed : seed,
               init.seed.has_value() ? "" : name);
    return;
  }
  if (kind == "random_uniform") {
    std::uniform_real_distribution<float> dist(init.minval, init.maxval);
    for (int64_t i = 0; i < n; ++i) t[i] = dist(random);
    return;
  }
  if (kind == "random_normal") {
    std::normal_distribution<float> dist(init.mean, init.stddev);
    for (int64_t i = 0; i < n; ++i) t[i] = dist(random);
    return;
  }
  if (kind == "truncated_normal") {
    for (int64_t i = 0; i < n; ++i) t[i] = TruncatedNormal(random, init.mean, init.stddev);
    return;
  }
  // Variance scaling: glorot (1, fan_avg), he (2, fan_in), lecun (1, fan_in).
  const double scale = kind.rfind("he_", 0) == 0 ? 2.0 : 1.0;
  const double fan =
      kind.rfind("glorot_", 0) == 0 ? (fan_in + fan_out) / 2.0 : static_cast<double>(fan_in);
  const double variance = scale / std::max(1.0, fan);
  if (kind.size() > 8 && kind.compare(kind.size() - 8, 8, "_uniform") == 0) {
    // Glorot's limit computed as GlorotUniform does: the same draws, bit for bit.
    const float limit = kind == "glorot_uniform"
                            ? std::sqrt(6.0f / static_cast<float>(fan_in + fan_out))
                            : static_cast<float>(std::sqrt(3.0 * variance));
    std::uniform_real_distribution<float> dist(-limit, limit);
    for (int64_t i = 0; i < n; ++i) t[i] = dist(random);
    return;
  }
  // Keras divides by the deviation of a unit normal truncated at 2.
  const float stddev = static_cast<float>(std::sqrt(variance) / 0.87962566103423978);
  for (int64_t i = 0; i < n; ++i) t[i] = TruncatedNormal(random, 0.f, stddev);
}

namespace {

// Keras' class of each name, and back.
const std::vector<std::pair<std::string, std::string>>& Classes() {
  static const auto* classes = new std::vector<std::pair<std::string, std::string>>{
      {"glorot_uniform", "GlorotUniform"},
      {"glorot_normal", "GlorotNormal"},
      {"he_uniform", "HeUniform"},
      {"he_normal", "HeNormal"},
      {"lecun_uniform", "LecunUniform"},
      {"lecun_normal", "LecunNormal"},
      {"random_uniform", "RandomUniform"},
      {"random_normal", "RandomNormal"},
      {"truncated_normal", "TruncatedNormal"},
      {"zeros", "Zeros"},
      {"ones", "Ones"},
      {"constant", "Constant"},
      {"orthogonal", "Orthogonal"},
  };
  return *classes;
}

absl::Status Refuse(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

absl::StatusOr<float> NumberAt(const nlohmann::json& c, const char* key, float fallback,
                               const std::string& path) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  if (!c[key].is_number()) return Refuse(absl::StrCat(path, ".", key), "not a number");
  return c[key].get<float>();
}

// VarianceScaling's arguments as the named initializer that has them.
absl::StatusOr<std::string> VarianceScalingName(const nlohmann::json& c, const std::string& path) {
  const double scale = c.value("scale", 1.0);
  const std::string mode = c.value("mode", "fan_in");
  std::string distribution = c.value("distribution", "truncated_normal");
  if (distribution == "normal") distribution = "truncated_normal";  // tf.keras 2's word.
  const std::string kind = distribution == "uniform" ? "uniform" : "normal";
  if (distribution != "uniform" && distribution != "truncated_normal") {
    return Refuse(path, "VarianceScaling with distribution " + distribution + " is not supported");
  }
  if (scale == 1.0 && mode == "fan_avg") return "glorot_" + kind;
  if (scale == 2.0 && mode == "fan_in") return "he_" + kind;
  if (scale == 1.0 && mode == "fan_in") return "lecun_" + kind;
  return Refuse(path, absl::StrCat("VarianceScaling with scale ", scale, " and mode ", mode,
                                   " is not supported (Glorot's, He's and LeCun's are)"));
}

}  // namespace

nlohmann::json KerasJson(const Initializer& init) {
  std::string class_name = init.name;
  for (const auto& [name, keras] : Classes()) {
    if (name == init.name) class_name = keras;
  }
  nlohmann::json config = nlohmann::json::object();
  if (init.name == "constant") config["value"] = init.value;
  if (init.name == "random_normal" || init.name == "truncated_normal") {
    config["mean"] = init.mean;
    config["stddev"] = init.stddev;
  }
  if (init.name == "random_uniform") {
    config["minval"] = init.minval;
    config["maxval"] = init.maxval;
  }
  if (init.name != "zeros" && init.name != "ones" && init.name != "constant") {
    config["seed"] = init.seed.has_value() ? nlohmann::json(*init.seed) : nlohmann::json();
  }
  return {{"module", "keras.initializers"},
          {"class_name", class_name},
          {"config", config},
          {"registered_name", nullptr}};
}

nlohmann::json KerasJson(const Regularizer& r) {
  if (r.empty()) return nullptr;
  return {{"module", "keras.regularizers"},
          {"class_name", "L1L2"},
          {"config", {{"l1", r.l1}, {"l2", r.l2}}},
          {"registered_name", nullptr}};
}

absl::StatusOr<Initializer> InitializerFromKeras(const nlohmann::json& j, const std::string& path) {
  Initializer init;
  if (j.is_null()) return init;
  std::string name = j.is_string() ? j.get<std::string>() : j.value("class_name", "");
  const nlohmann::json c =
      j.is_object() ? j.value("config", nlohmann::json::object()) : nlohmann::json::object();
  if (name == "LeCunNormal") name = "lecun_normal";  // TF.js' spelling.
  if (name == "LeCunUniform") name = "lecun_uniform";
  if (name == "uniform") name = "random_uniform";  // Keras 2's short names.
  if (name == "normal") name = "random_normal";
  if (name == "VarianceScaling") {
    RW_ASSIGN_OR_RETURN(name, VarianceScalingName(c, path));
  }
  for (const auto& [snake, keras] : Classes()) {
    if (name == keras) name = snake;
  }
  init.name = name;
  RW_RETURN_IF_ERROR(CheckInitializer(init, path));
  if (name == "orthogonal" && c.value("gain", 1.0) != 1.0) {
    return Refuse(path + ".config.gain", "only 1 (Ringwork's orthogonal has no gain)");
  }
  RW_ASSIGN_OR_RETURN(init.value, NumberAt(c, "value", 0, path + ".config"));
  RW_ASSIGN_OR_RETURN(init.mean, NumberAt(c, "mean", 0, path + ".config"));
  RW_ASSIGN_OR_RETURN(init.stddev, NumberAt(c, "stddev", 0.05f, path + ".config"));
  RW_ASSIGN_OR_RETURN(init.minval, NumberAt(c, "minval", -0.05f, path + ".config"));
  RW_ASSIGN_OR_RETURN(init.maxval, NumberAt(c, "maxval", 0.05f, path + ".config"));
  if (c.contains("seed") && !c["seed"].is_null()) {
    if (!c["seed"].is_number_integer()) return Refuse(path + ".config.seed", "not a whole number");
    init.seed = c["seed"].get<uint64_t>();
  }
  RW_RETURN_IF_ERROR(CheckInitializer(init, path));
  return init;
}

absl::StatusOr<Regularizer> RegularizerFromKeras(const nlohmann::json& j, const std::string& path) {
  Regularizer r;
  if (j.is_null()) return r;
  const std::string name = j.is_string() ? j.get<std::string>() : j.value("class_name", "");
  const nlohmann::json c =
      j.is_object() ? j.value("config", nlohmann::json::object()) : nlohmann::json::object();
  // Keras' defaults: 0.01 for the named factor ("l2", L2()); L1L2() has 0 and 0.
  const bool l1l2 = name == "L1L2" || name == "l1_l2" || name == "l1l2";
  const bool l1 = name == "L1" || name == "l1" || name == "l1_l2";
  const bool l2 = name == "L2" || name == "l2" || name == "l1_l2";
  if (!l1 && !l2 && !l1l2) {
    return Refuse(path, absl::StrCat(j.dump(), " is not supported (L1, L2 and L1L2 are)"));
  }
  RW_ASSIGN_OR_RETURN(r.l1, NumberAt(c, "l1", l1 && name != "L1L2" ? 0.01f : 0.f, path));
  RW_ASSIGN_OR_RETURN(r.l2, NumberAt(c, "l2", l2 && name != "L1L2" ? 0.01f : 0.f, path));
  if (!l1 && !l1l2) r.l1 = 0;
  if (!l2 && !l1l2) r.l2 = 0;
  RW_RETURN_IF_ERROR(CheckRegularizer(r, path));
  return r;
}

}  // namespace ringwork
