#include "converter/convert.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "converter/architectures/architecture.h"
#include "converter/architectures/architecture_util.h"
#include "converter/architectures/decoder_only_layout.h"
#include "converter/error.h"
#include "converter/precision.h"
#include "converter/readers/checkpoint.h"
#include "converter/readers/file_bytes.h"
#include "converter/sha256.h"
#include "converter/tokenizer/marian_spm.h"
#include "converter/tokenizer/prompt_specials.h"
#include "converter/tokenizer/tokenizer_json.h"
#include "converter/tokenizer/vocab_map.h"
#include "runtime/model/model.h"
#include "runtime/tokenizer/tokenizer.h"

namespace tern::convert {

namespace {

constexpr const char* kConverterVersion = "tern-convert 0.2.0";

// A SentencePiece model to embed, checked now by the library that will parse it at run time:
// an empty file, /dev/null, JSON or an executable is refused here instead of producing a model
// whose text path fails (or that silently has no tokenizer). Its pieces must be ids of the
// model's vocabulary (`vocab_size`).
std::vector<uint8_t> ReadTokenizer(const std::string& path, const char* flag, int32_t vocab_size,
                                   const char* vocab_name) {
  const auto file = FileBytes::Open(path);
  if (file->size() == 0)
    throw Error(path + " (" + flag + "): empty file, not a SentencePiece model");
  std::vector<uint8_t> bytes(file->data(), file->data() + file->size());
  Tokenizer tokenizer;
  const Status s = tokenizer.Load(Span<const uint8_t>(bytes.data(), bytes.size()));
  if (!s.ok()) {
    throw Error(path + " (" + flag + "): not a SentencePiece model (" + s.message() + ")");
  }
  if (tokenizer.vocab_size() > vocab_size) {
    throw Error(path + " (" + flag + "): " + std::to_string(tokenizer.vocab_size()) +
                " pieces, more than the model's " + vocab_name + " = " +
                std::to_string(vocab_size));
  }
  return bytes;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A tokenizer.json to embed: checked completely (tokenizer_json.h), its ids inside the model's
// vocabulary. `found` says it was picked up beside the checkpoint rather than named.
BpeTokenizerData ReadBpeTokenizer(const std::string& path, bool found, int32_t vocab_size,
                                  const char* vocab_name) {
  const std::string hint = found ? " (found beside the checkpoint; --no-tokenizer converts "
                                   "without it)"
                                 : "";
  BpeTokenizerData data;
  try {
    data = ReadTokenizerJson(path);
  } catch (const Error& e) {
    throw Error(e.what() + hint);
  }
  if (data.vocab_size() > vocab_size) {
    throw Error(path + ": " + std::to_string(data.vocab_size()) +
                " tokens, more than the model's " + vocab_name + " = " +
                std::to_string(vocab_size) + hint);
  }
  return data;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  HostTensor t;
  t.shape = shape;
  return t.shape_string();
}

// "source" or "source" (canonical) when they differ.
std::string Describe(const std::string& source, const std::string& canonical) {
  return "\"" + source + "\"" + (source == canonical ? "" : " (" + canonical + ")");
}

// After mapping: a decoder table equal to the encoder's becomes shared, an output projection
// equal to the decoder's table becomes tied (the runtime then stores it once).
void DetectSharing(MappedCheckpoint* m) {
  ModelConfig& c = m->config;
  auto& t = m->tensors;
  const std::string enc = "encoder.embed_tokens.weight", dec = "decoder.embed_tokens.weight",
                    out = "output_projection.weight";
  if (!c.shared_embeddings && c.src_vocab_size == c.tgt_vocab_size && t.count(enc) &&
      t.count(dec)) {
    const HostTensor a = t[enc].load(), b = t[dec].load();
    if (a.shape == b.shape && a.values == b.values) {
      c.shared_embeddings = true;
      m->notes.push_back("shared embeddings: " + t[dec].source + " equals " + t[enc].source);
      t.erase(dec);
    }
  }
  const std::string table = c.shared_embeddings ? enc : dec;
  if (!c.tied_output && t.count(out) && t.count(table)) {
    const HostTensor a = t[out].load(), b = t[table].load();
    if (a.shape == b.shape && a.values == b.values) {
      c.tied_output = true;
      m->notes.push_back("tied output projection: " + t[out].source + " equals " + t[table].source);
      t.erase(out);
    }
  }
}

std::string Digest(const std::vector<std::string>& files) {
  if (files.size() == 1) return "sha256:" + Sha256File(files[0]);
  // Sharded: the digest of the index file and each shard, in order.
  Sha256 sha;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw Error(f + ": cannot open");
    char buf[1 << 16];
    while (in) {
      in.read(buf, sizeof buf);
      sha.Update(buf, static_cast<size_t>(in.gcount()));
    }
  }
  return "sha256:" + sha.HexDigest();
}

}  // namespace

DType ParseDType(const std::string& name) {
  if (name == "fp32" || name == "f32") return DType::kF32;
  if (name == "fp16" || name == "f16") return DType::kF16;
  if (name == "int8" || name == "i8") return DType::kI8;
  if (name == "int4" || name == "i4") return DType::kI4;
  throw Error("unknown dtype \"" + name + "\"; expected fp32, fp16, int8 or int4");
}

TernContents BuildContents(const ConvertOptions& options) {
  CheckpointOptions read_options = DefaultCheckpointOptions(options.arch);
  if (!options.state_key.empty()) {
    read_options.state_key = options.state_key;
    read_options.extra_state_keys.clear();
  }
  const Checkpoint ckpt = Checkpoint::Open(options.checkpoint, read_options);

  ArchitectureOptions arch;
  arch.arch = options.arch;
  arch.checkpoint = options.checkpoint;
  arch.config = options.config;
  arch.map = options.map;
  arch.overrides_json = options.overrides_json;
  arch.skip_prefixes = options.skip_prefixes;
  arch.ignore_position_mismatch = options.ignore_position_mismatch;
  MappedCheckpoint mapped = MapCheckpoint(ckpt, arch);
  if (options.arch != "tern") DetectSharing(&mapped);

  TernContents out;
  out.config = mapped.config;
  const ModelConfig& mc = out.config;
  if (mc.architecture == Architecture::kUniversal &&
      (mc.encoder_layers != 1 || mc.decoder_layers != 1 || mc.universal_steps < 1)) {
    throw Error(mapped.config_label +
                ": a universal transformer has one shared block per stack (encoder_layers = " +
                std::to_string(mc.encoder_layers) + ", decoder_layers = " +
                std::to_string(mc.decoder_layers) + "; both must be 1) applied universal_steps = " +
                std::to_string(mc.universal_steps) + " >= 1 times");
  }
  // With head_dim (Gemma, T5) the heads need not divide d_model.
  if (out.config.heads <= 0 || out.config.d_model <= 0 ||
      (out.config.head_dim == 0 && out.config.d_model % out.config.heads != 0)) {
    throw Error(mapped.config_label + ": heads = " + std::to_string(out.config.heads) +
                " does not divide d_model = " + std::to_string(out.config.d_model));
  }
  // The runtime's own bounds, before the layout (or anything else) is sized from the config.
  const Status config_ok = CheckModelConfig(out.config);
  if (!config_ok.ok()) throw Error(mapped.config_label + ": " + config_ok.message());
  std::vector<ExpectedTensor> layout;
  try {
    layout = ModelLayout(out.config);
  } catch (const Error& e) {
    throw Error(mapped.config_label + ": " + e.what());
  }
  std::set<std::string> in_layout;
  for (const auto& e : layout) in_layout.insert(e.name);
  for (const auto& kv : mapped.tensors) {
    if (!in_layout.count(kv.first)) {
      throw Error(ckpt.label() + ": tensor " + Describe(kv.second.source, kv.first) +
                  " is not part of the model the config describes (" + mapped.config_label + ")");
    }
  }
  std::vector<ExpectedTensor> present;
  for (const auto& e : layout) {
    if (mapped.tensors.count(e.name)) {
      present.push_back(e);
    } else if (e.required) {
      auto src = mapped.source_names.find(e.name);
      throw Error(ckpt.label() + ": required tensor " +
                  Describe(src == mapped.source_names.end() ? e.name : src->second, e.name) +
                  " is missing");
    }
  }

  // The tokenizers are checked before the (possibly long) tensor conversion.
  const bool decoder_only = out.config.architecture == Architecture::kDecoderOnly;
  std::string tokenizer_path = options.tokenizer;
  std::string vocab_map_path;     // a vocab.json the tokenizer's map came from
  TokenizerConfig prompt_config;  // a language model's tokenizer_config.json, when read
  // Beside a language model: a SentencePiece tokenizer.model (LLaMA 1/2, Mistral, TinyLlama)
  // before a tokenizer.json (their tokenizer.json is a byte-fallback BPE that tern does not take;
  // GPT-2, LLaMA 3, Qwen2 and SmolLM ship no tokenizer.model).
  const std::string beside_model = arch::DirName(options.checkpoint) + "/tokenizer.model";
  const bool model_found = tokenizer_path.empty() && !options.no_tokenizer && decoder_only &&
                           arch::FileExists(beside_model);
  // Beside a translation model: T5's SentencePiece spiece.model (T5, mT5, Flan-T5).
  const std::string beside_spiece = arch::DirName(options.checkpoint) + "/spiece.model";
  const bool spiece_found = tokenizer_path.empty() && !options.no_tokenizer && !decoder_only &&
                            mapped.arch != "opennmt" && arch::FileExists(beside_spiece);
  // Beside M2M100 / NLLB-200 / mBART: fairseq's sentencepiece.bpe.model, whose ids the model
  // offsets (NLLB, mBART: fairseq's dictionary) or renumbers (M2M100: vocab.json): stored with
  // its map; beside a fairseq transformer with one dictionary: numbered by its dict.txt.
  const bool fairseq_family = mapped.arch == "nllb" || mapped.arch == "m2m100" ||
                              mapped.arch == "mbart" ||
                              (mapped.arch == "fairseq" && !mapped.vocabulary_dict.empty());
  const std::string beside_bpe_model =
      arch::DirName(options.checkpoint) + "/sentencepiece.bpe.model";
  const bool bpe_model_found = tokenizer_path.empty() && !options.no_tokenizer && fairseq_family &&
                               arch::FileExists(beside_bpe_model);
  // Beside a Hugging Face MarianMT checkpoint: source.spm and target.spm, both numbered by the
  // shared vocab.json (marian_spm.h): a mapped model per side, format 1.9.
  const bool marian_found = tokenizer_path.empty() && options.target_tokenizer.empty() &&
                            !options.no_tokenizer && mapped.arch == "marian" &&
                            MarianTokenizersBeside(arch::DirName(options.checkpoint));
  std::vector<std::string> marian_inputs;
  if (marian_found) {
    MarianTokenizers m = ReadMarianTokenizers(arch::DirName(options.checkpoint), out.config);
    out.source_tokenizer = std::move(m.source);
    out.target_tokenizer = std::move(m.target);
    out.vocabulary_map = std::move(m.source_ids);
    out.target_vocabulary_map = std::move(m.target_ids);
    marian_inputs = {m.source_path, m.target_path, m.vocab_path};
    if (options.note) {
      options.note("tokenizer: took " + m.source_path + " (" +
                   std::to_string(out.vocabulary_map.size()) + " pieces) and " + m.target_path +
                   " (" + std::to_string(out.target_vocabulary_map.size()) +
                   " pieces): SentencePiece per side, ids from " + m.vocab_path);
    }
  }
  const std::string beside = arch::DirName(options.checkpoint) + "/tokenizer.json";
  // A tokenizer.json beside a language model, or beside a BART checkpoint (GPT-2's byte-level
  // BPE, which tern translate applies to both sides); other translation models' text paths take
  // SentencePiece models (Marian, T5's spiece.model, mBART; NLLB's tokenizer.json is not
  // byte-level).
  const bool beside_exists = tokenizer_path.empty() && !options.no_tokenizer && !model_found &&
                             !spiece_found && !bpe_model_found && !marian_found &&
                             arch::FileExists(beside);
  const bool found = beside_exists && (decoder_only || mapped.arch == "bart");
  if (found) tokenizer_path = beside;
  if (model_found) tokenizer_path = beside_model;
  if (spiece_found) tokenizer_path = beside_spiece;
  if (bpe_model_found) tokenizer_path = beside_bpe_model;
  if (beside_exists && !found && options.note) {
    options.note(beside +
                 " not taken: a translation model's text path uses SentencePiece "
                 "models (--tokenizer X.model); --tokenizer " +
                 beside + " embeds it anyway");
  }
  if (!tokenizer_path.empty()) {
    if (mapped.arch == "opennmt") {
      // The ids are the positions in OpenNMT-py's vocab lists, and it appends no </s> to a
      // source, which tern's text path does: a SentencePiece model alone would be wrong.
      throw Error(tokenizer_path +
                  ": --arch opennmt: the model's ids are its vocab lists' and OpenNMT-py "
                  "appends no </s> to a source, which tern's text path does; convert without "
                  "--tokenizer and translate with --ids");
    }
    // Shared or source side; a decoder-only model has only the target vocabulary.
    const bool shared = options.target_tokenizer.empty();
    const int32_t vocab = decoder_only ? out.config.tgt_vocab_size
                          : shared ? std::min(out.config.src_vocab_size, out.config.tgt_vocab_size)
                                   : out.config.src_vocab_size;
    const char* vocab_name = decoder_only ? "tgt_vocab_size"
                             : shared     ? "vocabulary size (the smaller of src and tgt)"
                                          : "src_vocab_size";
    if (EndsWith(tokenizer_path, ".json")) {
      if (!shared) {
        throw Error(tokenizer_path +
                    ": a byte-level BPE tokenizer serves both sides; --target-tokenizer "
                    "takes SentencePiece models only");
      }
      out.bpe_tokenizer = ReadBpeTokenizer(tokenizer_path, found, vocab, vocab_name);
      std::vector<std::string> specials_notes;
      if (decoder_only) {
        prompt_config = ReadTokenizerConfig(arch::DirName(options.checkpoint));
        ApplyPromptSpecials(prompt_config, tokenizer_path, &*out.bpe_tokenizer, &specials_notes);
      }
      if (options.note) {
        for (const auto& n : specials_notes) options.note("tokenizer: " + n);
        options.note(std::string("tokenizer: ") + (found ? "took " : "") + tokenizer_path + ": " +
                     out.bpe_tokenizer->Describe());
        for (const auto& n : out.bpe_tokenizer->notes) options.note("tokenizer: " + n);
      }
    } else {
      if (!mapped.text_refusal.empty()) throw Error(tokenizer_path + ": " + mapped.text_refusal);
      if (fairseq_family) {
        if (!shared) {
          throw Error(tokenizer_path + ": --arch " + mapped.arch +
                      ": one SentencePiece model serves both sides; --target-tokenizer is not "
                      "taken");
        }
        out.source_tokenizer = ReadTokenizer(
            tokenizer_path, bpe_model_found ? "found beside the checkpoint" : "--tokenizer",
            INT32_MAX, vocab_name);
        // NLLB: fairseq's offset rule; M2M100: vocab.json beside the checkpoint.
        const std::string vocab_json = arch::DirName(options.checkpoint) + "/vocab.json";
        const bool m2m100 = mapped.arch == "m2m100";
        const bool dict = mapped.arch == "fairseq";  // fairseq: its dict.txt
        if (m2m100 && !arch::FileExists(vocab_json)) {
          throw Error(tokenizer_path + ": --arch m2m100 numbers the pieces by vocab.json, and " +
                      vocab_json + " does not exist (--no-tokenizer converts without a tokenizer)");
        }
        const SpecialIds special{out.config.bos_id, out.config.pad_id, out.config.eos_id,
                                 out.config.unk_id};
        out.vocabulary_map =
            BuildVocabularyMap(out.source_tokenizer, tokenizer_path,
                               dict     ? VocabularyRule::kFairseqDict
                               : m2m100 ? VocabularyRule::kVocabJson
                                        : VocabularyRule::kFairseqOffset,
                               dict ? mapped.vocabulary_dict : vocab_json, vocab, special);
        if (m2m100) vocab_map_path = vocab_json;
        if (dict) vocab_map_path = mapped.vocabulary_dict;
        if (options.note) {
          options.note("tokenizer: " + std::string(bpe_model_found ? "took " : "") +
                       tokenizer_path + ": SentencePiece, " +
                       std::to_string(out.vocabulary_map.size()) + " pieces, both sides, ids " +
                       (dict     ? "from " + mapped.vocabulary_dict
                        : m2m100 ? "from " + vocab_json
                                 : std::string("offset as fairseq's dictionary")));
        }
      } else {
        out.source_tokenizer =
            ReadTokenizer(tokenizer_path,
                          model_found || spiece_found
                              ? "found beside the checkpoint; --no-tokenizer converts without it"
                              : "--tokenizer",
                          vocab, vocab_name);
      }
      if (spiece_found && options.note) {
        Tokenizer sentencepiece;
        (void)sentencepiece.Load(
            Span<const uint8_t>(out.source_tokenizer.data(), out.source_tokenizer.size()));
        options.note("tokenizer: took " + tokenizer_path + ": SentencePiece, " +
                     std::to_string(sentencepiece.vocab_size()) + " pieces, both sides" +
                     (arch::FileExists(beside) ? " (" + beside + " not used)" : ""));
      }
      if (decoder_only) {
        Tokenizer sentencepiece;
        (void)sentencepiece.Load(
            Span<const uint8_t>(out.source_tokenizer.data(), out.source_tokenizer.size()));
        // tokenizer_config.json's add_bos_token / add_eos_token (prompt_specials.h).
        prompt_config = ReadTokenizerConfig(arch::DirName(options.checkpoint));
        std::vector<std::string> specials_notes;
        const PromptSpecials specials = SentencePiecePromptSpecials(
            prompt_config, sentencepiece, tokenizer_path, &specials_notes);
        out.prompt_add_bos = specials.add_bos;
        out.prompt_add_eos = specials.add_eos;
        std::string around;
        if (specials.add_bos && sentencepiece.bos_id() >= 0) {
          around = "BOS " + std::to_string(sentencepiece.bos_id()) + " added before";
        }
        if (specials.add_eos) {
          around += (around.empty() ? "" : " and ") + std::string("EOS ") +
                    std::to_string(sentencepiece.eos_id()) + " added after";
        }
        if (options.note) {
          options.note(
              "tokenizer: " + std::string(model_found ? "took " : "") + tokenizer_path +
              ": SentencePiece, " + std::to_string(sentencepiece.vocab_size()) + " pieces, " +
              (around.empty() ? "nothing added around" : around) + " a prompt" +
              (model_found && arch::FileExists(beside) ? " (" + beside + " not used)" : ""));
          for (const auto& n : specials_notes) options.note("tokenizer: " + n);
        }
        // Prompts get the tokenizer's BOS, generation stops at the config's EOS: say so when
        // the two disagree (a config.json written for another tokenizer).
        if (model_found && options.note && out.prompt_add_bos && sentencepiece.bos_id() >= 0 &&
            sentencepiece.bos_id() != out.config.bos_id) {
          options.note("tokenizer: its BOS " + std::to_string(sentencepiece.bos_id()) +
                       " differs from the config's bos_id " + std::to_string(out.config.bos_id) +
                       "; prompts get the tokenizer's");
        }
      }
    }
  }
  if (!options.target_tokenizer.empty()) {
    out.target_tokenizer = ReadTokenizer(options.target_tokenizer, "--target-tokenizer",
                                         out.config.tgt_vocab_size, "tgt_vocab_size");
  }

  PrecisionRequest precision;
  precision.dtype = options.dtype;
  precision.group_size = options.group_size;
  for (const auto& k : options.keep) precision.keep.push_back(ParseKeepRule(k));
  precision.budget = options.auto_budget;
  std::string tied_note;
  if (out.config.tied_output) {
    tied_note = std::string(" (output_projection.weight is tied to ") +
                (out.config.shared_embeddings ? "encoder" : "decoder") +
                ".embed_tokens.weight here)";
  }
  auto load = [&](const std::string& name) { return mapped.tensors.at(name).load(); };
  const PrecisionPlan plan = PlanPrecision(present, precision, load, tied_note);

  if (options.note) {
    for (const auto& n : mapped.notes) options.note(n);
    for (const auto& n : plan.notes) options.note(n);
  }
  size_t done = 0;
  for (const auto& e : present) {
    const MappedTensor& source = mapped.tensors.at(e.name);
    HostTensor t = source.load();
    t.name = e.name;
    if (t.shape != e.shape) {
      throw Error(ckpt.label() + ": tensor " + Describe(source.source, e.name) + " has shape " +
                  t.shape_string() + ", expected " + ShapeString(e.shape) + " from the config" +
                  (options.arch == "tern" ? std::string() : " (" + mapped.config_label + ")"));
    }
    for (size_t i = 0; i < t.values.size(); ++i) {
      if (!std::isfinite(t.values[i])) {
        throw Error(ckpt.label() + ": tensor " + Describe(source.source, e.name) +
                    " has a non-finite value at index " + std::to_string(i) + " (" +
                    (std::isnan(t.values[i]) ? "nan" : "inf") + ")");
      }
    }
    out.tensors.push_back(Encode(t, plan.dtype.at(e.name), options.group_size));
    if (options.progress) options.progress(++done, present.size());
  }
  out.languages = mapped.languages;
  out.converter_version = kConverterVersion;
  out.source_digest = Digest(ckpt.files());
  out.source_format = ckpt.format() + (mapped.arch == "tern" ? "" : "/" + mapped.arch);
  out.creation_options = options.command_line;
  out.inputs = ckpt.files();
  for (const std::string* f :
       {&options.config, &options.map, static_cast<const std::string*>(&tokenizer_path),
        &options.target_tokenizer, static_cast<const std::string*>(&vocab_map_path)}) {
    if (!f->empty()) out.inputs.push_back(*f);
  }
  for (const auto& f : marian_inputs) out.inputs.push_back(f);
  if (!prompt_config.path.empty()) out.inputs.push_back(prompt_config.path);
  return out;
}

}  // namespace tern::convert
