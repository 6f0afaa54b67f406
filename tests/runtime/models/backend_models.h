// Models for the backend tests (XNNPACK vs reference): random weights in any dtype with a chosen
// int4 block size, and a 64-wide config whose rows XNNPACK's blockwise int4 (blocks of 32)
// takes. tests/support/tiny_model.h's RandomContents fixes int4 blocks at 8, which XNNPACK does
// not take (those layers run on the vectorizable loops, vectorized/linear.h).
#pragma once

#include <cmath>
#include <random>
#include <string>

#include "converter/architectures/encoder_decoder_layout.h"
#include "converter/quantize.h"
#include "converter/writer.h"
#include "tests/support/tiny_model.h"

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
#include "runtime/kernels/vectorized/linear_sign.h"
#include "runtime/kernels/xnnpack/linear.h"
#endif

namespace tern::testing {

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
// Whether sessions run int8 / int4 per-row layers (in panels of 16 rows, as WideConfig's) on
// tern's AVX2 loops instead of XNNPACK on this CPU (vec::SignPanelsBeatXnnpack).
inline bool LoopsPreferred() {
  static const int8_t bytes[16 * 64] = {};
  static const float scales[16] = {};
  WeightView w;
  w.dtype = DType::kI8;
  w.data = bytes;
  w.rows = 16;
  w.cols = 64;
  w.scales = scales;
  return vec::SignPanelsBeatXnnpack(w);
}

// For a test about XNNPACK's operators in sessions (cut per thread, shared packed copies): its
// int8 layers stay on XNNPACK while it lives (xnn::SetPreferLoopsForTesting).
struct XnnpackInt8ForTest {
  XnnpackInt8ForTest() { xnn::SetPreferLoopsForTesting(false); }
  ~XnnpackInt8ForTest() { xnn::SetPreferLoopsForTesting(true); }
  XnnpackInt8ForTest(const XnnpackInt8ForTest&) = delete;
  XnnpackInt8ForTest& operator=(const XnnpackInt8ForTest&) = delete;
};
#endif

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
inline convert::TernContents ModelContents(const ModelConfig& config, uint32_t seed, DType dtype,
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
  return contents;
}

inline AlignedBytes ModelBytes(const ModelConfig& config, uint32_t seed, DType dtype,
                               int64_t group) {
  return AlignedBytes(convert::SerializeModel(ModelContents(config, seed, dtype, group)));
}

// A vocabulary shortlist over the config's vocabularies: F = 2 frequent ids, and for source
// token s the K = 3 ids (3s + 5), (5s + 7), (7s + 9) mod the target vocabulary (some rows
// sharing ids with others, some with the frequent ids or the special ids).
inline convert::ShortlistData ToyShortlist(const ModelConfig& config) {
  convert::ShortlistData s;
  const int32_t v = config.tgt_vocab_size;
  s.k = 3;
  s.frequent = {4 % v, 6 % v};
  s.row_offsets.push_back(0);
  for (int32_t src = 0; src < config.src_vocab_size; ++src) {
    for (int32_t a : {3, 5, 7}) s.ids.push_back((a * src + a + 2) % v);
    s.row_offsets.push_back(static_cast<uint32_t>(s.ids.size()));
  }
  return s;
}

// ModelBytes with ToyShortlist in the file: as the converter writes it by default (format 1.11,
// 16-bit row ids), or with wide_ids the 1.5 form (32-bit ids).
inline AlignedBytes ShortlistModelBytes(const ModelConfig& config, uint32_t seed, DType dtype,
                                        int64_t group, bool wide_ids = false) {
  convert::TernContents contents = ModelContents(config, seed, dtype, group);
  contents.shortlist = ToyShortlist(config);
  contents.shortlist_wide_ids = wide_ids;
  return AlignedBytes(convert::SerializeModel(contents));
}

}  // namespace tern::testing
