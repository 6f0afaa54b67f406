// The checkpoint readers: torch.save zip (restricted unpickler, strided views, dtypes), numpy
// .npz, sharded safetensors; and every malformed input they must refuse with an error naming
// the file and what is wrong.
#include <sys/stat.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <random>

#include "converter/error.h"
#include "converter/readers/checkpoint.h"
#include "converter/readers/pickle.h"
#include "converter/readers/safetensors.h"
#include "converter/readers/zip.h"
#include "tests/converter/checkpoint_files.h"

namespace tern::convert {
namespace {

using Catch::Matchers::ContainsSubstring;
using testing::ScratchDir;

std::string Fixture(const std::string& name) {
  return std::string(TERN_FIXTURES) + "/checkpoints/readers/" + name;
}

void ExpectSameValues(const Checkpoint& ckpt, const std::string& expected_path) {
  const SafetensorsFile expected = SafetensorsFile::Read(expected_path);
  for (const auto& kv : expected.entries()) {
    INFO("tensor " << kv.first);
    REQUIRE(ckpt.has(kv.first));
    CHECK(ckpt.at(kv.first).shape == kv.second.shape);
    if (kv.second.dtype == "I64") {
      CHECK(ckpt.Ints(kv.first) == expected.Ints(kv.first));
    } else {
      CHECK(ckpt.Float(kv.first).values == expected.Float(kv.first).values);
    }
  }
}

TEST_CASE("torch.save files: views, offsets, strides and dtypes", "[readers][torch]") {
  for (const char* name : {"views.pt", "views_protocol4.pt"}) {
    INFO(name);
    const Checkpoint ckpt = Checkpoint::Open(Fixture(name));
    CHECK(ckpt.format() == "torch-zip");
    CHECK(ckpt.tensors().size() == 11);
    ExpectSameValues(ckpt, Fixture("views_expected.safetensors"));
    CHECK_FALSE(ckpt.at("transposed").contiguous());
    CHECK(ckpt.at("sliced").offset == 8);
    CHECK(ckpt.at("tied_a").storage_id == ckpt.at("tied_b").storage_id);
    CHECK(ckpt.at("transposed").storage_id == ckpt.at("contiguous").storage_id);
    CHECK(ckpt.at("scalar").shape.empty());
    REQUIRE_THROWS_WITH(ckpt.Float("int64"),
                        ContainsSubstring("tensor \"int64\" has dtype I64; expected a float type"));
  }
}

TEST_CASE("numpy .npz: <f4, <f2, Fortran order, integers", "[readers][npz]") {
  const Checkpoint ckpt = Checkpoint::Open(Fixture("arrays.npz"));
  CHECK(ckpt.format() == "npz");
  ExpectSameValues(ckpt, Fixture("arrays_expected.safetensors"));
  CHECK(ckpt.Ints("u1") == std::vector<int64_t>{0, 1, 2, 3});
  CHECK_FALSE(ckpt.at("fortran").contiguous());
}

TEST_CASE("a training checkpoint needs --state-key", "[readers][torch]") {
  REQUIRE_THROWS_WITH(
      Checkpoint::Open(Fixture("training.pt")),
      ContainsSubstring("not a state dict of tensors: entries \"epoch\", \"lr\", \"model\", "
                        "\"optimizer\" are not tensors; if the weights are under \"model\", pass "
                        "--state-key model"));
  CheckpointOptions options;
  options.state_key = "model";
  const Checkpoint ckpt = Checkpoint::Open(Fixture("training.pt"), options);
  CHECK(ckpt.tensors().size() == 2);
  CHECK(ckpt.Float("b").values == std::vector<float>{0.0f, 0.0f});
  // The other entries are kept as plain data; a tensor inside is named when asked for as JSON.
  CHECK(ckpt.objects().size() == 3);
  CHECK(ckpt.ObjectJson("epoch") == 3);
  CHECK(ckpt.ObjectJson("lr").get<double>() == 0.1);
  CHECK(ckpt.ObjectJson("optimizer")["param_groups"][0]["betas"] == nlohmann::json{0.9, 0.98});
  // A further dict beside the state dict joins it under its key only when it holds tensors.
  options.extra_state_keys = {"optimizer"};
  REQUIRE_THROWS_WITH(Checkpoint::Open(Fixture("training.pt"), options),
                      ContainsSubstring("[\"optimizer\"]: not a state dict of tensors"));
  options.extra_state_keys = {"generator"};
  REQUIRE_THROWS_WITH(Checkpoint::Open(Fixture("training.pt"), options),
                      ContainsSubstring("no entry \"generator\" (beside the state dict)"));
  options.extra_state_keys = {"epoch"};
  REQUIRE_THROWS_WITH(Checkpoint::Open(Fixture("training.pt"), options),
                      ContainsSubstring("entry \"epoch\" is a int, not a dict of tensors"));
  CheckpointOptions no_key;
  no_key.extra_state_keys = {"generator"};
  REQUIRE_THROWS_WITH(Checkpoint::Open(Fixture("training.pt"), no_key),
                      ContainsSubstring("data.pkl: extra state dicts need a state key"));
  // Option data as JSON: dict keys are strings or integers (written as decimal strings).
  const std::string keys = std::string("\x80\x02}(K\x07") + testing::PickleString("seven") + "N" +
                           testing::PickleString("none") + "u.";
  const PickleRef odd = Unpickle(reinterpret_cast<const uint8_t*>(keys.data()), keys.size(), "k");
  REQUIRE_THROWS_WITH(PickleToJson(odd, "cfg"),
                      "cfg: a dict key is a None, expected a string or an integer");
  options.extra_state_keys.clear();
  options.state_key = "optimizer";
  REQUIRE_THROWS_WITH(
      Checkpoint::Open(Fixture("training.pt"), options),
      ContainsSubstring("[\"optimizer\"]: not a state dict of tensors: entries \"state\", "
                        "\"param_groups\" are not tensors"));
  options.state_key = "epoch";
  REQUIRE_THROWS_WITH(Checkpoint::Open(Fixture("training.pt"), options),
                      ContainsSubstring("entry \"epoch\" is a int, not a dict"));
}

TEST_CASE("a pickle that calls os.system is refused and nothing runs",
          "[readers][torch][security]") {
  // Made by pickle.dumps of an object whose __reduce__ returns (os.system, (...)): posix.system.
  REQUIRE_THROWS_WITH(Checkpoint::Open(Fixture("evil.pt")),
                      ContainsSubstring("pickle global \"posix.system\" at offset") &&
                          ContainsSubstring("is not allowed"));
  // The same by hand with os.system, and a command that would leave a trace.
  ScratchDir dir;
  const std::string marker = dir / "pwned";
  const std::string pickle = std::string("\x80\x02") + "cos\nsystem\n" +
                             testing::PickleString("touch " + marker) + "\x85R.";
  testing::WriteBytes(dir / "evil.pt", testing::TorchArchive(pickle));
  REQUIRE_THROWS_WITH(
      Checkpoint::Open(dir / "evil.pt"),
      ContainsSubstring(dir /
                        "evil.pt: archive/data.pkl: pickle global \"os.system\" at offset 2 is "
                        "not allowed"));
  struct stat st;
  CHECK(::stat(marker.c_str(), &st) != 0);
  // Protocol 4 spelling (STACK_GLOBAL) is held to the same list.
  const std::string p4 = std::string("\x80\x04") + "\x8c\x02os\x8c\x06system\x93" +
                         testing::PickleString("true") + "\x85R.";
  testing::WriteBytes(dir / "evil4.pt", testing::TorchArchive(p4));
  REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "evil4.pt"),
                      ContainsSubstring("pickle global \"os.system\""));
  // builtins.eval, and REDUCE on an allowed but non-callable global.
  testing::WriteBytes(dir / "eval.pt",
                      testing::TorchArchive(std::string("\x80\x02") + "cbuiltins\neval\n."));
  REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "eval.pt"),
                      ContainsSubstring("pickle global \"builtins.eval\""));
  testing::WriteBytes(dir / "reduce.pt",
                      testing::TorchArchive(std::string("\x80\x02") + "ctorch\nFloatStorage\n)R."));
  REQUIRE_THROWS_WITH(
      Checkpoint::Open(dir / "reduce.pt"),
      ContainsSubstring(
          "REDUCE may only call OrderedDict or torch's tensor rebuild functions, not a "
          "\"torch.FloatStorage\""));
}

// fairseq's training checkpoint: {"args": argparse.Namespace(...), "model": state dict}, the
// Namespace pickled as torch.save (protocol 2) writes it: GLOBAL, EMPTY_TUPLE, NEWOBJ, BUILD.
std::string FairseqArgs() {
  return testing::PickleString("args") + "cargparse\nNamespace\n)\x81}(" +
         testing::PickleString("arch") + testing::PickleString("transformer") +
         testing::PickleString("encoder_layers") + testing::PickleInt(2) +
         testing::PickleString("share_all_embeddings") + "\x88" + "ub";
}

TEST_CASE("argparse.Namespace (fairseq's args) unpickles as a dict, nothing else is built",
          "[readers][torch]") {
  const std::string p = std::string("\x80\x02}(") + FairseqArgs() + "u.";
  const PickleRef root = Unpickle(reinterpret_cast<const uint8_t*>(p.data()), p.size(), "args.pkl");
  REQUIRE(root->kind == PickleValue::Kind::kDict);
  REQUIRE(root->dict.size() == 1);
  const PickleRef args = root->dict[0].second;
  REQUIRE(args->kind == PickleValue::Kind::kDict);
  CHECK(args->type_name == "argparse.Namespace");
  REQUIRE(args->dict.size() == 3);
  CHECK(args->dict[args->string_keys.at("arch")].second->s == "transformer");
  CHECK(args->dict[args->string_keys.at("encoder_layers")].second->i == 2);
  CHECK(args->dict[args->string_keys.at("share_all_embeddings")].second->b);
  CHECK(root->type_name.empty());

  // The weights under "model" read with --state-key model beside the Namespace.
  ScratchDir dir;
  std::string pt = std::string("\x80\x02}(") + FairseqArgs() + testing::PickleString("model");
  pt += testing::PickleStateDict({testing::PickleTensor("w", "FloatStorage", "0", 2, 0, {2}, {1})})
            .substr(2);  // without its PROTO
  pt.pop_back();         // and its STOP
  // OpenNMT-py keeps its output layer in a second dict beside the state dict.
  pt += testing::PickleString("generator");
  pt += testing::PickleStateDict(
            {testing::PickleTensor("0.weight", "FloatStorage", "0", 2, 1, {1}, {1})})
            .substr(2);
  pt.pop_back();
  pt += "u.";
  testing::WriteBytes(dir / "fairseq.pt",
                      testing::TorchArchive(pt, {{"0", testing::Floats({1.5f, -2.0f})}}));
  CheckpointOptions options;
  options.state_key = "model";
  const Checkpoint ckpt = Checkpoint::Open(dir / "fairseq.pt", options);
  CHECK(ckpt.Float("w").values == std::vector<float>{1.5f, -2.0f});
  CHECK_FALSE(ckpt.has("generator.0.weight"));
  // The Namespace stays reachable as plain data, for the fairseq map; a tensor in an entry is
  // named when it is asked for as JSON.
  REQUIRE(ckpt.objects().size() == 2);
  CHECK(ckpt.ObjectJson("args") == nlohmann::json{{"arch", "transformer"},
                                                  {"encoder_layers", 2},
                                                  {"share_all_embeddings", true}});
  CHECK(ckpt.ObjectJson("cfg").is_null());
  REQUIRE_THROWS_WITH(
      ckpt.ObjectJson("generator"),
      ContainsSubstring("fairseq.pt: generator.0.weight is a tensor, not plain data"));
  options.extra_state_keys = {"generator"};
  const Checkpoint with_generator = Checkpoint::Open(dir / "fairseq.pt", options);
  CHECK(with_generator.Float("generator.0.weight").values == std::vector<float>{-2.0f});
  CHECK(with_generator.objects().size() == 1);

  // NEWOBJ stands no object on a name with a meaning here, nor makes a Namespace with
  // arguments; BUILD wants a dict state.
  auto fails = [](const std::string& bytes) {
    return Unpickle(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "x.pkl");
  };
  REQUIRE_THROWS_WITH(fails(std::string("\x80\x02") + "ccollections\nOrderedDict\n)\x81."),
                      ContainsSubstring("pickle offset 28: NEWOBJ may only make an "
                                        "argparse.Namespace or an instance of a class not read "
                                        "here, not a \"collections.OrderedDict\""));
  REQUIRE_THROWS_WITH(fails(std::string("\x80\x02") + "cargparse\nNamespace\n" +
                            testing::PickleInt(1) + "\x85\x81."),
                      ContainsSubstring("argparse.Namespace made with arguments"));
  REQUIRE_THROWS_WITH(fails(std::string("\x80\x02") + "cargparse\nNamespace\n)\x81]b."),
                      ContainsSubstring("BUILD of an argparse.Namespace with a list state, "
                                        "expected a dict"));
  REQUIRE_THROWS_WITH(fails(std::string("\x80\x02") + "cargparse\nNamespace\n)R."),
                      ContainsSubstring("REDUCE may only call OrderedDict or torch's tensor "
                                        "rebuild functions, not a \"argparse.Namespace\""));
}

// What protocol 2 writes for an instance of a plain class (pickletools on fairseq's meters):
// GLOBAL module class, EMPTY_TUPLE, NEWOBJ, then BUILD with its __dict__.
std::string Meter(const std::string& cls) {
  return "cfairseq.meters\n" + cls + "\n)\x81}(" + testing::PickleString("count") +
         testing::PickleInt(4) + "ub";
}

TEST_CASE("instances of unknown classes read as opaque objects, never run nor usable",
          "[readers][torch][security]") {
  auto run = [](const std::string& bytes) {
    return Unpickle(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "x.pkl");
  };
  // {"meters": {"loss": AverageMeter}, "best": numpy.float64(1.5)} as pickle.dumps(protocol=2)
  // writes them: numpy's scalar is REDUCE of numpy.core.multiarray.scalar on a numpy.dtype
  // (REDUCE + BUILD) and _codecs.encode(bytes as latin1).
  const std::string numpy_scalar =
      "cnumpy.core.multiarray\nscalar\ncnumpy\ndtype\n" + testing::PickleString("f8") +
      "\x89\x88\x87R(" + testing::PickleInt(3) + testing::PickleString("<") + "NNNt" + "b" +
      "c_codecs\nencode\n" + testing::PickleString(std::string("\0\0\0\0\0\0\xc3\xb8?", 9)) +
      testing::PickleString("latin1") + "\x86R\x86R";
  const std::string p = std::string("\x80\x02}(") + testing::PickleString("meters") + "}" +
                        testing::PickleString("loss") + Meter("AverageMeter") + "s" +
                        testing::PickleString("best") + numpy_scalar + "u.";
  const PickleRef root = run(p);
  REQUIRE(root->dict.size() == 2);
  const PickleRef meter = root->dict[0].second->dict[0].second;
  REQUIRE(meter->kind == PickleValue::Kind::kObject);
  CHECK(meter->type_name == "fairseq.meters.AverageMeter");
  REQUIRE(meter->items.size() == 2);
  CHECK(meter->items[0]->kind == PickleValue::Kind::kTuple);   // NEWOBJ's (empty) args
  REQUIRE(meter->items[1]->kind == PickleValue::Kind::kDict);  // BUILD's state, kept
  CHECK(meter->items[1]->dict[0].second->i == 4);
  CHECK(PickleDescribe(*meter) == "\"fairseq.meters.AverageMeter\" object");
  const PickleRef best = root->dict[1].second;
  REQUIRE(best->kind == PickleValue::Kind::kObject);
  CHECK(best->type_name == "numpy.core.multiarray.scalar");
  // Using one as option data names the class and where it is.
  REQUIRE_THROWS_WITH(PickleToJson(root, "ckpt.pt: extra_state"),
                      "ckpt.pt: extra_state.meters.loss is a \"fairseq.meters.AverageMeter\" "
                      "object (a class not read here; nothing in the file is run), not plain "
                      "data");
  REQUIRE_THROWS_WITH(PickleToJson(root->dict[1].second, "ckpt.pt: extra_state.best"),
                      ContainsSubstring("\"numpy.core.multiarray.scalar\" object"));
  // A bare reference to an unknown class, as option data.
  const std::string ref = std::string("\x80\x02") + "cfairseq.meters\nTimeMeter\n.";
  REQUIRE_THROWS_WITH(PickleToJson(run(ref), "x"),
                      "x is a reference to \"fairseq.meters.TimeMeter\", not plain data");
  // REDUCE of an unknown global stays refused: its result is a call's, not an instance.
  REQUIRE_THROWS_WITH(run(std::string("\x80\x02") + "cfairseq.meters\nAverageMeter\n)R."),
                      "x.pkl: pickle offset 32: REDUCE may only call OrderedDict or torch's "
                      "tensor rebuild functions, not a \"fairseq.meters.AverageMeter\"");
  // NEWOBJ of a name from a module that acts on the system is refused at its GLOBAL.
  REQUIRE_THROWS_WITH(run(std::string("\x80\x02") + "csubprocess\nPopen\n)\x81."),
                      ContainsSubstring("pickle global \"subprocess.Popen\" at offset 2 is not "
                                        "allowed"));
  REQUIRE_THROWS_WITH(run(std::string("\x80\x02") + "cfairseq.meters\nAverageMeter\n)\x81}b}b."),
                      "x.pkl: pickle offset 36: BUILD of a \"fairseq.meters.AverageMeter\" "
                      "object twice");
  // A whole pickled model (an object at the top) is named as such.
  ScratchDir dir;
  testing::WriteBytes(dir / "model.pt",
                      testing::TorchArchive(std::string("\x80\x02") + "c__main__\nNet\n)\x81}b."));
  REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "model.pt"),
                      ContainsSubstring("archive/data.pkl: the saved object is a "
                                        "\"__main__.Net\" object, expected a state dict (a whole "
                                        "pickled model? save model.state_dict() instead)"));
}

TEST_CASE("a real torch.save fairseq checkpoint reads: meters and numpy scalars as opaque objects",
          "[readers][torch]") {
  // tests/fixtures/checkpoints/fairseq/checkpoint_best.pt (make_fairseq_fixture.py): torch.save
  // of args, model, extra_state (stand-ins of fairseq.meters.* and a numpy float64),
  // optimizer_history and last_optimizer_state (with a tensor).
  CheckpointOptions options;
  options.state_key = "model";
  const Checkpoint ckpt = Checkpoint::Open(
      std::string(TERN_FIXTURES) + "/checkpoints/fairseq/checkpoint_best.pt", options);
  CHECK(ckpt.has("encoder.embed_tokens.weight"));
  REQUIRE(ckpt.objects().count("extra_state"));
  const PickleRef extra = ckpt.objects().at("extra_state");
  const PickleRef meters = extra->dict[extra->string_keys.at("train_meters")].second;
  const PickleRef loss = meters->dict[meters->string_keys.at("train_loss")].second;
  REQUIRE(loss->kind == PickleValue::Kind::kObject);
  CHECK(loss->type_name == "fairseq.meters.AverageMeter");
  const PickleRef state = loss->items[1];
  CHECK(state->dict[state->string_keys.at("count")].second->i == 4);
  CHECK(meters->dict[meters->string_keys.at("wps")].second->type_name ==
        "fairseq.meters.TimeMeter");
  CHECK(extra->dict[extra->string_keys.at("best")].second->type_name ==
        "numpy.core.multiarray.scalar");
  CHECK(ckpt.ObjectJson("args")["arch"] == "transformer_iwslt_de_en");
  REQUIRE_THROWS_WITH(ckpt.ObjectJson("extra_state"),
                      ContainsSubstring("checkpoint_best.pt: extra_state.best is a "
                                        "\"numpy.core.multiarray.scalar\" object"));
  REQUIRE_THROWS_WITH(ckpt.ObjectJson("last_optimizer_state"),
                      ContainsSubstring("last_optimizer_state.state.0.exp_avg is a tensor, not "
                                        "plain data"));
}

// omegaconf 2.x's pickle of a container / value node (see pickle.h), without the metadata.
std::string OmegaConf(const std::string& cls, const std::string& key, const std::string& value) {
  return "comegaconf." + cls + "\n)\x81}(" + testing::PickleString(key) + value + "ub";
}
std::string OmegaNode(const std::string& value) {
  return OmegaConf("nodes\nAnyNode", "_val", value);
}

TEST_CASE("fairseq's cfg as a pickled omegaconf DictConfig reads as data, nothing run",
          "[readers][torch]") {
  // tests/fixtures/checkpoints/fairseq_omegaconf/checkpoint_best.pt
  // (make_fairseq_omegaconf_fixture.py): torch.save with cfg = OmegaConf.create(...) of
  // omegaconf 2.2.2: DictConfig, ListConfig, AnyNode, StringNode, IntegerNode, BooleanNode,
  // ContainerMetadata / Metadata (typing.Any, __builtin__.dict / list / long / unicode / bool,
  // the dataclass, collections.defaultdict(dict)), each node's _parent.
  CheckpointOptions options;
  options.state_key = "model";
  const Checkpoint ckpt = Checkpoint::Open(
      std::string(TERN_FIXTURES) + "/checkpoints/fairseq_omegaconf/checkpoint_best.pt", options);
  REQUIRE(ckpt.objects().at("cfg")->type_name == "omegaconf.dictconfig.DictConfig");
  const nlohmann::json cfg = ckpt.ObjectJson("cfg");
  CHECK(cfg["_name"].is_null());
  CHECK(cfg["common"] == nlohmann::json({{"seed", 1}, {"tpu", false}}));
  CHECK(cfg["model"]["arch"] == "transformer");
  CHECK(cfg["model"]["encoder_layers"] == 2);
  CHECK(cfg["model"]["encoder_normalize_before"] == true);
  CHECK(cfg["model"]["adaptive_softmax_cutoff"].is_null());
  CHECK(cfg["model"]["dropout"] == 0.3);
  CHECK(cfg["model"]["lr"] == nlohmann::json::array({0.0005}));  // a ListConfig
  CHECK(cfg["model"].size() == 38);
  // cfg.task is a structured config (a dataclass named fairseq.tasks.translation.
  // TranslationConfig in its metadata; StringNode, BooleanNode, IntegerNode values).
  CHECK(cfg["task"]["source_lang"] == "de");
  CHECK(cfg["task"]["target_lang"] == "en");
  CHECK(cfg["task"]["_name"] == "translation");
  CHECK(cfg["task"]["left_pad_source"] == true);
  CHECK(cfg["task"]["max_source_positions"] == 1024);
  CHECK(cfg["task"].size() == 6);
  // What omegaconf computes ("${...}") or marks missing ("???") reads as a marker, refused by
  // name where an option is read (fairseq.cc); unread, it is harmless.
  PickleCheckResolved(cfg["model"]["arch"], "x");
  REQUIRE_THROWS_WITH(PickleCheckResolved(cfg["model"]["seed"], "ckpt.pt: cfg.model: \"seed\""),
                      "ckpt.pt: cfg.model: \"seed\" is the omegaconf interpolation "
                      "\"${common.seed}\", which is not resolved here (only ${a.b} paths to "
                      "a value of cfg are); save the checkpoint with cfg = "
                      "OmegaConf.to_container(cfg, resolve=True)");
  REQUIRE_THROWS_WITH(PickleCheckResolved(cfg["task"]["data"], "ckpt.pt: cfg.task: \"data\""),
                      "ckpt.pt: cfg.task: \"data\" is omegaconf's missing value \"???\" (the "
                      "option was never set)");
  // PickleOmegaConfContent: the containers' _content, a node's _val.
  const PickleRef content = PickleOmegaConfContent(ckpt.objects().at("cfg"));
  REQUIRE(content->kind == PickleValue::Kind::kDict);
  const PickleRef model = content->dict[content->string_keys.at("model")].second;
  CHECK(model->type_name == "omegaconf.dictconfig.DictConfig");
  const PickleRef model_content = PickleOmegaConfContent(model);
  const PickleRef arch = model_content->dict[model_content->string_keys.at("arch")].second;
  CHECK(arch->type_name == "omegaconf.nodes.AnyNode");
  CHECK(PickleOmegaConfContent(arch)->s == "transformer");
}

TEST_CASE("omegaconf interpolations: paths into cfg resolved, plain text or DictConfig",
          "[readers][torch]") {
  auto run = [](const std::string& body) {
    const std::string p = std::string("\x80\x02") + body + ".";
    return Unpickle(reinterpret_cast<const uint8_t*>(p.data()), p.size(), "x.pkl");
  };
  // A cfg saved as plain containers (OmegaConf.to_container without resolve) keeps "${...}" as
  // text; one saved as a DictConfig keeps it in its nodes. Both resolve the same way.
  const std::string values = testing::PickleString("a") + testing::PickleInt(3) +
                             testing::PickleString("b") + testing::PickleString("${model.a}") +
                             testing::PickleString("c") + testing::PickleString("${model.b}") +
                             testing::PickleString("d") + testing::PickleString("${model.zz}") +
                             testing::PickleString("e") + testing::PickleString("x");
  const std::string plain = "}(" + testing::PickleString("model") + "}(" + values + "uu";
  const nlohmann::json unresolved = {{std::string(kOmegaConfUnresolved), "${model.zz}"}};
  const nlohmann::json want = {{"a", 3}, {"b", 3}, {"c", 3}, {"d", unresolved}, {"e", "x"}};
  const PickleRef root = run(plain);
  nlohmann::json model = PickleToJson(root->dict[0].second, "cfg.model");
  PickleResolveInterpolations(&model, root, "cfg.model");
  CHECK(model == want);
  const std::string nodes =
      testing::PickleString("a") + OmegaNode(testing::PickleInt(3)) + testing::PickleString("b") +
      OmegaNode(testing::PickleString("${model.a}")) + testing::PickleString("c") +
      OmegaNode(testing::PickleString("${model.b}")) + testing::PickleString("d") +
      OmegaNode(testing::PickleString("${model.zz}")) + testing::PickleString("e") +
      OmegaNode(testing::PickleString("x"));
  const std::string omega =
      OmegaConf("dictconfig\nDictConfig", "_content",
                "}(" + testing::PickleString("model") +
                    OmegaConf("dictconfig\nDictConfig", "_content", "}(" + nodes + "u") + "u");
  const PickleRef omega_root = run(omega);
  nlohmann::json omega_model =
      PickleToJson(PickleOmegaConfContent(omega_root)->dict[0].second, "cfg.model");
  PickleResolveInterpolations(&omega_model, omega_root, "cfg.model");
  CHECK(omega_model == want);
}

TEST_CASE("omegaconf containers: lists, a missing or interpolated container, what stays refused",
          "[readers][torch][security]") {
  auto run = [](const std::string& body) {
    const std::string p = std::string("\x80\x02") + body + ".";
    return Unpickle(reinterpret_cast<const uint8_t*>(p.data()), p.size(), "x.pkl");
  };
  const std::string list = OmegaConf(
      "listconfig\nListConfig", "_content",
      "](" + OmegaNode(testing::PickleInt(3)) + OmegaNode(testing::PickleString("${a}")) + "e");
  const std::string dict = OmegaConf(
      "dictconfig\nDictConfig", "_content",
      "}(" + testing::PickleString("l") + list + testing::PickleString("m") +
          OmegaConf("dictconfig\nDictConfig", "_content", testing::PickleString("???")) +
          testing::PickleString("n") + OmegaConf("dictconfig\nDictConfig", "_content", "N") +
          testing::PickleString("s") + OmegaNode(testing::PickleString("x")) + "u");
  const nlohmann::json j = PickleToJson(run(dict), "cfg");
  const nlohmann::json interp = {{std::string(kOmegaConfUnresolved), "${a}"}};
  const nlohmann::json missing = {{std::string(kOmegaConfUnresolved), "???"}};
  CHECK(
      j ==
      nlohmann::json(
          {{"l", nlohmann::json::array({3, interp})}, {"m", missing}, {"n", nullptr}, {"s", "x"}}));
  // A node's _parent (the container being built: a cycle) is dropped, so the parent still
  // builds; without that the parent's BUILD would fail as changed after use.
  const std::string with_parent =
      "comegaconf.dictconfig\nDictConfig\nq\x01)\x81q\x02}(" + testing::PickleString("_content") +
      "}(" + testing::PickleString("k") + "comegaconf.nodes\nAnyNode\n)\x81}(" +
      testing::PickleString("_parent") + "h\x02" + testing::PickleString("_val") +
      testing::PickleInt(7) + "ub" + "uub";
  CHECK(PickleToJson(run(with_parent), "cfg") == nlohmann::json({{"k", 7}}));
  // Other omegaconf classes, or one without its state, are not data.
  REQUIRE_THROWS_WITH(PickleToJson(run(OmegaConf("base\nMetadata", "ref_type", "N")), "cfg.x"),
                      "cfg.x is a \"omegaconf.base.Metadata\" object (a class not read here; "
                      "nothing in the file is run), not plain data");
  REQUIRE_THROWS_WITH(
      PickleToJson(run(OmegaConf("nodes\nAnyNode", "value", testing::PickleInt(1))), "cfg.x"),
      "cfg.x is a \"omegaconf.nodes.AnyNode\" object without the state omegaconf saves "
      "(_content / _val)");
  REQUIRE_THROWS_WITH(
      PickleToJson(run(OmegaConf("dictconfig\nDictConfig", "_content", "]")), "cfg"),
      "cfg: the \"omegaconf.dictconfig.DictConfig\" holds a list as its _content");
  // Inside a DictConfig, REDUCE is as strict as anywhere: not an omegaconf class, not a
  // built-in type, not a defaultdict whose factory is not a built-in type; NEWOBJ does not make
  // a built-in type.
  const std::string head = "comegaconf.dictconfig\nDictConfig\n)\x81}(" +
                           testing::PickleString("_content") + "}(" +
                           testing::PickleString("k");  // 60 bytes with the PROTO
  REQUIRE_THROWS_WITH(run(head + "comegaconf.nodes\nAnyNode\n)Ruub"),
                      "x.pkl: pickle offset 86: REDUCE may only call OrderedDict or torch's "
                      "tensor rebuild functions, not a \"omegaconf.nodes.AnyNode\"");
  REQUIRE_THROWS_WITH(run(head + "c__builtin__\ndict\n)Ruub"),
                      "x.pkl: pickle offset 79: REDUCE may only call OrderedDict or torch's "
                      "tensor rebuild functions, not a \"__builtin__.dict\"");
  REQUIRE_THROWS_WITH(run(head + "ccollections\ndefaultdict\nctyping\nAny\n\x85Ruub"),
                      "x.pkl: pickle offset 98: REDUCE may only call OrderedDict or torch's "
                      "tensor rebuild functions, not a \"collections.defaultdict\"");
  REQUIRE_THROWS_WITH(run(head + "cbuiltins\nstr\n)\x81uub"),
                      "x.pkl: pickle offset 75: NEWOBJ may only make an argparse.Namespace or an "
                      "instance of a class not read here, not a \"builtins.str\"");
  REQUIRE_THROWS_WITH(run(head + "cbuiltins\neval\nuub"),
                      ContainsSubstring("pickle global \"builtins.eval\" at offset 60 is not "
                                        "allowed"));
  // The harmless uses: the built-in types as names, defaultdict(dict) as an empty dict.
  const PickleRef ok = run(head + "ccollections\ndefaultdict\nc__builtin__\ndict\n\x85Ruub");
  const PickleRef inner = PickleOmegaConfContent(ok);
  REQUIRE(inner->kind == PickleValue::Kind::kDict);
  CHECK(inner->dict[0].second->kind == PickleValue::Kind::kDict);
  CHECK(run("cbuiltins\nfloat\n")->kind == PickleValue::Kind::kGlobal);
}

TEST_CASE("unsupported pickle opcodes are named with their offset", "[readers][torch]") {
  ScratchDir dir;
  // INST (0x69) builds an object from a class by name: not in the subset.
  testing::WriteBytes(dir / "inst.pt",
                      testing::TorchArchive(std::string("\x80\x02") + "ios\nsystem\n."));
  REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "inst.pt"),
                      ContainsSubstring("unsupported pickle opcode 0x69 at offset 2"));
  // BINSTRING (0x54) after a MARK.
  testing::WriteBytes(dir / "binstring.pt",
                      testing::TorchArchive(std::string("\x80\x02(T\x01\x00\x00\x00x.", 10)));
  REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "binstring.pt"),
                      ContainsSubstring("unsupported pickle opcode 0x54 at offset 3"));
  // A pickle that stops early.
  testing::WriteBytes(dir / "short.pt",
                      testing::TorchArchive(std::string("\x80\x02}X\x10\x00\x00\x00"
                                                        "ab",
                                                        10)));
  REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "short.pt"),
                      ContainsSubstring("runs past the pickle"));
  // Not a dict at the top.
  testing::WriteBytes(dir / "list.pt", testing::TorchArchive(std::string("\x80\x02]."), {}));
  REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "list.pt"),
                      ContainsSubstring("the saved object is a list, expected a state dict"));
}

TEST_CASE("hand-written torch archives: views checked against their storage", "[readers][torch]") {
  ScratchDir dir;
  const std::string storage = testing::Floats({1, 2, 3, 4, 5, 6});
  // A transposed [3, 2] view of a [2, 3] storage.
  std::string p = testing::PickleStateDict(
      {testing::PickleTensor("w", "FloatStorage", "0", 6, 0, {3, 2}, {1, 3})});
  testing::WriteBytes(dir / "ok.pt", testing::TorchArchive(p, {{"0", storage}}));
  const Checkpoint ckpt = Checkpoint::Open(dir / "ok.pt");
  CHECK(ckpt.Float("w").values == std::vector<float>{1, 4, 2, 5, 3, 6});
  // A view reaching past its storage.
  p = testing::PickleStateDict(
      {testing::PickleTensor("w", "FloatStorage", "0", 6, 2, {3, 2}, {2, 1})});
  testing::WriteBytes(dir / "oob.pt", testing::TorchArchive(p, {{"0", storage}}));
  REQUIRE_THROWS_WITH(
      Checkpoint::Open(dir / "oob.pt"),
      ContainsSubstring(
          "tensor \"w\" with shape [3, 2], strides [2, 1] and offset 2 reaches element 7 "
          "of a storage of 6 elements"));
  // Storage entry shorter than numel says.
  p = testing::PickleStateDict({testing::PickleTensor("w", "FloatStorage", "0", 6, 0, {6}, {1})});
  testing::WriteBytes(dir / "short.pt", testing::TorchArchive(p, {{"0", storage.substr(0, 20)}}));
  REQUIRE_THROWS_WITH(
      Checkpoint::Open(dir / "short.pt"),
      ContainsSubstring(
          "archive/data/0: storage of tensor \"w\" has 20 bytes; 6 F32 elements need 24"));
  // Storage entry missing.
  testing::WriteBytes(dir / "missing.pt", testing::TorchArchive(p));
  REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "missing.pt"),
                      ContainsSubstring("tensor \"w\": storage entry archive/data/0 is missing"));
}

TEST_CASE("corrupted and truncated zip archives", "[readers][zip]") {
  ScratchDir dir;
  const std::string good = testing::ReadBytes(Fixture("views.pt"));
  SECTION("a flipped byte in a storage fails its CRC-32") {
    const ZipArchive zip = ZipArchive::Open(FileBytes::Open(Fixture("views.pt")));
    const ZipEntry* entry = zip.Find("views/data/0");
    REQUIRE(entry != nullptr);
    std::string bad = good;
    bad[entry->data_offset + 1] ^= 0x40;
    testing::WriteBytes(dir / "crc.pt", bad);
    REQUIRE_THROWS_WITH(
        Checkpoint::Open(dir / "crc.pt"),
        ContainsSubstring("corrupted zip archive: entry \"views/data/0\" fails its CRC-32 check"));
  }
  SECTION("cut in half") {
    testing::WriteBytes(dir / "cut.pt", good.substr(0, good.size() / 2));
    REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "cut.pt"),
                        ContainsSubstring("no end-of-central-directory record (truncated file?)"));
  }
  SECTION("central directory pointing past the file") {
    std::string bad = good;
    bad[bad.size() - 6] = '\x7f';  // cd offset's low byte... make the offset huge
    bad[bad.size() - 3] = '\x7f';
    testing::WriteBytes(dir / "cd.pt", bad);
    REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "cd.pt"),
                        ContainsSubstring("lies outside the file (truncated file?)"));
  }
  SECTION("an entry claiming deflate") {
    testing::WriteBytes(dir / "deflate.pt", testing::MakeZip({{"archive/data.pkl", "x"}}, 8));
    REQUIRE_THROWS_WITH(
        Checkpoint::Open(dir / "deflate.pt"),
        ContainsSubstring("zip entry \"archive/data.pkl\" is compressed (method 8, deflate); only "
                          "stored entries are supported"));
  }
  SECTION("not a zip at all") {
    testing::WriteBytes(dir / "junk.pt", "hello, I am not a checkpoint");
    REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "junk.pt"),
                        ContainsSubstring("not a torch.save zip archive"));
  }
  SECTION("a zip without data.pkl") {
    testing::WriteBytes(dir / "other.pt", testing::MakeZip({{"readme.txt", "hi"}}));
    REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "other.pt"),
                        ContainsSubstring("no <archive>/data.pkl entry"));
  }
}

TEST_CASE("formats the converter refuses with advice", "[readers]") {
  REQUIRE_THROWS_WITH(
      Checkpoint::Open(Fixture("legacy.pt")),
      ContainsSubstring("legacy (pre-1.6, non-zip) torch.save format is not supported"));
  REQUIRE_THROWS_WITH(Checkpoint::Open(Fixture("compressed.npz")),
                      ContainsSubstring("is compressed (method 8, deflate)") &&
                          ContainsSubstring("re-save with numpy.savez"));
}

TEST_CASE("truncated and malformed .npz / .npy", "[readers][npz]") {
  ScratchDir dir;
  const std::string good = testing::ReadBytes(Fixture("arrays.npz"));
  testing::WriteBytes(dir / "cut.npz", good.substr(0, good.size() * 3 / 5));
  REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "cut.npz"), ContainsSubstring("(truncated file?)"));
  auto npy = [](const std::string& header, const std::string& data) {
    std::string h = header;
    while ((10 + h.size() + 1) % 64) h.push_back(' ');
    h.push_back('\n');
    std::string out("\x93NUMPY\x01\x00", 8);
    testing::Put16(&out, static_cast<uint32_t>(h.size()));
    return out + h + data;
  };
  testing::WriteBytes(
      dir / "short.npz",
      testing::MakeZip({{"w.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (100,), }",
                                      testing::Floats({1, 2}))}}));
  REQUIRE_THROWS_WITH(
      Checkpoint::Open(dir / "short.npz"),
      ContainsSubstring("w.npy: array [100] of F32 needs 400 bytes, the entry has 8 (truncated?)"));
  testing::WriteBytes(dir / "be.npz",
                      testing::MakeZip({{"w.npy", npy("{'descr': '>f4', 'fortran_order': False, "
                                                      "'shape': (2,), }",
                                                      testing::Floats({1, 2}))}}));
  REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "be.npz"),
                      ContainsSubstring(".npy dtype '>f4' is not supported (big-endian)"));
  testing::WriteBytes(
      dir / "struct.npz",
      testing::MakeZip(
          {{"w.npy", npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
                         testing::Floats({1, 2}))}}));
  REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "struct.npz"),
                      ContainsSubstring("structured arrays are not supported"));
  testing::WriteBytes(dir / "magic.npz", testing::MakeZip({{"w.npy", "NOTNUMPY"}}));
  REQUIRE_THROWS_WITH(Checkpoint::Open(dir / "magic.npz"),
                      ContainsSubstring("w.npy: not a .npy array (bad magic)"));
}

TEST_CASE("sharded safetensors: the index and the shards must agree", "[readers][safetensors]") {
  ScratchDir dir;
  const std::string a = testing::Floats({1, 2}), b = testing::Floats({3, 4, 5});
  testing::WriteRawSafetensors(dir / "s1.safetensors", {{"a", {"F32", {2}, a}}});
  testing::WriteRawSafetensors(dir / "s2.safetensors", {{"b", {"F32", {3}, b}}});
  auto index = [&](const std::string& map) {
    testing::WriteBytes(dir / "m.safetensors.index.json",
                        "{\"metadata\": {\"total_size\": 20}, \"weight_map\": " + map + "}");
    return dir / "m.safetensors.index.json";
  };
  const Checkpoint ok =
      Checkpoint::Open(index("{\"a\": \"s1.safetensors\", \"b\": \"s2.safetensors\"}"));
  CHECK(ok.format() == "safetensors-sharded");
  CHECK(ok.files().size() == 3);
  CHECK(ok.Float("b").values == std::vector<float>{3, 4, 5});
  REQUIRE_THROWS_WITH(
      Checkpoint::Open(index("{\"a\": \"s1.safetensors\", \"b\": \"s1.safetensors\"}")),
      ContainsSubstring("tensor \"b\" is listed for s1.safetensors but is not in it"));
  testing::WriteRawSafetensors(dir / "s3.safetensors",
                               {{"a", {"F32", {2}, a}}, {"c", {"F32", {2}, a}}});
  REQUIRE_THROWS_WITH(Checkpoint::Open(index("{\"a\": \"s3.safetensors\"}")),
                      ContainsSubstring("s3.safetensors: tensor \"c\" is not in the index"));
  REQUIRE_THROWS_WITH(
      Checkpoint::Open(index("{\"a\": \"../s1.safetensors\"}")),
      ContainsSubstring(
          "shard \"../s1.safetensors\" must be a file name in the index's directory"));
  REQUIRE_THROWS_WITH(Checkpoint::Open(index("{\"a\": \"gone.safetensors\"}")),
                      ContainsSubstring("gone.safetensors: cannot open"));
  REQUIRE_THROWS_WITH(Checkpoint::Open(index("[1, 2]")),
                      ContainsSubstring("index needs an object \"weight_map\""));
}

}  // namespace
}  // namespace tern::convert

namespace tern::convert {
namespace {

// Mutated inputs must read or fail with convert::Error: never crash, hang or read out of bounds
// (run under -DTERN_SANITIZE=ON to check the last).
TEST_CASE("mutated torch.save pickles and zip headers fail cleanly", "[readers][robustness]") {
  const auto file = FileBytes::Open(Fixture("views.pt"));
  const ZipArchive zip = ZipArchive::Open(file);
  std::vector<std::pair<std::string, std::string>> entries;
  std::string pickle;
  for (const auto& e : zip.entries()) {
    std::string bytes(reinterpret_cast<const char*>(zip.Data(e)), static_cast<size_t>(e.size));
    if (e.name == "views/data.pkl") pickle = bytes;
    entries.emplace_back(e.name, bytes);
  }
  REQUIRE_FALSE(pickle.empty());
  std::mt19937 rng(1234);
  ScratchDir dir;
  size_t read = 0, refused = 0;
  for (int i = 0; i < 500; ++i) {
    std::string mutated = pickle;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k)
      mutated[rng() % mutated.size()] = static_cast<char>(rng() & 0xFF);
    if (rng() % 8 == 0) mutated.resize(rng() % mutated.size());
    auto with = entries;
    for (auto& e : with) {
      if (e.first == "views/data.pkl") e.second = mutated;
    }
    testing::WriteBytes(dir / "m.pt", testing::MakeZip(with));
    try {
      const Checkpoint ckpt = Checkpoint::Open(dir / "m.pt");
      for (const auto& kv : ckpt.tensors()) {
        if (SourceDTypeIsFloat(kv.second.dtype)) {
          (void)ckpt.Float(kv.first);
        } else {
          (void)ckpt.Ints(kv.first);
        }
      }
      ++read;
    } catch (const Error&) {
      ++refused;
    }
  }
  CHECK(read + refused == 500);
  CHECK(refused > 0);
  // Zip structure: mutate the headers (the central directory and local headers).
  const std::string good = testing::ReadBytes(Fixture("views.pt"));
  for (int i = 0; i < 3000; ++i) {
    std::string bad = good;
    const size_t start = rng() % 2 ? bad.size() * 3 / 4 : 0;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k)
      bad[start + rng() % (bad.size() - start)] = static_cast<char>(rng() & 0xFF);
    try {
      const ZipArchive z = ZipArchive::Open(FileBytes::FromMemory(bad, "mutated.pt"));
      for (const auto& e : z.entries()) (void)z.Data(e);
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace tern::convert
