// tern inspect: what is in a .tern file, and how much arena it needs.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "converter/model_config_json.h"
#include "runtime/tokenizer/bpe_tokenizer.h"
#include "runtime/tokenizer/pre_tokenizer.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tern_generated.h"
#include "tools/tern/args.h"
#include "tools/tern/commands.h"
#include "tools/tern/load.h"
#include "tools/tern/session_flags.h"

namespace tern::cli {

namespace {

const char kHelp[] =
    "usage: tern inspect MODEL.tern [--json] [--batch N] [--beam N] [--max-source N]\n"
    "                    [--max-length N] [--batch-tokens T] [--target-tokens T]\n"
    "                    [--threads N] [--backend B] [--kv-cache fp32|fp16] [--no-mmap]\n"
    "\n"
    "Prints the config, every tensor (name, dtype, shape, bytes), bytes by dtype, tokenizer and\n"
    "metadata, and the arena bytes a session needs for the given limits (alone, and when sessions\n"
    "share one packed copy of the weights, as tern translate --workers does). The limit flags, "
    "their\n"
    "defaults and bounds are those of tern translate and generate: batch 1 (at most 4096), beam 1\n"
    "(at most 256), min(256, max_positions) source and target tokens.\n";

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// The tokenizer's kind and sizes; a byte-level BPE table is loaded as a text path would load
// it, so a broken one shows here.
nlohmann::ordered_json DescribeTokenizer(const Model& model) {
  nlohmann::ordered_json j = {{"kind", "none"},
                              {"source_bytes", model.source_tokenizer().size()},
                              {"target_bytes", model.target_tokenizer().size()}};
  const schema::Tokenizer* t = model.schema()->tokenizer();
  if (t == nullptr) return j;
  if (t->kind() == schema::TokenizerKind_SentencePiece) j["kind"] = "sentencepiece";
  if (t->kind() == schema::TokenizerKind_SentencePieceSpecials) {
    // Format 1.10: a language model's SentencePiece model with its own BOS / EOS rule.
    j["kind"] = "sentencepiece-specials";
    j["add_bos"] = model.prompt_specials().add_bos;
    j["add_eos"] = model.prompt_specials().add_eos;
    return j;
  }
  if (t->kind() == schema::TokenizerKind_SentencePieceMapped ||
      t->kind() == schema::TokenizerKind_SentencePieceMappedPair) {
    // Format 1.8: one model and its piece -> model id map, loaded as a text path loads them;
    // 1.9: a model and map per side.
    const bool pair = t->kind() == schema::TokenizerKind_SentencePieceMappedPair;
    j["kind"] = pair ? "sentencepiece-mapped-pair" : "sentencepiece-mapped";
    j["model_bytes"] = model.mapped_tokenizer().size();
    j["pieces"] = model.vocabulary_map().size();
    Tokenizer tokenizer, target;
    Status s = tokenizer.LoadMapped(model);
    if (pair) {
      j["target_model_bytes"] = model.target_mapped_tokenizer().size();
      j["target_pieces"] = model.target_vocabulary_map().size();
      if (s.ok()) s = target.LoadMappedTarget(model);
    }
    if (!s.ok()) j["error"] = s.message();
    return j;
  }
  if (t->kind() != schema::TokenizerKind_ByteLevelBpe) return j;
  j["kind"] = "byte-level-bpe";
  const auto bpe = BpeTokenizer::FromModel(model);
  if (!bpe.ok()) {
    j["error"] = bpe.status().message();
    return j;
  }
  const schema::ByteLevelBpe& table = *t->byte_level_bpe();
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  if (table.pre_tokenizer()) {
    for (const auto step : *table.pre_tokenizer()) {
      steps.push_back(bpe::PreTokenizerStepName(static_cast<bpe::PreTokenizerStep>(step)));
    }
  }
  auto ids = [](const flatbuffers::Vector<int32_t>* v) {
    return v ? std::vector<int32_t>(v->begin(), v->end()) : std::vector<int32_t>();
  };
  j["tokens"] = bpe->vocab_size();
  j["added_tokens"] = bpe->added_token_count();
  j["merges"] = bpe->merge_count();
  j["token_bytes"] = table.token_bytes()->size();
  j["pre_tokenizer"] = steps;
  j["ignore_merges"] = table.ignore_merges();
  j["prefix_ids"] = ids(table.prefix_ids());
  j["suffix_ids"] = ids(table.suffix_ids());
  return j;
}

std::string TokenizerLine(const nlohmann::ordered_json& t) {
  const std::string kind = t["kind"];
  if (kind == "byte-level-bpe") {
    if (t.contains("error"))
      return "byte-level BPE that does not load: " + t["error"].get<std::string>();
    std::string steps;
    for (const auto& s : t["pre_tokenizer"])
      steps += (steps.empty() ? "" : ", ") + s.get<std::string>();
    return "byte-level BPE, " + t["tokens"].dump() + " tokens (" + t["added_tokens"].dump() +
           " added), " + t["merges"].dump() + " merges, " + t["token_bytes"].dump() +
           " bytes of tokens; pre-tokenizer " + (steps.empty() ? "none" : steps) +
           (t["ignore_merges"].get<bool>() ? "; ignore_merges" : "") + "; adds " +
           t["prefix_ids"].dump() + " before and " + t["suffix_ids"].dump() + " after a text";
  }
  if (kind == "none") return "none";
  if (kind == "sentencepiece-mapped-pair") {
    if (t.contains("error"))
      return "SentencePiece with vocabulary maps that do not load: " +
             t["error"].get<std::string>();
    return "SentencePiece per side mapped to model ids (format 1.9): source " + t["pieces"].dump() +
           " pieces, " + t["model_bytes"].dump() + " bytes; target " + t["target_pieces"].dump() +
           " pieces, " + t["target_model_bytes"].dump() + " bytes";
  }
  if (kind == "sentencepiece-specials") {
    return "SentencePiece, " + t["source_bytes"].dump() + " bytes; a prompt gets " +
           (t["add_bos"].get<bool>() ? "BOS" : "no BOS") + " before and " +
           (t["add_eos"].get<bool>() ? "EOS" : "no EOS") + " after (format 1.10)";
  }
  if (kind == "sentencepiece-mapped") {
    if (t.contains("error"))
      return "SentencePiece with a vocabulary map that does not load: " +
             t["error"].get<std::string>();
    return "SentencePiece, " + t["pieces"].dump() + " pieces mapped to model ids (format 1.8), " +
           t["model_bytes"].dump() + " bytes, both sides";
  }
  return "SentencePiece, source " + t["source_bytes"].dump() + " bytes, target " +
         t["target_bytes"].dump() + " bytes";
}

}  // namespace

int Inspect(int argc, char** argv) {
  std::set<std::string> valued;
  for (const char* f : kLimitFlags) valued.insert(f);
  Args args(argc, argv, valued, {"json", "no-mmap", "help"});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (args.positional().size() != 1) throw UsageError("expected exactly one MODEL");
  const std::string path = args.positional()[0];
  LoadedModel loaded = LoadModel(path, args.has("no-mmap"));
  const Model& model = loaded.model;
  Limits limits = ParseLimits(args, model.config());
  // A language model is run by a Generator (max-source: longest prompt; max-length: prompt +
  // generated tokens), a translation model by a Session.
  const bool decoder_only = model.config().architecture == Architecture::kDecoderOnly;
  if (decoder_only) limits.max_source_length = limits.max_target_length;  // as tern generate
  auto arena = decoder_only ? Generator::RequiredArenaBytes(model, limits)
                            : Session::RequiredArenaBytes(model, limits);
  if (!arena.ok()) throw std::runtime_error(arena.status().message());
  // Sessions sharing one packed copy of the weights (tern translate --workers, SharedWeights):
  // the shared memory once, then each session's arena without the packed copy.
  SharedWeights shared;
  auto shared_bytes = SharedWeights::RequiredBytes(model, limits);
  if (!shared_bytes.ok()) throw std::runtime_error(shared_bytes.status().message());
  auto shared_arena = decoder_only ? Generator::RequiredArenaBytes(model, limits, &shared)
                                   : Session::RequiredArenaBytes(model, limits, &shared);
  if (!shared_arena.ok()) throw std::runtime_error(shared_arena.status().message());

  nlohmann::ordered_json j;
  j["file"] = path;
  j["file_bytes"] = model.size();
  j["format_version"] =
      std::to_string(model.format_major()) + "." + std::to_string(model.format_minor());
  j["config"] = nlohmann::ordered_json::parse(convert::ModelConfigToJson(model.config()));
  std::map<std::string, unsigned long long> by_dtype;
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (size_t i = 0; i < model.tensor_count(); ++i) {
    const TensorInfo t = model.tensor(i);
    std::vector<int64_t> shape(t.dims, t.dims + t.rank);
    nlohmann::ordered_json row = {
        {"name", t.name}, {"dtype", DTypeName(t.dtype)}, {"shape", shape}, {"bytes", t.data_size}};
    if (t.group_size > 0) row["group_size"] = t.group_size;
    tensors.push_back(row);
    by_dtype[DTypeName(t.dtype)] += t.data_size;
  }
  j["tensors"] = tensors;
  j["bytes_by_dtype"] = by_dtype;
  j["tokenizer"] = DescribeTokenizer(model);
  const ShortlistTable& shortlist = model.shortlist();
  if (shortlist.present()) {
    int32_t specials[kMaxShortlistSpecials];
    const int n = ShortlistSpecials(model.config(), specials);
    j["shortlist"] = {
        {"k", shortlist.k},
        {"f", shortlist.f()},
        {"ids", shortlist.id_count()},
        {"id_bytes", shortlist.id_bytes()},
        {"special_ids", n},
        {"worst_case_rows_per_sentence",
         shortlist.MaxCandidates(limits.max_source_length, n, model.config().tgt_vocab_size)}};
  }
  if (model.language_count() > 0) {
    auto languages = decltype(j)::object();
    for (size_t i = 0; i < model.language_count(); ++i)
      languages[model.language_code(i)] = model.language_token(i);
    j["languages"] = languages;
  }
  const auto* meta = model.schema()->metadata();
  if (meta) {
    j["metadata"] = {{"converter_version", Str(meta->converter_version())},
                     {"source_digest", Str(meta->source_digest())},
                     {"source_format", Str(meta->source_format())},
                     {"creation_options", Str(meta->creation_options())}};
  }
  j["limits"] = {{"max_batch", limits.max_batch},
                 {"beam_size", limits.beam_size},
                 {"max_source_length", limits.max_source_length},
                 {"max_target_length", limits.max_target_length},
                 {"max_batch_tokens", limits.max_batch_tokens},
                 {"max_target_tokens", limits.max_target_tokens}};
  j["required_arena_bytes"] = arena.value();
  j["shared_weights_bytes"] = shared_bytes.value();
  j["shared_session_arena_bytes"] = shared_arena.value();
  if (args.has("json")) {
    // Strings from the file (names, metadata) may hold invalid UTF-8: written as U+FFFD, so the
    // output is always valid JSON.
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("%s: tern model, format %s, %zu bytes\n", path.c_str(),
              j["format_version"].get<std::string>().c_str(), model.size());
  std::printf("\nconfig:\n");
  for (auto it = j["config"].begin(); it != j["config"].end(); ++it) {
    std::printf("  %-18s %s\n", it.key().c_str(),
                it.value().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  std::printf("\ntensors (%zu):\n", model.tensor_count());
  for (const auto& t : tensors) {
    std::printf("  %-48s %-4s %-14s %10llu\n", t["name"].get<std::string>().c_str(),
                t["dtype"].get<std::string>().c_str(), t["shape"].dump().c_str(),
                t["bytes"].get<unsigned long long>());
  }
  std::printf("\nbytes by dtype:\n");
  for (const auto& kv : by_dtype) std::printf("  %-4s %llu\n", kv.first.c_str(), kv.second);
  std::printf("\ntokenizer: %s\n", TokenizerLine(j["tokenizer"]).c_str());
  if (shortlist.present()) {
    const auto& sl = j["shortlist"];
    std::printf(
        "shortlist: K %d, F %lld, %zu ids of %d bytes; worst case per sentence (source %d): "
        "%lld of %d output rows (F + K per source token + %d special ids)\n",
        shortlist.k, static_cast<long long>(shortlist.f()), shortlist.id_count(),
        shortlist.id_bytes(), limits.max_source_length,
        sl["worst_case_rows_per_sentence"].get<long long>(), model.config().tgt_vocab_size,
        sl["special_ids"].get<int>());
  } else {
    std::printf("shortlist: none\n");
  }
  if (model.language_count() > 0) {
    std::printf("languages (%zu; --source-lang / --target-lang CODE):", model.language_count());
    for (size_t i = 0; i < model.language_count(); ++i)
      std::printf(" %s=%d", model.language_code(i), model.language_token(i));
    std::printf("\n");
  }
  if (meta) {
    std::printf("metadata:\n");
    for (auto it = j["metadata"].begin(); it != j["metadata"].end(); ++it) {
      std::printf("  %-18s %s\n", it.key().c_str(), it.value().get<std::string>().c_str());
    }
  }
  std::printf("\narena for batch %d, beam %d, source %d, target %d", limits.max_batch,
              limits.beam_size, limits.max_source_length, limits.max_target_length);
  if (limits.max_batch_tokens > 0) std::printf(", %d source tokens", limits.max_batch_tokens);
  if (limits.max_target_tokens > 0) std::printf(", %d target tokens", limits.max_target_tokens);
  std::printf(": %zu bytes\n", arena.value());
  std::printf(
      "sessions sharing the packed weights (--workers): %zu bytes once, then %zu per "
      "session\n",
      shared_bytes.value(), shared_arena.value());
  return 0;
}

}  // namespace tern::cli
