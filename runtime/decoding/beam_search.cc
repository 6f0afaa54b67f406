#include "runtime/decoding/beam_search.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/decoding/greedy.h"
#include "runtime/decoding/logits_processing.h"
#include "runtime/kernels/vectorized/log_sum_exp.h"
#include "runtime/memory/planner.h"
#include "runtime/models/encoder_decoder.h"

namespace tern {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Candidate {
  float score;
  int32_t row;
  int32_t token;
};

// The beam state carved from the session's decoder_state buffer (TranslationState::beam).
struct BeamState {
  int32_t* history[2];    // [rows][T]: tokens of each live hypothesis (double-buffered)
  int32_t* length[2];     // [rows]
  float* score;           // [rows] sum of log-probabilities; -inf: dead row
  float* next_score;      // [rows]
  int32_t* parents;       // [rows]
  Candidate* candidates;  // [2 * beam]
  int32_t* done_ids;      // [batch][beam][T] finished hypotheses
  int32_t* done_length;   // [batch][beam]
  float* done_score;      // [batch][beam] normalized
  int32_t* done_count;    // [batch]
  int32_t* finished;      // [batch] sentence finished
};

// Saturating: SIZE_MAX (an overflowed size) stays SIZE_MAX instead of wrapping to 0.
size_t Align(size_t bytes) {
  const size_t padded = CheckedAdd(bytes, 63);
  return padded == SIZE_MAX ? SIZE_MAX : padded / 64 * 64;
}

// Lays the state out in `base` (or only measures when base is null).
size_t Layout(int32_t batch, int32_t beam, int32_t max_length, uint8_t* base, BeamState* s) {
  const size_t rows = CheckedMul(static_cast<size_t>(batch), static_cast<size_t>(beam));
  const size_t t = static_cast<size_t>(max_length);
  size_t offset = 0;
  auto take = [&](size_t bytes) {
    uint8_t* p = base && offset != SIZE_MAX ? base + offset : nullptr;
    offset = CheckedAdd(offset, Align(bytes));
    return p;
  };
  BeamState st;
  st.history[0] = reinterpret_cast<int32_t*>(take(CheckedMul(rows, t, 4)));
  st.history[1] = reinterpret_cast<int32_t*>(take(CheckedMul(rows, t, 4)));
  st.length[0] = reinterpret_cast<int32_t*>(take(CheckedMul(rows, 4)));
  st.length[1] = reinterpret_cast<int32_t*>(take(CheckedMul(rows, 4)));
  st.score = reinterpret_cast<float*>(take(CheckedMul(rows, 4)));
  st.next_score = reinterpret_cast<float*>(take(CheckedMul(rows, 4)));
  st.parents = reinterpret_cast<int32_t*>(take(CheckedMul(rows, 4)));
  st.candidates = reinterpret_cast<Candidate*>(
      take(CheckedMul(2 * static_cast<size_t>(beam), sizeof(Candidate))));
  st.done_ids = reinterpret_cast<int32_t*>(take(CheckedMul(rows, t, 4)));
  st.done_length = reinterpret_cast<int32_t*>(take(CheckedMul(rows, 4)));
  st.done_score = reinterpret_cast<float*>(take(CheckedMul(rows, 4)));
  st.done_count = reinterpret_cast<int32_t*>(take(CheckedMul(static_cast<size_t>(batch), 4)));
  st.finished = reinterpret_cast<int32_t*>(take(CheckedMul(static_cast<size_t>(batch), 4)));
  if (s) *s = st;
  return offset;
}

float Normalize(float score, int32_t length, float penalty) {
  if (penalty == 0.0f || length <= 0) return score;
  return score / std::pow(static_cast<float>(length), penalty);
}

// Adds a finished hypothesis to sentence b's list of at most `beam`, replacing the worst one
// when the list is full and the new one is better.
void AddFinished(BeamState& s, int32_t b, int32_t beam, int32_t max_length, const int32_t* ids,
                 int32_t length, float normalized) {
  int32_t slot = s.done_count[b];
  if (slot == beam) {
    int32_t worst = 0;
    for (int32_t j = 1; j < beam; ++j) {
      if (s.done_score[b * beam + j] < s.done_score[b * beam + worst]) worst = j;
    }
    if (!(normalized > s.done_score[b * beam + worst])) return;
    slot = worst;
  } else {
    ++s.done_count[b];
  }
  const int64_t at = static_cast<int64_t>(b) * beam + slot;
  std::memcpy(s.done_ids + at * max_length, ids, static_cast<size_t>(length) * sizeof(int32_t));
  s.done_length[at] = length;
  s.done_score[at] = normalized;
}

}  // namespace

size_t DecoderStateBytes(const ModelConfig&, const Limits& limits) {
  if (limits.beam_size <= 1) return 0;
  return Layout(limits.max_batch, limits.beam_size, limits.max_target_length, nullptr, nullptr);
}

Status BeamSearch(EncoderDecoder& model, const TranslationState& state,
                  const DecodingOptions& options, int32_t* out_ids, int64_t out_stride,
                  int32_t* out_lengths, float* out_scores) {
  const ModelConfig& c = model.config();
  const Limits& limits = model.limits();
  const int32_t beam = options.beam_size;
  if (beam < 2 || beam > limits.beam_size) {
    // Session::TranslateIds checks the same bound first (session.cc, CheckBeam); this is for
    // callers of BeamSearch itself.
    return Status::Error(StatusCode::kInvalidArgument,
                         "options.beam_size = %d; beam search takes 2 to %d, the limits.beam_size "
                         "the arena was planned for at Prepare",
                         beam, limits.beam_size);
  }
  if (options.n_best < 1 || options.n_best > beam) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "options.n_best = %d; 1 to options.beam_size (%d) allowed", options.n_best,
                         beam);
  }
  const int32_t room = TargetRoom(options, c, limits.max_target_length);
  if (options.max_length < 0 || options.max_length > room || options.min_length < 0 ||
      options.no_repeat_ngram_size < 0 || options.max_length_ratio < 0.0f ||
      !(options.repetition_penalty > 0.0f) || !std::isfinite(options.length_penalty)) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "invalid decoding options (lengths, penalties)");
  }
  const int32_t max_length = options.max_length > 0 ? options.max_length : room;
  if (out_ids == nullptr || out_lengths == nullptr || out_stride < max_length) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "output buffer: need non-null ids with a stride of at least %d",
                         max_length);
  }
  TERN_RETURN_IF_ERROR(model.SetRowsPerSentence(beam));
  TERN_RETURN_IF_ERROR(PlanTargetLength(model, options));
  const int32_t batch = model.batch();
  const int32_t rows = batch * beam;
  const int32_t t_cap = limits.max_target_length;
  BeamState s;
  // Laid out for the session's limits; this call uses its first `batch * beam` rows.
  Layout(limits.max_batch, limits.beam_size, t_cap, state.beam, &s);
  int32_t* tokens = state.tokens;
  for (int32_t r = 0; r < rows; ++r) {
    tokens[r] = c.decoder_start_id;
    s.length[0][r] = 0;
    s.score[r] = r % beam == 0 ? 0.0f : kNegInf;  // one live hypothesis per sentence at first
  }
  for (int32_t b = 0; b < batch; ++b) {
    s.done_count[b] = 0;
    s.finished[b] = 0;
  }
  TERN_RETURN_IF_ERROR(ForceFirstToken(model, options, rows, tokens));
  int cur = 0;
  int32_t active = batch;
  for (int32_t step = 0; step < max_length && active > 0; ++step) {
    const float* logits_const = nullptr;
    TERN_RETURN_IF_ERROR(model.DecodeStep(tokens, &logits_const));
    // The logits are this session's scratch, rewritten by the next DecodeStep.
    float* logits = const_cast<float*>(logits_const);
    const int nxt = 1 - cur;
    for (int32_t b = 0; b < batch; ++b) {
      const int32_t first = b * beam;
      if (s.finished[b]) {
        for (int32_t j = 0; j < beam; ++j) {
          s.parents[first + j] = first + j;
          s.next_score[first + j] = kNegInf;
          s.length[nxt][first + j] = 0;
          tokens[first + j] = c.eos_id;
        }
        continue;
      }
      const int32_t cap = EffectiveMaxLength(options, max_length, model.source_length(b));
      // The best 2 * beam extensions of the live hypotheses (enough to keep `beam` alive even
      // if `beam` of them end with EOS). Kept sorted, best first; ties: lower row, lower token.
      int32_t count = 0;
      const int32_t keep = 2 * beam;
      for (int32_t j = 0; j < beam; ++j) {
        const int32_t r = first + j;
        if (s.score[r] == kNegInf) continue;
        // With a shortlist: the row's candidates only, in ascending id order (so the tie order
        // by token is kept); v is an index, mapped to its id when it enters the list.
        float* row = logits + r * model.logits_stride();
        const Span<const int32_t> ids = model.row_candidates(r);
        const int32_t vocab = ids.empty() ? c.tgt_vocab_size : static_cast<int32_t>(ids.size());
        ProcessLogits(options, c.eos_id, s.history[cur] + static_cast<int64_t>(r) * t_cap,
                      s.length[cur][r], row, vocab, ids);
        const float base = s.score[r] - vec::LogSumExp(row, vocab);  // + row[v]: log-softmax
        // Blocks whose largest logit cannot enter the full list are skipped on a vectorized
        // max; the rest are scanned in order, so the candidates and their tie order are those
        // of the plain scan. (Once 2 * beam candidates are in, few blocks of a row pass.)
        constexpr int32_t kBlock = 64;
        for (int32_t v0 = 0; v0 < vocab; v0 += kBlock) {
          const int32_t v1 = v0 + kBlock < vocab ? v0 + kBlock : vocab;
          if (count == keep && !(base + vec::Max(row + v0, v1 - v0) > s.candidates[keep - 1].score))
            continue;
          for (int32_t v = v0; v < v1; ++v) {
            const float cand = base + row[v];
            if (cand == kNegInf || (count == keep && !(cand > s.candidates[keep - 1].score)))
              continue;
            int32_t at = count < keep ? count++ : keep - 1;
            while (at > 0 && cand > s.candidates[at - 1].score) {
              s.candidates[at] = s.candidates[at - 1];
              --at;
            }
            s.candidates[at] = Candidate{cand, r, ids.empty() ? v : ids[v]};
          }
        }
      }
      int32_t alive = 0;
      for (int32_t i = 0; i < count && alive < beam; ++i) {
        const Candidate& cand = s.candidates[i];
        const int32_t* parent_ids = s.history[cur] + static_cast<int64_t>(cand.row) * t_cap;
        const int32_t parent_length = s.length[cur][cand.row];
        if (cand.token == c.eos_id) {
          AddFinished(s, b, beam, t_cap, parent_ids, parent_length,
                      Normalize(cand.score, parent_length + 1, options.length_penalty));
          continue;
        }
        const int32_t r = first + alive++;
        int32_t* ids = s.history[nxt] + static_cast<int64_t>(r) * t_cap;
        std::memcpy(ids, parent_ids, static_cast<size_t>(parent_length) * sizeof(int32_t));
        ids[parent_length] = cand.token;
        s.length[nxt][r] = parent_length + 1;
        s.next_score[r] = cand.score;
        s.parents[r] = cand.row;
        tokens[r] = cand.token;
      }
      for (int32_t j = alive; j < beam; ++j) {  // fewer live extensions than rows
        s.parents[first + j] = first + j;
        s.next_score[first + j] = kNegInf;
        s.length[nxt][first + j] = 0;
        tokens[first + j] = c.eos_id;
      }
      // At the length limit every live hypothesis ends here, without EOS.
      const bool at_cap = step + 1 >= cap;
      if (at_cap) {
        for (int32_t j = 0; j < alive; ++j) {
          const int32_t r = first + j;
          AddFinished(s, b, beam, t_cap, s.history[nxt] + static_cast<int64_t>(r) * t_cap,
                      s.length[nxt][r],
                      Normalize(s.next_score[r], s.length[nxt][r], options.length_penalty));
          s.next_score[r] = kNegInf;
        }
      }
      if (at_cap || alive == 0 || s.done_count[b] == beam) {
        s.finished[b] = 1;
        --active;
        for (int32_t j = 0; j < beam; ++j) s.next_score[first + j] = kNegInf;
      }
    }
    for (int32_t r = 0; r < rows; ++r) s.score[r] = s.next_score[r];
    cur = nxt;
    TERN_RETURN_IF_ERROR(model.ReorderRows(s.parents));
  }
  // Best first: selection sort of each sentence's finished list (at most beam entries).
  for (int32_t b = 0; b < batch; ++b) {
    const int32_t done = s.done_count[b];
    for (int32_t n = 0; n < options.n_best; ++n) {
      const int64_t out = static_cast<int64_t>(b) * options.n_best + n;
      if (n >= done) {
        out_lengths[out] = 0;
        if (out_scores) out_scores[out] = kNegInf;
        continue;
      }
      int32_t best = -1;
      for (int32_t j = 0; j < done; ++j) {
        const int64_t at = static_cast<int64_t>(b) * beam + j;
        if (s.done_length[at] < 0) continue;  // already taken
        if (best < 0 || s.done_score[at] > s.done_score[static_cast<int64_t>(b) * beam + best])
          best = j;
      }
      const int64_t at = static_cast<int64_t>(b) * beam + best;
      std::memcpy(out_ids + out * out_stride, s.done_ids + at * t_cap,
                  static_cast<size_t>(s.done_length[at]) * sizeof(int32_t));
      out_lengths[out] = s.done_length[at];
      if (out_scores) out_scores[out] = s.done_score[at];
      s.done_length[at] = -1 - s.done_length[at];
    }
    if (options.on_token) {
      const int64_t out = static_cast<int64_t>(b) * options.n_best;
      for (int32_t i = 0; i < out_lengths[out]; ++i) {
        if (!options.on_token(options.user, b, i, out_ids[out * out_stride + i])) {
          return Status::Error(StatusCode::kCancelled, "decoding cancelled by the token callback");
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace tern
