// The limits a session is prepared for, and how it executes. Every arena byte follows from the
// model and these (and, for the XNNPACK backend, from the CPU: packed weight layouts depend on
// the micro-kernels XNNPACK picks for it).
#pragma once

#include <cstdint>

namespace tern {

// Which kernels run the linear layers (and attention).
enum class Backend : uint8_t {
  kAuto = 0,       // XNNPACK when the build has it (TERN_WITH_XNNPACK), else reference
  kReference = 1,  // portable reference kernels: the definition of the math, slow
  kXnnpack = 2,    // XNNPACK operators; kNotSupported from a build without XNNPACK
};

// The element type of a session's K/V caches (Limits::kv_cache).
enum class CacheType : int32_t {  // int32_t: the C API's int converts without wrapping
  kFloat32 = 0,  // as computed: a translation gives exactly PyTorch's fp32 ids (default)
  kFloat16 = 1,  // half the cache bytes; keys and values rounded to fp16 on their way in
};

struct Limits {
  int32_t max_batch = 1;            // sentences translated together
  int32_t max_source_length = 128;  // tokens per source sentence, EOS included
  int32_t max_target_length = 128;  // decoder steps (generated tokens, EOS included)
  // The widest beam the arena is planned for (its K/V caches and beam state grow with it). Each
  // translation picks its beam with DecodingOptions::beam_size, 1 (greedy) up to this; a
  // decoder-only model (Generator) has no beam search and needs 1.
  int32_t beam_size = 1;
  Backend backend = Backend::kAuto;
  // Intra-op threads (XNNPACK's pthreadpool; 1: run on the calling thread, no pool). The pool
  // is created by Prepare, on the heap (pthreadpool allocates), and lives as long as the session.
  // Each XNNPACK operator uses the pool only while it measures faster with it than without (a
  // busy machine or small layers make it slower; kernels/xnnpack/pool_governor.h), so more
  // threads are never much slower than one; results are the same either way.
  int32_t threads = 1;
  // Source tokens in flight (translation sessions): a call's sentences x its longest source
  // (padding included) may not exceed this, and the encoder's buffers and the cross-attention
  // K/V caches are planned for this many tokens instead of max_batch x max_source_length.
  // 0: no budget (max_batch x max_source_length). At least max_source_length (one longest
  // sentence must fit). The decoder's self-attention caches have their own budget,
  // max_target_tokens. A Generator takes 0 only.
  int32_t max_batch_tokens = 0;
  // Target positions in flight (translation sessions): a call's sentences x its target length,
  // the decoder steps its longest-running sentence may take (the decoding options' max_length,
  // or with max_length_ratio the longest of ceil(ratio x source length) + extra, plus one step
  // for a forced first token). The decoder's self-attention K/V caches are planned for
  // beam_size x this many positions instead of max_batch x beam_size x max_target_length, so
  // a session that must accept one long translation does not pay for a batch of them. 0: no
  // budget. At least max_target_length (one longest translation must fit). A call over the
  // budget fails with kOutOfRange before decoding. A Generator takes 0 only.
  int32_t max_target_tokens = 0;
  // Element type of the decoder's K/V caches: its self-attention caches and the encoder's
  // cross-attention K/V (a translation session), or a language model's caches (a Generator;
  // its prompts attend over their K/V rounded the same way). Models with relative positions
  // take kFloat32 only. kFloat16 halves the arena bytes those take (at batch 16 with 256-token
  // limits, most of a session's arena) and the bytes a decoder step reads from them; attention
  // still computes in float, each cached value widened exactly, so only the rounding of K and V
  // to fp16 (relative error <= 2^-11; values beyond +-65504 saturate there) changes the results.
  CacheType kv_cache = CacheType::kFloat32;
};

}  // namespace tern
