// fairseq transformer checkpoints (converter/architectures/fairseq.cc): the fixtures
// (tools/fixtures/make_fairseq_fixture.py, reference tools/model/fairseq_torch.py) convert and
// match their PyTorch forward within 1e-4, alone and batched, on both backends, with identical
// greedy ids from </s>; int8 and int4 greedy ids are pinned. Options tern does not implement, an
// architecture it does not know and a dictionary of the wrong size are refused by name.
//   fairseq      args (argparse.Namespace), transformer_iwslt_de_en: post-LN, sinusoidal
//                positions, separate tables, share_decoder_input_output_embed; extra_state
//                holds fairseq.meters.* objects and a numpy scalar (read as opaque values)
//   fairseq_cfg  cfg["model"] as plain dicts: pre-LN with final norms, learned positions,
//                layernorm_embedding, share_all_embeddings, gelu
//   fairseq_omegaconf  fairseq_cfg's model with cfg a pickled omegaconf DictConfig (fairseq <
//                0.12): converts to the same .tern
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <set>

#include "converter/architectures/architecture.h"
#include "converter/writer.h"
#include "tests/converter/architecture_fixture.h"
#include "tests/converter/checkpoint_files.h"

namespace tern::convert {
namespace {

using Catch::Matchers::ContainsSubstring;
using testing::AlignedBytes;
using testing::CheckpointFixture;
using testing::ConvertError;

struct Family {
  const char* dir;
  // Greedy ids of sentence 1 (max_len + 1 steps; sentence 0 repeats one token) after int8 / int4
  // conversion (group size 8), on the reference kernels and on XNNPACK: pinned (XNNPACK quantizes
  // the activations too).
  std::vector<int32_t> int8_reference, int8_xnnpack, int4_reference, int4_xnnpack;
};

const Family kFamilies[] = {
    {"fairseq",
     {9, 9, 9, 9, 9, 9, 9, 9, 9, 5, 5},
     {9, 9, 9, 9, 9, 9, 9, 9, 9, 5, 5},
     {5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5},
     {5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}},
    {"fairseq_cfg",
     {94, 70, 70, 70, 70, 70, 70, 70, 70, 70, 70},
     {94, 70, 70, 70, 70, 70, 70, 70, 70, 70, 70},
     {94, 70, 70, 70, 70, 70, 70, 70, 70, 70, 70},
     {94, 70, 70, 70, 70, 70, 70, 70, 70, 70, 70}},
};

ConvertOptions Options(const std::string& dir, DType dtype = DType::kF32) {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture(dir + "/checkpoint_best.pt");
  o.arch = "fairseq";
  o.dtype = dtype;
  o.group_size = dtype == DType::kF32 ? 0 : 8;
  return o;
}

TEST_CASE("fairseq transformers match PyTorch, alone and batched, both backends",
          "[architectures][fairseq]") {
  for (const Family& f : kFamilies) {
    INFO(f.dir);
    const testing::ExpectedOutputs e =
        testing::LoadExpected(CheckpointFixture(std::string(f.dir) + "/expected.safetensors"));
    for (Backend backend : testing::Backends()) {
      INFO("backend " << static_cast<int>(backend));
      const testing::ParityResult r = testing::RunParity(Options(f.dir), e, backend);
      INFO("encoder error " << r.encoder_error << ", logit error " << r.logit_error << "; "
                            << r.greedy_detail);
      CHECK(r.encoder_error <= 1e-4f);
      CHECK(r.logit_error <= 1e-4f);
      CHECK(r.greedy_equal);
    }
  }
}

TEST_CASE("fairseq: int8 and int4 greedy ids are pinned", "[architectures][fairseq]") {
  for (const Family& f : kFamilies) {
    INFO(f.dir);
    const testing::ExpectedOutputs e =
        testing::LoadExpected(CheckpointFixture(std::string(f.dir) + "/expected.safetensors"));
    for (DType dtype : {DType::kI8, DType::kI4}) {
      for (Backend backend : testing::Backends()) {
        INFO(DTypeName(dtype) << ", backend " << static_cast<int>(backend));
        // Sentence 1: sentence 0's greedy output repeats one token.
        const std::vector<int32_t> out =
            testing::GreedyIdsOf(Options(f.dir, dtype), e, backend, 1, e.max_len + 1);
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

TEST_CASE("fairseq configs: args or cfg, post- or pre-LN, positions, sharing, ids",
          "[architectures][fairseq]") {
  const TernContents a = BuildContents(Options("fairseq"));
  CHECK(a.config.d_model == 16);
  CHECK(a.config.heads == 4);
  CHECK(a.config.encoder_layers == 2);
  CHECK(a.config.decoder_layers == 2);
  CHECK(a.config.d_ff == 32);
  CHECK(a.config.norm_placement == NormPlacement::kPost);
  CHECK(a.config.activation == ref::Activation::kReLU);
  CHECK(a.config.position == PositionKind::kSinusoidal);
  CHECK(a.config.sinusoid_layout == ref::SinusoidLayout::kFairseq);
  CHECK(a.config.embedding_scale == 4.0f);
  CHECK_FALSE(a.config.layernorm_embedding);
  CHECK(a.config.bos_id == 0);
  CHECK(a.config.pad_id == 1);
  CHECK(a.config.eos_id == 2);
  CHECK(a.config.unk_id == 3);
  CHECK(a.config.decoder_start_id == 2);
  CHECK(a.config.src_vocab_size == 40);
  CHECK(a.config.tgt_vocab_size == 36);
  CHECK_FALSE(a.config.shared_embeddings);
  CHECK(a.config.tied_output);
  CHECK(a.config.max_positions == 64);
  CHECK(a.source_format == "torch-zip/fairseq");
  const TernContents c = BuildContents(Options("fairseq_cfg"));
  CHECK(c.config.norm_placement == NormPlacement::kPre);
  CHECK(c.config.activation == ref::Activation::kGELU);
  CHECK(c.config.position == PositionKind::kLearned);
  CHECK(c.config.layernorm_embedding);
  CHECK(c.config.shared_embeddings);
  CHECK(c.config.tied_output);
  CHECK(c.config.src_vocab_size == 97);
  // One dictionary and a sentencepiece.bpe.model beside: stored with its dict.txt map (the
  // pieces in the dictionary's shuffled order: neither their own ids nor NLLB's offset).
  REQUIRE(c.vocabulary_map.size() == 96);
  CHECK(c.vocabulary_map[0] == 3);  // SentencePiece's <unk> is fairseq's
  CHECK(c.vocabulary_map[1] == 0);  // <s>
  CHECK(c.vocabulary_map[2] == 2);  // </s>
  std::set<int32_t> ids(c.vocabulary_map.begin(), c.vocabulary_map.end());
  CHECK(ids.size() == 96);
  CHECK(*ids.rbegin() == 96);
  CHECK_FALSE(ids.count(1));  // <pad> is no piece
  int offset_like = 0;
  for (size_t i = 3; i < c.vocabulary_map.size(); ++i)
    offset_like += c.vocabulary_map[i] == static_cast<int32_t>(i) + 1;
  CHECK(offset_like < 10);
  CHECK_FALSE(c.source_tokenizer.empty());
  CHECK(a.vocabulary_map.empty());  // two dictionaries: ids only
  // No tokenizer: the note says what the caller does.
  ArchitectureOptions o;
  o.arch = "fairseq";
  o.checkpoint = CheckpointFixture("fairseq/checkpoint_best.pt");
  const MappedCheckpoint mapped =
      MapCheckpoint(Checkpoint::Open(o.checkpoint, DefaultCheckpointOptions("fairseq")), o);
  bool noted = false;
  for (const auto& note : mapped.notes)
    noted = noted || note.find(
                         "no tokenizer stored: fairseq's dictionaries dict.de.txt / "
                         "dict.en.txt number the tokens") == 0;
  CHECK(noted);
}

TEST_CASE("fairseq: cfg as an omegaconf DictConfig converts to the plain cfg's model",
          "[architectures][fairseq]") {
  const TernContents plain = BuildContents(Options("fairseq_cfg"));
  TernContents omega = BuildContents(Options("fairseq_omegaconf"));
  CHECK(omega.source_format == "torch-zip/fairseq");
  // Only the provenance differs (another file).
  CHECK(omega.source_digest != plain.source_digest);
  omega.source_digest = plain.source_digest;
  omega.inputs = plain.inputs;
  omega.creation_options = plain.creation_options;
  CHECK(SerializeModel(omega) == SerializeModel(plain));
  CHECK(omega.config.norm_placement == NormPlacement::kPre);
  CHECK(omega.config.activation == ref::Activation::kGELU);
  CHECK(omega.vocabulary_map == plain.vocabulary_map);
}

// fairseq's cfg as omegaconf pickles it (pickle.h), without the metadata: a DictConfig of
// `items`, and a value node.
std::string OmegaDict(const std::string& items) {
  return "comegaconf.dictconfig\nDictConfig\n)\x81}(" + testing::PickleString("_content") + "}(" +
         items + "uub";
}
std::string OmegaValue(const std::string& key, const std::string& value) {
  return testing::PickleString(key) + "comegaconf.nodes\nAnyNode\n)\x81}(" +
         testing::PickleString("_val") + value + "ub";
}

TEST_CASE("fairseq: an omegaconf option that is an interpolation or missing is refused by name",
          "[architectures][fairseq]") {
  testing::ScratchDir dir;
  auto error = [&](const std::string& model_items) {
    std::string model = testing::PickleStateDict({}).substr(2);
    model.pop_back();
    const std::string path = dir / "cfg.pt";
    testing::WriteBytes(
        path,
        testing::TorchArchive(std::string("\x80\x02}(") + testing::PickleString("args") + "N" +
                              testing::PickleString("cfg") +
                              OmegaDict(testing::PickleString("model") + OmegaDict(model_items)) +
                              testing::PickleString("model") + model + "u."));
    ConvertOptions c;
    c.checkpoint = path;
    c.arch = "fairseq";
    return ConvertError(c);
  };
  const std::string at = dir / "cfg.pt";
  const std::string arch = OmegaValue("arch", testing::PickleString("transformer"));
  // Read through the DictConfig: the options reach the tensors (none here).
  CHECK(error(arch) == at + ": required tensor \"encoder.embed_tokens.weight\" is missing");
  CHECK(error(arch + OmegaValue("encoder_layers", testing::PickleString("${model.layers}"))) ==
        at + ": cfg.model: \"encoder_layers\" is the omegaconf interpolation \"${model.layers}\", "
             "which is not resolved here (only ${a.b} paths to a value of cfg are); save the "
             "checkpoint with cfg = OmegaConf.to_container(cfg, resolve=True)");
  CHECK(error(OmegaValue("arch", testing::PickleString("???"))) ==
        at + ": cfg.model: \"arch\" is omegaconf's missing value \"???\" (the option was never "
             "set)");
  // A flag tern refuses when true is not taken as false when omegaconf would compute it.
  CHECK(error(arch + OmegaValue("cross_self_attention", testing::PickleString("${x}"))) ==
        at + ": cfg.model: \"cross_self_attention\" is the omegaconf interpolation \"${x}\", "
             "which is not resolved here (only ${a.b} paths to a value of cfg are); save the "
             "checkpoint with cfg = OmegaConf.to_container(cfg, resolve=True)");
  // A path to another option (fairseq's II("model.x") defaults) is resolved, through a chain;
  // a cycle, a resolver or text around the reference is not.
  const std::string layers = OmegaValue("decoder_layers", testing::PickleInt(2));
  CHECK(error(arch + layers +
              OmegaValue("encoder_layers", testing::PickleString("${model.decoder_layers}"))) ==
        at + ": required tensor \"encoder.embed_tokens.weight\" is missing");
  CHECK(error(arch + layers + OmegaValue("a", testing::PickleString("${model.decoder_layers}")) +
              OmegaValue("encoder_layers", testing::PickleString("${model.a}"))) ==
        at + ": required tensor \"encoder.embed_tokens.weight\" is missing");
  CHECK(error(arch + layers + OmegaValue("encoder_layers", testing::PickleString("x${model.a}"))) ==
        at + ": cfg.model: \"encoder_layers\" is the omegaconf interpolation \"x${model.a}\", "
             "which is not resolved here (only ${a.b} paths to a value of cfg are); save the "
             "checkpoint with cfg = OmegaConf.to_container(cfg, resolve=True)");
  CHECK_THAT(error(arch + OmegaValue("a", testing::PickleString("${model.b}")) +
                   OmegaValue("b", testing::PickleString("${model.a}")) +
                   OmegaValue("encoder_layers", testing::PickleString("${model.a}"))),
             Catch::Matchers::ContainsSubstring(
                 "cfg.model: \"encoder_layers\" is the omegaconf interpolation \"${model."));
  CHECK(error(arch + OmegaValue("encoder_layers", testing::PickleString("${oc.env:LAYERS}"))) ==
        at + ": cfg.model: \"encoder_layers\" is the omegaconf interpolation "
             "\"${oc.env:LAYERS}\", which is not resolved here (only ${a.b} paths to a value of "
             "cfg are); save the checkpoint with cfg = OmegaConf.to_container(cfg, resolve=True)");
  // An option not read may be anything omegaconf holds.
  CHECK(error(arch + OmegaValue("seed", testing::PickleString("${common.seed}")) +
              OmegaValue("data", testing::PickleString("???"))) ==
        at + ": required tensor \"encoder.embed_tokens.weight\" is missing");
}

// A training checkpoint {"args": Namespace(arch, ...), "model": {"w": tensor}}: for the errors
// that come before any tensor is looked at.
// With `tables`, the two embedding tables [1, 1] hold 1 and 2 (different values).
std::string ArgsCheckpoint(const testing::ScratchDir& dir, const std::string& namespace_items,
                           bool tables = false) {
  const std::string path = dir / "checkpoint_best.pt";
  std::string pt = std::string("\x80\x02}(") + testing::PickleString("args") +
                   "cargparse\nNamespace\n)\x81}(" + namespace_items + "ub" +
                   testing::PickleString("model");
  std::vector<std::string> items = {
      testing::PickleTensor("w", "FloatStorage", "0", 2, 0, {1}, {1})};
  if (tables) {
    items = {testing::PickleTensor("encoder.embed_tokens.weight", "FloatStorage", "0", 2, 0, {1, 1},
                                   {1, 1}),
             testing::PickleTensor("decoder.embed_tokens.weight", "FloatStorage", "0", 2, 1, {1, 1},
                                   {1, 1})};
  }
  pt += testing::PickleStateDict(items).substr(2);
  pt.pop_back();
  pt += "u.";
  testing::WriteBytes(path, testing::TorchArchive(pt, {{"0", testing::Floats({1.0f, 2.0f})}}));
  return path;
}

TEST_CASE("fairseq: an unknown arch, an option tern does not implement, a wrong dictionary",
          "[architectures][fairseq]") {
  testing::ScratchDir dir;
  auto error = [&](const std::string& items) {
    ConvertOptions o;
    o.checkpoint = ArgsCheckpoint(dir, items);
    o.arch = "fairseq";
    return ConvertError(o);
  };
  const std::string at = dir / "checkpoint_best.pt";
  auto arch = [](const std::string& name) {
    return testing::PickleString("arch") + testing::PickleString(name);
  };
  CHECK(error(arch("lstm")) ==
        at + ": args: \"arch\" is \"lstm\": --arch fairseq reads fairseq's transformer "
             "translation models only (transformer, transformer_iwslt_de_en, "
             "transformer_wmt_en_de, transformer_vaswani_wmt_en_de_big, "
             "transformer_vaswani_wmt_en_fr_big, transformer_wmt_en_de_big, "
             "transformer_wmt_en_de_big_t2t)");
  CHECK(error(arch("transformer_lm")) ==
        at + ": args: \"arch\" is \"transformer_lm\": --arch fairseq reads fairseq's "
             "transformer translation models only (transformer, transformer_iwslt_de_en, "
             "transformer_wmt_en_de, transformer_vaswani_wmt_en_de_big, "
             "transformer_vaswani_wmt_en_fr_big, transformer_wmt_en_de_big, "
             "transformer_wmt_en_de_big_t2t)");
  CHECK(error(arch("transformer") + testing::PickleString("cross_self_attention") + "\x88") ==
        at + ": args: \"cross_self_attention\" is true: cross+self attention is not supported");
  CHECK(error(arch("transformer") + testing::PickleString("no_cross_attention") + "\x88") ==
        at + ": args: \"no_cross_attention\" is true: a decoder without encoder attention is not "
             "supported");
  CHECK(error(arch("transformer") + testing::PickleString("adaptive_softmax_cutoff") +
              testing::PickleString("2000,6000")) ==
        at + ": args: \"adaptive_softmax_cutoff\" is set: an adaptive softmax output is not "
             "supported");
  CHECK(error(arch("transformer") + testing::PickleString("decoder_output_dim") +
              std::string("M\x00\x01", 3)) ==
        at + ": args: decoder_embed_dim 512 != decoder_output_dim 256; the runtime uses one "
             "d_model (no project_out_dim)");
  CHECK(error(arch("transformer") + testing::PickleString("activation_fn") +
              testing::PickleString("tanh")) ==
        at + ": args: \"activation_fn\" = \"tanh\" is not supported; expected relu, gelu, "
             "gelu_fast, gelu_accurate or swish");
  CHECK(error(arch("transformer") + testing::PickleString("encoder_normalize_before") + "\x88") ==
        at + ": args: encoder and decoder differ in *_normalize_before or *_learned_pos; the "
             "runtime uses one norm placement and one position kind");
  CHECK(error(arch("transformer") + testing::PickleString("encoder_layers") +
              testing::PickleString("six")) ==
        at + ": args: \"encoder_layers\" must be an integer");
  CHECK(error(arch("transformer") + testing::PickleString("decoder_layers_to_keep") +
              testing::PickleString("0,2")) ==
        at + ": args: \"decoder_layers_to_keep\" (pruned layers) is not supported");
  CHECK(error(arch("transformer") + testing::PickleString("no_token_positional_embeddings") +
              "\x88") ==
        at + ": args: \"no_token_positional_embeddings\" is true: a model without positions is "
             "not supported");
  CHECK(error(arch("transformer")) ==
        at + ": required tensor \"encoder.embed_tokens.weight\" is missing");
  {
    ConvertOptions t;
    t.arch = "fairseq";
    t.checkpoint = ArgsCheckpoint(
        dir, arch("transformer") + testing::PickleString("share_all_embeddings") + "\x88", true);
    CHECK(ConvertError(t) == at + ": tensor \"decoder.embed_tokens.weight\" differs from "
                                  "\"encoder.embed_tokens.weight\" although share_all_embeddings "
                                  "is true");
  }
  // fairseq >= 0.10: cfg["model"], here a Namespace (as fairseq keeps legacy models' options),
  // args None; a cfg without "model" options.
  auto cfg_error = [&](const std::string& cfg_items) {
    std::string model = testing::PickleStateDict({}).substr(2);
    model.pop_back();
    const std::string path = dir / "cfg.pt";
    testing::WriteBytes(
        path, testing::TorchArchive(std::string("\x80\x02}(") + testing::PickleString("args") +
                                    "N" + testing::PickleString("cfg") + "}(" + cfg_items + "u" +
                                    testing::PickleString("model") + model + "u."));
    ConvertOptions c;
    c.checkpoint = path;
    c.arch = "fairseq";
    return ConvertError(c);
  };
  CHECK(cfg_error(testing::PickleString("model") + "cargparse\nNamespace\n)\x81}(" +
                  arch("bart_large") + "ub") ==
        (dir / "cfg.pt") +
            ": cfg.model: \"arch\" is \"bart_large\": --arch fairseq reads fairseq's "
            "transformer translation models only (transformer, transformer_iwslt_de_en, "
            "transformer_wmt_en_de, transformer_vaswani_wmt_en_de_big, "
            "transformer_vaswani_wmt_en_fr_big, transformer_wmt_en_de_big, "
            "transformer_wmt_en_de_big_t2t)");
  CHECK(cfg_error(testing::PickleString("task") + "}") ==
        (dir / "cfg.pt") + ": \"cfg\" has no \"model\" options (a dict or a Namespace)");
  // No options at all.
  const std::string bare = dir / "bare.pt";
  std::string empty_state = testing::PickleStateDict({}).substr(2);  // without its PROTO
  empty_state.pop_back();                                            // and its STOP
  testing::WriteBytes(
      bare, testing::TorchArchive(std::string("\x80\x02}(") + testing::PickleString("model") +
                                  empty_state + "u."));
  ConvertOptions o;
  o.checkpoint = bare;
  o.arch = "fairseq";
  CHECK(ConvertError(o) == bare +
                               ": no \"args\" or \"cfg\" entry: not a fairseq training checkpoint "
                               "(--arch fairseq reads the model's options from it)");

  // The fixture with a target dictionary one entry longer than its table.
  testing::ScratchDir copy;
  for (const char* f : {"checkpoint_best.pt", "dict.de.txt", "dict.en.txt"}) {
    testing::WriteBytes(copy / f,
                        testing::ReadBytes(CheckpointFixture(std::string("fairseq/") + f)));
  }
  testing::WriteBytes(copy / "dict.en.txt", testing::ReadBytes(copy / "dict.en.txt") + "extra 1\n");
  o.checkpoint = copy / "checkpoint_best.pt";
  CHECK(ConvertError(o) == copy / "dict.en.txt" +
                               ": the dictionary has 37 entries with fairseq's 4 specials, but "
                               "the embedding table has 36 rows (not this model's dictionary?)");
}

}  // namespace
}  // namespace tern::convert
