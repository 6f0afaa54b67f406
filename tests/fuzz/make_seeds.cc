// Writes the converter-made seeds of the fuzz corpora: tiny .tern models for load_fuzzer (each
// a few KB: d_model 8, one layer per stack) and a safetensors file with canonical names for
// safetensors_fuzzer. tools/fuzz/make_seeds.sh runs it; the .pt / .npz / text seeds come from
// tools/fuzz/make_seeds.py. Deterministic: the same bytes on every run.
//
//   make_fuzz_seeds <corpus dir>   (writes <dir>/load/*.tern, <dir>/safetensors/tiny.safetensors)
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "converter/quantize.h"
#include "converter/readers/safetensors.h"
#include "converter/tokenizer/tokenizer_json.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/runtime/tokenizer/mini_tokenizer.h"
#include "tests/support/tiny_model.h"

namespace {

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) tern::fuzz::Die("cannot write", path);
  std::printf("%8zu  %s\n", bytes.size(), path.c_str());
}

tern::ModelConfig Small() {
  tern::ModelConfig c = tern::testing::TinyConfig();
  c.d_model = 8;
  c.heads = 2;
  c.encoder_layers = 1;
  c.decoder_layers = 1;
  c.d_ff = 16;
  c.src_vocab_size = 8;
  c.tgt_vocab_size = 8;
  c.embedding_scale = 2.0f;
  c.max_positions = 8;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  using tern::DType;
  using tern::convert::SerializeModel;
  using tern::testing::RandomContents;

  const tern::ModelConfig post = Small();
  WriteFile(dir + "/load/post_relu_f32.tern", SerializeModel(RandomContents(post, 1, DType::kF32)));
  WriteFile(dir + "/load/post_relu_i8.tern", SerializeModel(RandomContents(post, 2, DType::kI8)));
  WriteFile(dir + "/load/post_relu_i4.tern", SerializeModel(RandomContents(post, 3, DType::kI4)));
  WriteFile(dir + "/load/post_relu_f16.tern", SerializeModel(RandomContents(post, 4, DType::kF16)));

  // Pre-LN, RMSNorm, GELU, concatenated sinusoids, separate tables and output projection.
  tern::ModelConfig pre = Small();
  pre.norm_placement = tern::NormPlacement::kPre;
  pre.norm_kind = tern::ref::NormKind::kRMSNorm;
  pre.activation = tern::ref::Activation::kGELU;
  pre.sinusoid_layout = tern::ref::SinusoidLayout::kConcatenated;
  pre.shared_embeddings = false;
  pre.tied_output = false;
  pre.tgt_vocab_size = 9;
  WriteFile(dir + "/load/pre_rms_gelu_f32.tern",
            SerializeModel(RandomContents(pre, 5, DType::kF32)));

  // With the tokenizer fixtures embedded (vocabularies 37 / 41).
  tern::ModelConfig text = Small();
  text.shared_embeddings = false;
  text.src_vocab_size = 37;
  text.tgt_vocab_size = 41;
  text.d_model = 4;
  text.d_ff = 4;
  auto with_tokenizers = RandomContents(text, 6, DType::kI8);
  with_tokenizers.source_tokenizer =
      tern::fuzz::ReadFileOrDie(std::string(TERN_FIXTURES) + "/tokenizer/src37.model");
  with_tokenizers.target_tokenizer =
      tern::fuzz::ReadFileOrDie(std::string(TERN_FIXTURES) + "/tokenizer/tgt41.model");
  WriteFile(dir + "/load/tokenizers_i8.tern", SerializeModel(with_tokenizers));

  // A byte-level BPE tokenizer (format 1.4): every kind of table entry, kept small. LLaMA 3's
  // split, individual digits, a prefix space; merges, a whole-word token for ignore_merges,
  // added tokens of every flag, a post-processor's BOS.
  tern::testing::MiniTokenizer mini;
  mini.merges = {{"a", "b"}, {"ab", "c"}, {"Ġ", "a"}, {"1", "2"}};
  mini.extra_vocab = {"xyz"};
  mini.added = {
      {"<s>"}, {"<m>", true, true}, {"<r>", true, false, true}, {"<n>", false, false, false, true}};
  mini.ignore_merges = true;
  mini.pre_tokenizer = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"},
         {"pattern",
          {{"Regex",
            R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
         {"behavior", "Isolated"},
         {"invert", false}},
        {{"type", "Digits"}, {"individual_digits", true}},
        {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", false}}}}};
  mini.post_processor = {{"type", "BertProcessing"}, {"cls", {"<s>", 261}}, {"sep", {"<r>", 263}}};
  tern::ModelConfig bpe = Small();
  auto with_bpe = RandomContents(bpe, 7, DType::kI8);
  with_bpe.bpe_tokenizer = tern::convert::ParseTokenizerJson(mini.Text(), "mini");
  with_bpe.config.src_vocab_size = with_bpe.config.tgt_vocab_size =
      with_bpe.bpe_tokenizer->vocab_size();
  with_bpe.config.d_model = 2;
  with_bpe.config.heads = 1;
  with_bpe.config.d_ff = 2;
  with_bpe.tensors = RandomContents(with_bpe.config, 7, DType::kI8).tensors;
  WriteFile(dir + "/load/byte_level_bpe_i8.tern", SerializeModel(with_bpe));

  // A vocabulary shortlist (format 1.5): frequent ids, empty and full rows.
  auto with_shortlist = RandomContents(post, 8, DType::kI8);
  tern::convert::ShortlistData shortlist;
  shortlist.k = 3;
  shortlist.frequent = {4, 5};
  shortlist.row_offsets = {0, 0, 0, 0, 0, 3, 4, 4, 6};
  shortlist.ids = {6, 7, 3, 1, 7, 6};
  with_shortlist.shortlist = shortlist;
  with_shortlist.shortlist_wide_ids = true;  // the 1.5 form, Model.shortlist with 32-bit ids
  WriteFile(dir + "/load/shortlist_i8.tern", SerializeModel(with_shortlist));
  // The same shortlist as the converter writes it by default (format 1.11,
  // Model.compact_shortlist with 16-bit ids), so load_fuzzer reaches both readers.
  with_shortlist.shortlist_wide_ids = false;
  WriteFile(dir + "/load/compact_shortlist_i8.tern", SerializeModel(with_shortlist));

  // A SentencePiece model with a vocabulary map (format 1.8, as NLLB / mBART-50 store theirs):
  // src37's piece p is model id p + 1 (fairseq's offset), piece 5 left out (-1), in a shared
  // vocabulary of 40, so load_fuzzer reaches Model::CheckVocabularyMap and the mapped tokenizer.
  tern::ModelConfig mapped_config = Small();
  mapped_config.src_vocab_size = mapped_config.tgt_vocab_size = 40;
  mapped_config.d_model = 4;
  mapped_config.d_ff = 4;
  auto with_map = RandomContents(mapped_config, 9, DType::kI8);
  with_map.source_tokenizer =
      tern::fuzz::ReadFileOrDie(std::string(TERN_FIXTURES) + "/tokenizer/src37.model");
  for (int32_t p = 0; p < 37; ++p) with_map.vocabulary_map.push_back(p == 5 ? -1 : p + 1);
  WriteFile(dir + "/load/mapped_i8.tern", SerializeModel(with_map));

  // A mapped model per side (format 1.9, as Marian's source.spm / target.spm through vocab.json):
  // src37 as above, tgt41's piece p is id p + 2 in a target vocabulary of 44, piece 7 left out.
  tern::ModelConfig pair_config = mapped_config;
  pair_config.shared_embeddings = false;
  pair_config.tgt_vocab_size = 44;
  auto with_pair = RandomContents(pair_config, 10, DType::kI8);
  with_pair.source_tokenizer = with_map.source_tokenizer;
  with_pair.vocabulary_map = with_map.vocabulary_map;
  with_pair.target_tokenizer =
      tern::fuzz::ReadFileOrDie(std::string(TERN_FIXTURES) + "/tokenizer/tgt41.model");
  for (int32_t p = 0; p < 41; ++p) with_pair.target_vocabulary_map.push_back(p == 7 ? -1 : p + 2);
  WriteFile(dir + "/load/mapped_pair_i8.tern", SerializeModel(with_pair));

  // A language model's SentencePiece model with its own prompt specials (format 1.10,
  // SentencePieceSpecials: no BOS, EOS after), so load_fuzzer reaches Model::CheckSpecials.
  tern::ModelConfig lm_config = mapped_config;
  lm_config.architecture = tern::Architecture::kDecoderOnly;
  lm_config.encoder_layers = 0;
  auto with_specials = RandomContents(lm_config, 11, DType::kI8);
  with_specials.source_tokenizer = with_map.source_tokenizer;
  with_specials.prompt_add_bos = false;
  with_specials.prompt_add_eos = true;
  WriteFile(dir + "/load/specials_lm_i8.tern", SerializeModel(with_specials));

  // The f32 tiny model's tensors under their canonical names, as a checkpoint would hold them.
  std::vector<tern::convert::HostTensor> tensors;
  for (const auto& e : RandomContents(post, 1, DType::kF32).tensors) {
    tern::convert::HostTensor t;
    t.name = e.name;
    t.shape = e.shape;
    t.values = tern::convert::Decode(e);
    tensors.push_back(t);
  }
  const std::string st = dir + "/safetensors/tiny.safetensors";
  tern::convert::WriteSafetensors(st, tensors, {{"format", "pt"}});
  std::printf("%8s  %s\n", "", st.c_str());
  return 0;
}
