// AMX loops of vec::LinearQd8 (linear_qd8.h) for int4 with one scale per row, from 8 rows of x
// (fewer: the VNNI loops). x86-64 only; internal.
#pragma once

#if defined(__x86_64__)
#include <cstdint>

#include "runtime/core/tensor.h"

namespace tern::vec::qd8_loops {

// Whether this process may use the tile unit: Linux grants the (large) tile state to a process
// that asks for it (arch_prctl ARCH_REQ_XCOMP_PERM); asked once. The CPU's support is the
// caller's to check.
bool AmxPermitted();

// vec::LinearQd8 on these loops (int4 per row, rows of whole steps of 64 columns).
void AmxLoops(const float* x, int64_t m, int64_t ldx, const WeightView& w, const float* bias,
              float* y, int64_t ldy);

}  // namespace tern::vec::qd8_loops
#endif
