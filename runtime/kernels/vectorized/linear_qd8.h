// y = x W^T + b for the int8 and int4 layers XNNPACK has no operator for: blocks of scales that
// are not a multiple of 32 dividing the row, int8 with several scales per row, and int4 (blocks or
// per row) on CPUs where XNNPACK's int4 GEMM is wrong (xnn::PathTrusted, kernel_check.h). Computed
// as XNNPACK's qd8 paths compute the layers it does have operators for: each row of x quantized to
// int8 (qd8.h), then per block of a weight row the exact int32 sum of (q - zero point) x weight,
// scaled by the block's scale and summed in float, times the row's dequantization scale, plus
// the bias. So a model runs with the same kind of error on these layers as on XNNPACK's, in
// integer arithmetic: the float loops before (vectorized/linear.h, which converted every weight
// to a float) ran int4 blocks 7-15x slower than XNNPACK's int8 on an AVX-512 VNNI CPU.
//
// The weights are read in the file's layout (not repacked; a session gives the loops a copy in its
// arena, xnn::LinearSpec::copy_weight, on huge pages where the arena is). Rows of x are quantized 8
// at a time, 1024 columns at a time, on the stack (16 KiB; AMX's tiles: 30 rows, 62 KiB), or with a
// caller's scratch (LinearQd8WithScratch: a session's arena) all at once (QuantizedRows, below):
// nothing is allocated and any width is taken. (A block that a chunk boundary splits, or a per-row
// weight wider than 1024 columns, is summed as one exact int32 sum per chunk, each scaled in float:
// the same as one sum up to float rounding; with one scale per row the int32 sums are carried
// across chunks, exactly.) A row's outputs depend only on that row and the weight (never on which
// rows share its tile, nor on which loops ran it where they give the same bits: per-row int4 on the
// VNNI and AMX loops), so a sentence gives the same alone or in a batch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/tensor.h"

namespace tern::vec {

// Whether LinearQd8 takes this weight: int8 or int4, per row or in blocks of any size.
bool LinearQd8Takes(const WeightView& w);

// y[i, :] = x[i, :] W^T + b for i < m (row strides ldx, ldy in elements; bias may be null),
// with the best loops this CPU has for the weight (LinearQd8Best).
void LinearQd8(const float* x, int64_t m, int64_t ldx, const WeightView& w, const float* bias,
               float* y, int64_t ldy);

// The loops: portable ones (every CPU, any weight), and on x86-64 AVX2's (with FMA) and
// AVX-512's (F, BW, DQ) where the weight's blocks and rows are whole multiples of their step:
// 32 columns, or 16 for int8 on AVX2; and AVX-512 VNNI's (vpdpbusd) for int4 with one scale per
// row in rows of whole steps of 64 columns, and AMX's (tdpbusd, on CPUs whose OS grants the tile
// state) for the same weights, from 8 rows of x on (fewer: VNNI's). All compute the same int32
// block sums; only the order of the float sums differs (tests run each on the same cases).
enum class Qd8Isa { kPortable, kAvx2, kAvx512, kAvx512Vnni, kAmx };
// Whether this CPU has `isa` and its loops take w.
bool LinearQd8Runs(Qd8Isa isa, const WeightView& w);
// LinearQd8 also takes the packed view of linear_sign.h (WeightLayout::kSignPanels), on any
// isa: the layers sessions run on those loops instead of XNNPACK's operator.
Qd8Isa LinearQd8Best(const WeightView& w);
// "portable", "AVX2", "AVX-512", "AVX-512 VNNI", "AMX (below 8 rows AVX-512 VNNI; from 32 with
// scratch on rows quantized once)".
const char* Qd8IsaName(Qd8Isa isa);
// LinearQd8 on `isa`'s loops where LinearQd8Runs(isa, w), else on the portable ones.
void LinearQd8On(Qd8Isa isa, const float* x, int64_t m, int64_t ldx, const WeightView& w,
                 const float* bias, float* y, int64_t ldy);

// Rows of x quantized once into a caller's scratch, for the loops that read them so: AMX's from
// kQd8RowsMin rows of x on, which then unpack each weight step once for up to kQd8PassRows rows
// (the loops above unpack it again for every 30 rows: at 512 rows they ran int4 at half the
// speed of XNNPACK's int8, which packs its weights once), and which a layer cut over threads
// quantizes once for all its parts (the loops above: once per part). The same bits as the loops
// above.
struct QuantizedRows {
  int8_t* q = nullptr;  // row i at q + i * ld, in the loops' column order
  int32_t* zero_point = nullptr;
  float* inv_scale = nullptr;
  int64_t m = 0, k = 0, ld = 0;  // the scratch holds m rows and zeros up to a multiple of 32
};
inline constexpr int64_t kQd8RowsMin = 32;
inline constexpr int64_t kQd8PassRows = 256;
// Bytes of scratch the quantized rows of calls of up to max_rows rows on w need (0: w, or this
// CPU, takes no such loops, or max_rows < kQd8RowsMin). Passes of kQd8PassRows rows at most.
size_t LinearQd8ScratchBytes(const WeightView& w, int64_t max_rows);
// Whether a call of m rows on w takes them with `scratch_bytes` of scratch.
bool LinearQd8TakesRows(const WeightView& w, int64_t m, size_t scratch_bytes);
// The layout of up to kQd8PassRows rows of k columns in scratch (64-byte aligned).
QuantizedRows QuantizedRowsIn(void* scratch, int64_t m, int64_t k);
// Rows [i0, i1) of x (row 0: the pass's first) quantized into `rows`; the non-empty range that
// ends at rows.m also zeroes the padding rows. Calls on disjoint ranges may run on different
// threads.
void QuantizeQd8Rows(const float* x, int64_t ldx, int64_t i0, int64_t i1,
                     const QuantizedRows& rows);
// y = x W^T + b for the quantized rows (w may be some of a layer's rows: a thread's part).
void LinearQd8Rows(const QuantizedRows& x, const WeightView& w, const float* bias, float* y,
                   int64_t ldy);
// LinearQd8 with scratch: in passes of quantized rows where LinearQd8TakesRows, else LinearQd8.
void LinearQd8WithScratch(const float* x, int64_t m, int64_t ldx, const WeightView& w,
                          const float* bias, float* y, int64_t ldy, void* scratch,
                          size_t scratch_bytes);

}  // namespace tern::vec
