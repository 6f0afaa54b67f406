// head_dim (format 1.6): heads of their own size, heads * head_dim != d_model, in the
// encoder-decoder (the decoder-only path is checked against PyTorch by the Gemma fixture,
// tests/converter/llama_families_test.cc). An exact equivalence: model B has head_dim 16 where
// model A has d_model / heads = 8, each B head being A's head padded with 8 zero dimensions in
// W^Q, W^K, W^V (and zero columns of W^O); B's W^Q is A's times sqrt(16 / 8), which undoes the
// smaller 1/sqrt(head_dim) scaling. Both compute the same function: encoder outputs and
// decoder logits agree within 1e-5, on both backends, in self- and cross-attention.
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/api/session_internal.h"
#include "tests/support/tiny_model.h"

namespace tern {
namespace {

std::vector<float> Floats(const convert::EncodedTensor& t) {
  std::vector<float> v(t.data.size() / sizeof(float));
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

void SetFloats(convert::EncodedTensor* t, const std::vector<float>& v) {
  t->data.resize(v.size() * sizeof(float));
  std::memcpy(t->data.data(), v.data(), t->data.size());
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A's attention tensors widened to heads of `wide` columns (A's have `narrow`).
convert::TernContents Widen(convert::TernContents c, int64_t heads, int64_t narrow, int64_t wide) {
  const int64_t d = c.config.d_model;
  const float q_scale = static_cast<float>(std::sqrt(static_cast<double>(wide) / narrow));
  for (auto& t : c.tensors) {
    const bool attn = t.name.find("attn.") != std::string::npos;
    if (!attn) continue;
    const std::vector<float> a = Floats(t);
    std::vector<float> b;
    const bool q = t.name.find("q_proj") != std::string::npos;
    if (t.name.find("out_proj.weight") != std::string::npos) {  // [d, heads * narrow] columns
      b.assign(static_cast<size_t>(d * heads * wide), 0.0f);
      for (int64_t r = 0; r < d; ++r)
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t j = 0; j < narrow; ++j)
            b[r * heads * wide + h * wide + j] = a[r * heads * narrow + h * narrow + j];
      t.shape = {d, heads * wide};
    } else if (t.name.find("out_proj") != std::string::npos) {
      continue;  // its bias [d] is unchanged
    } else if (t.name.find("_proj.") != std::string::npos) {
      // q/k/v weight [heads * narrow, d] or bias [heads * narrow]: rows per head, zero-padded.
      const int64_t cols = EndsWith(t.name, ".weight") ? d : 1;
      b.assign(static_cast<size_t>(heads * wide * cols), 0.0f);
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t j = 0; j < narrow; ++j)
          for (int64_t k = 0; k < cols; ++k)
            b[(h * wide + j) * cols + k] = a[(h * narrow + j) * cols + k] * (q ? q_scale : 1.0f);
      t.shape[0] = heads * wide;
    } else {
      continue;
    }
    SetFloats(&t, b);
  }
  c.config.head_dim = static_cast<int32_t>(wide);
  return c;
}

struct Outputs {
  std::vector<float> encoder, logits;
};

Outputs Run(const convert::TernContents& contents, Backend backend) {
  const testing::AlignedBytes bytes(convert::SerializeModel(contents));
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  Limits limits;
  limits.backend = backend;
  limits.max_batch = 2;
  limits.max_source_length = 6;
  limits.max_target_length = 5;
  auto need = Session::RequiredArenaBytes(model.value(), limits);
  INFO(need.status().message());
  REQUIRE(need.ok());
  std::vector<uint8_t> arena(need.value());
  Session session;
  const Status s = session.Prepare(model.value(), limits, arena.data(), arena.size());
  INFO(s.message());
  REQUIRE(s.ok());
  EncoderDecoder& m = tern::internal::encoder_decoder(session);
  const int32_t src[] = {5, 6, 7, 8, 9, 2, 10, 11, 2, 0, 0, 0};
  const int32_t lengths[] = {6, 3};
  REQUIRE(m.Encode(src, 6, lengths, 2).ok());
  Outputs out;
  out.encoder.assign(m.encoder_output(), m.encoder_output() + 2 * 6 * contents.config.d_model);
  const int32_t steps[][2] = {{1, 1}, {12, 4}, {7, 13}, {3, 9}};
  for (const auto& tokens : steps) {
    const float* logits = nullptr;
    REQUIRE(m.DecodeStep(tokens, &logits).ok());
    out.logits.insert(out.logits.end(), logits, logits + 2 * contents.config.tgt_vocab_size);
  }
  return out;
}

float MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float worst = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

TEST_CASE("head_dim: heads wider than d_model / heads compute what the zero-padded heads do",
          "[head_dim]") {
  ModelConfig c = testing::TinyConfig();  // d_model 16, 2 heads: d_head 8
  c.norm_placement = NormPlacement::kPre;
  const convert::TernContents a = testing::RandomContents(c, 41, DType::kF32);
  const convert::TernContents b = Widen(a, c.heads, c.d_model / c.heads, 16);
  REQUIRE(b.config.d_q() == 32);
  for (Backend backend : testing::Backends()) {
    INFO(static_cast<int>(backend));
    const Outputs x = Run(a, backend), y = Run(b, backend);
    CHECK(MaxDiff(x.encoder, y.encoder) <= 1e-5f);
    CHECK(MaxDiff(x.logits, y.logits) <= 1e-5f);
    // The test can fail: without the q scaling the padded model is a different function.
    convert::TernContents unscaled = b;
    for (auto& t : unscaled.tensors) {
      if (t.name.find("q_proj") == std::string::npos) continue;
      std::vector<float> v = Floats(t);
      for (float& f : v) f /= static_cast<float>(std::sqrt(2.0));
      SetFloats(&t, v);
    }
    CHECK(MaxDiff(x.logits, Run(unscaled, backend).logits) > 1e-3f);
  }
}

}  // namespace
}  // namespace tern
