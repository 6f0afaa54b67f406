// Multi-head attention as vectorizable float loops (no library calls): the contract of
// ref::MultiHeadAttention (runtime/kernels/reference/attention.h), skipping the keys a query
// cannot see. The XNNPACK backend runs it for one query per call (a decoder step) and for causal
// prompts; its batched path (kernels/xnnpack/attention.h) for the encoder's many queries.
// Relative positions: a T5 bias is added to each score, Shaw's a^K / a^V terms as one extra dot
// product per clipped distance and query and one axpy per distance for the values.
#pragma once

#include <cstdint>

#include "runtime/kernels/reference/attention.h"

namespace tern::vec {

void MultiHeadAttention(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                        int64_t ldv, int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                        const ref::AttentionMask& mask, float* scores, float* out, int64_t ldo,
                        const ref::RelativePositions* rel = nullptr, int64_t kv_heads = 0);
// Over fp16 K/V (an fp16 cache): the bits of the float call on K/V of the same values.
void MultiHeadAttention(const float* q, int64_t ldq, const Half* k, int64_t ldk, const Half* v,
                        int64_t ldv, int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                        const ref::AttentionMask& mask, float* scores, float* out, int64_t ldo,
                        const ref::RelativePositions* rel = nullptr, int64_t kv_heads = 0);

}  // namespace tern::vec
