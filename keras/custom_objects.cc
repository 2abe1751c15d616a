#include "keras/custom_objects.h"

#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "keras/keras_layer_config.h"
#include "keras/losses.h"
#include "keras/metrics.h"

namespace ringwork {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, LossFactory> losses;
  std::map<std::string, MetricFactory> metrics;
  std::map<std::string, LayerFactory> layers;
};

Registry& TheRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

template <typename Factory>
absl::Status Add(std::map<std::string, Factory>& into, const char* what, const std::string& name,
                 Factory factory, bool built_in) {
  if (name.empty() || !factory) {
    return absl::InvalidArgumentError(absl::StrCat("Register", what, ": a name and a factory"));
  }
  if (built_in) {
    return absl::AlreadyExistsError(absl::StrCat("Register", what, "(\"", name,
                                                 "\"): Ringwork has a built-in ", what,
                                                 " of that name; register yours under another"));
  }
  if (!into.emplace(name, std::move(factory)).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("Register", what, "(\"", name, "\"): registered already"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterLoss(const std::string& name, LossFactory factory) {
  const bool built_in = Loss::IsBuiltIn(name);
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  return Add(r.losses, "Loss", name, std::move(factory), built_in);
}

absl::Status RegisterMetric(const std::string& name, MetricFactory factory) {
  const bool built_in = Metric::IsBuiltIn(name);
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  return Add(r.metrics, "Metric", name, std::move(factory), built_in);
}

absl::Status RegisterLayer(const std::string& class_name, LayerFactory factory) {
  const bool built_in = IsBuiltInLayerClass(class_name);
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  return Add(r.layers, "Layer", class_name, std::move(factory), built_in);
}

// The factories run outside the lock: one may look up another name.
std::shared_ptr<const LossFunction> FindLoss(const std::string& name) {
  LossFactory make;
  {
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    const auto it = r.losses.find(name);
    if (it == r.losses.end()) return nullptr;
    make = it->second;
  }
  return make();
}

std::shared_ptr<const MetricFunction> FindMetric(const std::string& name) {
  MetricFactory make;
  {
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    const auto it = r.metrics.find(name);
    if (it == r.metrics.end()) return nullptr;
    make = it->second;
  }
  return make();
}

const LayerFactory* FindLayer(const std::string& class_name) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  const auto it = r.layers.find(class_name);
  return it == r.layers.end() ? nullptr : &it->second;  // Entries are never removed.
}

}  // namespace ringwork
