#include "keras/keras_compile_config.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "keras/custom_objects.h"

namespace ringwork {
namespace {

using Json = nlohmann::json;

const std::map<std::string, std::string>& LossClasses() {
  static const auto* classes = new std::map<std::string, std::string>{
      {"sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"},
      {"binary_crossentropy", "BinaryCrossentropy"},
      {"mean_squared_error", "MeanSquaredError"},
      {"mean_absolute_error", "MeanAbsoluteError"},
      {"huber", "Huber"},
      {"categorical_crossentropy", "CategoricalCrossentropy"},
  };
  return *classes;
}

const std::map<std::string, std::string>& OptimizerClasses() {
  static const auto* classes = new std::map<std::string, std::string>{{"adam", "Adam"},
                                                                      {"adamw", "AdamW"},
                                                                      {"sgd", "SGD"},
                                                                      {"rmsprop", "RMSprop"},
                                                                      {"adagrad", "Adagrad"}};
  return *classes;
}

Json KerasObject(const std::string& module, const std::string& class_name, Json config) {
  return {{"module", module},
          {"class_name", class_name},
          {"config", std::move(config)},
          {"registered_name", nullptr}};
}

Json LossJson(const LossSpec& loss) {
  const auto c = LossClasses().find(loss.name);
  const bool plain = !loss.from_logits && loss.label_smoothing == 0 && loss.delta == 1;
  if (plain || c == LossClasses().end()) return loss.name;
  Json config = {{"name", loss.name}, {"reduction", "sum_over_batch_size"}};
  if (loss.name == "huber") {
    config["delta"] = loss.delta;
  } else {
    config["from_logits"] = loss.from_logits;
  }
  if (loss.name == "categorical_crossentropy") config["label_smoothing"] = loss.label_smoothing;
  return KerasObject("keras.losses", c->second, config);
}

Json OptimizerJson(const OptimizerSpec& spec) {
  const OptimizerSpec o = WithKerasDefaults(spec);
  if (o.learning_rate_schedule) {
    RW_LOG(WARNING) << "compile_config: the learning-rate schedule is saved as its starting rate "
                    << *o.learning_rate;
  }
  const auto c = OptimizerClasses().find(o.name);
  Json config = {{"name", o.name}, {"learning_rate", *o.learning_rate}};
  // Keras 3 writes null for no decay.
  config["weight_decay"] =
      o.name == "adamw" || *o.weight_decay > 0 ? Json(*o.weight_decay) : Json(nullptr);
  auto clip = [](float v) { return v > 0 ? Json(v) : Json(nullptr); };
  config["clipnorm"] = clip(o.clipping.clipnorm);
  config["global_clipnorm"] = clip(o.clipping.global_clipnorm);
  config["clipvalue"] = clip(o.clipping.clipvalue);
  if (o.name == "sgd") {
    config["momentum"] = o.momentum;
    config["nesterov"] = o.nesterov;
  } else if (o.name == "rmsprop") {
    config["rho"] = o.rho;
    config["momentum"] = o.momentum;
    config["epsilon"] = o.epsilon;
    config["centered"] = false;
  } else if (o.name == "adagrad") {
    config["initial_accumulator_value"] = o.initial_accumulator_value;
    config["epsilon"] = o.epsilon;
  } else {
    config["beta_1"] = o.beta_1;
    config["beta_2"] = o.beta_2;
    config["epsilon"] = o.epsilon;
    config["amsgrad"] = false;
  }
  return KerasObject("keras.optimizers", c == OptimizerClasses().end() ? o.name : c->second,
                     config);
}

absl::Status Refuse(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

absl::StatusOr<float> Number(const Json& config, const std::string& key, float fallback,
                             const std::string& path) {
  if (!config.contains(key) || config[key].is_null()) return fallback;
  if (!config[key].is_number()) {
    return Refuse(absl::StrCat(path, ".", key), config[key].dump() + " is not a number");
  }
  return config[key].get<float>();
}

absl::StatusOr<LossSpec> LossFrom(const Json& j, const std::string& path) {
  if (j.is_string()) {
    std::string name = j.get<std::string>();
    if (name == "mse") name = "mean_squared_error";
    if (name == "mae") name = "mean_absolute_error";
    if (!LossClasses().count(name) && FindLoss(name) == nullptr) {
      return Refuse(path, "loss " + name + " is not supported (nor registered with RegisterLoss)");
    }
    return LossSpec{name, false};
  }
  for (const auto& [name, class_name] : LossClasses()) {
    if (!j.is_object() || j.value("class_name", "") != class_name) continue;
    const Json config = j.value("config", Json::object());
    for (const auto& [key, value] : config.items()) {
      const bool harmless = key == "name" || key == "from_logits" || key == "dtype" ||
                            (key == "reduction" && value == "sum_over_batch_size") ||
                            (key == "ignore_class" && value.is_null()) ||
                            (key == "axis" && value == -1) ||
                            (key == "label_smoothing" && value == 0) ||
                            (key == "label_smoothing" && name == "categorical_crossentropy") ||
                            (key == "delta" && name == "huber");
      if (!harmless) {
        return Refuse(absl::StrCat(path, ".config.", key), value.dump() + " is not supported");
      }
    }
    const Json logits = config.value("from_logits", Json(false));
    if (!logits.is_boolean()) return Refuse(path + ".config.from_logits", "not true or false");
    LossSpec spec{name, logits.get<bool>()};
    RW_ASSIGN_OR_RETURN(spec.label_smoothing,
                        Number(config, "label_smoothing", 0, path + ".config"));
    RW_ASSIGN_OR_RETURN(spec.delta, Number(config, "delta", 1, path + ".config"));
    return spec;
  }
  // A user's loss as Keras 3 writes it: a registered function ("config": its
  // name) or class, either perhaps as "package>name".
  if (j.is_object()) {
    for (const char* key : {"registered_name", "config", "class_name"}) {
      if (!j.contains(key) || !j[key].is_string()) continue;
      std::string name = j[key].get<std::string>();
      if (const size_t cut = name.find('>'); cut != std::string::npos) name = name.substr(cut + 1);
      if (FindLoss(name) != nullptr) return LossSpec{name, false};
    }
  }
  return Refuse(path, j.dump() +
                          " is not a loss Ringwork has (nor one registered with "
                          "RegisterLoss)");
}

absl::StatusOr<OptimizerSpec> OptimizerFrom(const Json& j, const std::string& path) {
  std::string name = j.is_string() ? j.get<std::string>() : j.value("class_name", "");
  for (const auto& [lower, class_name] : OptimizerClasses()) {
    if (name == class_name) name = lower;
  }
  if (!OptimizerClasses().count(name)) {
    return Refuse(path, absl::StrCat("optimizer ", j.dump(), " is not supported"));
  }
  OptimizerSpec o;
  o.name = name;
  if (j.is_string()) return WithKerasDefaults(o);
  const Json config = j.value("config", Json::object());
  const std::string at = path + ".config";
  for (const auto& [key, value] : config.items()) {
    static const std::set<std::string> read = {"name",
                                               "learning_rate",
                                               "beta_1",
                                               "beta_2",
                                               "epsilon",
                                               "momentum",
                                               "nesterov",
                                               "weight_decay",
                                               "clipnorm",
                                               "global_clipnorm",
                                               "clipvalue",
                                               "rho",
                                               "initial_accumulator_value"};
    const bool harmless =
        (key == "amsgrad" && value == false) || (key == "use_ema" && value == false) ||
        key == "ema_momentum" || key == "ema_overwrite_frequency" || key == "jit_compile" ||
        key == "is_legacy_optimizer" || key == "decay" || (key == "centered" && value == false) ||
        ((key == "loss_scale_factor" || key == "gradient_accumulation_steps") && value.is_null());
    if (!read.count(key) && !harmless) {
      return Refuse(absl::StrCat(at, ".", key), value.dump() + " is not supported");
    }
  }
  if (config.contains("learning_rate") && config["learning_rate"].is_object()) {
    return Refuse(at + ".learning_rate", "learning-rate schedules are not read from a file yet");
  }
  o = WithKerasDefaults(o);
  RW_ASSIGN_OR_RETURN(o.learning_rate, Number(config, "learning_rate", *o.learning_rate, at));
  RW_ASSIGN_OR_RETURN(o.beta_1, Number(config, "beta_1", o.beta_1, at));
  RW_ASSIGN_OR_RETURN(o.beta_2, Number(config, "beta_2", o.beta_2, at));
  RW_ASSIGN_OR_RETURN(o.epsilon, Number(config, "epsilon", o.epsilon, at));
  RW_ASSIGN_OR_RETURN(o.momentum, Number(config, "momentum", o.momentum, at));
  RW_ASSIGN_OR_RETURN(o.rho, Number(config, "rho", o.rho, at));
  RW_ASSIGN_OR_RETURN(o.initial_accumulator_value,
                      Number(config, "initial_accumulator_value", o.initial_accumulator_value, at));
  RW_ASSIGN_OR_RETURN(o.weight_decay, Number(config, "weight_decay", *o.weight_decay, at));
  RW_ASSIGN_OR_RETURN(o.clipping.clipnorm, Number(config, "clipnorm", 0, at));
  RW_ASSIGN_OR_RETURN(o.clipping.global_clipnorm, Number(config, "global_clipnorm", 0, at));
  RW_ASSIGN_OR_RETURN(o.clipping.clipvalue, Number(config, "clipvalue", 0, at));
  if (config.contains("nesterov") && !config["nesterov"].is_null()) {
    if (!config["nesterov"].is_boolean()) return Refuse(at + ".nesterov", "not true or false");
    o.nesterov = config["nesterov"].get<bool>();
  }
  return o;
}

absl::StatusOr<CompileOptions> ReadCompileConfig(const Json& config, const std::string& path) {
  if (!config.is_object()) return Refuse(path, "not an object");
  CompileOptions options;
  for (const auto& [key, value] : config.items()) {
    const std::string at = absl::StrCat(path, ".", key);
    if (key == "optimizer") {
      RW_ASSIGN_OR_RETURN(options.optimizer, OptimizerFrom(value, at));
    } else if (key == "loss" && value.is_object() && !value.contains("class_name")) {
      if (value.empty()) return Refuse(at, "no loss");
      for (const auto& [output, spec] : value.items()) {
        RW_ASSIGN_OR_RETURN(options.losses[output], LossFrom(spec, at + "." + output));
      }
      options.loss = options.losses.begin()->second;
    } else if (key == "loss") {
      RW_ASSIGN_OR_RETURN(options.loss, LossFrom(value, at));
    } else if (key == "loss_weights" && value.is_object()) {
      for (const auto& [output, w] : value.items()) {
        if (!w.is_number()) return Refuse(at + "." + output, "not a number");
        options.loss_weights[output] = w.get<float>();
      }
    } else if (key == "metrics" && value.is_array()) {
      options.metrics.clear();
      for (const Json& m : value) {
        if (!m.is_string()) return Refuse(at, m.dump() + ": metrics are read by name");
        options.metrics.push_back(m.get<std::string>());
      }
    } else if (key == "metrics" && value.is_null()) {
      options.metrics.clear();
    } else if (!((key == "loss_weights" || key == "weighted_metrics") && value.is_null()) &&
               !(key == "run_eagerly" || key == "steps_per_execution" || key == "jit_compile" ||
                 key == "auto_scale_loss")) {
      return Refuse(at, value.dump() + " is not supported");
    }
  }
  return options;
}

}  // namespace

nlohmann::json KerasCompileConfig(const CompileOptions& options) {
  Json loss = LossJson(options.loss);
  if (!options.losses.empty()) {
    loss = Json::object();
    for (const auto& [output, spec] : options.losses) loss[output] = LossJson(spec);
  }
  Json weights = nullptr;
  if (!options.loss_weights.empty()) weights = options.loss_weights;
  return {{"optimizer", OptimizerJson(options.optimizer)},
          {"loss", loss},
          {"loss_weights", weights},
          {"metrics", options.metrics},
          {"weighted_metrics", nullptr},
          {"run_eagerly", false},
          {"steps_per_execution", 1},
          {"jit_compile", false}};
}

absl::StatusOr<CompileOptions> CompileOptionsFromKeras(const nlohmann::json& config,
                                                       const std::string& path) {
  try {
    return ReadCompileConfig(config, path);
  } catch (const Json::exception& e) {  // A value of another type than Keras writes.
    return Refuse(path, absl::StrCat("not a Keras compile_config: ", e.what()));
  }
}

}  // namespace ringwork
