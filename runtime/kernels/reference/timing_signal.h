// The Universal Transformer's coordinate embedding (Dehghani et al. 2019, section 2.1): before
// every recurrent step t the state gets both a position signal and a step signal,
//   s[i] = h[i] + PE(pos_i) + PE(t),
// where PE is the model's sinusoid table (positions.h) and PE(t) is its row t, the same for all
// positions ("timing signal" in tensor2tensor's add_position_timing_signal and
// add_step_timing_signal). Steps count from 0.
#pragma once

#include <cstdint>

namespace tern::ref {

// x[b, i] += positions[i] + step_signal, for b < batch, i < seq. x is [batch, seq, d_model];
// positions holds the seq table rows of this block's positions (the caller offsets it), and
// step_signal is the table row of the step (SinusoidalPositions(step, 1, ...)).
void AddTimingSignal(float* x, int64_t batch, int64_t seq, int64_t d_model, const float* positions,
                     const float* step_signal);

}  // namespace tern::ref
