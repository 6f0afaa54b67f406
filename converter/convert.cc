#include "converter/convert.h"

#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "converter/architectures/encoder_decoder_layout.h"
#include "converter/error.h"
#include "converter/model_config_json.h"
#include "converter/readers/safetensors.h"
#include "converter/sha256.h"
#include "runtime/core/tensor.h"

namespace tern::convert {

namespace {

constexpr const char* kConverterVersion = "tern-convert 0.1.0";

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  const std::string text = ReadText(path);
  return std::vector<uint8_t>(text.begin(), text.end());
}

std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool Skipped(const std::string& name, const std::vector<std::string>& prefixes) {
  for (const auto& p : prefixes) {
    if (name.compare(0, p.size(), p) == 0) return true;
  }
  return false;
}

}  // namespace

DType ParseDType(const std::string& name) {
  if (name == "fp32" || name == "f32") return DType::kF32;
  if (name == "fp16" || name == "f16") return DType::kF16;
  if (name == "int8" || name == "i8") return DType::kI8;
  if (name == "int4" || name == "i4") return DType::kI4;
  throw Error("unknown dtype \"" + name + "\"; expected fp32, fp16, int8 or int4");
}

TernContents BuildContents(const ConvertOptions& options) {
  const SafetensorsFile file = SafetensorsFile::Read(options.checkpoint);
  std::string config_text;
  std::string config_label;
  if (!options.config.empty()) {
    config_text = ReadText(options.config);
    config_label = options.config;
  } else if (file.metadata().count("config")) {
    config_text = file.metadata().at("config");
    config_label = options.checkpoint + " (metadata \"config\")";
  } else {
    config_label = DirName(options.checkpoint) + "/config.json";
    std::ifstream probe(config_label);
    if (!probe) {
      throw Error(options.checkpoint + ": no config: pass --config, or put config.json beside the checkpoint");
    }
    config_text = ReadText(config_label);
  }
  TernContents out;
  out.config = ParseModelConfig(config_text, config_label);
  if (out.config.architecture != Architecture::kEncoderDecoder) {
    throw Error(config_label + ": only architecture \"encoder_decoder\" can be converted by this version");
  }

  const std::vector<ExpectedTensor> layout = EncoderDecoderLayout(out.config);
  std::map<std::string, const ExpectedTensor*> expected;
  for (const auto& e : layout) expected[e.name] = &e;
  for (const auto& entry : file.entries()) {
    if (Skipped(entry.first, options.skip_prefixes)) continue;
    if (!expected.count(entry.first)) {
      throw Error(options.checkpoint + ": unexpected tensor \"" + entry.first +
                  "\" (not part of this architecture/config; wrong config or name map?)");
    }
  }
  size_t done = 0;
  for (const auto& e : layout) {
    if (!file.has(e.name)) {
      if (e.required) throw Error(options.checkpoint + ": required tensor \"" + e.name + "\" is missing");
      continue;
    }
    HostTensor t = file.Float(e.name);
    if (t.shape != e.shape) {
      HostTensor want;
      want.shape = e.shape;
      throw Error(options.checkpoint + ": tensor \"" + e.name + "\" has shape " + t.shape_string() +
                  ", expected " + want.shape_string() + " from the config");
    }
    for (size_t i = 0; i < t.values.size(); ++i) {
      if (!std::isfinite(t.values[i])) {
        throw Error(options.checkpoint + ": tensor \"" + e.name + "\" has a non-finite value at index " +
                    std::to_string(i));
      }
    }
    DType dtype = e.role == TensorRole::kVector ? DType::kF32 : options.dtype;
    // Embeddings are looked up row by row: int4 would cost quality for little; keep them int8.
    if (e.role == TensorRole::kEmbedding && dtype == DType::kI4) dtype = DType::kI8;
    out.tensors.push_back(Encode(t, dtype, options.group_size));
    if (options.progress) options.progress(++done, layout.size());
  }
  if (!options.tokenizer.empty()) out.source_tokenizer = ReadBytes(options.tokenizer);
  if (!options.target_tokenizer.empty()) out.target_tokenizer = ReadBytes(options.target_tokenizer);
  out.converter_version = kConverterVersion;
  out.source_digest = "sha256:" + Sha256File(options.checkpoint);
  out.source_format = "safetensors";
  out.creation_options = options.command_line;
  return out;
}

}  // namespace tern::convert
