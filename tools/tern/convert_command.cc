// tern convert: checkpoint -> .tern (converter/convert.h does the work).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "converter/error.h"
#include "converter/output_file.h"
#include "converter/precision.h"
#include "converter/quality.h"
#include "tools/tern/args.h"
#include "tools/tern/commands.h"
#include "tools/tern/convert_shortlist.h"

namespace tern::cli {

namespace {

const char kHelp[] =
    "usage: tern convert CHECKPOINT -o OUTPUT.tern [options]\n"
    "\n"
    "Converts a checkpoint into a verified .tern model. The output is written to a temporary\n"
    "file, loaded back with the runtime, then renamed: a failed conversion never leaves a\n"
    "partial file. Nothing in the checkpoint is executed (torch.save pickles are read by a\n"
    "restricted reader). See docs/converter.md.\n"
    "\n"
    "input:\n"
    "  CHECKPOINT                *.safetensors, *.safetensors.index.json (sharded), torch.save\n"
    "                            zip (*.pt, *.pth, *.bin) or numpy *.npz\n"
    "  --arch NAME               tern (canonical names, default), marian (Hugging Face MarianMT),\n"
    "                            marian_npz (Marian C++ model.npz), nn_transformer\n"
    "                            (torch.nn.Transformer + --map), annotated\n"
    "                            (The Annotated Transformer's make_model), bart (Hugging Face\n"
    "                            BART: learned positions with offset 2, layernorm_embedding,\n"
    "                            post-LN), mbart (mBART / mBART-50: pre-LN with final norms),\n"
    "                            gpt2 (Hugging Face\n"
    "                            GPT-2, decoder-only; its config.json beside the checkpoint),\n"
    "                            llama (Hugging Face LLaMA 1/2/3, TinyLlama, SmolLM: rotary\n"
    "                            with rope_theta / rope_scaling, RMSNorm, SwiGLU, GQA), qwen2\n"
    "                            (Qwen2 / Qwen2.5: q/k/v biases), mistral (LLaMA with a\n"
    "                            sliding window), gemma (Gemma 1: GeGLU,\n"
    "                            head_dim, RMSNorm 1 + w), t5 (Hugging Face T5 v1.0 / v1.1,\n"
    "                            Flan-T5: relative bias, RMSNorm, relu or gated-gelu, tied or\n"
    "                            not), mt5 (mT5: the T5 layout), m2m100 and nllb (Hugging Face\n"
    "                            M2M100 and NLLB-200 dense: pre-LN, fairseq positions; the target\n"
    "                            language is a forced first token), fairseq (fairseq\n"
    "                            transformer checkpoint_best.pt: options from args / cfg,\n"
    "                            dict.*.txt checked; text through sentencepiece.bpe.model\n"
    "                            with one shared dict.txt), opennmt (OpenNMT-py 3.x\n"
    "                            training checkpoints: opt, vocab, model, generator), auto (from\n"
    "                            config.json's\n"
    "                            model_type / architectures); the Hugging Face maps read the\n"
    "                            config.json beside the checkpoint\n"
    "  --config PATH             tern: config.json (default: the safetensors metadata \"config\",\n"
    "                            else config.json beside the checkpoint); marian: the HF\n"
    "                            config.json (default: beside the checkpoint); marian_npz: a\n"
    "                            model.yml (default: the npz's special:model.yml); annotated: a\n"
    "                            partial tern config (e.g. {\"heads\": 8})\n"
    "  --map PATH                nn_transformer: JSON name map for the parts outside "
    "nn.Transformer\n"
    "  --set KEY=VALUE           override a config key (tern config.json names), repeatable,\n"
    "                            e.g. --set heads=8 --set norm=pre --set eos_id=1\n"
    "  --state-key KEY           torch.save files: the entry holding the state dict (a.b for "
    "nested)\n"
    "  --skip-prefix P           ignore checkpoint tensors whose name starts with P (repeatable)\n"
    "  --ignore-position-table   drop a stored sinusoidal table even if it differs from the\n"
    "                            runtime's (a warning instead of an error)\n"
    "\n"
    "precision:\n"
    "  --dtype fp32|fp16|int8|int4  weight type (default fp32); vectors stay fp32, embeddings\n"
    "                            are int8 when int4 is asked\n"
    "  --group-size N            int4 block size along the input dimension (default 0: one\n"
    "                            searched scale per row, XNNPACK's fast int4 kernels; 32: blocks\n"
    "                            of 32, slower on x86: tern bench --linear)\n"
    "  --keep DTYPE:GLOB         store tensors matching GLOB (canonical names, * and ?) in DTYPE,\n"
    "                            repeatable, e.g. --keep fp16:decoder.layers.*.fc2.weight\n"
    "  --auto-budget SIZE        raise the precision of the most sensitive matrices while the\n"
    "                            weights fit SIZE (bytes, K/M/G, or N% of the fp32 size); --dtype\n"
    "                            is the lowest precision used\n"
    "\n"
    "quality report (printed on stdout after writing):\n"
    "  --report FILE             source ids, one sentence per line: compare the fp32 and the\n"
    "                            converted model (token agreement, logit error)\n"
    "  --references FILE         reference ids per line: BLEU-4 of both models too\n"
    "  --report-text FILE        the same with source sentences as text, one per line, encoded\n"
    "                            with the embedded tokenizer (--tokenizer)\n"
    "  --references-text FILE    reference translations as text, encoded with the target\n"
    "                            tokenizer (BLEU on its subword ids)\n"
    "  --max-length N            decoder steps per sentence (default min(256, max_positions))\n"
    "\n"
    "vocabulary shortlist (translation models; docs/shortlist.md):\n"
    "  --shortlist-corpus SRC TGT  build it from parallel text, one sentence per line, encoded\n"
    "                            with the embedded tokenizers: per source token the K target\n"
    "                            tokens most likely in its translation, plus the F most\n"
    "                            frequent target tokens; files named *.ids hold token ids\n"
    "                            (space-separated, one sentence per line) instead of text\n"
    "  --shortlist-k K           target tokens per source token (default 50)\n"
    "  --shortlist-f F           frequent target tokens (default 50)\n"
    "  --shortlist-score NAME    ibm1 (IBM model 1 EM, default) or llr (co-occurrence scored by\n"
    "                            a log-likelihood ratio)\n"
    "  --shortlist FILE          take the table from a shortlist text file instead\n"
    "  --write-shortlist FILE    also write the table as a shortlist text file (small enough\n"
    "                            to commit beside a checkpoint)\n"
    "  --shortlist-eval SRC TGT  print the table's recall on held-out parallel text: the share\n"
    "                            of reference tokens inside their sentence's candidates\n"
    "  --shortlist-ids 16|32     how row ids are stored: 16 (default, format 1.11, half the\n"
    "                            bytes; when every id fits) or 32 (format 1.5, which readers\n"
    "                            older than 1.11 use; they ignore a 1.11 table)\n"
    "\n"
    "output:\n"
    "  -o, --output PATH         the .tern file to write\n"
    "  --tokenizer PATH          tokenizer to embed: a SentencePiece model (shared or source\n"
    "                            side), or a Hugging Face tokenizer.json (byte-level BPE; a\n"
    "                            name ending in .json). Default for a decoder-only model:\n"
    "                            tokenizer.json beside the checkpoint if there is one (a note\n"
    "                            says it was taken)\n"
    "  --target-tokenizer PATH   SentencePiece model of the target side, if different\n"
    "  --no-tokenizer            embed no tokenizer, not even tokenizer.json beside the\n"
    "                            checkpoint\n"
    "  --force                   overwrite OUTPUT if it exists\n"
    "  --quiet                   no progress bar and no notes on stderr\n";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// `--NAME A B`: an option with two values, taken out of argv before Args sees it.
std::vector<std::string> TakePair(int* argc, char** argv, const std::string& name) {
  std::vector<std::string> values;
  int out = 0;
  const std::string flag = "--" + name;
  for (int i = 0; i < *argc; ++i) {
    if (argv[i] == flag) {
      if (i + 2 >= *argc) throw UsageError("option " + flag + " needs two values: SRC TGT");
      if (!values.empty()) throw UsageError("option " + flag + " given twice");
      values = {argv[i + 1], argv[i + 2]};
      i += 2;
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  return values;
}

// Options that may be given more than once are taken out of argv before Args sees it.
std::vector<std::string> TakeRepeated(int* argc, char** argv, const std::string& name) {
  std::vector<std::string> values;
  int out = 0;
  const std::string flag = "--" + name;
  for (int i = 0; i < *argc; ++i) {
    const std::string arg = argv[i];
    if (arg == flag) {
      if (i + 1 >= *argc) throw UsageError("option " + flag + " needs a value");
      values.push_back(argv[++i]);
    } else if (arg.compare(0, flag.size() + 1, flag + "=") == 0) {
      values.push_back(arg.substr(flag.size() + 1));
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  return values;
}

std::string OverridesJson(const std::vector<std::string>& sets) {
  if (sets.empty()) return "";
  nlohmann::json j = nlohmann::json::object();
  for (const auto& s : sets) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("--set \"" + s + "\": expected KEY=VALUE");
    const std::string key = s.substr(0, eq), value = s.substr(eq + 1);
    try {
      j[key] = nlohmann::json::parse(value);
    } catch (const nlohmann::json::exception&) {
      j[key] = value;  // a bare word: a string (e.g. norm=pre)
    }
  }
  return j.dump();
}

class ProgressBar {
 public:
  explicit ProgressBar(bool live) : live_(live) {}
  void Update(size_t done, size_t total) {
    if (!live_ || total == 0) return;
    const int width = 30;
    const int filled = static_cast<int>(done * width / total);
    std::fprintf(stderr, "\rconverting [%.*s%.*s] %zu/%zu tensors", filled,
                 "##############################", width - filled, "..............................",
                 done, total);
    if (done == total) std::fputc('\n', stderr);
    std::fflush(stderr);
  }

 private:
  bool live_;
};

}  // namespace

int Convert(int argc, char** argv) {
  const std::vector<std::string> keep = TakeRepeated(&argc, argv, "keep");
  const std::vector<std::string> sets = TakeRepeated(&argc, argv, "set");
  const std::vector<std::string> skips = TakeRepeated(&argc, argv, "skip-prefix");
  const std::vector<std::string> corpus = TakePair(&argc, argv, "shortlist-corpus");
  const std::vector<std::string> held_out = TakePair(&argc, argv, "shortlist-eval");
  Args args(argc, argv, {"output",       "arch",
                         "config",       "map",
                         "state-key",    "dtype",
                         "group-size",   "auto-budget",
                         "tokenizer",    "target-tokenizer",
                         "report",       "references",
                         "report-text",  "references-text",
                         "max-length",   "shortlist-k",
                         "shortlist-f",  "shortlist-score",
                         "shortlist",    "write-shortlist",
                         "shortlist-ids"},
            {"force", "quiet", "help", "ignore-position-table", "no-tokenizer"},
            {{"-o", "--output"}});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (args.positional().size() != 1) throw UsageError("expected exactly one CHECKPOINT");
  if (!args.has("output")) throw UsageError("--output is required");
  if (args.get("output").empty()) throw UsageError("--output is empty");
  if (args.has("report") && args.has("report-text"))
    throw UsageError("--report and --report-text exclude each other");
  if (args.has("references") && !args.has("report"))
    throw UsageError("--references needs --report (ids); with --report-text use --references-text");
  if (args.has("references-text") && !args.has("report-text"))
    throw UsageError("--references-text needs --report-text");
  if (args.has("report-text") &&
      (!args.has("tokenizer") || EndsWith(args.get("tokenizer"), ".json")))
    throw UsageError("--report-text needs the SentencePiece model: --tokenizer PATH");
  if (args.has("no-tokenizer") && (args.has("tokenizer") || args.has("target-tokenizer")))
    throw UsageError("--no-tokenizer excludes --tokenizer and --target-tokenizer");
  convert::ConvertOptions options;
  options.checkpoint = args.positional()[0];
  options.arch = args.get("arch", "tern");
  options.config = args.get("config");
  options.map = args.get("map");
  options.overrides_json = OverridesJson(sets);
  options.state_key = args.get("state-key");
  options.ignore_position_mismatch = args.has("ignore-position-table");
  options.tokenizer = args.get("tokenizer");
  options.target_tokenizer = args.get("target-tokenizer");
  options.no_tokenizer = args.has("no-tokenizer");
  options.dtype = convert::ParseDType(args.get("dtype", "fp32"));
  options.group_size = args.get_int("group-size", 0);
  if (options.group_size < 0) throw UsageError("--group-size must be >= 0");
  options.keep = keep;
  options.auto_budget = args.get("auto-budget");
  try {  // malformed values are usage errors; whether a rule matches is checked on the model
    for (const auto& k : keep) convert::ParseKeepRule(k);
    if (!options.auto_budget.empty()) convert::ParseBudget(options.auto_budget);
  } catch (const convert::Error& e) {
    throw UsageError(e.what());
  }
  if (!options.auto_budget.empty() && options.dtype == DType::kF32) {
    throw UsageError("--auto-budget needs the lowest precision to use: --dtype fp16, int8 or int4");
  }
  options.skip_prefixes = skips;
  const ShortlistRequest shortlist = ParseShortlistRequest(args, corpus, held_out);
  const long long max_length = args.get_int("max-length", 0);
  if (max_length < 0 || max_length > 1 << 20)
    throw UsageError("--max-length must be between 0 and 1048576");
  for (int i = 0; i < argc; ++i) options.command_line += (i ? " " : "") + std::string(argv[i]);
  for (const auto& k : keep) options.command_line += " --keep " + k;
  for (const auto& s : sets) options.command_line += " --set " + s;
  for (const auto& s : skips) options.command_line += " --skip-prefix " + s;
  if (!corpus.empty()) options.command_line += " --shortlist-corpus " + corpus[0] + " " + corpus[1];
  const bool quiet = args.has("quiet");
  ProgressBar bar(!quiet && ::isatty(2));
  if (!quiet) {
    options.progress = [&bar](size_t done, size_t total) { bar.Update(done, total); };
    options.note = [](const std::string& note) {
      std::fprintf(stderr, "note: %s\n", note.c_str());
    };
  }
  // The output is checked before the (possibly long) conversion, and again when written.
  std::vector<std::string> inputs = {options.checkpoint, options.config,           options.map,
                                     options.tokenizer,  options.target_tokenizer, shortlist.file};
  inputs.insert(inputs.end(), corpus.begin(), corpus.end());
  convert::CheckOutputPath(args.get("output"), args.has("force"), inputs);
  if (!shortlist.write.empty()) {
    inputs.push_back(args.get("output"));
    convert::CheckOutputPath(shortlist.write, args.has("force"), inputs);
  }
  convert::TernContents contents = convert::BuildContents(options);
  AddShortlist(shortlist, quiet, &contents);
  // The report's inputs are read (and text encoded) before writing, so a bad input file leaves
  // no output behind.
  std::vector<convert::IdSequence> sources, refs;
  if (args.has("report")) {
    sources = convert::ReadIdLines(args.get("report"));
    if (args.has("references")) refs = convert::ReadIdLines(args.get("references"));
  } else if (args.has("report-text")) {
    sources = EncodeLines(args.get("report-text"), contents.source_tokenizer, true,
                          contents.config.eos_id);
    if (args.has("references-text")) {
      const auto& target =
          contents.target_tokenizer.empty() ? contents.source_tokenizer : contents.target_tokenizer;
      refs = EncodeLines(args.get("references-text"), target, false, contents.config.eos_id);
    }
  }
  const std::string output = args.get("output");
  convert::WriteModelFile(output, contents, args.has("force"));
  if (!shortlist.write.empty()) {
    const std::string text = convert::ShortlistText(*contents.shortlist);
    convert::TempFile temp(convert::CheckOutputPath(shortlist.write, args.has("force"), inputs));
    temp.Write(reinterpret_cast<const uint8_t*>(text.data()), text.size());
    temp.Commit(args.has("force"));
  }
  if (!quiet) {
    size_t bytes = 0;
    for (const auto& t : contents.tensors) bytes += t.data.size() + 4 * t.scales.size();
    std::fprintf(stderr, "wrote %s (%zu tensors, %zu bytes of weights)\n", output.c_str(),
                 contents.tensors.size(), bytes);
  }
  if (args.has("report") || args.has("report-text")) {
    convert::ConvertOptions reference = options;
    reference.dtype = DType::kF32;
    reference.keep.clear();
    reference.auto_budget.clear();
    reference.progress = nullptr;
    reference.note = nullptr;
    const convert::TernContents fp32 = convert::BuildContents(reference);
    convert::QualityReport report =
        convert::CompareModels(fp32, contents, sources, refs, static_cast<int32_t>(max_length));
    report.label = std::string(DTypeName(options.dtype)) +
                   (keep.empty() && options.auto_budget.empty() ? "" : " (mixed precision)");
    std::fputs(report.Format().c_str(), stdout);
  }
  ReportShortlist(shortlist, contents);
  return 0;
}

}  // namespace tern::cli
