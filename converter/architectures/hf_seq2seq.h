// What the Hugging Face sequence-to-sequence maps (marian, bart, mbart, m2m100 / nllb) share: the
// activation names of their config.json and the token embeddings / output projection of the BART
// family's layout (model.shared, the tied encoder / decoder / lm_head copies, final_logits_bias).
#pragma once

#include <cstdint>
#include <string>

#include "converter/architectures/architecture_util.h"

namespace tern::convert::arch {

class HfConfig;

// The sizes of the BART family's config.json (MarianConfig, BartConfig, MBartConfig, M2M100Config
// share the keys and transformers' defaults: d_model 1024, 12 + 12 layers, 16 heads, FFN 4096):
// d_model, heads, encoder_layers, decoder_layers, d_ff. The encoder's and the decoder's head
// counts and FFN sizes must agree (the runtime has one of each).
void ReadHfSeq2SeqSizes(const HfConfig& hf, const std::string& label, ModelConfig* c);

// config.json's "activation_function" (transformers' ACT2FN names tern implements).
ref::Activation HfActivation(const std::string& name, const std::string& label);

// Token embeddings and output projection:
//   share: model.shared.weight and model.{encoder,decoder}.embed_tokens.weight, whichever the
//          checkpoint holds, must be one table (-> encoder.embed_tokens.weight, shared);
//          otherwise the encoder's and decoder's own tables;
//   tie:   lm_head.weight, if stored, must equal the decoder's table (dropped, tied_output);
//          otherwise it is the output projection;
//   final_logits_bias [1, V] -> output_projection.bias (with `logits_bias`: the BART family
//          and Marian have one, M2M100 / NLLB none).
// share_why says in messages why the tables must agree ("config share_encoder_decoder_embeddings
// is true"). Sets shared_embeddings and tied_output in out->config.
void MapHfEmbeddings(const Checkpoint& ckpt, Sources& src, bool share, bool tie, bool logits_bias,
                     const std::string& share_why, MappedCheckpoint* out);

// Learned positions with fairseq's padding offset (BART's BartLearnedPositionalEmbedding, fairseq's
// LearnedPositionalEmbedding for pad 1): position p is row p + 2 (kPositionOffset) of a
// [stored_rows, d] table. canonical <- rows [2, 2 + positions); a table of another shape is an
// error ending with `why` (what the rows should be).
constexpr int64_t kPositionOffset = 2;
void OffsetPositions(Sources& src, MappedCheckpoint* out, const std::string& canonical,
                     const std::string& source, int64_t stored_rows, int64_t positions, int64_t d,
                     const std::string& why);

}  // namespace tern::convert::arch
