// Test support for the architecture fixtures (tests/fixtures/checkpoints/<arch>/, made by
// tools/fixtures/make_<arch>_fixture.py): convert a checkpoint, run it with the runtime, and
// compare with the outputs the generator's own PyTorch forward computed. Header-only: the
// converter tests are the *_test.cc files of this directory.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "converter/error.h"
#include "converter/readers/safetensors.h"
#include "runtime/api/session_internal.h"
#include "tests/support/tiny_model.h"

namespace tern::testing {

struct ExpectedOutputs {
  int64_t batch = 0, src_seq = 0, tgt_seq = 0, max_len = 0;
  std::vector<int32_t> src_ids, src_lengths, tgt_in, greedy_ids, greedy_lengths;
  std::vector<float> encoder_out, logits;
  // The greedy search's forced first target token (a multilingual model's target language:
  // expected.safetensors' forced_bos_id), -1 when the file has none.
  int32_t forced_bos_id = -1;
};

struct ParityResult {
  float encoder_error = 0;   // max |runtime - expected| over unpadded encoder rows
  float logit_error = 0;     // max over teacher-forced logits
  bool greedy_equal = true;  // every sentence's greedy ids identical, alone and batched
  std::string greedy_detail;
  std::vector<std::vector<int32_t>> greedy;  // each sentence's ids, translated alone
};

// tests/fixtures/checkpoints/<relative>; LoadExpected reads a generator's expected.safetensors;
// RunParity converts with `options`, runs the model through Session / EncoderDecoder and
// compares with `expected`; ConvertError says why a conversion fails.
inline std::string CheckpointFixture(const std::string& relative) {
  return std::string(TERN_FIXTURES) + "/checkpoints/" + relative;
}

// An integer tensor of an expected-outputs file, as int32.
inline std::vector<int32_t> Int32s(const convert::SafetensorsFile& f, const std::string& name) {
  std::vector<int32_t> out;
  for (int64_t v : f.Ints(name)) out.push_back(static_cast<int32_t>(v));
  return out;
}

inline ExpectedOutputs LoadExpected(const std::string& path) {
  const convert::SafetensorsFile f = convert::SafetensorsFile::Read(path);
  auto ints = [&](const std::string& name) { return Int32s(f, name); };
  ExpectedOutputs e;
  e.src_ids = ints("src_ids");
  e.src_lengths = ints("src_lengths");
  e.tgt_in = ints("tgt_in");
  e.greedy_ids = ints("greedy_ids");
  e.greedy_lengths = ints("greedy_lengths");
  e.encoder_out = f.Float("encoder_out").values;
  e.logits = f.Float("logits").values;
  e.batch = f.entries().at("src_ids").shape[0];
  e.src_seq = f.entries().at("src_ids").shape[1];
  e.tgt_seq = f.entries().at("tgt_in").shape[1];
  e.max_len = f.entries().at("greedy_ids").shape[1];
  if (f.entries().count("forced_bos_id")) e.forced_bos_id = ints("forced_bos_id").at(0);
  return e;
}

// The message BuildContents(options) fails with; "" when it converts.
inline std::string ConvertError(const convert::ConvertOptions& options) {
  try {
    convert::BuildContents(options);
  } catch (const convert::Error& e) {
    return e.what();
  }
  return "";
}

// The greedy ids of source `sentence` of `e`, from the model `options` converts (the pinned
// int8 / int4 ids of the family tests), run alone on `backend` with room for `max_target` target
// tokens. Throws with the status message when a step fails.
inline std::vector<int32_t> GreedyIdsOf(const convert::ConvertOptions& options,
                                        const ExpectedOutputs& e, Backend backend, int64_t sentence,
                                        int64_t max_target,
                                        const DecodingOptions& decoding = DecodingOptions{}) {
  AlignedBytes bytes(convert::SerializeModel(convert::BuildContents(options)));
  auto model = Model::Load(bytes.data(), bytes.size());
  if (!model.ok()) throw std::runtime_error(model.status().message());
  Limits limits;
  limits.backend = backend;
  limits.max_source_length = static_cast<int32_t>(e.src_seq);
  limits.max_target_length = static_cast<int32_t>(max_target);
  auto need = Session::RequiredArenaBytes(model.value(), limits);
  if (!need.ok()) throw std::runtime_error(need.status().message());
  std::vector<uint8_t> arena(need.value());
  Session session;
  Status s = session.Prepare(model.value(), limits, arena.data(), arena.size());
  if (!s.ok()) throw std::runtime_error(s.message());
  std::vector<int32_t> out(static_cast<size_t>(max_target));
  size_t n = 0;
  s = session.TranslateIds(Span<const int32_t>(e.src_ids.data() + sentence * e.src_seq,
                                               static_cast<size_t>(e.src_lengths[sentence])),
                           Span<int32_t>(out.data(), out.size()), &n, decoding);
  if (!s.ok()) throw std::runtime_error(s.message());
  out.resize(n);
  return out;
}

// Converts with `options` and runs on `backend`: the teacher-forced logits (and the encoder
// output) of the whole batch and of each sentence alone, and the greedy ids of the batch in one
// call and of each sentence alone (with e.forced_bos_id forced first, when set).
inline ParityResult RunParity(const convert::ConvertOptions& options, const ExpectedOutputs& e,
                              Backend backend = Limits().backend) {
  const convert::TernContents contents = convert::BuildContents(options);
  AlignedBytes bytes(convert::SerializeModel(contents));
  auto model = Model::Load(bytes.data(), bytes.size());
  if (!model.ok()) throw std::runtime_error(model.status().message());
  Limits limits;
  limits.backend = backend;
  limits.max_batch = static_cast<int32_t>(e.batch);
  limits.max_source_length = static_cast<int32_t>(e.src_seq);
  // A per-call forced token (e.forced_bos_id: NLLB's expected files count the greedy ids after
  // it) takes a decoder position of its own. A model's own forced_bos_id (bart-large's <s>):
  // the expected file holds Hugging Face's output, which starts with the forced token and
  // counts it in max_len; tern does not write it (DecodingOptions::forced_bos_id).
  const bool config_forced = e.forced_bos_id < 0 && model->config().forced_bos_id >= 0;
  limits.max_target_length =
      static_cast<int32_t>(std::max(e.tgt_seq, e.max_len + (e.forced_bos_id >= 0 ? 1 : 0)));
  auto need = Session::RequiredArenaBytes(model.value(), limits);
  if (!need.ok()) throw std::runtime_error(need.status().message());
  std::vector<uint8_t> arena(need.value());
  Session session;
  Status s = session.Prepare(model.value(), limits, arena.data(), arena.size());
  if (!s.ok()) throw std::runtime_error(s.message());
  if (backend != Backend::kAuto && session.backend() != backend)
    throw std::runtime_error(std::string("prepared another backend: ") + session.backend_report());
  const ModelConfig& c = model->config();
  const int64_t d = c.d_model, vocab = c.tgt_vocab_size;
  EncoderDecoder& ed = tern::internal::encoder_decoder(session);
  ParityResult r;
  // Sentences [first, first + count) as one batch.
  auto teacher_forced = [&](int64_t first, int64_t count) {
    Status st = ed.Encode(e.src_ids.data() + first * e.src_seq, e.src_seq,
                          e.src_lengths.data() + first, static_cast<int32_t>(count));
    if (!st.ok()) throw std::runtime_error(st.message());
    for (int64_t b = 0; b < count; ++b) {
      for (int64_t i = 0; i < e.src_lengths[first + b]; ++i) {
        for (int64_t k = 0; k < d; ++k) {
          const float got = ed.encoder_output()[(b * ed.source_stride() + i) * d + k];
          const float want = e.encoder_out[((first + b) * e.src_seq + i) * d + k];
          r.encoder_error = std::max(r.encoder_error, std::fabs(got - want));
        }
      }
    }
    std::vector<int32_t> tokens(static_cast<size_t>(count));
    for (int64_t t = 0; t < e.tgt_seq; ++t) {
      for (int64_t b = 0; b < count; ++b) tokens[b] = e.tgt_in[(first + b) * e.tgt_seq + t];
      const float* logits = nullptr;
      st = ed.DecodeStep(tokens.data(), &logits);
      if (!st.ok()) throw std::runtime_error(st.message());
      for (int64_t b = 0; b < count; ++b) {
        for (int64_t v = 0; v < vocab; ++v) {
          const float want = e.logits[((first + b) * e.tgt_seq + t) * vocab + v];
          r.logit_error = std::max(r.logit_error, std::fabs(logits[b * vocab + v] - want));
        }
      }
    }
  };
  teacher_forced(0, e.batch);
  for (int64_t b = 0; b < e.batch; ++b) teacher_forced(b, 1);
  GreedyOptions greedy;
  greedy.max_length = static_cast<int32_t>(e.max_len - (config_forced ? 1 : 0));
  greedy.forced_bos_id = e.forced_bos_id;
  auto compare = [&](int64_t b, const int32_t* ids, size_t produced, const char* how) {
    std::vector<int32_t> got(ids, ids + produced);
    std::vector<int32_t> want(e.greedy_ids.begin() + b * e.max_len,
                              e.greedy_ids.begin() + b * e.max_len + e.greedy_lengths[b]);
    if (config_forced && !want.empty() && want[0] == model->config().forced_bos_id)
      want.erase(want.begin());
    if (got != want) {
      r.greedy_equal = false;
      r.greedy_detail += "sentence " + std::to_string(b) + " " + how + ": got";
      for (int32_t v : got) r.greedy_detail += " " + std::to_string(v);
      r.greedy_detail += ", want";
      for (int32_t v : want) r.greedy_detail += " " + std::to_string(v);
      r.greedy_detail += "; ";
    }
  };
  std::vector<int32_t> out(static_cast<size_t>(e.batch * e.max_len));
  std::vector<int32_t> lengths(static_cast<size_t>(e.batch));
  s = session.TranslateIds(e.src_ids.data(), e.src_seq, e.src_lengths.data(),
                           static_cast<int32_t>(e.batch), greedy, out.data(), e.max_len,
                           lengths.data());
  if (!s.ok()) throw std::runtime_error(s.message());
  for (int64_t b = 0; b < e.batch; ++b) {
    compare(b, out.data() + b * e.max_len, static_cast<size_t>(lengths[b]), "batched");
  }
  for (int64_t b = 0; b < e.batch; ++b) {
    size_t produced = 0;
    Span<const int32_t> src(e.src_ids.data() + b * e.src_seq,
                            static_cast<size_t>(e.src_lengths[b]));
    s = session.TranslateIds(src, Span<int32_t>(out.data(), static_cast<size_t>(e.max_len)),
                             &produced, greedy);
    if (!s.ok()) throw std::runtime_error(s.message());
    compare(b, out.data(), produced, "alone");
    r.greedy.emplace_back(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(produced));
  }
  return r;
}

}  // namespace tern::testing
