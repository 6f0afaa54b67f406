// A restricted unpickler for what torch.save writes for a state_dict (pickle protocol 2, also
// the protocol-4 framing opcodes). It never imports or calls anything: GLOBAL is accepted only
// for a fixed list of names (collections.OrderedDict, torch._utils._rebuild_tensor_v2 and
// _rebuild_tensor / _rebuild_parameter, the torch.*Storage types), REDUCE only on those, and
// persistent ids only in torch's ('storage', type, key, location, numel) form. Any other opcode
// is an error "unsupported pickle opcode 0xNN at offset N"; any other global is at most an
// opaque reference (below). Values are plain data: None, bool, int, float, str, tuple, list,
// dict, storage, tensor, and opaque objects.
//
// Training checkpoints hold option objects too. fairseq's `args` is an argparse.Namespace,
// pickled (protocol 2) as GLOBAL argparse.Namespace, EMPTY_TUPLE, NEWOBJ, then BUILD with its
// __dict__: it becomes a dict whose type_name is "argparse.Namespace" (no object is made; NEWOBJ
// accepts that one class only, with no arguments).
//
// fairseq's `cfg` before fairseq 0.12 (and wav2vec 2.0 checkpoints) is a pickled
// omegaconf.dictconfig.DictConfig. omegaconf 2.x pickles every container and value node as
// GLOBAL omegaconf.<module>.<Class>, EMPTY_TUPLE, NEWOBJ, BUILD {_metadata, _parent, _content or
// _val}; the metadata (omegaconf.base.ContainerMetadata / Metadata) names types (typing.Any,
// builtins.dict / str / int / float / bool / list, the dataclass of a structured config) and
// holds resolver_cache = REDUCE collections.defaultdict(builtins.dict). So: omegaconf objects
// are opaque objects like any class below; the built-in type names are kept as names
// (kGlobal; REDUCE never calls them, NEWOBJ refuses them); REDUCE of collections.defaultdict
// with a built-in type or None as factory is an empty dict (the only call omegaconf needs; no
// factory is called); a node's "_parent" (the container still being built, a cycle) is
// dropped. PickleToJson reads the containers as data (below).
//
// A training checkpoint also holds instances of classes this reader does not know (fairseq's
// extra_state meters: fairseq.meters.AverageMeter, StopwatchMeter, TimeMeter; numpy scalars in
// an optimizer state). They read as opaque values (kObject, type_name = the class), so the rest
// of the file reads; nothing is imported or run, and using one (as a tensor, as option data) is
// an error naming the class. What may make one:
//   GLOBAL of an unknown name: a reference to it (kGlobal), except names in modules whose
//          members act on the system (os, posix, subprocess, builtins, sys, ...), refused at once
//          so that an attack is named where it is;
//   NEWOBJ cls, args: what protocol 2 writes for any plain instance (copyreg.__newobj__, i.e.
//          cls.__new__(cls, *args)); an opaque object of that class, its args kept;
//   BUILD state on such an object: the state is kept (never __setstate__);
//   REDUCE: still only the allowed callables, plus numpy's data constructors
//          (numpy.core.multiarray.scalar / _reconstruct, numpy.dtype), whose result is data and
//          becomes an opaque object named by the callable. REDUCE of any other global stays an
//          error: a call's result is not an instance we can stand in for.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tern::convert {

struct PickleValue;
using PickleRef = std::shared_ptr<PickleValue>;

struct PickleStorage {
  std::string dtype;  // "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"
  std::string key;    // the archive's data/<key> entry
  std::string location;
  int64_t numel = 0;
};

struct PickleTensor {
  std::shared_ptr<PickleStorage> storage;
  int64_t offset = 0;  // in elements
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements
};

struct PickleValue {
  enum class Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kTuple,
    kList,
    kDict,
    kGlobal,
    kStorage,
    kTensor,
    kObject  // an instance of a class not read here (see above): type_name, items {args, state}
  };
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string s;                                      // kString; kGlobal: "module.name"
  std::vector<PickleRef> items;                       // kTuple, kList
  std::vector<std::pair<PickleRef, PickleRef>> dict;  // kDict, in insertion order
  // kDict: "" for a dict, "argparse.Namespace" for its attributes; kObject: its class (or the
  // numpy constructor that made it).
  std::string type_name;
  std::unordered_map<std::string, size_t> string_keys;  // kDict: str key -> index in dict
  std::shared_ptr<PickleStorage> storage;
  PickleTensor tensor;
  // Nesting depth (1 for a leaf), and whether the value is already an item of another container:
  // a contained container may not change any more, so no value can contain itself (no cycles)
  // and depths stay exact (bounded, so destruction cannot recurse deeply).
  int depth = 1;
  bool contained = false;
};

const char* PickleKindName(PickleValue::Kind kind);
// The kind's name, and for an opaque object its class: "\"fairseq.meters.AverageMeter\" object".
std::string PickleDescribe(const PickleValue& value);

// Option objects as JSON: None -> null, bool, int, float, str; tuple and list -> array; dict and
// argparse.Namespace -> object (int keys written as decimal strings); omegaconf's DictConfig ->
// object of its _content, ListConfig -> array, a value node (AnyNode, StringNode, ...) -> its
// _val, metadata not read. A tensor, storage, global
// or opaque object inside is an error naming its path from `where` (e.g. "model.pt: args.lr")
// and, for an object, its class.
nlohmann::json PickleToJson(const PickleRef& value, const std::string& where);

// omegaconf's markers, "???" (missing) and "${...}" (an interpolation), become the JSON object
// {kOmegaConfUnresolved: text} in PickleToJson, so that a configuration holding them still
// reads; PickleCheckResolved refuses such a value where an option is read, naming `where`.
extern const char kOmegaConfUnresolved[];
void PickleCheckResolved(const nlohmann::json& value, const std::string& where);

// Resolves omegaconf's absolute interpolations in `value`: a marker "${a.b.c}" (what fairseq's
// II("a.b.c") defaults write) becomes the value at that path of `root` (the whole cfg, a pickled
// DictConfig or dict), itself resolved, at most 16 references deep (a cycle stays a marker).
// Anything else stays a marker for PickleCheckResolved: "???", text around an interpolation,
// resolvers ("${oc.env:X}"), relative paths ("${.a}") and paths that name nothing.
void PickleResolveInterpolations(nlohmann::json* value, const PickleRef& root,
                                 const std::string& where);

// An omegaconf DictConfig / ListConfig as its _content (a dict / list of nodes), a value node
// as its _val, repeatedly; any other value as itself.
PickleRef PickleOmegaConfContent(const PickleRef& value);

// Runs the pickle program. `label` prefixes every error (e.g. "model.pt: archive/data.pkl").
PickleRef Unpickle(const uint8_t* data, size_t size, const std::string& label);

}  // namespace tern::convert
