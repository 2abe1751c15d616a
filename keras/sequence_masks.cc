#include "keras/sequence_masks.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace ringwork {
namespace {

std::string Describe(const Layer& layer) {
  return absl::StrCat(layer.name(), " (", layer.type(), ")");
}

}  // namespace

absl::Status SequenceMasks::Plan(const std::vector<std::unique_ptr<Layer>>& layers,
                                 const std::vector<std::vector<int>>& inputs,
                                 const std::vector<Shape>& shapes,
                                 const std::vector<int>& outputs) {
  mask_of_.assign(layers.size() + 1, -1);
  fills_.assign(layers.size(), -1);
  and_of_.assign(layers.size(), {});
  reads_.assign(layers.size(), -1);
  masked_input_.assign(layers.size(), 0);
  buffers_.clear();
  std::vector<int> made_by;  // Per buffer: the layer that makes it.
  const auto maker = [&](int buffer) { return Describe(*layers[made_by[buffer]]); };
  for (size_t l = 0; l < layers.size(); ++l) {
    const Layer& layer = *layers[l];
    const Shape& out = shapes[l + 1];
    std::vector<int> in;
    for (int a : inputs[l]) {
      if (mask_of_[a] >= 0 && std::find(in.begin(), in.end(), mask_of_[a]) == in.end()) {
        in.push_back(mask_of_[a]);
      }
    }
    if (layer.makes_mask()) {
      fills_[l] = static_cast<int>(buffers_.size());
      mask_of_[l + 1] = fills_[l];
      buffers_.emplace_back();
      made_by.push_back(static_cast<int>(l));
      continue;
    }
    if (in.empty()) continue;
    masked_input_[l] = 1;
    const Layer::MaskUse use = layer.merges() ? Layer::MaskUse::kPasses : layer.mask_use();
    if (use == Layer::MaskUse::kRefuses) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layer ", Describe(layer), " does not support masking, but its input carries the mask ",
          maker(in[0]), " makes; masks reach recurrent layers, MultiHeadAttention and ",
          "GlobalAveragePooling1D through Dense, Dropout, Activation, LayerNormalization, ",
          "PositionEmbedding, TimeDistributed and merges"));
    }
    if (use == Layer::MaskUse::kReads || use == Layer::MaskUse::kReadsAndPasses) {
      reads_[l] = in[0];
    }
    if (use == Layer::MaskUse::kReads) continue;
    if (use == Layer::MaskUse::kReadsAndPasses || in.size() == 1) {
      mask_of_[l + 1] = in[0];
    } else {  // A merge of differently masked inputs: a step is data where it is in all.
      fills_[l] = static_cast<int>(buffers_.size());
      and_of_[l] = in;
      mask_of_[l + 1] = fills_[l];
      buffers_.emplace_back();
      made_by.push_back(made_by[in[0]]);
    }
    const Shape& before = shapes[inputs[l][0]];
    if (out.size() < 2 || out[0] != before[0]) {
      return absl::InvalidArgumentError(
          absl::StrCat("layer ", Describe(layer), " changes the steps of its input (",
                       ShapeString(before), " to ", ShapeString(out), "), which carries the mask ",
                       maker(mask_of_[l + 1]), " makes"));
    }
  }
  for (int a : outputs) {
    if (mask_of_[a] < 0) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "the output of ", Describe(*layers[a - 1]), " carries the mask ", maker(mask_of_[a]),
        " makes, and Ringwork's losses do not weight steps by a mask; end it in a layer that "
        "reads it (a recurrent layer without return_sequences, GlobalAveragePooling1D)"));
  }
  return absl::OkStatus();
}

void SequenceMasks::BeforeForward(size_t l, Layer& layer) {
  if (reads_.empty() || reads_[l] < 0) return;
  layer.set_input_mask(buffers_[reads_[l]].data());
}

void SequenceMasks::AfterForward(size_t l, const Layer& layer,
                                 const std::vector<const Tensor*>& xs) {
  if (fills_.empty() || fills_[l] < 0) return;
  std::vector<uint8_t>& mask = buffers_[fills_[l]];
  if (and_of_[l].empty()) {
    layer.MakeMask(*xs[0], &mask);
    return;
  }
  mask = buffers_[and_of_[l][0]];
  for (size_t i = 1; i < and_of_[l].size(); ++i) {
    const std::vector<uint8_t>& more = buffers_[and_of_[l][i]];
    for (size_t e = 0; e < mask.size(); ++e) mask[e] &= more[e];
  }
}

}  // namespace ringwork
