// OpenNMT-py checkpoints (--arch opennmt): the map from the checkpoint's "opt" and "vocab" as
// JSON, so that tests can vary one option or vocabulary entry of a real checkpoint.
#pragma once

#include <nlohmann/json.hpp>

#include "converter/architectures/architecture.h"

namespace tern::convert::arch {

// `opt`: the argparse.Namespace of the training options; `vocab`: {"src": [tokens], "tgt":
// [tokens], ...}. Throws convert::Error naming the option, tensor or token at fault.
MappedCheckpoint MapOpenNmtOptions(const Checkpoint& ckpt, const nlohmann::json& opt,
                                   const nlohmann::json& vocab, const ArchitectureOptions& options);

}  // namespace tern::convert::arch
