#include "keras/sequential.h"

namespace ringwork {

Sequential::Sequential() { set_model_name("sequential"); }

Sequential::Sequential(std::vector<std::unique_ptr<Layer>> layers) : Sequential() {
  for (auto& layer : layers) Add(std::move(layer));
}

void Sequential::Add(std::unique_ptr<Layer> layer) {
  AddNode(std::move(layer), {static_cast<int>(layer_count())});
}

}  // namespace ringwork
