// int8 and int4 layers with one scale per row on CPUs with AVX2 and neither AVX-512 nor
// AVX-VNNI, where these loops beat XNNPACK 2024-11's GEMMs: its "avx2" qd8_f32_qc8w kernels
// widen every weight to int16 for vpmaddwd (16 products per instruction), and vpmaddubsw takes
// 32. vpmaddubsw multiplies unsigned by signed bytes and adds pairs into int16 with saturation.
// int8: the sign trick makes it exact: x's q goes in as |q| (<= 128) and each weight takes q's
// sign (vpsignb), so a pair stays under 2 x 128 x 127 = 32512 as long as no weight is -128 (the
// converter writes +-127; a file holding -128 keeps XNNPACK). int4: the weights go in as w + 8
// (0..15, unsigned) and q as it is; a pair is at most 2 x 15 x 128 = 3840, so eight groups sum
// in int16 before one vpmaddwd widens them: about half int8's multiplies per product. The zero
// point comes in through the weights' row sums (sum (q - z) w = sum q w - z sum w; int4 also
// takes off 8 sum q), all exact int32, and the epilogue is XNNPACK's (Qd8Output), so the
// outputs have the qd8 path's bits, and a row's outputs never depend on the rows beside it (a
// sentence gives the same alone or in a batch).
//
// The weights are packed at prepare (a session's arena or the shared packed weights, as
// XNNPACK's operators pack theirs) into panels of 16 rows: panel p holds rows [16p, 16p + 16) as
// k / 4 groups, each 16 rows x 4 columns (int8: 64 bytes, rows 0-7 then 8-15; int4: 32 bytes,
// rows 0-7 in the low nibbles and 8-15 in the high ones), so one 32-bit lane per output row: no
// horizontal sums, and each panel is one contiguous stream. A panel takes exactly the bytes of
// its 16 rows, so rows [r0, r1) of a packed weight (r0 a multiple of 16) are a packed weight of
// their own at w.row(r0) (row_sums offset by r0): a layer cut into parts over threads
// (multiples of 32 rows) slices as the row-major one does. Measured against XNNPACK on an
// AVX2-only AMD EPYC (Zen 3): docs/benchmarks.md, session 35.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/tensor.h"

namespace tern::vec {

inline constexpr int64_t kSignPanelRows = 16;
// Widest rows the loops take: x's rows are quantized a block at a time on the stack (56 KiB).
inline constexpr int64_t kSignMaxCols = 4096;

// Whether sessions run w on these loops instead of XNNPACK's operator on this CPU: AVX2 and FMA
// without AVX-512 or AVX-VNNI; int8 or int4 with one scale per row; rows a multiple of 16,
// columns of 4, at most kSignMaxCols. (int8's -128 check is separate: SignPanelsExact.)
bool SignPanelsBeatXnnpack(const WeightView& w);

// Whether no byte of w is -128 (scans the whole weight; int4: always).
bool SignPanelsExact(const WeightView& w);

// Bytes of w's packed copy: the panels, then (64-byte aligned) each row's sum of w, which the
// zero point's term needs (computing them in the loops doubled a decode step's multiplies).
size_t SignPanelsBytes(const WeightView& w);
// w (row-major int8 or int4) packed at out (SignPanelsBytes).
void PackSignPanels(const WeightView& w, void* out);

// The view of w's packed copy at `packed`: layout kSignPanels, w's scales, the copy's row sums.
WeightView SignPanelsView(const WeightView& w, const void* packed);

// y[i, :] = x[i, :] W^T + b for i < m (row strides ldx, ldy in elements; bias may be null), w a
// packed view (SignPanelsView) of a weight SignPanelsBeatXnnpack and SignPanelsExact took.
// Allocates nothing.
void SignPanelsLinear(const float* x, int64_t m, int64_t ldx, const WeightView& w,
                      const float* bias, float* y, int64_t ldy);

}  // namespace tern::vec
