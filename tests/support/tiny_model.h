// Test support: small models built in memory (random weights from a seed), the parity
// fixtures made by tools/fixtures/make_parity_fixtures.py, 64-byte aligned model bytes, and the
// backends to run them on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "converter/writer.h"
#include "runtime/model/config.h"
#include "tern/tern.hpp"

namespace tern::testing {

// Bytes at a 64-byte aligned address (model files must be aligned in memory).
class AlignedBytes {
 public:
  AlignedBytes() = default;
  explicit AlignedBytes(const std::vector<uint8_t>& bytes);
  // A copy aligns its own buffer (copying shift_ along with the bytes would be right only when
  // the new buffer happens to sit at the same offset from 64, as on x86-64's glibc, not on
  // armv7's). Moves keep the buffer, so the shift stays right.
  AlignedBytes(const AlignedBytes& other)
      : AlignedBytes(std::vector<uint8_t>(other.data(), other.data() + other.size())) {}
  AlignedBytes& operator=(const AlignedBytes& other) {
    if (this != &other) *this = AlignedBytes(other);
    return *this;
  }
  AlignedBytes(AlignedBytes&&) = default;
  AlignedBytes& operator=(AlignedBytes&&) = default;
  uint8_t* data() { return storage_.data() + shift_; }
  const uint8_t* data() const { return storage_.data() + shift_; }
  size_t size() const { return size_; }

 private:
  std::vector<uint8_t> storage_;
  size_t shift_ = 0;
  size_t size_ = 0;
};

// The backends this build runs: the reference kernels, and XNNPACK when built with it.
inline std::vector<Backend> Backends() {
#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
  return {Backend::kReference, Backend::kXnnpack};
#else
  return {Backend::kReference};
#endif
}

// A small post-LN config: d_model 16, 2 heads, 2+2 layers, d_ff 24, vocab 20.
ModelConfig TinyConfig();

// A small decoder-only (GPT-style) config: d_model 16, 2 heads, 2 pre-LN layers, d_ff 32, GELU
// (tanh), learned positions, a tied output over `vocab_size` tokens, 64 positions; every
// special id is the last token.
ModelConfig TinyDecoderOnlyConfig(int32_t vocab_size);

// Random weights (uniform in [-scale, scale], seeded) for every tensor the config needs.
convert::TernContents RandomContents(const ModelConfig& config, uint32_t seed,
                                     DType dtype = DType::kF32);

// Serialized and aligned, ready for Model::Load.
AlignedBytes RandomModelBytes(const ModelConfig& config, uint32_t seed, DType dtype = DType::kF32);

// A parity fixture (tests/fixtures/parity/NAME.safetensors) converted to .tern bytes, plus its
// expected values.
struct ParityFixture {
  ModelConfig config;
  AlignedBytes model;
  int64_t batch = 0, src_seq = 0, tgt_seq = 0, max_len = 0;
  std::vector<int32_t> src_ids, src_lengths, tgt_in, greedy_ids, greedy_lengths;
  std::vector<float> encoder_out, logits;
};
ParityFixture LoadParityFixture(const std::string& name, DType dtype = DType::kF32);

}  // namespace tern::testing
