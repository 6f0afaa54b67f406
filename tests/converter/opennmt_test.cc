// OpenNMT-py 3.x checkpoints (converter/architectures/opennmt.cc): the fixtures
// (tools/fixtures/make_opennmt_fixture.py, reference tools/model/opennmt_torch.py) convert and
// match their PyTorch forward within 1e-4, alone and batched, on both backends, with identical
// greedy ids; int8 and int4 greedy ids are pinned. Options tern does not run are refused by name.
//   opennmt      sinusoids (pe buffers verified and dropped), one shared table tied to the
//                generator, relu, biases everywhere, LayerNorm
//   opennmt_rel  Shaw relative positions (one table for keys and values), no embedding scale,
//                own vocabularies, untied generator, no biases, RMSNorm, gated-silu, num_kv 2
#include "converter/architectures/opennmt.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>

#include "converter/architectures/architecture.h"
#include "tests/converter/architecture_fixture.h"
#include "tests/converter/checkpoint_files.h"

namespace tern::convert {
namespace {

using testing::AlignedBytes;
using testing::CheckpointFixture;

struct Family {
  const char* dir;
  // Greedy ids of sentence 0 after int8 / int4 conversion (group size 8), on the reference
  // kernels and on XNNPACK: pinned (XNNPACK quantizes the activations too).
  std::vector<int32_t> int8_reference, int8_xnnpack, int4_reference, int4_xnnpack;
};

const Family kFamilies[] = {
    {"opennmt",
     {8, 8, 8, 8, 5, 5, 5, 5, 5, 5},
     {8, 8, 8, 8, 5, 5, 5, 5, 5, 5},
     {8, 8, 8, 5, 5, 5, 5, 5, 5, 5},
     {8, 8, 8, 5, 5, 5, 5, 5, 5, 5}},
    {"opennmt_rel",
     {14, 26, 18, 10, 14, 5, 10, 14, 5, 6},
     {14, 26, 18, 10, 14, 5, 10, 14, 5, 6},
     {14, 26, 18, 10, 14, 5, 24, 5, 5, 10},
     {14, 26, 18, 10, 14, 5, 24, 5, 5, 10}},
};

ConvertOptions Options(const Family& f, DType dtype = DType::kF32) {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture(std::string(f.dir) + "/model.pt");
  o.arch = "opennmt";
  o.dtype = dtype;
  o.group_size = dtype == DType::kF32 ? 0 : 8;
  return o;
}

testing::ExpectedOutputs Expected(const Family& f) {
  return testing::LoadExpected(CheckpointFixture(std::string(f.dir) + "/expected.safetensors"));
}

TEST_CASE("OpenNMT-py checkpoints match PyTorch, alone and batched, both backends",
          "[architectures][opennmt]") {
  for (const Family& f : kFamilies) {
    INFO(f.dir);
    const testing::ExpectedOutputs e = Expected(f);
    for (Backend backend : testing::Backends()) {
      INFO("backend " << static_cast<int>(backend));
      const testing::ParityResult r = testing::RunParity(Options(f), e, backend);
      INFO("encoder error " << r.encoder_error << ", logit error " << r.logit_error << "; "
                            << r.greedy_detail);
      CHECK(r.encoder_error <= 1e-4f);
      CHECK(r.logit_error <= 1e-4f);
      CHECK(r.greedy_equal);
    }
  }
}

TEST_CASE("OpenNMT-py: int8 and int4 greedy ids are pinned", "[architectures][opennmt]") {
  for (const Family& f : kFamilies) {
    INFO(f.dir);
    const testing::ExpectedOutputs e = Expected(f);
    for (DType dtype : {DType::kI8, DType::kI4}) {
      for (Backend backend : testing::Backends()) {
        INFO(DTypeName(dtype) << ", backend " << static_cast<int>(backend));
        const std::vector<int32_t> out =
            testing::GreedyIdsOf(Options(f, dtype), e, backend, 0, e.max_len);
        const bool reference = backend == Backend::kReference;
        std::string got;
        for (int32_t v : out) got += std::to_string(v) + ", ";
        INFO("got {" << got << "}");
        CHECK(out == (dtype == DType::kI8 ? (reference ? f.int8_reference : f.int8_xnnpack)
                                          : (reference ? f.int4_reference : f.int4_xnnpack)));
      }
    }
  }
}

TEST_CASE("OpenNMT-py configs: pre-LN, positions, scale, special tokens, tying",
          "[architectures][opennmt]") {
  const TernContents a = BuildContents(Options(kFamilies[0]));
  CHECK(a.config.d_model == 32);
  CHECK(a.config.heads == 4);
  CHECK(a.config.encoder_layers == 2);
  CHECK(a.config.decoder_layers == 2);
  CHECK(a.config.d_ff == 64);
  CHECK(a.config.norm_placement == NormPlacement::kPre);
  CHECK(a.config.norm_kind == ref::NormKind::kLayerNorm);
  CHECK(a.config.layer_norm_eps == 1e-6f);
  CHECK(a.config.activation == ref::Activation::kReLU);
  CHECK(a.config.position == PositionKind::kSinusoidal);
  CHECK(a.config.sinusoid_layout == ref::SinusoidLayout::kInterleaved);
  CHECK(a.config.embedding_scale == std::sqrt(32.0f));
  CHECK(a.config.unk_id == 0);
  CHECK(a.config.pad_id == 1);
  CHECK(a.config.bos_id == 2);
  CHECK(a.config.eos_id == 3);
  CHECK(a.config.decoder_start_id == 2);
  CHECK(a.config.src_vocab_size == 32);  // 26 entries padded to a multiple of 8
  CHECK(a.config.tgt_vocab_size == 32);
  CHECK(a.config.shared_embeddings);
  CHECK(a.config.tied_output);
  CHECK(a.config.max_positions == 64);  // the fixture's pe buffers (OpenNMT-py's: 5000)
  CHECK(a.source_format == "torch-zip/opennmt");
  const TernContents r = BuildContents(Options(kFamilies[1]));
  CHECK(r.config.position == PositionKind::kRelative);
  CHECK(r.config.relative_attention == RelativeAttention::kShaw);
  CHECK(r.config.relative_max_distance == 4);
  CHECK(r.config.embedding_scale == 1.0f);
  CHECK(r.config.norm_kind == ref::NormKind::kRMSNorm);
  CHECK(r.config.activation == ref::Activation::kSwiGLU);
  CHECK(r.config.kv_heads == 2);
  CHECK(r.config.src_vocab_size == 24);
  CHECK(r.config.tgt_vocab_size == 32);
  CHECK_FALSE(r.config.shared_embeddings);
  CHECK_FALSE(r.config.tied_output);
}

// The fixture's checkpoint with its opt / vocab edited, mapped as --arch opennmt maps it.
struct Edited {
  Checkpoint ckpt;
  nlohmann::json opt, vocab;
  explicit Edited(const char* dir)
      : ckpt(Checkpoint::Open(CheckpointFixture(std::string(dir) + "/model.pt"),
                              DefaultCheckpointOptions("opennmt"))),
        opt(ckpt.ObjectJson("opt")),
        vocab(ckpt.ObjectJson("vocab")) {}
  std::string Error() const {
    ArchitectureOptions a;
    a.arch = "opennmt";
    try {
      arch::MapOpenNmtOptions(ckpt, opt, vocab, a);
    } catch (const convert::Error& e) {
      return e.what();
    }
    return "";
  }
  std::string Refused(const char* key, const nlohmann::json& value) {
    const nlohmann::json saved = opt[key];
    opt[key] = value;
    std::string message = Error();
    opt[key] = saved;
    return message;
  }
};

TEST_CASE("OpenNMT-py options tern does not run are refused by name", "[architectures][opennmt]") {
  Edited e("opennmt");
  const std::string at = e.ckpt.label() + ": opt: ";
  REQUIRE(e.Error().empty());
  CHECK(e.Refused("encoder_type", "brnn") ==
        at + "\"encoder_type\" is \"brnn\"; --arch opennmt converts the Transformer only "
             "(encoder_type and decoder_type \"transformer\")");
  CHECK(e.Refused("decoder_type", "rnn") ==
        at + "\"decoder_type\" is \"rnn\"; --arch opennmt converts the Transformer only "
             "(encoder_type and decoder_type \"transformer\")");
  CHECK(e.Refused("model_type", "audio") ==
        at + "\"model_type\" is \"audio\"; only \"text\" models are supported");
  CHECK(e.Refused("copy_attn", true) ==
        at + "\"copy_attn\" is true: the copy generator (pointer-generator) is not supported");
  CHECK(e.Refused("self_attn_type", "average") ==
        at + "\"self_attn_type\" is \"average\"; only \"scaled-dot\" is supported (the average "
             "attention network is not)");
  CHECK(e.Refused("parallel_residual", true) ==
        at + "\"parallel_residual\" is true, which is not supported");
  CHECK(e.Refused("pos_ffn_activation_fn", "gated-gelu") ==
        at + "\"pos_ffn_activation_fn\" is \"gated-gelu\"; expected relu, gelu, fast_gelu, silu "
             "or gated-silu (gated-gelu's exact GELU is not tern's geglu)");
  CHECK(e.Refused("layer_norm", "deepnorm") ==
        at + "\"layer_norm\" is \"deepnorm\"; expected standard or rms");
  CHECK(e.Refused("max_relative_positions", -1) ==
        at + "\"max_relative_positions\" is -1 (rotary embeddings): not supported for "
             "OpenNMT-py encoder-decoder models");
  CHECK(e.Refused("max_relative_positions", -2) ==
        at + "\"max_relative_positions\" is -2 (ALiBi), which is not supported");
  CHECK(e.Refused("max_relative_positions", 8) ==
        at + "position_encoding and max_relative_positions > 0 together (sinusoids and relative "
             "positions) are not supported");
  CHECK(e.Refused("position_encoding_type", "Learned") ==
        at + "\"position_encoding_type\" is \"Learned\"; expected SinusoidalInterleaved or "
             "SinusoidalConcat");
  CHECK(e.Refused("dec_hid_size", 64) ==
        at + "\"dec_hid_size\" is 64, not hidden_size 32; the runtime uses one d_model");
  CHECK(e.Refused("enc_layers", 3) ==
        at + "enc_layers 3 / dec_layers 2 but the checkpoint has 2 / 2 layers");
  CHECK(e.Refused("position_encoding", false) ==
        e.ckpt.label() +
            ": tensor \"encoder.embeddings.make_embedding.pe.pe\" (a sinusoid table) although "
            "opt position_encoding is false");
  CHECK(e.Refused("layer_norm", "rms") ==
        e.ckpt.label() +
            ": tensor \"decoder.layer_norm.bias\" is a LayerNorm bias although opt layer_norm is "
            "rms (mixed LayerNorm and RMSNorm are not supported)");
  CHECK(e.Refused("num_kv", 2) ==
        e.ckpt.at("decoder.transformer_layers.0.context_attn.linear_keys.weight").where +
            ": tensor \"decoder.transformer_layers.0.context_attn.linear_keys.weight\" has 32 "
            "rows, but opt num_kv 2 with 4 heads gives 16 in every attention (the runtime has one "
            "K/V head count)");
  // SinusoidalConcat is checked against the stored table (the fixture's is interleaved).
  const std::string pe = "encoder.embeddings.make_embedding.pe.pe";
  CHECK(e.Refused("position_encoding_type", "SinusoidalConcat")
            .find(e.ckpt.at(pe).where + ": position table \"" + pe +
                  "\" is not the sinusoidal table the runtime computes for "
                  "sinusoid_layout=concatenated") == 0);
  // Guided alignment only trains a head: a note, not a refusal.
  e.opt["lambda_align"] = 0.05;
  ArchitectureOptions a;
  bool noted = false;
  for (const auto& note : arch::MapOpenNmtOptions(e.ckpt, e.opt, e.vocab, a).notes)
    noted = noted || note.find("ignored lambda_align / alignment_layer") == 0;
  CHECK(noted);
}

TEST_CASE("OpenNMT-py vocabularies: sizes match the embeddings, special tokens by name",
          "[architectures][opennmt]") {
  Edited e("opennmt_rel");
  const std::string ckpt = e.ckpt.label();
  REQUIRE(e.Error().empty());
  e.vocab["src"].push_back("extra");
  CHECK(e.Error() ==
        e.ckpt.at("encoder.embeddings.make_embedding.emb_luts.0.weight").where +
            ": tensor \"encoder.embeddings.make_embedding.emb_luts.0.weight\" has shape [24, 32], "
            "expected [25, 32] (the vocabulary's 25 tokens x hidden_size)");
  e.vocab["src"].erase(e.vocab["src"].size() - 1);
  e.vocab["tgt"][2] = "<S>";
  CHECK(e.Error() == ckpt + ": vocab \"tgt\" has no \"<s>\"");
  e.vocab["tgt"][2] = "<s>";
  std::swap(e.vocab["src"][0], e.vocab["src"][1]);
  CHECK(e.Error() == ckpt +
                         ": \"<blank>\" is 0 in vocab \"src\" but 1 in \"tgt\"; the runtime uses "
                         "one pad id");
  std::swap(e.vocab["src"][0], e.vocab["src"][1]);
  e.vocab["decoder_start_token"] = "</s>";
  ArchitectureOptions a;
  CHECK(arch::MapOpenNmtOptions(e.ckpt, e.opt, e.vocab, a).config.decoder_start_id == 3);
  e.vocab.erase("tgt");
  CHECK(e.Error() ==
        ckpt + ": \"vocab\" has no \"tgt\" list of tokens (OpenNMT-py 3.x's vocab dict)");
  e.vocab = nlohmann::json::array();
  CHECK(e.Error() ==
        ckpt + ": no \"vocab\" dict (OpenNMT-py 3.x's {\"src\": [...], \"tgt\": [...]})");
}

// A hand-written training checkpoint: {ENTRIES..., "model": {"w": tensor}, "generator":
// {"weight": tensor}}.
std::string WriteCheckpoint(const testing::ScratchDir& dir, const std::string& entries) {
  std::string pt = std::string("\x80\x02}(") + entries + testing::PickleString("model");
  pt += testing::PickleStateDict({testing::PickleTensor("w", "FloatStorage", "0", 2, 0, {2}, {1})})
            .substr(2);  // without its PROTO
  pt.pop_back();         // and its STOP
  pt += testing::PickleString("generator");
  pt += testing::PickleStateDict(
            {testing::PickleTensor("weight", "FloatStorage", "0", 2, 1, {1}, {1})})
            .substr(2);
  pt.pop_back();
  pt += "u.";
  const std::string path = dir / "model.pt";
  testing::WriteBytes(path, testing::TorchArchive(pt, {{"0", testing::Floats({1.5f, -2.0f})}}));
  return path;
}

TEST_CASE("OpenNMT-py: a checkpoint without opt, or with a vocab that is not plain data",
          "[architectures][opennmt]") {
  testing::ScratchDir dir;
  ConvertOptions o;
  o.arch = "opennmt";
  o.checkpoint = WriteCheckpoint(dir, "");
  CHECK(testing::ConvertError(o) ==
        o.checkpoint +
            ": no \"opt\" entry: --arch opennmt reads an OpenNMT-py training checkpoint (model, "
            "generator, vocab, opt)");
  // A vocab holding something other than lists of strings (here a tensor; OpenNMT-py 2.x's
  // torchtext Field objects likewise) is refused with the way out.
  const std::string opt = testing::PickleString("opt") + "cargparse\nNamespace\n)\x81}(" +
                          testing::PickleString("heads") + testing::PickleInt(4) + "ub";
  std::string vocab = testing::PickleString("vocab") + "}(" + testing::PickleString("src");
  vocab += testing::PickleTensor("", "FloatStorage", "0", 2, 0, {2}, {1})
               .substr(testing::PickleString("").size());  // the tensor without its name
  vocab += "u";
  o.checkpoint = WriteCheckpoint(dir, opt + vocab);
  CHECK(testing::ConvertError(o) ==
        o.checkpoint +
            ": vocab.src is a tensor, not plain data; OpenNMT-py 2.x's torchtext vocabulary "
            "objects are not read: convert the checkpoint with OpenNMT-py 3.x's "
            "tools/convertv2_v3.py first");
}

TEST_CASE("OpenNMT-py: a tokenizer is refused (ids are the vocab lists', sources carry no </s>)",
          "[architectures][opennmt]") {
  ConvertOptions o = Options(kFamilies[0]);
  o.tokenizer = CheckpointFixture("m2m100/sentencepiece.bpe.model");
  CHECK(testing::ConvertError(o) ==
        o.tokenizer +
            ": --arch opennmt: the model's ids are its vocab lists' and OpenNMT-py appends no "
            "</s> to a source, which tern's text path does; convert without --tokenizer and "
            "translate with --ids");
  const TernContents plain = BuildContents(Options(kFamilies[0]));
  CHECK(plain.source_tokenizer.empty());
  CHECK(plain.vocabulary_map.empty());
}

}  // namespace
}  // namespace tern::convert
