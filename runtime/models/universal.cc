// The Universal Transformer's recurrence in depth (Dehghani et al. 2019) on EncoderDecoder's
// buffers: one shared layer per stack applied config.universal_steps times, the coordinate
// embedding (runtime/kernels/reference/timing_signal.h) before each step, and adaptive
// computation time (runtime/nn/adaptive_computation.h) when config.act_threshold > 0. The math
// is docs/CONVENTIONS.md's; tools/model/universal_torch.py is the executable reference.
#include <cstring>

#include "runtime/kernels/ops.h"
#include "runtime/kernels/reference/timing_signal.h"
#include "runtime/models/encoder_decoder.h"

namespace tern {

void EncoderDecoder::UniversalEncoderSteps(const SequenceShape& shape, const KeyValues& kv) {
  const int64_t d = config_.d_model, batch = shape.sequences, seq = shape.seq;
  const int64_t rows = batch * seq;
  const int32_t steps = config_.universal_steps;
  const bool act = config_.act_threshold > 0.0f;
  if (act) ActBegin(enc_act_, rows, d);
  for (int32_t t = 0; t < steps; ++t) {
    // One table row per step, computed here instead of stored: the arena does not grow with T.
    ops::SinusoidalPositions(t, 1, d, config_.sinusoid_layout, step_signal_);
    ref::AddTimingSignal(enc_x_, batch, seq, d, position_tables_, step_signal_);
    if (act)
      ActHaltingStep(weights_.encoder_halting, enc_x_, rows, d, config_.act_threshold,
                     t == steps - 1, enc_act_);
    LayerForward(config_, layers_.encoder[0], enc_x_, shape, kv, enc_scratch_);
    if (act) {
      ActAccumulate(enc_act_, enc_x_, rows, d);
      // Once every real position has halted, later steps would only add zero-weighted states
      // (nothing reads the encoder's per-step states afterwards, unlike the decoder's).
      if (!ActAnyRunning(enc_act_, batch, seq, src_lengths_)) break;
    }
  }
  if (act) std::memcpy(enc_x_, enc_act_.out, static_cast<size_t>(rows * d) * sizeof(float));
}

void EncoderDecoder::UniversalDecoderSteps(const StepShape& shape) {
  const int64_t d = config_.d_model;
  const int64_t rows = shape.rows;
  const int32_t steps = config_.universal_steps;
  const bool act = config_.act_threshold > 0.0f;
  // Cross-attention K/V come from the final encoder output through the shared weights: the same
  // for every step, computed once in Encode. Self-attention at step t attends to the earlier
  // positions' step-t states: one K/V cache per step (the only part of the arena that grows
  // with T). Every step runs even when ACT halted all rows, because later positions read this
  // position's K/V at every step.
  const CrossAttention cross = Cross(0);
  if (act) ActBegin(dec_act_, rows, d);
  for (int32_t t = 0; t < steps; ++t) {
    ops::SinusoidalPositions(t, 1, d, config_.sinusoid_layout, step_signal_);
    ref::AddTimingSignal(dec_x_, rows, 1, d, position_tables_ + shape.position * d, step_signal_);
    if (act)
      ActHaltingStep(weights_.decoder_halting, dec_x_, rows, d, config_.act_threshold,
                     t == steps - 1, dec_act_);
    LayerStep(config_, layers_.decoder[0].layer, dec_x_, shape, SelfCache(t), &cross, dec_scratch_);
    if (act) ActAccumulate(dec_act_, dec_x_, rows, d);
  }
  if (act) std::memcpy(dec_x_, dec_act_.out, static_cast<size_t>(rows * d) * sizeof(float));
}

}  // namespace tern
