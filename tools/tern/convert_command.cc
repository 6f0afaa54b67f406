// tern convert: checkpoint -> .tern (converter/convert.h does the work).
#include <cstdio>
#include <string>

#include "converter/convert.h"
#include "tools/tern/args.h"
#include "tools/tern/commands.h"

namespace tern::cli {

namespace {

const char kHelp[] =
    "usage: tern convert CHECKPOINT -o OUTPUT.tern [options]\n"
    "\n"
    "Converts a safetensors checkpoint with canonical tensor names (docs/CONVENTIONS.md) into a\n"
    "verified .tern model. The output is written to a temporary file, loaded back with the\n"
    "runtime, then renamed: a failed conversion never leaves a partial file.\n"
    "\n"
    "options:\n"
    "  -o, --output PATH         the .tern file to write\n"
    "  --config PATH             config.json (default: the checkpoint's metadata \"config\",\n"
    "                            else config.json beside the checkpoint)\n"
    "  --dtype fp32|fp16|int8|int4  weight type (default fp32); vectors stay fp32, embeddings\n"
    "                            are int8 when int4 is asked\n"
    "  --group-size N            int4 block size along the input dimension (default 32)\n"
    "  --tokenizer PATH          SentencePiece model to embed (shared or source side)\n"
    "  --target-tokenizer PATH   SentencePiece model of the target side, if different\n"
    "  --skip-prefix P           ignore checkpoint tensors whose name starts with P\n"
    "  --force                   overwrite OUTPUT if it exists\n"
    "  --quiet                   no progress on stderr\n";

}  // namespace

int Convert(int argc, char** argv) {
  Args args(argc, argv,
            {"output", "config", "dtype", "group-size", "tokenizer", "target-tokenizer", "skip-prefix"},
            {"force", "quiet", "help"}, {{"-o", "--output"}});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (args.positional().size() != 1) throw UsageError("expected exactly one CHECKPOINT");
  if (!args.has("output")) throw UsageError("--output is required");
  convert::ConvertOptions options;
  options.checkpoint = args.positional()[0];
  options.config = args.get("config");
  options.tokenizer = args.get("tokenizer");
  options.target_tokenizer = args.get("target-tokenizer");
  options.dtype = convert::ParseDType(args.get("dtype", "fp32"));
  options.group_size = args.get_int("group-size", 32);
  if (options.group_size < 0) throw UsageError("--group-size must be >= 0");
  if (args.has("skip-prefix")) options.skip_prefixes.push_back(args.get("skip-prefix"));
  for (int i = 0; i < argc; ++i) options.command_line += (i ? " " : "") + std::string(argv[i]);
  const bool quiet = args.has("quiet");
  if (!quiet) {
    options.progress = [](size_t done, size_t total) {
      std::fprintf(stderr, "\rconverting tensors: %zu/%zu", done, total);
      if (done == total) std::fputc('\n', stderr);
    };
  }
  const convert::TernContents contents = convert::BuildContents(options);
  const std::string output = args.get("output");
  convert::WriteModelFile(output, contents, args.has("force"));
  if (!quiet) std::fprintf(stderr, "wrote %s\n", output.c_str());
  return 0;
}

}  // namespace tern::cli
