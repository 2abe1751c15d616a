#include "keras/saved_model.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "checkpoint/zip_archive.h"
#include "keras/keras_archive.h"
#include "keras/keras_compile_config.h"
#include "keras/keras_import.h"
#include "keras/tfjs_export.h"

namespace ringwork {

absl::Status SaveModel(const Model& model, const std::string& path) {
  if (absl::EndsWith(path, ".keras")) return SaveKerasArchive(model, path);
  return ExportTfjs(model, path);
}

namespace {

// A TF.js directory's model.json, else the path itself.
std::string ModelJsonFile(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error) ? path + "/model.json" : path;
}

}  // namespace

absl::StatusOr<std::string> ReadModelJson(const std::string& path) {
  const std::string file = ModelJsonFile(path);
  if (absl::EndsWith(file, ".keras")) return ReadZipMember(file, "config.json");
  std::ifstream in(file);
  if (!in) return absl::NotFoundError(absl::StrCat(file, ": cannot read"));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

absl::StatusOr<Model> LoadModel(const std::string& path, std::optional<CompileOptions> compile) {
  const std::string file = ModelJsonFile(path);
  RW_ASSIGN_OR_RETURN(const std::string text, ReadModelJson(file));
  RW_ASSIGN_OR_RETURN(Model model, ModelFromKerasJson(text));
  if (!compile.has_value()) {
    // A .keras archive's compile_config: as the model was compiled.
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_object() && j.contains("compile_config") && !j["compile_config"].is_null()) {
      absl::StatusOr<CompileOptions> kept =
          CompileOptionsFromKeras(j["compile_config"], "$.compile_config");
      if (kept.ok()) {
        compile = *std::move(kept);
      } else {  // The model predicts the same; training on would not be as compiled.
        RW_LOG(WARNING) << file << ": its compile settings are not used ("
                        << kept.status().message()
                        << "); compiled for prediction and fine-tuning instead";
      }
    }
  }
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
