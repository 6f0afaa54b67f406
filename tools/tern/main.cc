// tern: one executable for the user-facing commands.
#include <cstdio>
#include <cstring>
#include <exception>

#include "tern/tern.hpp"
#include "tools/tern/args.h"
#include "tools/tern/commands.h"

namespace {

const char kUsage[] =
    "usage: tern <command> [options]\n"
    "\n"
    "commands:\n"
    "  translate  translate lines from stdin (text through the model's tokenizer, or --ids)\n"
    "  generate   continue prompts (token ids) with a decoder-only model: greedy or sampled\n"
    "  convert    convert a checkpoint to a .tern model (fp32, fp16, int8, int4)\n"
    "  inspect    print a .tern model's config, tensors, metadata and arena size\n"
    "  bench      time load, encode, greedy decoding; arena and peak memory (batch 1)\n"
    "\n"
    "`tern <command> --help` describes each command. `tern --version` prints the version.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("tern %s\n", tern::Version());
    return 0;
  }
  const char* command = argv[1];
  try {
    if (!std::strcmp(command, "translate")) return tern::cli::Translate(argc - 2, argv + 2);
    if (!std::strcmp(command, "generate")) return tern::cli::Generate(argc - 2, argv + 2);
    if (!std::strcmp(command, "convert")) return tern::cli::Convert(argc - 2, argv + 2);
    if (!std::strcmp(command, "inspect")) return tern::cli::Inspect(argc - 2, argv + 2);
    if (!std::strcmp(command, "bench")) return tern::cli::Bench(argc - 2, argv + 2);
  } catch (const tern::cli::UsageError& e) {
    std::fprintf(stderr, "tern %s: %s (see tern %s --help)\n", command, e.what(), command);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tern %s: %s\n", command, e.what());
    return 1;
  }
  std::fprintf(stderr, "tern: unknown command \"%s\" (see tern --help)\n", command);
  return 2;
}
