// tern: one executable for the user-facing commands.
#include <cstdio>
#include <cstring>
#include <exception>

#include "tern/tern.hpp"
#include "tools/tern/args.h"
#include "tools/tern/commands.h"
#include "tools/tern/output.h"

namespace {

const char kUsage[] =
    "usage: tern <command> [options]\n"
    "\n"
    "commands:\n"
    "  translate  translate lines from stdin (text through the model's tokenizer, or --ids)\n"
    "  generate   continue prompts (text or token ids) with a decoder-only model: greedy or "
    "sampled\n"
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
    return std::fflush(stdout) == 0 && !std::ferror(stdout) ? 0 : 1;
  }
  const char* command = argv[1];
  try {
    int (*run)(int, char**) = nullptr;
    if (!std::strcmp(command, "translate")) run = tern::cli::Translate;
    if (!std::strcmp(command, "generate")) run = tern::cli::Generate;
    if (!std::strcmp(command, "convert")) run = tern::cli::Convert;
    if (!std::strcmp(command, "inspect")) run = tern::cli::Inspect;
    if (!std::strcmp(command, "bench")) run = tern::cli::Bench;
    if (run != nullptr) {
      const int status = run(argc - 2, argv + 2);
      // Whatever a command printed must have reached stdout (a full disk is not success).
      tern::cli::FlushStdout();
      return status;
    }
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
