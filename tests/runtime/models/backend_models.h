// Models for the backend tests (XNNPACK vs reference): random weights in any dtype with a chosen
// int4 block size, and a 64-wide config whose rows XNNPACK's blockwise int4 (blocks of 32)
// takes. tests/support/tiny_model.h's RandomContents fixes int4 blocks at 8, which XNNPACK does
// not take (those layers run on the reference kernel).
#pragma once

#include <cmath>
#include <random>
#include <string>

#include "converter/architectures/encoder_decoder_layout.h"
#include "converter/quantize.h"
#include "converter/writer.h"
#include "tests/support/tiny_model.h"

namespace tern::testing {

// d_model 64, 4 heads, 2+2 layers, d_ff 96, vocab 40: every row length a multiple of 32.
inline ModelConfig WideConfig() {
  ModelConfig c = TinyConfig();
  c.d_model = 64;
  c.heads = 4;
  c.d_ff = 96;
  c.src_vocab_size = 40;
  c.tgt_vocab_size = 40;
  c.embedding_scale = 8.0f;
  return c;
}

// RandomContents with the int4 block size as a parameter (0: one scale per row).
inline AlignedBytes ModelBytes(const ModelConfig& config, uint32_t seed, DType dtype,
                               int64_t group) {
  std::mt19937 rng(seed);
  convert::TernContents contents;
  contents.config = config;
  for (const auto& e : convert::EncoderDecoderLayout(config)) {
    convert::HostTensor t;
    t.name = e.name;
    t.shape = e.shape;
    const bool vector = e.role == convert::TensorRole::kVector;
    const float scale = vector ? 0.1f : 1.0f / std::sqrt(static_cast<float>(e.shape.back()));
    std::uniform_real_distribution<float> dist(-scale, scale);
    t.values.resize(static_cast<size_t>(t.elements()));
    for (auto& v : t.values) v = dist(rng);
    if (e.name.find("norm.weight") != std::string::npos) {
      for (auto& v : t.values) v += 1.0f;
    }
    contents.tensors.push_back(convert::Encode(t, vector ? DType::kF32 : dtype, group));
  }
  contents.converter_version = "test";
  return AlignedBytes(convert::SerializeModel(contents));
}

}  // namespace tern::testing
