/* tern: the C API (C99). The only public C header.
 *
 * Objects
 *   tern_model    a verified, read-only view of .tern bytes. From memory (flash, a buffer you
 *                 keep alive) or from a file (mapped). Immutable: share one model between any
 *                 number of sessions on any threads.
 *   tern_session  one translation context over a caller-provided arena. Use from one thread at
 *                 a time; give each thread its own session (and arena).
 *   tern_generator the same for a decoder-only language model (GPT-2, LLaMA): continues token-id
 *                 prompts (greedy or sampled). Same threading rules as a session.
 *
 * Memory
 *   tern_required_arena_bytes() tells how many bytes a session needs for the given limits
 *   (a pure function of model + limits). tern_session_create() plans everything inside that
 *   arena; the handle itself is the only heap allocation it makes. After it,
 *   tern_translate_ids() never allocates, nor does tern_generate_ids() after
 *   tern_generator_create(). The text paths tokenize: tern_translate_text with SentencePiece
 *   or BART's byte-level BPE, which allocates, then runs the same allocation-free
 *   translation; tern_generate_text grows
 *   its buffers on a generator's first request and then allocates nothing with a byte-level
 *   BPE tokenizer (SentencePiece allocates inside the library on every prompt): docs/api.md.
 *
 * Errors
 *   Every call returns a tern_status; tern_status_string() names it and tern_last_error()
 *   gives the message of the calling thread's most recent failure.
 */
#ifndef TERN_TERN_H_
#define TERN_TERN_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define TERN_API __attribute__((visibility("default")))
#else
#define TERN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tern_status {
  TERN_OK = 0x00,
  TERN_INTERNAL = 0x01,
  TERN_CANCELLED = 0x02,
  TERN_INVALID_ARGUMENT = 0x10,
  TERN_OUT_OF_RANGE = 0x11,
  TERN_NOT_SUPPORTED = 0x12,
  TERN_FAILED_PRECONDITION = 0x13,
  TERN_INVALID_MODEL = 0x20,
  TERN_UNSUPPORTED_VERSION = 0x21,
  TERN_MISSING_TENSOR = 0x22,
  TERN_SHAPE_MISMATCH = 0x23,
  TERN_DTYPE_MISMATCH = 0x24,
  TERN_INVALID_CONFIG = 0x25,
  TERN_ARENA_TOO_SMALL = 0x30,
  TERN_OUT_OF_MEMORY = 0x31,
  TERN_IO_ERROR = 0x40
} tern_status;

typedef struct tern_model tern_model;
typedef struct tern_session tern_session;
typedef struct tern_generator tern_generator;

typedef enum tern_backend {
  TERN_BACKEND_AUTO = 0,      /* XNNPACK when the build has it, else reference */
  TERN_BACKEND_REFERENCE = 1, /* portable reference kernels */
  TERN_BACKEND_XNNPACK = 2    /* TERN_NOT_SUPPORTED from a build without XNNPACK */
} tern_backend;

typedef enum tern_cache_type {
  TERN_CACHE_FLOAT32 = 0, /* K/V caches as computed (default) */
  TERN_CACHE_FLOAT16 = 1  /* half the cache bytes, K/V rounded to fp16 (tern::CacheType) */
} tern_cache_type;

typedef struct tern_limits {
  int32_t max_batch;         /* sentences translated together (default 1) */
  int32_t max_source_length; /* tokens per source sentence, EOS included (default 128) */
  int32_t max_target_length; /* generated tokens incl. EOS (default 128) */
  int32_t beam_size;         /* widest beam the arena is planned for (default 1); each call
                                picks 1..this in tern_translate_options.beam_size */
  tern_backend backend;      /* default TERN_BACKEND_AUTO */
  int32_t threads;           /* intra-op threads (default 1); the pool is made at session create */
  int32_t max_batch_tokens;  /* source tokens in flight: sentences x longest source of a call
                                (default 0: max_batch x max_source_length); the encoder and
                                cross-attention caches are planned for it (tern::Limits) */
  tern_cache_type kv_cache;  /* element type of a session's or generator's K/V caches
                                (default TERN_CACHE_FLOAT32; not with relative positions) */
  int32_t max_target_tokens; /* target positions in flight per hypothesis: sentences x the
                                decoder steps a call may take (default 0: max_batch x
                                max_target_length); the self-attention caches are planned for
                                beam_size x it (tern::Limits) */
} tern_limits;

/* Called for each new token of each sentence (greedy: as generated; beam search: the best
 * hypothesis once its sentence is finished). Return 0 to cancel (the call returns
 * TERN_CANCELLED); another thread may cancel by setting a flag the callback reads. */
typedef int (*tern_token_callback)(void* user, int32_t sentence, int32_t step, int32_t token);

typedef struct tern_translate_options {
  int32_t max_length;     /* generated tokens incl. EOS; 0: the session's max_target_length */
  float max_length_ratio; /* > 0: also stop at ceil(ratio * source length) + max_length_extra */
  int32_t max_length_extra;
  int32_t min_length;           /* no EOS before this many tokens */
  int32_t beam_size;            /* this call's beam: 1 (greedy) to the session's limits.beam_size */
  int32_t n_best;               /* hypotheses per sentence (beam search), rows b * n_best + j */
  float length_penalty;         /* beam: score / length^penalty */
  float repetition_penalty;     /* > 1 discourages repeated tokens */
  int32_t no_repeat_ngram_size; /* > 0: never repeat an n-gram */
  tern_token_callback on_token; /* optional streaming / cancellation */
  void* user;
  int32_t no_shortlist;  /* nonzero: score every target token even if the model has a
                            vocabulary shortlist (docs/shortlist.md) */
  int32_t force_bos;     /* nonzero: forced_bos_id is the decoder's first token after the start
                            token (a multilingual model's target language; not in the output) */
  int32_t forced_bos_id; /* a target id; read only with force_bos */
} tern_translate_options;

/* Generation with a decoder-only model. Start from tern_default_generate_options(). */
typedef struct tern_generate_options {
  int32_t max_new_tokens; /* new tokens per prompt, EOS included when generated; 0: until the
                             output capacity or the generator's max_target_length */
  float temperature;      /* 0 (default): greedy, the lowest id on ties */
  int32_t top_k;          /* 0 (default): off */
  float top_p;            /* 1 (default): off; in (0, 1] */
  uint64_t seed;          /* PCG32 seed: the same ids on every platform. Prompt b of a batch
                             draws from stream b, so row 0 of a batch equals the prompt alone */
  int32_t stop_at_eos;    /* nonzero (default): EOS ends a sequence and is not returned */
  tern_token_callback
      on_token; /* optional: (user, sequence, step, token) per new token; 0 cancels */
  void* user;
} tern_generate_options;

/* Text generation (tern_generate_text). */
typedef enum tern_finish_reason {
  TERN_FINISH_LENGTH = 0,  /* max_new_tokens, or the generator's max_target_length, reached */
  TERN_FINISH_EOS = 1,     /* the model's EOS (stop_at_eos) */
  TERN_FINISH_STOP = 2,    /* a stop string completed (it is not part of the text) */
  TERN_FINISH_CALLBACK = 3 /* on_text returned 0 */
} tern_finish_reason;

/* Called once per new token with the text that token released: whole UTF-8 characters (valid
 * UTF-8, not NUL-terminated, size 0 while half a character or a possible stop string is held
 * back), the token and its log-probability (see tern_generate_text_options). Then, when text
 * was still held back at the end, once more with token -1 and log_prob 0. Return 0 to stop:
 * generation ends and the call succeeds with TERN_FINISH_CALLBACK. */
typedef int (*tern_text_callback)(void* user, const char* text, size_t size, int32_t token,
                                  float log_prob);

typedef struct tern_generate_text_options {
  tern_generate_options generate; /* max_new_tokens, sampling, stop_at_eos; on_token must be NULL */
  const char* const* stop;        /* stop strings (UTF-8, non-empty), stop_count of them; matched
                                     across tokens, never part of the text */
  size_t stop_count;
  int32_t add_special_tokens; /* nonzero (default): the tokenizer's tokens around the prompt
                                 (BOS: tokenizer.json's post-processor; SentencePiece's <s>) */
  int32_t parse_special;      /* nonzero (default): "<|endoftext|>" in the prompt is that token */
  int32_t print_special;      /* nonzero: special tokens of the output are printed (default 0) */
  tern_text_callback on_text; /* optional streaming */
  void* user;
} tern_generate_text_options;

typedef struct tern_text_result {
  size_t text_length;     /* bytes of the whole continuation (out holds what fits) */
  size_t prompt_tokens;   /* the prompt's ids, special tokens included */
  size_t new_tokens;      /* generated, without EOS */
  const int32_t* ids;     /* the new ids: valid until the next call with this generator */
  const float* log_probs; /* log softmax(logits / T)[id], T = temperature (1 when greedy),
                             over the whole vocabulary, before top-k / top-p */
  tern_finish_reason finish;
} tern_text_result;

TERN_API const char* tern_version(void);
TERN_API const char* tern_status_string(tern_status status);
/* Message of the calling thread's most recent failed call ("" if none). */
TERN_API const char* tern_last_error(void);

TERN_API tern_limits tern_default_limits(void);
TERN_API tern_translate_options tern_default_translate_options(void);
TERN_API tern_generate_options tern_default_generate_options(void);
TERN_API tern_generate_text_options tern_default_generate_text_options(void);

/* data must stay valid and unchanged until tern_model_free; at least 16-byte aligned. */
TERN_API tern_status tern_model_load_from_memory(const void* data, size_t size, tern_model** out);
/* Maps the file read-only (POSIX). */
TERN_API tern_status tern_model_load_from_file(const char* path, tern_model** out);
TERN_API void tern_model_free(tern_model* model);
/* A multilingual model's language code (NLLB "deu_Latn", M2M100 "de") -> its token, from the
 * file's language table: the source's first token, and the target's forced_bos_id. An unknown
 * code is TERN_INVALID_ARGUMENT naming the nearest known codes; a model without a table
 * TERN_FAILED_PRECONDITION. */
TERN_API tern_status tern_model_language_token(const tern_model* model, const char* code,
                                               int32_t* out_token);

TERN_API tern_status tern_required_arena_bytes(const tern_model* model, const tern_limits* limits,
                                               size_t* out_bytes);

/* Packed weights shared by the sessions and generators of one model (XNNPACK repacks every
 * linear layer at creation; by default each session keeps its own packed copy in its arena).
 * After tern_model_share_weights(model, memory, bytes), with bytes from
 * tern_shared_weights_bytes(), the first session or generator created from the model packs its
 * weights into memory and every later one reuses them: tern_required_arena_bytes and
 * tern_generator_required_arena_bytes then count no packed copy. Create the first session before
 * the others on other threads; memory stays valid and untouched until tern_model_free. Call it
 * before any session of the model exists. The reference backend packs nothing (0 bytes). */
TERN_API tern_status tern_shared_weights_bytes(const tern_model* model, const tern_limits* limits,
                                               size_t* out_bytes);
TERN_API tern_status tern_model_share_weights(tern_model* model, void* memory, size_t bytes);

/* arena: caller memory of at least tern_required_arena_bytes() bytes, valid until
 * tern_session_free. The model must outlive the session. */
TERN_API tern_status tern_session_create(const tern_model* model, const tern_limits* limits,
                                         void* arena, size_t arena_bytes, tern_session** out);
TERN_API void tern_session_free(tern_session* session);

/* One sentence of source ids (EOS included). Writes at most out_capacity ids (no start token,
 * no EOS); out_capacity must be >= the effective max length. */
TERN_API tern_status tern_translate_ids(tern_session* session, const int32_t* src,
                                        size_t src_length, const tern_translate_options* options,
                                        int32_t* out, size_t out_capacity, size_t* out_length);

/* A batch: sentence b is src[b * src_stride + i], i < src_lengths[b]; output row b at
 * out[b * out_stride], its length in out_lengths[b]. */
TERN_API tern_status tern_translate_ids_batch(tern_session* session, const int32_t* src,
                                              size_t src_stride, const int32_t* src_lengths,
                                              int32_t batch, const tern_translate_options* options,
                                              int32_t* out, size_t out_stride,
                                              int32_t* out_lengths);

/* UTF-8 text in, UTF-8 text out (NUL-terminated, truncated to out_capacity - 1 bytes with
 * TERN_OUT_OF_RANGE when it does not fit). Uses the tokenizer stored in the model file:
 * SentencePiece models (EOS appended to the source), or BART's byte-level BPE tokenizer
 * (the source as <s> text </s>; special tokens left out of the translation). */
TERN_API tern_status tern_translate_text(tern_session* session, const char* text,
                                         const tern_translate_options* options, char* out,
                                         size_t out_capacity);

/* Generation (decoder-only models; a translation model gives TERN_FAILED_PRECONDITION, as does
 * a decoder-only model given to tern_session_create). The limits mean:
 *   max_batch          prompts generated together (tern_generate_ids_batch)
 *   max_source_length  the longest prompt
 *   max_target_length  positions per sequence, prompt + new tokens (the K/V cache); at most the
 *                      model's max_positions
 *   beam_size          must be 1 */
TERN_API tern_status tern_generator_required_arena_bytes(const tern_model* model,
                                                         const tern_limits* limits,
                                                         size_t* out_bytes);
/* arena: at least tern_generator_required_arena_bytes() bytes, valid until tern_generator_free.
 * The model must outlive the generator. */
TERN_API tern_status tern_generator_create(const tern_model* model, const tern_limits* limits,
                                           void* arena, size_t arena_bytes, tern_generator** out);
TERN_API void tern_generator_free(tern_generator* generator);

/* Continues one prompt (1 to max_source_length ids). Writes the new tokens (without the prompt,
 * without EOS) to out, at most out_capacity of them, and their count to *out_length. options may
 * be NULL (the defaults: greedy until out_capacity or the generator is full). */
TERN_API tern_status tern_generate_ids(tern_generator* generator, const int32_t* prompt,
                                       size_t prompt_length, const tern_generate_options* options,
                                       int32_t* out, size_t out_capacity, size_t* out_length);

/* A batch: prompt b is prompts[b * prompt_stride + i], i < prompt_lengths[b]; its new tokens go
 * to out[b * out_stride ...], their count to out_lengths[b]. out_stride must hold the most tokens
 * a sequence may get: max_new_tokens, or max_target_length minus the shortest prompt when that
 * is smaller (or max_new_tokens is 0). */
TERN_API tern_status tern_generate_ids_batch(tern_generator* generator, const int32_t* prompts,
                                             size_t prompt_stride, const int32_t* prompt_lengths,
                                             int32_t batch, const tern_generate_options* options,
                                             int32_t* out, size_t out_stride, int32_t* out_lengths);

/* Text in, text out: the prompt (NUL-terminated UTF-8) through the tokenizer stored in the model
 * file (byte-level BPE or SentencePiece; TERN_FAILED_PRECONDITION when it has none), the
 * continuation streamed to options->on_text and written to out (NUL-terminated; when it does
 * not fit, what fits, cut at a character boundary, and TERN_OUT_OF_RANGE after generation
 * ends). options may be NULL (the defaults), result too. Allocates: docs/api.md says what. */
TERN_API tern_status tern_generate_text(tern_generator* generator, const char* prompt,
                                        const tern_generate_text_options* options, char* out,
                                        size_t out_capacity, tern_text_result* result);

#ifdef __cplusplus
}
#endif

#endif /* TERN_TERN_H_ */
