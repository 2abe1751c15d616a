#include "keras/saved_model.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "keras/keras_import.h"
#include "keras/tfjs_export.h"

namespace ringwork {

absl::Status SaveModel(const Model& model, const std::string& dir) {
  return ExportTfjs(model, dir);
}

absl::StatusOr<Model> LoadModel(const std::string& path, std::optional<CompileOptions> compile) {
  std::error_code error;
  const std::string file = std::filesystem::is_directory(path, error) ? path + "/model.json" : path;
  std::ifstream in(file);
  if (!in) return absl::NotFoundError(absl::StrCat(file, ": cannot read"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  RW_ASSIGN_OR_RETURN(Model model, ModelFromKerasJson(text));
  if (!compile.has_value()) {
    compile = CompileOptions{};
    const std::string activation = model.output_activation();
    compile->loss = activation == "sigmoid"
                        ? LossSpec{"binary_crossentropy", false}
                        : LossSpec{"sparse_categorical_crossentropy", activation != "softmax"};
    compile->optimizer = {.name = "adam"};
  }
  RW_RETURN_IF_ERROR(model.Compile(*compile));
  const std::vector<Shape> inputs = model.signature().input_shapes;
  Shape flat;
  if (inputs.size() == 1) {
    flat = inputs[0];
  } else {
    int64_t width = 0;
    for (const Shape& s : inputs) width += NumElements(s);
    flat = {width};
  }
  RW_RETURN_IF_ERROR(model.Build(flat));
  RW_RETURN_IF_ERROR(model.LoadWeights(file));
  return model;
}

}  // namespace ringwork
