// A writable copy of an architecture fixture (tests/fixtures/checkpoints/<arch>/): its tensors
// as float32 safetensors and its config.json in a scratch directory, for the tests that edit
// one tensor or config field and check what the converter says.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "converter/convert.h"
#include "converter/readers/checkpoint.h"
#include "tests/converter/architecture_fixture.h"
#include "tests/converter/checkpoint_files.h"

namespace tern::testing {

struct FixtureCopy {
  ScratchDir dir;
  std::map<std::string, RawTensor> tensors;
  nlohmann::json config;
  std::string arch;

  // checkpoint, config_json: fixture paths (CheckpointFixture). A non-empty strip_prefix
  // makes the copy a base-model checkpoint, as transformers saves GPT2Model or LlamaModel:
  // the prefix is taken off every name and there is no lm_head.weight.
  FixtureCopy(const std::string& checkpoint, const std::string& config_json, std::string arch_name,
              const std::string& strip_prefix = "")
      : arch(std::move(arch_name)) {
    const convert::Checkpoint ckpt = convert::Checkpoint::Open(CheckpointFixture(checkpoint));
    for (const auto& kv : ckpt.tensors()) {
      std::string name = kv.first;
      if (!strip_prefix.empty()) {
        if (name.compare(0, strip_prefix.size(), strip_prefix) == 0)
          name = name.substr(strip_prefix.size());
        if (name == "lm_head.weight") continue;
      }
      if (kv.second.dtype == convert::SourceDType::kBool) {
        // GPT-2's causal-mask buffers, which the converter drops: their values do not matter.
        tensors[name] = {"BOOL", kv.second.shape,
                         std::string(static_cast<size_t>(kv.second.elements()), '\1')};
        continue;
      }
      const convert::HostTensor t = ckpt.Float(kv.first);
      tensors[name] = {"F32", t.shape, Floats(t.values)};
    }
    config = nlohmann::json::parse(ReadBytes(CheckpointFixture(config_json)));
  }

  std::string config_path() const { return dir / "config.json"; }

  // Writes the (edited) copy; the options convert it with this fixture's --arch.
  convert::ConvertOptions Write() {
    WriteRawSafetensors(dir / "model.safetensors", tensors);
    WriteBytes(dir / "config.json", config.dump(2));
    convert::ConvertOptions o;
    o.checkpoint = dir / "model.safetensors";
    o.arch = arch;
    return o;
  }
};

}  // namespace tern::testing
