#include "keras/keras_layer_config.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "keras/custom_objects.h"
#include "keras/layers.h"
#include "keras/preprocessing.h"

namespace ringwork {
namespace {

using Json = nlohmann::json;

absl::Status Refuse(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// One layer's config: each key read is checked; keys it never read are refused
// unless every layer may have them with the value given.
class ConfigReader {
 public:
  ConfigReader(const Json& config, std::string path) : config_(config), path_(std::move(path)) {}

  template <typename T>
  absl::StatusOr<T> Get(const std::string& key, T fallback) {
    used_.insert(key);
    if (!config_.contains(key) || config_[key].is_null()) return fallback;
    if constexpr (std::is_same_v<T, int64_t>) {
      if (!config_[key].is_number_integer()) {
        return Refuse(At(key), absl::StrCat(config_[key].dump(), " is not a whole number"));
      }
    }
    if constexpr (std::is_same_v<T, bool>) {
      if (!config_[key].is_boolean())
        return Refuse(At(key), config_[key].dump() + " is not true or false");
    }
    try {
      return config_[key].get<T>();
    } catch (const Json::exception&) {
      return Refuse(At(key), absl::StrCat("unexpected value ", config_[key].dump()));
    }
  }
  // A square window: n or [n, n] (Keras' kernel_size, strides, pool_size).
  // A window's size along each of `rank` axes: k, [k] or [k, k] (one value).
  absl::StatusOr<int64_t> Square(const std::string& key, int64_t fallback, size_t rank = 2) {
    used_.insert(key);
    if (!config_.contains(key) || config_[key].is_null()) return fallback;
    const Json& v = config_[key];
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_array() && v.size() == rank && v[0].is_number_integer() &&
        std::all_of(v.begin(), v.end(), [&](const Json& e) { return e == v[0]; })) {
      return v[0].get<int64_t>();
    }
    return Refuse(At(key), absl::StrCat(v.dump(), rank == 2 ? ": Ringwork takes square windows"
                                                            : ": not one window size"));
  }
  // A size along each of `rank` axes (Keras' kernel_size, strides, dilation_rate):
  // k (every axis), or a list of `rank` numbers.
  absl::StatusOr<HeightWidth> PerAxis(const std::string& key, int64_t fallback, size_t rank) {
    used_.insert(key);
    if (!config_.contains(key) || config_[key].is_null()) return HeightWidth(fallback);
    const Json& v = config_[key];
    if (v.is_number_integer()) return HeightWidth(v.get<int64_t>());
    if (v.is_array() && v.size() == rank &&
        std::all_of(v.begin(), v.end(), [](const Json& e) { return e.is_number_integer(); })) {
      return rank == 2 ? HeightWidth(v[0].get<int64_t>(), v[1].get<int64_t>())
                       : HeightWidth(v[0].get<int64_t>());
    }
    return Refuse(At(key),
                  absl::StrCat(v.dump(), ": not ", rank, " whole number", rank == 2 ? "s" : ""));
  }
  // `key` is absent, null, or one of `allowed`.
  absl::Status Only(const std::string& key, const std::vector<Json>& allowed) {
    used_.insert(key);
    if (!config_.contains(key) || config_[key].is_null()) return absl::OkStatus();
    for (const Json& a : allowed) {
      if (config_[key] == a) return absl::OkStatus();
    }
    return Refuse(At(key), absl::StrCat(config_[key].dump(), " is not supported"));
  }
  // An initializer: where it differs from the one Ringwork uses (`names`, Keras'
  // default), the import says so once per layer in a warning: it sets where
  // training starts, not the model's math, and imported weights replace it.
  absl::Status Initializer(const std::string& key, const std::vector<std::string>& names) {
    used_.insert(key);
    if (!config_.contains(key) || config_[key].is_null()) return absl::OkStatus();
    const Json& v = config_[key];
    std::string name = v.is_string() ? v.get<std::string>() : "";
    if (v.is_object() && v.contains("class_name") && v["class_name"].is_string()) {
      name = v["class_name"].get<std::string>();
      const Json c = v.value("config", Json::object());
      // Glorot uniform as VarianceScaling writes it.
      if (name == "VarianceScaling" && c.value("scale", 0.0) == 1.0 &&
          c.value("mode", "") == "fan_avg" && c.value("distribution", "") == "uniform") {
        name = names[0];
      }
    }
    for (const std::string& n : names) {
      if (name == n) return absl::OkStatus();
    }
    RW_LOG(WARNING) << At(key) << ": " << (name.empty() ? v.dump() : name)
                    << " initializer: Ringwork initializes with " << names[0]
                    << " (weights loaded afterwards replace it)";
    return absl::OkStatus();
  }
  // Every key of the config read, or shared by all layers with a value that changes nothing.
  absl::Status Done() {
    for (const auto& [key, value] : config_.items()) {
      if (used_.count(key) || key == "name" || key == "batch_input_shape" || key == "batch_shape") {
        continue;
      }
      if (key == "trainable") {  // Read by Named.
        if (!value.is_boolean()) return Refuse(At(key), value.dump() + " is not true or false");
        continue;
      }
      if (key == "dtype") {
        const bool float32 =
            value.is_null() || value == "float32" ||
            (value.is_object() && value.contains("config") && value["config"].is_object() &&
             value["config"].contains("name") && value["config"]["name"] == "float32");
        if (!float32) return Refuse(At(key), absl::StrCat(value.dump(), ": only float32"));
        continue;
      }
      if ((key == "activity_regularizer" || key == "kernel_regularizer" ||
           key == "bias_regularizer" || key == "kernel_constraint" || key == "bias_constraint" ||
           key == "lora_rank") &&
          value.is_null()) {
        continue;
      }
      if (key == "input_length") continue;  // Embedding: the ids' count, from the input.
      return Refuse(At(key), absl::StrCat(value.dump(), " is not supported"));
    }
    return absl::OkStatus();
  }
  std::string At(const std::string& key) const { return absl::StrCat(path_, ".", key); }

 private:
  const Json& config_;
  const std::string path_;
  std::set<std::string> used_;
};

absl::StatusOr<std::string> Activation(ConfigReader& r, const std::string& key) {
  RW_ASSIGN_OR_RETURN(std::string a, r.Get<std::string>(key, "linear"));
  static const std::set<std::string> known = {"linear", "relu",    "sigmoid",
                                              "tanh",   "softmax", "gelu"};
  if (!known.count(a))
    return Refuse(r.At(key), absl::StrCat("activation ", a, " is not supported"));
  return a;
}

// An initializer Ringwork has, else its default with a warning: it only sets
// where training starts, and imported weights replace it.
absl::StatusOr<Initializer> InitializerOrDefault(ConfigReader& r, const std::string& key) {
  RW_ASSIGN_OR_RETURN(const Json j, r.Get<Json>(key, Json()));
  absl::StatusOr<Initializer> init = InitializerFromKeras(j, r.At(key));
  if (init.ok()) return init;
  RW_LOG(WARNING) << init.status().message() << ": initialized with Keras' default instead "
                  << "(weights loaded afterwards replace it)";
  return Initializer{};
}

// Keras' kernel and bias initializers and regularizers of a Dense or a Conv.
template <typename Options>
absl::Status ReadWeightOptions(ConfigReader& r, Options* o) {
  for (const auto& [key, into] : {std::pair{"kernel_initializer", &o->kernel_initializer},
                                  {"bias_initializer", &o->bias_initializer}}) {
    RW_ASSIGN_OR_RETURN(*into, InitializerOrDefault(r, key));
  }
  for (const auto& [key, into] : {std::pair{"kernel_regularizer", &o->kernel_regularizer},
                                  {"bias_regularizer", &o->bias_regularizer}}) {
    RW_ASSIGN_OR_RETURN(const Json j, r.Get<Json>(key, Json()));
    RW_ASSIGN_OR_RETURN(*into, RegularizerFromKeras(j, r.At(key)));
  }
  return absl::OkStatus();
}

// LSTM or GRU: Keras' defaults and what TF.js writes; what would change the math
// and Ringwork lacks is refused.
absl::StatusOr<std::unique_ptr<Layer>> RecurrentLayerFrom(ConfigReader& r,
                                                          const std::string& type) {
  RW_ASSIGN_OR_RETURN(const int64_t units, r.Get<int64_t>("units", 0));
  RecurrentOptions options;
  RW_ASSIGN_OR_RETURN(options.return_sequences, r.Get<bool>("return_sequences", false));
  RW_ASSIGN_OR_RETURN(options.activation, r.Get<std::string>("activation", "tanh"));
  RW_ASSIGN_OR_RETURN(options.recurrent_activation,
                      r.Get<std::string>("recurrent_activation", "sigmoid"));
  if (options.activation != "tanh") {
    return Refuse(r.At("activation"), options.activation + " is not supported (tanh is)");
  }
  if (options.recurrent_activation != "sigmoid") {
    // Keras 2's and TF.js' hard_sigmoid (0.2 x + 0.5) differs from Keras 3's.
    return Refuse(r.At("recurrent_activation"),
                  options.recurrent_activation + " is not supported (sigmoid is)");
  }
  RW_RETURN_IF_ERROR(r.Only("use_bias", {true}));
  RW_RETURN_IF_ERROR(r.Only("return_state", {false}));
  RW_ASSIGN_OR_RETURN(options.go_backwards, r.Get<bool>("go_backwards", false));
  RW_RETURN_IF_ERROR(r.Only("stateful", {false}));
  RW_RETURN_IF_ERROR(r.Only("time_major", {false}));
  RW_ASSIGN_OR_RETURN(const double dropout, r.Get<double>("dropout", 0));
  RW_ASSIGN_OR_RETURN(const double recurrent_dropout, r.Get<double>("recurrent_dropout", 0));
  options.dropout = static_cast<float>(dropout);
  options.recurrent_dropout = static_cast<float>(recurrent_dropout);
  RW_RETURN_IF_ERROR(r.Only("recurrent_regularizer", {}));
  RW_RETURN_IF_ERROR(r.Only("recurrent_constraint", {}));
  RW_ASSIGN_OR_RETURN(options.zero_output_for_mask, r.Get<bool>("zero_output_for_mask", false));
  RW_RETURN_IF_ERROR(r.Only("use_cudnn", {"auto", true, false}));
  // How a step is computed (Keras 2's implementation 1 or 2, unroll): the same math.
  RW_RETURN_IF_ERROR(r.Only("implementation", {0, 1, 2}));
  RW_RETURN_IF_ERROR(r.Only("unroll", {false, true}));
  RW_ASSIGN_OR_RETURN(const Json seed, r.Get<Json>("seed", Json()));  // Dropout's; it is 0.
  (void)seed;
  RW_RETURN_IF_ERROR(r.Initializer("kernel_initializer", {"GlorotUniform", "glorot_uniform"}));
  RW_RETURN_IF_ERROR(r.Initializer("recurrent_initializer", {"Orthogonal", "orthogonal"}));
  RW_RETURN_IF_ERROR(r.Initializer("bias_initializer", {"Zeros", "zeros"}));
  if (type == "SimpleRNN") return SimpleRNN(units, options);
  if (type == "LSTM") {
    // Only where training starts (TF.js writes null).
    RW_ASSIGN_OR_RETURN(options.unit_forget_bias, r.Get<bool>("unit_forget_bias", true));
    return LSTM(units, options);
  } else {
    // Keras' default since TensorFlow 2: true (TF.js' GRU writes false).
    RW_ASSIGN_OR_RETURN(options.reset_after, r.Get<bool>("reset_after", true));
    return GRU(units, options);
  }
}

// Bidirectional: the layer it wraps, from its own config; Keras 3's backward_layer
// must be that layer's copy running the other way (what Ringwork makes).
// A wrapper's "layer": {"class_name": ..., "config": {...}}.
absl::StatusOr<Json> WrappedLayer(ConfigReader& r) {
  RW_ASSIGN_OR_RETURN(const Json inner, r.Get<Json>("layer", Json()));
  if (!inner.is_object() || !inner.contains("class_name") || !inner["class_name"].is_string() ||
      !inner.contains("config") || !inner["config"].is_object()) {
    return Refuse(r.At("layer"), "needs {\"class_name\": ..., \"config\": {...}}");
  }
  return inner;
}

absl::StatusOr<std::unique_ptr<Layer>> BidirectionalFrom(ConfigReader& r) {
  RW_ASSIGN_OR_RETURN(const Json inner, WrappedLayer(r));
  const std::string inner_type = inner["class_name"].get<std::string>();
  RW_ASSIGN_OR_RETURN(std::unique_ptr<Layer> wrapped,
                      LayerFromKerasConfig(inner_type, inner["config"], r.At("layer")));
  RW_ASSIGN_OR_RETURN(const Json backward, r.Get<Json>("backward_layer", Json()));
  if (!backward.is_null()) {
    // Keras 3 writes it always: it must be the wrapped layer's copy, reversed.
    const auto settings = [](const Json& layer) {
      Json c = layer.is_object() && layer.contains("config") ? layer["config"] : Json();
      if (!c.is_object()) return Json();
      for (const char* key : {"name", "go_backwards", "trainable", "dtype", "seed"}) c.erase(key);
      return Json{{"class_name", layer.value("class_name", "")}, {"config", c}};
    };
    const bool reversed = backward.is_object() && backward.contains("config") &&
                          backward["config"].is_object() &&
                          backward["config"].value("go_backwards", false) !=
                              inner["config"].value("go_backwards", false);
    if (!reversed || settings(backward) != settings(inner)) {
      return Refuse(r.At("backward_layer"),
                    "a backward layer other than the wrapped layer's copy running the other way is "
                    "not supported");
    }
  }
  RW_ASSIGN_OR_RETURN(const std::string merge_mode, r.Get<std::string>("merge_mode", "concat"));
  return Bidirectional(std::move(wrapped), merge_mode);
}

// A number or a list of numbers (Normalization's mean and variance); empty for null.
absl::StatusOr<std::vector<float>> Numbers(ConfigReader& r, const std::string& key) {
  RW_ASSIGN_OR_RETURN(const Json j, r.Get<Json>(key, Json()));
  if (j.is_null()) return std::vector<float>{};
  if (j.is_number()) return std::vector<float>{j.get<float>()};
  if (j.is_array() &&
      std::all_of(j.begin(), j.end(), [](const Json& v) { return v.is_number(); })) {
    return j.get<std::vector<float>>();
  }
  return Refuse(r.At(key), j.dump() + " is not a number or a list of numbers");
}

// Keras' preprocessing layers for numbers (keras/preprocessing.h).
absl::StatusOr<std::unique_ptr<Layer>> PreprocessingLayerFrom(ConfigReader& r,
                                                              const std::string& type) {
  if (type == "Normalization") {
    RW_RETURN_IF_ERROR(r.Only("axis", {-1, Json::array({-1})}));
    RW_RETURN_IF_ERROR(r.Only("invert", {false}));
    NormalizationOptions options;
    RW_ASSIGN_OR_RETURN(options.mean, Numbers(r, "mean"));
    RW_ASSIGN_OR_RETURN(options.variance, Numbers(r, "variance"));
    return Normalization(options);
  }
  if (type == "Discretization") {
    RW_RETURN_IF_ERROR(r.Only("output_mode", {"int"}));
    RW_RETURN_IF_ERROR(r.Only("sparse", {false}));
    // num_bins: what adapt learned the boundaries for (Keras writes both after it).
    RW_ASSIGN_OR_RETURN(const Json bins, r.Get<Json>("num_bins", Json()));
    (void)bins;
    RW_ASSIGN_OR_RETURN(const double epsilon, r.Get<double>("epsilon", 0.01));  // adapt's.
    (void)epsilon;
    RW_ASSIGN_OR_RETURN(std::vector<float> boundaries, Numbers(r, "bin_boundaries"));
    return Discretization(std::move(boundaries));
  }
  if (type == "CategoryEncoding") {
    RW_ASSIGN_OR_RETURN(const int64_t tokens, r.Get<int64_t>("num_tokens", 0));
    RW_ASSIGN_OR_RETURN(std::string mode, r.Get<std::string>("output_mode", "multi_hot"));
    if (mode == "binary") mode = "multi_hot";  // Keras 2.6's name for it.
    RW_RETURN_IF_ERROR(r.Only("sparse", {false}));
    return CategoryEncoding(tokens, mode);
  }
  RW_RETURN_IF_ERROR(r.Only("num_oov_indices", {1}));
  RW_RETURN_IF_ERROR(r.Only("mask_token", {}));
  RW_RETURN_IF_ERROR(r.Only("oov_token", {-1}));
  RW_RETURN_IF_ERROR(r.Only("output_mode", {"int"}));
  RW_RETURN_IF_ERROR(r.Only("invert", {false}));
  RW_RETURN_IF_ERROR(r.Only("sparse", {false}));
  RW_RETURN_IF_ERROR(r.Only("idf_weights", {}));
  RW_RETURN_IF_ERROR(r.Only("max_tokens", {}));
  RW_RETURN_IF_ERROR(r.Only("pad_to_max_tokens", {false}));
  RW_RETURN_IF_ERROR(r.Only("vocabulary_dtype", {"int64", "int32"}));
  // How several OOV indices share ids: with one there is nothing to share.
  RW_RETURN_IF_ERROR(r.Only("oov_method", {"floormod", "farmhash"}));
  RW_ASSIGN_OR_RETURN(const Json size, r.Get<Json>("vocabulary_size", Json()));
  RW_ASSIGN_OR_RETURN(const Json vocabulary, r.Get<Json>("vocabulary", Json()));
  if (!vocabulary.is_array() || !std::all_of(vocabulary.begin(), vocabulary.end(),
                                             [](const Json& v) { return v.is_number_integer(); })) {
    return Refuse(r.At("vocabulary"),
                  vocabulary.dump() + ": a list of whole numbers (a file is not read)");
  }
  if (!size.is_null() && size != Json(vocabulary.size() + 1)) {
    return Refuse(r.At("vocabulary_size"),
                  absl::StrCat(size.dump(), " is not the vocabulary's ", vocabulary.size(),
                               " ids and the one out-of-vocabulary index"));
  }
  return IntegerLookup(vocabulary.get<std::vector<int64_t>>());
}

// `name`: the layer's (else its config's, else an automatic one); "trainable":
// false freezes it, as Keras.
absl::StatusOr<std::unique_ptr<Layer>> Named(std::unique_ptr<Layer> layer, const Json& config,
                                             const std::string& name) {
  const Json configured = config.value("name", Json(""));
  if (!name.empty()) {
    layer->set_name(name);
  } else if (configured.is_string() && !configured.get<std::string>().empty()) {
    layer->set_name(configured.get<std::string>());
  }
  layer->set_trainable(config.value("trainable", Json(true)) != false);
  return layer;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Layer>> LayerFromKerasConfig(const std::string& type,
                                                            const nlohmann::json& config,
                                                            const std::string& path,
                                                            const std::string& name) {
  ConfigReader r(config, path + ".config");
  std::unique_ptr<Layer> layer;
  if (type == "Dense") {
    RW_ASSIGN_OR_RETURN(const int64_t units, r.Get<int64_t>("units", 0));
    RW_ASSIGN_OR_RETURN(const std::string activation, Activation(r, "activation"));
    DenseOptions options{.activation = activation};
    RW_ASSIGN_OR_RETURN(options.use_bias, r.Get<bool>("use_bias", true));
    RW_RETURN_IF_ERROR(ReadWeightOptions(r, &options));
    layer = Dense(units, options);
  } else if (type == "Conv2D" || type == "Conv1D") {
    const size_t rank = type == "Conv2D" ? 2 : 1;
    RW_ASSIGN_OR_RETURN(const int64_t filters, r.Get<int64_t>("filters", 0));
    RW_ASSIGN_OR_RETURN(const HeightWidth kernel, r.PerAxis("kernel_size", 0, rank));
    RW_ASSIGN_OR_RETURN(const HeightWidth strides, r.PerAxis("strides", 1, rank));
    RW_ASSIGN_OR_RETURN(const HeightWidth dilation, r.PerAxis("dilation_rate", 1, rank));
    RW_ASSIGN_OR_RETURN(const std::string padding, r.Get<std::string>("padding", "valid"));
    RW_ASSIGN_OR_RETURN(const std::string activation, Activation(r, "activation"));
    RW_ASSIGN_OR_RETURN(const bool use_bias, r.Get<bool>("use_bias", true));
    RW_RETURN_IF_ERROR(r.Only("data_format", {"channels_last"}));
    RW_RETURN_IF_ERROR(r.Only("groups", {1}));
    Conv2DOptions options{.strides = strides,
                          .dilation_rate = dilation,
                          .padding = padding,
                          .activation = activation,
                          .use_bias = use_bias};
    RW_RETURN_IF_ERROR(ReadWeightOptions(r, &options));
    layer = rank == 2 ? Conv2D(filters, kernel, options) : Conv1D(filters, kernel.width, options);
  } else if (type == "MaxPooling2D" || type == "AveragePooling2D" || type == "MaxPooling1D" ||
             type == "AveragePooling1D") {
    const size_t rank = type.back() == 'D' && type[type.size() - 2] == '2' ? 2 : 1;
    RW_ASSIGN_OR_RETURN(const int64_t pool, r.Square("pool_size", 2, rank));
    RW_ASSIGN_OR_RETURN(const int64_t strides, r.Square("strides", pool, rank));
    RW_ASSIGN_OR_RETURN(const std::string padding, r.Get<std::string>("padding", "valid"));
    RW_RETURN_IF_ERROR(r.Only("data_format", {"channels_last"}));
    const PoolOptions options{.strides = strides, .padding = padding};
    const bool max = type.rfind("Max", 0) == 0;
    layer = rank == 2 ? (max ? MaxPool2D(pool, options) : AveragePooling2D(pool, options))
                      : (max ? MaxPooling1D(pool, options) : AveragePooling1D(pool, options));
  } else if (type == "GlobalAveragePooling2D" || type == "GlobalAveragePooling1D" ||
             type == "GlobalMaxPooling2D" || type == "GlobalMaxPooling1D") {
    RW_RETURN_IF_ERROR(r.Only("data_format", {"channels_last"}));
    RW_RETURN_IF_ERROR(r.Only("keepdims", {false}));
    if (type == "GlobalAveragePooling2D") layer = GlobalAveragePooling2D();
    if (type == "GlobalAveragePooling1D") layer = GlobalAveragePooling1D();
    if (type == "GlobalMaxPooling2D") layer = GlobalMaxPooling2D();
    if (type == "GlobalMaxPooling1D") layer = GlobalMaxPooling1D();
  } else if (type == "BatchNormalization" || type == "LayerNormalization") {
    // The last axis: -1, or its index (Keras writes [3] for images).
    RW_ASSIGN_OR_RETURN(const Json axis, r.Get<Json>("axis", Json(-1)));
    const Json last = axis.is_array() && axis.size() == 1 ? axis[0] : axis;
    if (!last.is_number_integer() || (last.get<int64_t>() != -1 && last.get<int64_t>() < 1)) {
      return Refuse(r.At("axis"), absl::StrCat(axis.dump(), ": Ringwork normalizes the last axis"));
    }
    const int64_t axis_index = last.get<int64_t>();  // Build checks that it is the last.
    RW_ASSIGN_OR_RETURN(const double epsilon, r.Get<double>("epsilon", 1e-3));
    RW_ASSIGN_OR_RETURN(const bool center, r.Get<bool>("center", true));
    RW_ASSIGN_OR_RETURN(const bool scale, r.Get<bool>("scale", true));
    RW_RETURN_IF_ERROR(r.Initializer("beta_initializer", {"Zeros", "zeros"}));
    RW_RETURN_IF_ERROR(r.Initializer("gamma_initializer", {"Ones", "ones"}));
    RW_RETURN_IF_ERROR(r.Only("beta_regularizer", {}));
    RW_RETURN_IF_ERROR(r.Only("gamma_regularizer", {}));
    RW_RETURN_IF_ERROR(r.Only("beta_constraint", {}));
    RW_RETURN_IF_ERROR(r.Only("gamma_constraint", {}));
    if (type == "BatchNormalization") {
      RW_ASSIGN_OR_RETURN(const double momentum, r.Get<double>("momentum", 0.99));
      RW_RETURN_IF_ERROR(r.Initializer("moving_mean_initializer", {"Zeros", "zeros"}));
      RW_RETURN_IF_ERROR(r.Initializer("moving_variance_initializer", {"Ones", "ones"}));
      RW_RETURN_IF_ERROR(r.Only("synchronized", {false}));
      layer = BatchNormalization({.momentum = static_cast<float>(momentum),
                                  .epsilon = static_cast<float>(epsilon),
                                  .center = center,
                                  .scale = scale,
                                  .axis = axis_index});
    } else {
      RW_RETURN_IF_ERROR(r.Only("rms_scaling", {false}));
      layer = LayerNormalization({.epsilon = static_cast<float>(epsilon),
                                  .center = center,
                                  .scale = scale,
                                  .axis = axis_index});
    }
  } else if (type == "Embedding") {
    RW_ASSIGN_OR_RETURN(const int64_t input_dim, r.Get<int64_t>("input_dim", 0));
    RW_ASSIGN_OR_RETURN(const int64_t output_dim, r.Get<int64_t>("output_dim", 0));
    RW_RETURN_IF_ERROR(r.Only("embeddings_regularizer", {}));
    RW_RETURN_IF_ERROR(r.Only("embeddings_constraint", {}));
    RW_RETURN_IF_ERROR(r.Only("sparse", {false}));
    EmbeddingOptions options;
    RW_ASSIGN_OR_RETURN(options.mask_zero, r.Get<bool>("mask_zero", false));
    RW_ASSIGN_OR_RETURN(options.embeddings_initializer,
                        InitializerOrDefault(r, "embeddings_initializer"));
    layer = Embedding(input_dim, output_dim, options);
  } else if (type == "LSTM" || type == "GRU" || type == "SimpleRNN") {
    RW_ASSIGN_OR_RETURN(layer, RecurrentLayerFrom(r, type));
  } else if (type == "Bidirectional") {
    RW_ASSIGN_OR_RETURN(layer, BidirectionalFrom(r));
  } else if (type == "TimeDistributed") {
    RW_ASSIGN_OR_RETURN(const Json inner, WrappedLayer(r));
    RW_ASSIGN_OR_RETURN(std::unique_ptr<Layer> wrapped,
                        LayerFromKerasConfig(inner["class_name"].get<std::string>(),
                                             inner["config"], r.At("layer")));
    layer = TimeDistributed(std::move(wrapped));
  } else if (type == "Normalization" || type == "Discretization" || type == "CategoryEncoding" ||
             type == "IntegerLookup") {
    RW_ASSIGN_OR_RETURN(layer, PreprocessingLayerFrom(r, type));
  } else if (type == "Activation") {
    RW_ASSIGN_OR_RETURN(const std::string activation, Activation(r, "activation"));
    layer = ActivationLayer(activation);
  } else if (type == "Flatten") {
    RW_RETURN_IF_ERROR(r.Only("data_format", {"channels_last"}));
    layer = Flatten();
  } else if (type == "Reshape") {
    RW_ASSIGN_OR_RETURN(const std::vector<int64_t> target,
                        r.Get<std::vector<int64_t>>("target_shape", {}));
    layer = Reshape(Shape(target.begin(), target.end()));
  } else if (type == "Dropout") {
    RW_ASSIGN_OR_RETURN(const double rate, r.Get<double>("rate", 0));
    RW_RETURN_IF_ERROR(r.Only("noise_shape", {}));
    RW_ASSIGN_OR_RETURN(const int64_t seed, r.Get<int64_t>("seed", 0));
    layer = Dropout(static_cast<float>(rate), static_cast<uint64_t>(seed));
  } else if (type == "Masking") {
    RW_ASSIGN_OR_RETURN(const double mask_value, r.Get<double>("mask_value", 0));
    layer = Masking(static_cast<float>(mask_value));
  } else if (type == "Add" || type == "Multiply") {
    layer = type == "Add" ? Add() : Multiply();
  } else if (type == "Concatenate") {
    RW_RETURN_IF_ERROR(r.Only("axis", {-1}));
    layer = Concatenate();
  } else if (const LayerFactory* make = FindLayer(type)) {
    absl::StatusOr<std::unique_ptr<Layer>> made = (*make)(config);
    if (!made.ok()) return Refuse(path, absl::StrCat(type, ": ", made.status().message()));
    layer = *std::move(made);
    if (layer == nullptr || layer->type() != type) {
      return Refuse(path, absl::StrCat("the factory registered for ", type,
                                       " made no layer, or one of another type"));
    }
    return Named(std::move(layer), config, name);  // Its config is its own to check.
  } else {
    return Refuse(path, absl::StrCat("layer class ", type,
                                     " is not supported (nor registered with RegisterLayer)"));
  }
  RW_RETURN_IF_ERROR(r.Done());
  RW_RETURN_IF_ERROR(r.Get<std::string>("name", "").status());
  return Named(std::move(layer), config, name);
}

bool IsMergeLayerClass(const std::string& class_name) {
  return class_name == "Add" || class_name == "Multiply" || class_name == "Concatenate";
}

bool IsBuiltInLayerClass(const std::string& class_name) {
  static const auto* classes = new std::set<std::string>{
      "InputLayer",
      "Dense",
      "Conv2D",
      "Conv1D",
      "MaxPooling2D",
      "AveragePooling2D",
      "MaxPooling1D",
      "AveragePooling1D",
      "GlobalAveragePooling2D",
      "GlobalAveragePooling1D",
      "GlobalMaxPooling2D",
      "GlobalMaxPooling1D",
      "BatchNormalization",
      "LayerNormalization",
      "Embedding",
      "LSTM",
      "GRU",
      "SimpleRNN",
      "Bidirectional",
      "TimeDistributed",
      "Activation",
      "Flatten",
      "Reshape",
      "Dropout",
      "Masking",
      "Add",
      "Multiply",
      "Concatenate",
      // Ringwork's own types beside Keras' classes above.
      "SyncBatchNormalization",
      "MultiHeadAttention",
      "PositionEmbedding",
      "RandomFlip",
      "SliceLastAxis",
      "Normalization",
      "Discretization",
      "CategoryEncoding",
      "IntegerLookup",
  };
  return classes->count(class_name) > 0;
}

}  // namespace ringwork
