#include "tests/support/tiny_model.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "converter/architectures/decoder_only_layout.h"
#include "converter/convert.h"
#include "converter/readers/safetensors.h"

namespace tern::testing {

AlignedBytes::AlignedBytes(const std::vector<uint8_t>& bytes)
    : storage_(bytes.size() + 64), size_(bytes.size()) {
  shift_ = (64 - reinterpret_cast<uintptr_t>(storage_.data()) % 64) % 64;
  std::copy(bytes.begin(), bytes.end(), storage_.begin() + static_cast<std::ptrdiff_t>(shift_));
}

ModelConfig TinyConfig() {
  ModelConfig c;
  c.d_model = 16;
  c.heads = 2;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.d_ff = 24;
  c.src_vocab_size = 20;
  c.tgt_vocab_size = 20;
  c.embedding_scale = 4.0f;
  c.shared_embeddings = true;
  c.tied_output = true;
  c.max_positions = 64;
  return c;
}

ModelConfig TinyDecoderOnlyConfig(int32_t vocab_size) {
  ModelConfig c;
  c.architecture = Architecture::kDecoderOnly;
  c.d_model = 16;
  c.heads = 2;
  c.encoder_layers = 0;
  c.decoder_layers = 2;
  c.d_ff = 32;
  c.activation = ref::Activation::kGELUTanh;
  c.norm_placement = NormPlacement::kPre;
  c.position = PositionKind::kLearned;
  c.src_vocab_size = 0;
  c.tgt_vocab_size = vocab_size;
  c.shared_embeddings = false;
  c.tied_output = true;
  c.max_positions = 64;
  c.eos_id = vocab_size - 1;
  c.bos_id = c.pad_id = c.unk_id = c.decoder_start_id = c.eos_id;
  return c;
}

convert::TernContents RandomContents(const ModelConfig& config, uint32_t seed, DType dtype) {
  std::mt19937 rng(seed);
  convert::TernContents contents;
  contents.config = config;
  for (const auto& e : convert::ModelLayout(config)) {
    convert::HostTensor t;
    t.name = e.name;
    t.shape = e.shape;
    const float scale = e.role == convert::TensorRole::kVector
                            ? 0.1f
                            : 1.0f / std::sqrt(static_cast<float>(e.shape.back()));
    std::uniform_real_distribution<float> dist(-scale, scale);
    t.values.resize(static_cast<size_t>(t.elements()));
    for (auto& v : t.values) v = dist(rng);
    // LayerNorm gains near 1, like trained models.
    if (e.name.find("norm.weight") != std::string::npos) {
      for (auto& v : t.values) v += 1.0f;
    }
    const DType d = e.role == convert::TensorRole::kVector ? DType::kF32 : dtype;
    contents.tensors.push_back(convert::Encode(t, d, 8));
  }
  contents.converter_version = "test";
  return contents;
}

AlignedBytes RandomModelBytes(const ModelConfig& config, uint32_t seed, DType dtype) {
  return AlignedBytes(convert::SerializeModel(RandomContents(config, seed, dtype)));
}

namespace {

std::vector<int32_t> Int32s(const convert::SafetensorsFile& f, const std::string& name) {
  std::vector<int32_t> out;
  for (int64_t v : f.Ints(name)) out.push_back(static_cast<int32_t>(v));
  return out;
}

}  // namespace

ParityFixture LoadParityFixture(const std::string& name, DType dtype) {
  const std::string path = std::string(TERN_FIXTURES) + "/parity/" + name + ".safetensors";
  convert::ConvertOptions options;
  options.checkpoint = path;
  options.dtype = dtype;
  options.skip_prefixes = {"expected."};
  convert::TernContents contents = convert::BuildContents(options);
  ParityFixture f;
  f.config = contents.config;
  f.model = AlignedBytes(convert::SerializeModel(contents));
  const convert::SafetensorsFile file = convert::SafetensorsFile::Read(path);
  f.src_ids = Int32s(file, "expected.src_ids");
  f.src_lengths = Int32s(file, "expected.src_lengths");
  f.tgt_in = Int32s(file, "expected.tgt_in");
  f.greedy_ids = Int32s(file, "expected.greedy_ids");
  f.greedy_lengths = Int32s(file, "expected.greedy_lengths");
  f.encoder_out = file.Float("expected.encoder_out").values;
  f.logits = file.Float("expected.logits").values;
  const auto& src_shape = file.entries().at("expected.src_ids").shape;
  f.batch = src_shape[0];
  f.src_seq = src_shape[1];
  f.tgt_seq = file.entries().at("expected.tgt_in").shape[1];
  f.max_len = file.entries().at("expected.greedy_ids").shape[1];
  return f;
}

}  // namespace tern::testing
