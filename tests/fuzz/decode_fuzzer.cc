// Fuzz target: decoding on a prepared session. The input chooses a batch of source ids (some
// outside the vocabulary, some lengths out of range), every DecodingOptions field (beam size,
// n-best, max length and ratio, min length, length and repetition penalties including NaN and
// infinities, no-repeat n-grams), the output stride and a token callback that cancels at a
// chosen step. TranslateIds must refuse with a status or write only inside its outputs, with
// ids in the target vocabulary and lengths within the stride.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tern/tern.hpp"
#include "tests/fuzz/fuzz_util.h"
#include "tests/support/tiny_model.h"

namespace {

using tern::fuzz::Die;

constexpr int32_t kMaxBatch = 3;
constexpr int32_t kMaxSource = 8;
constexpr int32_t kMaxTarget = 8;
constexpr int32_t kMaxBeam = 4;

struct Prepared {
  tern::testing::AlignedBytes bytes;
  tern::Model model;
  std::vector<uint8_t> arena;
  tern::Session session;
};

Prepared* Make(tern::DType dtype, tern::Backend backend) {
  auto* p = new Prepared();
  tern::ModelConfig c = tern::testing::TinyConfig();  // d_model 16, 2 + 2 layers, vocab 20
  c.max_positions = 16;
  p->bytes = tern::testing::RandomModelBytes(c, 11, dtype);
  auto loaded = tern::Model::Load(p->bytes.data(), p->bytes.size());
  if (!loaded.ok()) Die("cannot load the decode model", loaded.status().message());
  p->model = loaded.value();
  tern::Limits limits;
  limits.max_batch = kMaxBatch;
  limits.max_source_length = kMaxSource;
  limits.max_target_length = kMaxTarget;
  limits.beam_size = kMaxBeam;
  limits.backend = backend;
  auto need = tern::Session::RequiredArenaBytes(p->model, limits);
  if (!need.ok()) Die("arena size", need.status().message());
  p->arena.resize(need.value());
  const tern::Status s = p->session.Prepare(p->model, limits, p->arena.data(), p->arena.size());
  if (!s.ok()) Die("cannot prepare the decode session", s.message());
  return p;
}

struct Cancel {
  int32_t calls = 0;
  int32_t stop_after = -1;  // -1: never
};

bool OnToken(void* user, int32_t, int32_t, int32_t) {
  auto* c = static_cast<Cancel*>(user);
  return c->stop_after < 0 || c->calls++ < c->stop_after;
}

float AnyFloat(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
    case 0:
      return 0.0f;
    case 1:
      return 1.0f;
    case 2:
      return in.ConsumeFloatingPointInRange<float>(-4.0f, 4.0f);
    default:
      return in.ConsumeFloatingPoint<float>();  // any value, NaN and infinities included
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Prepared* sessions[2] = {Make(tern::DType::kF32, tern::Backend::kReference),
                                  Make(tern::DType::kI8, tern::Backend::kAuto)};
  FuzzedDataProvider in(data, size);
  Prepared& p = *sessions[in.ConsumeBool() ? 1 : 0];
  const int32_t vocab = p.model.config().tgt_vocab_size;

  tern::DecodingOptions o;
  o.beam_size = in.ConsumeIntegralInRange<int32_t>(-1, kMaxBeam + 1);
  o.n_best = in.ConsumeIntegralInRange<int32_t>(-1, kMaxBeam + 1);
  o.max_length = in.ConsumeIntegralInRange<int32_t>(-1, kMaxTarget + 1);
  o.max_length_ratio = AnyFloat(in);
  o.max_length_extra = in.ConsumeIntegral<int32_t>();
  o.min_length = in.ConsumeIntegralInRange<int32_t>(-1, kMaxTarget + 2);
  o.length_penalty = AnyFloat(in);
  o.repetition_penalty = AnyFloat(in);
  o.no_repeat_ngram_size = in.ConsumeIntegralInRange<int32_t>(-1, 4);
  Cancel cancel;
  if (in.ConsumeBool()) {
    cancel.stop_after = in.ConsumeIntegralInRange<int32_t>(0, 12);
    o.on_token = OnToken;
    o.user = &cancel;
  }
  const int32_t batch = in.ConsumeIntegralInRange<int32_t>(0, kMaxBatch + 1);
  const int64_t src_stride = kMaxSource + 1;
  std::vector<int32_t> src(static_cast<size_t>((kMaxBatch + 1) * src_stride), 0);
  std::vector<int32_t> lengths(kMaxBatch + 1, 1);
  for (int32_t b = 0; b < batch; ++b) {
    lengths[b] = in.ConsumeIntegralInRange<int32_t>(0, kMaxSource + 1);
    for (int32_t i = 0; i < lengths[b] && i < src_stride; ++i) {
      src[static_cast<size_t>(b * src_stride + i)] = in.ConsumeIntegralInRange<int32_t>(-1, vocab);
    }
  }
  const int64_t out_stride = in.ConsumeIntegralInRange<int64_t>(0, kMaxTarget + 1);
  const int32_t n_best = o.n_best > 0 && o.n_best <= kMaxBeam + 1 ? o.n_best : 1;
  const size_t rows = static_cast<size_t>((batch > 0 ? batch : 1) * n_best);
  std::vector<int32_t> out(rows * static_cast<size_t>(out_stride > 0 ? out_stride : 1), -7);
  std::vector<int32_t> out_lengths(rows, -7);
  std::vector<float> scores(rows, -7.0f);

  const tern::Status s =
      p.session.TranslateIds(src.data(), src_stride, lengths.data(), batch, o, out.data(),
                             out_stride, out_lengths.data(), scores.data());
  if (!s.ok()) {
    tern::fuzz::Refused(s.message());
    return 0;
  }
  const size_t written =
      static_cast<size_t>(batch) * static_cast<size_t>(o.beam_size > 1 ? o.n_best : 1);
  if (written > rows) Die("TranslateIds succeeded with more output rows than n_best allows");
  for (size_t r = 0; r < written; ++r) {
    if (out_lengths[r] < 0 || out_lengths[r] > out_stride) Die("an output length is out of range");
    for (int32_t i = 0; i < out_lengths[r]; ++i) {
      const int32_t id = out[r * static_cast<size_t>(out_stride) + static_cast<size_t>(i)];
      if (id < 0 || id >= vocab) Die("an output id is outside the target vocabulary");
    }
  }
  return 0;
}
