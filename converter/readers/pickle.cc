#include "converter/readers/pickle.h"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_map>

#include "converter/error.h"

namespace tern::convert {

namespace {

constexpr size_t kMaxStack = 1u << 20;
constexpr size_t kMaxMemo = 1u << 22;
constexpr size_t kMaxDims = 16;
constexpr int kMaxDepth = 100;  // state dicts nest a few levels; a pickle may say anything

// Storage types torch pickles by name, and the dtype each holds.
const std::map<std::string, std::string>& StorageTypes() {
  static const std::map<std::string, std::string> types = {
      {"torch.FloatStorage", "F32"},     {"torch.HalfStorage", "F16"},
      {"torch.BFloat16Storage", "BF16"}, {"torch.DoubleStorage", "F64"},
      {"torch.LongStorage", "I64"},      {"torch.IntStorage", "I32"},
      {"torch.ShortStorage", "I16"},     {"torch.CharStorage", "I8"},
      {"torch.ByteStorage", "U8"},       {"torch.BoolStorage", "BOOL"}};
  return types;
}

bool AllowedCallable(const std::string& name) {
  return name == "collections.OrderedDict" || name == "torch._utils._rebuild_tensor_v2" ||
         name == "torch._utils._rebuild_tensor" || name == "torch._utils._rebuild_parameter";
}

// Classes NEWOBJ may "instantiate": their instances become plain values (see pickle.h).
bool AllowedClass(const std::string& name) { return name == "argparse.Namespace"; }

// numpy's constructors of data (a scalar from dtype + bytes, an array, a dtype): REDUCE of these
// becomes an opaque object named by the callable; nothing is called.
bool NumpyDataConstructor(const std::string& name) {
  for (const char* core : {"numpy.core.multiarray.", "numpy._core.multiarray."}) {
    if (name == std::string(core) + "scalar" || name == std::string(core) + "_reconstruct")
      return true;
  }
  // Protocol 2 writes Python 3 bytes (a numpy scalar's payload) as _codecs.encode(str, latin1).
  return name == "numpy.dtype" || name == "_codecs.encode";
}

// Built-in types that omegaconf's metadata names (ref_type, object_type, key_type and the
// defaultdict(dict) of its resolver cache): kept as names only. REDUCE never calls them
// (AllowedCallable) and NEWOBJ does not stand an object on them, so a name here does nothing.
bool TypeReference(const std::string& name) {
  for (const char* module : {"builtins.", "__builtin__."}) {
    for (const char* type : {"dict", "list", "tuple", "set", "frozenset", "str", "unicode", "bytes",
                             "int", "long", "float", "bool", "object"}) {
      if (name == std::string(module) + type) return true;
    }
  }
  return false;
}

// omegaconf's classes (fairseq's cfg before fairseq 0.12 saved it as plain containers). They
// are opaque objects like any unknown class; PickleToJson reads them as data (pickle.h).
bool OmegaConfClass(const std::string& name) { return name.compare(0, 10, "omegaconf.") == 0; }

// Modules whose members act on the system (run programs, evaluate code, open files or sockets,
// import): a global from one is refused where it appears, whatever follows. Everything else
// unknown is only a name, which NEWOBJ may stand an opaque object on (pickle.h).
bool DangerousModule(const std::string& module) {
  static const char* const kModules[] = {"os",        "posix",
                                         "nt",        "subprocess",
                                         "builtins",  "__builtin__",
                                         "sys",       "shutil",
                                         "socket",    "importlib",
                                         "runpy",     "pty",
                                         "code",      "codeop",
                                         "ctypes",    "pickle",
                                         "_pickle",   "marshal",
                                         "types",     "operator",
                                         "functools", "io",
                                         "_io",       "pathlib",
                                         "tempfile",  "multiprocessing",
                                         "signal",    "asyncio",
                                         "platform",  "webbrowser",
                                         "commands",  "popen2",
                                         "copyreg",   "copy_reg",
                                         "torch",     "pydoc",
                                         "timeit",    "inspect",
                                         "threading", "_thread",
                                         "ssl",       "http",
                                         "urllib",    "ftplib",
                                         "smtplib",   "telnetlib",
                                         "cProfile",  "profile",
                                         "pdb",       "bdb",
                                         "trace",     "glob",
                                         "fileinput", "zipimport",
                                         "site",      "numpy"};
  const std::string top = module.substr(0, module.find('.'));
  for (const char* m : kModules) {
    if (top == m) return true;
  }
  return false;
}

class Machine {
 public:
  Machine(const uint8_t* data, size_t size, const std::string& label)
      : p_(data), size_(size), label_(label) {}

  PickleRef Run() {
    while (true) {
      if (pos_ >= size_) Fail("the pickle ends without STOP (truncated?)");
      op_offset_ = pos_;
      const uint8_t op = p_[pos_++];
      switch (op) {
        case 0x80:  // PROTO
          if (Byte() > 5) Fail("pickle protocol is newer than 5");
          break;
        case 0x95:  // FRAME (protocol 4): an 8-byte length we do not need
          Bytes(8);
          break;
        case '.': {  // STOP
          if (stack_.size() != 1 || !marks_.empty())
            Fail("STOP with " + std::to_string(stack_.size()) + " values on the stack");
          return stack_.back();
        }
        case '(':  // MARK
          marks_.push_back(stack_.size());
          break;
        case 'N':
          Push(Make(PickleValue::Kind::kNone));
          break;
        case 0x88:
          Push(Bool(true));
          break;  // NEWTRUE
        case 0x89:
          Push(Bool(false));
          break;  // NEWFALSE
        case 'K':
          Push(Int(Byte()));
          break;  // BININT1
        case 'M':
          Push(Int(Le(2)));
          break;  // BININT2
        case 'J':
          Push(Int(static_cast<int32_t>(static_cast<uint32_t>(Le(4)))));
          break;      // BININT
        case 0x8a: {  // LONG1
          const size_t n = Byte();
          if (n > 8) Fail("LONG1 of " + std::to_string(n) + " bytes does not fit 64 bits");
          const uint8_t* q = Bytes(n);
          uint64_t v = 0;
          for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(q[k]) << (8 * k);
          if (n > 0 && n < 8 && (q[n - 1] & 0x80)) v |= ~uint64_t{0} << (8 * n);  // sign-extend
          Push(Int(static_cast<int64_t>(v)));
          break;
        }
        case 'G': {  // BINFLOAT, big-endian double
          const uint8_t* q = Bytes(8);
          uint64_t bits = 0;
          for (int k = 0; k < 8; ++k) bits = (bits << 8) | q[k];
          double d;
          std::memcpy(&d, &bits, 8);
          auto v = Make(PickleValue::Kind::kFloat);
          v->f = d;
          Push(v);
          break;
        }
        case 'X':
          PushString(Le(4));
          break;  // BINUNICODE
        case 0x8c:
          PushString(Byte());
          break;  // SHORT_BINUNICODE
        case ')':
          Push(Make(PickleValue::Kind::kTuple));
          break;  // EMPTY_TUPLE
        case 0x85:
          Tuple(1);
          break;  // TUPLE1
        case 0x86:
          Tuple(2);
          break;  // TUPLE2
        case 0x87:
          Tuple(3);
          break;     // TUPLE3
        case 't': {  // TUPLE
          auto v = Make(PickleValue::Kind::kTuple);
          v->items = PopToMark();
          for (const auto& item : v->items) Contain(v, item);
          Push(v);
          break;
        }
        case ']':
          Push(Make(PickleValue::Kind::kList));
          break;     // EMPTY_LIST
        case 'l': {  // LIST
          auto v = Make(PickleValue::Kind::kList);
          v->items = PopToMark();
          for (const auto& item : v->items) Contain(v, item);
          Push(v);
          break;
        }
        case 'a': {  // APPEND
          PickleRef item = Pop();
          PickleRef list = Expect(Top(), PickleValue::Kind::kList, "APPEND");
          Contain(list, item);
          list->items.push_back(item);
          break;
        }
        case 'e': {  // APPENDS
          std::vector<PickleRef> items = PopToMark();
          PickleRef list = Expect(Top(), PickleValue::Kind::kList, "APPENDS");
          for (const auto& item : items) Contain(list, item);
          list->items.insert(list->items.end(), items.begin(), items.end());
          break;
        }
        case '}':
          Push(Make(PickleValue::Kind::kDict));
          break;     // EMPTY_DICT
        case 'd': {  // DICT
          std::vector<PickleRef> items = PopToMark();
          auto v = Make(PickleValue::Kind::kDict);
          SetItems(v, items);
          Push(v);
          break;
        }
        case 's': {  // SETITEM
          PickleRef value = Pop();
          PickleRef key = Pop();
          SetItems(Expect(Top(), PickleValue::Kind::kDict, "SETITEM"), {key, value});
          break;
        }
        case 'u': {  // SETITEMS
          std::vector<PickleRef> items = PopToMark();
          SetItems(Expect(Top(), PickleValue::Kind::kDict, "SETITEMS"), items);
          break;
        }
        case 'q':
          Put(Byte());
          break;  // BINPUT
        case 'r':
          Put(Le(4));
          break;  // LONG_BINPUT
        case 0x94:
          Put(memo_.size());
          break;  // MEMOIZE
        case 'h':
          Get(Byte());
          break;  // BINGET
        case 'j':
          Get(Le(4));
          break;     // LONG_BINGET
        case 'c': {  // GLOBAL
          const std::string module = Line();
          Global(module, Line());
          break;
        }
        case 0x93: {  // STACK_GLOBAL (protocol 4)
          PickleRef name = Pop();
          PickleRef module = Pop();
          if (module->kind != PickleValue::Kind::kString ||
              name->kind != PickleValue::Kind::kString) {
            Fail("STACK_GLOBAL needs two strings");
          }
          Global(module->s, name->s);
          break;
        }
        case 'Q':
          PersistentId();
          break;  // BINPERSID
        case 'R':
          Reduce();
          break;  // REDUCE
        case 'b':
          Build();
          break;  // BUILD
        case 0x81:
          NewObj();
          break;  // NEWOBJ
        default: {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          throw Error(label_ + ": unsupported pickle opcode " + hex + " at offset " +
                      std::to_string(op_offset_) +
                      " (only the subset torch.save writes for a state_dict is accepted)");
        }
      }
    }
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw Error(label_ + ": pickle offset " + std::to_string(op_offset_) + ": " + what);
  }
  uint8_t Byte() { return *Bytes(1); }
  const uint8_t* Bytes(size_t n) {
    if (n > size_ - pos_) Fail("the pickle ends inside an opcode's argument (truncated?)");
    const uint8_t* q = p_ + pos_;
    pos_ += n;
    return q;
  }
  uint64_t Le(size_t n) {
    const uint8_t* q = Bytes(n);
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(q[k]) << (8 * k);
    return v;
  }
  static PickleRef Make(PickleValue::Kind kind) {
    auto v = std::make_shared<PickleValue>();
    v->kind = kind;
    return v;
  }
  static PickleRef Bool(bool b) {
    auto v = Make(PickleValue::Kind::kBool);
    v->b = b;
    return v;
  }
  static PickleRef Int(int64_t i) {
    auto v = Make(PickleValue::Kind::kInt);
    v->i = i;
    return v;
  }
  void Push(PickleRef v) {
    if (stack_.size() >= kMaxStack) Fail("pickle stack too deep");
    stack_.push_back(std::move(v));
  }
  PickleRef Pop() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) Fail("pop from an empty stack");
    PickleRef v = stack_.back();
    stack_.pop_back();
    return v;
  }
  PickleRef Top() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) Fail("empty stack");
    return stack_.back();
  }
  std::vector<PickleRef> PopToMark() {
    if (marks_.empty()) Fail("no MARK to pop to");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<PickleRef> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return items;
  }
  PickleRef Expect(const PickleRef& v, PickleValue::Kind kind, const char* op) {
    if (v->kind != kind) {
      Fail(std::string(op) + " on a " + PickleKindName(v->kind) + ", expected a " +
           PickleKindName(kind));
    }
    return v;
  }
  // `item` becomes part of `container`: checks the cycle and depth rules (see pickle.h).
  void Contain(const PickleRef& container, const PickleRef& item) {
    if (container->contained)
      Fail("a container is changed after being used inside another (self-reference?)");
    if (item.get() == container.get()) Fail("a container would contain itself");
    item->contained = true;
    if (item->depth + 1 > container->depth) container->depth = item->depth + 1;
    if (container->depth > kMaxDepth)
      Fail("values nest more than " + std::to_string(kMaxDepth) + " levels deep");
  }
  void PushString(uint64_t n) {
    if (n > size_ - pos_) Fail("string of " + std::to_string(n) + " bytes runs past the pickle");
    auto v = Make(PickleValue::Kind::kString);
    v->s.assign(reinterpret_cast<const char*>(Bytes(static_cast<size_t>(n))),
                static_cast<size_t>(n));
    Push(v);
  }
  void Tuple(size_t n) {
    auto v = Make(PickleValue::Kind::kTuple);
    v->items.resize(n);
    for (size_t k = n; k-- > 0;) v->items[k] = Pop();
    for (const auto& item : v->items) Contain(v, item);
    Push(v);
  }
  void SetItems(const PickleRef& dict, const std::vector<PickleRef>& items) {
    if (items.size() % 2) Fail("odd number of items for a dict");
    for (size_t k = 0; k < items.size(); k += 2) {
      const PickleRef& key = items[k];
      PickleRef value = items[k + 1];
      // An omegaconf node's state names its parent container ("_parent"), which is still being
      // built: a cycle. The link is dropped (None); nothing here reads it.
      if (key->kind == PickleValue::Kind::kString && key->s == "_parent" &&
          value->kind == PickleValue::Kind::kObject && OmegaConfClass(value->type_name)) {
        value = Make(PickleValue::Kind::kNone);
      }
      Contain(dict, key);
      Contain(dict, value);
      if (key->kind ==
          PickleValue::Kind::kString) {  // a repeated key replaces the value, as in Python
        auto it = dict->string_keys.find(key->s);
        if (it != dict->string_keys.end()) {
          dict->dict[it->second].second = value;
          continue;
        }
        dict->string_keys.emplace(key->s, dict->dict.size());
      }
      dict->dict.emplace_back(key, value);
    }
  }
  void Put(uint64_t index) {
    if (memo_.size() >= kMaxMemo && !memo_.count(index)) Fail("too many memo entries");
    memo_[index] = Top();
  }
  void Get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) Fail("memo index " + std::to_string(index) + " was never stored");
    Push(it->second);
  }
  std::string Line() {
    const size_t start = pos_;
    while (pos_ < size_ && p_[pos_] != '\n') {
      if (pos_ - start > 256) Fail("GLOBAL name is too long");
      ++pos_;
    }
    if (pos_ >= size_) Fail("GLOBAL name runs past the pickle");
    std::string s(reinterpret_cast<const char*>(p_ + start), pos_ - start);
    ++pos_;
    return s;
  }
  void Global(const std::string& module, const std::string& name) {
    const std::string full = module + "." + name;
    if (!AllowedCallable(full) && !StorageTypes().count(full) && !AllowedClass(full) &&
        !NumpyDataConstructor(full) && full != "numpy.ndarray" && !TypeReference(full) &&
        DangerousModule(module)) {
      throw Error(
          label_ + ": pickle global \"" + full + "\" at offset " + std::to_string(op_offset_) +
          " is not allowed: only a state_dict of tensors can be read (OrderedDict, "
          "torch._utils._rebuild_tensor_v2, torch.*Storage, argparse.Namespace, instances of "
          "other classes as opaque values); nothing in the file is executed. "
          "If this is a whole pickled model, save model.state_dict() instead");
    }
    auto v = Make(PickleValue::Kind::kGlobal);
    v->s = full;
    Push(v);
  }
  static int64_t AsInt(const PickleRef& v, bool* ok) {
    if (v->kind == PickleValue::Kind::kInt) return v->i;
    *ok = false;
    return 0;
  }
  void PersistentId() {
    PickleRef pid = Pop();
    // ('storage', storage_type, key, location, numel)
    if (pid->kind != PickleValue::Kind::kTuple || pid->items.size() != 5 ||
        pid->items[0]->kind != PickleValue::Kind::kString || pid->items[0]->s != "storage" ||
        pid->items[1]->kind != PickleValue::Kind::kGlobal ||
        !StorageTypes().count(pid->items[1]->s) ||
        pid->items[2]->kind != PickleValue::Kind::kString ||
        pid->items[3]->kind != PickleValue::Kind::kString ||
        pid->items[4]->kind != PickleValue::Kind::kInt || pid->items[4]->i < 0) {
      Fail("persistent id is not torch's ('storage', type, key, location, numel)");
    }
    const std::string& key = pid->items[2]->s;
    auto it = storages_.find(key);
    if (it == storages_.end()) {
      auto storage = std::make_shared<PickleStorage>();
      storage->dtype = StorageTypes().at(pid->items[1]->s);
      storage->key = key;
      storage->location = pid->items[3]->s;
      storage->numel = pid->items[4]->i;
      it = storages_.emplace(key, storage).first;
    } else if (it->second->dtype != StorageTypes().at(pid->items[1]->s) ||
               it->second->numel != pid->items[4]->i) {
      Fail("storage \"" + key + "\" is described twice, differently");
    }
    auto v = Make(PickleValue::Kind::kStorage);
    v->storage = it->second;
    Push(v);
  }
  std::vector<int64_t> IntTuple(const PickleRef& v, const char* what) {
    if (v->kind != PickleValue::Kind::kTuple || v->items.size() > kMaxDims) {
      Fail(std::string("tensor ") + what + " is not a tuple of at most 16 integers");
    }
    std::vector<int64_t> out;
    for (const auto& item : v->items) {
      bool ok = true;
      const int64_t x = AsInt(item, &ok);
      if (!ok || x < 0)
        Fail(std::string("tensor ") + what + " holds a non-integer or negative value");
      out.push_back(x);
    }
    return out;
  }
  void Reduce() {
    PickleRef args = Pop();
    PickleRef callable = Pop();
    if (callable->kind == PickleValue::Kind::kGlobal && NumpyDataConstructor(callable->s)) {
      Push(Opaque(callable->s, args));
      return;
    }
    // collections.defaultdict(factory) with a built-in type (or None) as the factory, as in
    // omegaconf's ContainerMetadata.resolver_cache = defaultdict(dict): an empty dict that later
    // SETITEMS may fill. Nothing is called; the factory is only ever a name here.
    if (callable->kind == PickleValue::Kind::kGlobal && callable->s == "collections.defaultdict" &&
        args->kind == PickleValue::Kind::kTuple && args->items.size() <= 1 &&
        (args->items.empty() || args->items[0]->kind == PickleValue::Kind::kNone ||
         (args->items[0]->kind == PickleValue::Kind::kGlobal &&
          TypeReference(args->items[0]->s)))) {
      Push(Make(PickleValue::Kind::kDict));
      return;
    }
    if (callable->kind != PickleValue::Kind::kGlobal || !AllowedCallable(callable->s)) {
      Fail(std::string(
               "REDUCE may only call OrderedDict or torch's tensor rebuild functions, not a ") +
           (callable->kind == PickleValue::Kind::kGlobal ? "\"" + callable->s + "\""
                                                         : PickleKindName(callable->kind)));
    }
    if (args->kind != PickleValue::Kind::kTuple) Fail("REDUCE arguments are not a tuple");
    const std::string& f = callable->s;
    if (f == "collections.OrderedDict") {
      if (!args->items.empty()) Fail("OrderedDict called with arguments");
      Push(Make(PickleValue::Kind::kDict));
      return;
    }
    if (f == "torch._utils._rebuild_parameter") {
      // (data, requires_grad, backward_hooks): the tensor itself.
      if (args->items.size() != 3 || args->items[0]->kind != PickleValue::Kind::kTensor) {
        Fail("_rebuild_parameter expects (tensor, requires_grad, hooks)");
      }
      Push(args->items[0]);
      return;
    }
    // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[,
    // metadata]) _rebuild_tensor(storage, storage_offset, size, stride)
    const bool v2 = f == "torch._utils._rebuild_tensor_v2";
    const size_t n = args->items.size();
    if (v2 ? (n != 6 && n != 7) : n != 4)
      Fail(f + " called with " + std::to_string(n) + " arguments");
    if (args->items[0]->kind != PickleValue::Kind::kStorage)
      Fail(f + ": first argument is not a storage");
    bool ok = true;
    const int64_t offset = AsInt(args->items[1], &ok);
    if (!ok || offset < 0) Fail(f + ": storage offset is not a non-negative integer");
    auto v = Make(PickleValue::Kind::kTensor);
    v->tensor.storage = args->items[0]->storage;
    v->tensor.offset = offset;
    v->tensor.shape = IntTuple(args->items[2], "size");
    v->tensor.strides = IntTuple(args->items[3], "stride");
    if (v->tensor.shape.size() != v->tensor.strides.size())
      Fail(f + ": size and stride differ in length");
    if (v2) {
      const auto& hooks = args->items[5];
      if (hooks->kind != PickleValue::Kind::kDict || !hooks->dict.empty()) {
        if (hooks->kind != PickleValue::Kind::kNone) Fail(f + ": backward hooks are not supported");
      }
    }
    Push(v);
  }
  // An opaque object of class `type_name` made from `args` (kept: items {args, state}).
  PickleRef Opaque(const std::string& type_name, const PickleRef& args) {
    auto v = Make(PickleValue::Kind::kObject);
    v->type_name = type_name;
    Contain(v, args);
    v->items = {args, Make(PickleValue::Kind::kNone)};
    return v;
  }
  // NEWOBJ(cls, args): argparse.Namespace with no arguments becomes a dict its BUILD fills; a
  // class not known here an opaque object. The names this reader gives a meaning to
  // (OrderedDict, the rebuild functions, storages, numpy's constructors) are not classes to
  // stand an object on.
  void NewObj() {
    PickleRef args = Pop();
    PickleRef cls = Pop();
    if (cls->kind != PickleValue::Kind::kGlobal || AllowedCallable(cls->s) ||
        StorageTypes().count(cls->s) || NumpyDataConstructor(cls->s) || TypeReference(cls->s)) {
      Fail(std::string("NEWOBJ may only make an argparse.Namespace or an instance of a class "
                       "not read here, not a ") +
           (cls->kind == PickleValue::Kind::kGlobal ? "\"" + cls->s + "\""
                                                    : PickleKindName(cls->kind)));
    }
    if (args->kind != PickleValue::Kind::kTuple) Fail("NEWOBJ arguments are not a tuple");
    if (!AllowedClass(cls->s)) {
      Push(Opaque(cls->s, args));
      return;
    }
    if (!args->items.empty()) Fail(cls->s + " made with arguments");
    auto v = Make(PickleValue::Kind::kDict);
    v->type_name = cls->s;
    Push(v);
  }
  void Build() {
    PickleRef state = Pop();
    PickleRef target = Top();
    // An opaque object keeps its state (whatever __setstate__ would have done is not done).
    if (target->kind == PickleValue::Kind::kObject) {
      if (target->items[1]->kind != PickleValue::Kind::kNone)
        Fail("BUILD of a \"" + target->type_name + "\" object twice");
      Contain(target, state);
      target->items[1] = state;
      return;
    }
    // A Namespace's state is its __dict__: the attributes become its entries.
    if (target->kind == PickleValue::Kind::kDict && !target->type_name.empty()) {
      if (state->kind != PickleValue::Kind::kDict || !state->type_name.empty())
        Fail("BUILD of an " + target->type_name + " with a " + PickleKindName(state->kind) +
             " state, expected a dict");
      std::vector<PickleRef> items;
      for (const auto& kv : state->dict) {
        items.push_back(kv.first);
        items.push_back(kv.second);
      }
      SetItems(target, items);
      return;
    }
    // torch's state_dict is an OrderedDict whose only state is its `_metadata` attribute
    // (module versions): accepted and ignored. Nothing else may be built.
    if (target->kind == PickleValue::Kind::kDict &&
        (state->kind == PickleValue::Kind::kDict || state->kind == PickleValue::Kind::kNone)) {
      return;
    }
    Fail(std::string("BUILD on a ") + PickleKindName(target->kind) + " is not supported");
  }

  const uint8_t* p_;
  size_t size_;
  std::string label_;
  size_t pos_ = 0;
  size_t op_offset_ = 0;
  std::vector<PickleRef> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PickleRef> memo_;
  std::map<std::string, std::shared_ptr<PickleStorage>> storages_;
};

}  // namespace

const char* PickleKindName(PickleValue::Kind kind) {
  switch (kind) {
    case PickleValue::Kind::kNone:
      return "None";
    case PickleValue::Kind::kBool:
      return "bool";
    case PickleValue::Kind::kInt:
      return "int";
    case PickleValue::Kind::kFloat:
      return "float";
    case PickleValue::Kind::kString:
      return "str";
    case PickleValue::Kind::kTuple:
      return "tuple";
    case PickleValue::Kind::kList:
      return "list";
    case PickleValue::Kind::kDict:
      return "dict";
    case PickleValue::Kind::kGlobal:
      return "global";
    case PickleValue::Kind::kStorage:
      return "storage";
    case PickleValue::Kind::kTensor:
      return "tensor";
    case PickleValue::Kind::kObject:
      return "object";
  }
  return "?";
}

std::string PickleDescribe(const PickleValue& value) {
  if (value.kind == PickleValue::Kind::kObject) return "\"" + value.type_name + "\" object";
  if (value.kind == PickleValue::Kind::kGlobal) return "reference to \"" + value.s + "\"";
  return PickleKindName(value.kind);
}

PickleRef Unpickle(const uint8_t* data, size_t size, const std::string& label) {
  return Machine(data, size, label).Run();
}

namespace {

// The value of `key` in an omegaconf object's state, or null when absent.
PickleRef StateEntry(const PickleValue& object, const char* key) {
  const PickleValue& state = *object.items[1];
  if (state.kind != PickleValue::Kind::kDict) return nullptr;
  auto it = state.string_keys.find(key);
  return it == state.string_keys.end() ? nullptr : state.dict[it->second].second;
}

// omegaconf's own markers: "???" (missing) and a string with "${" (an interpolation, which
// omegaconf computes when the value is read). Kept as {kOmegaConfUnresolved: text}.
bool Unresolved(const PickleValue& v) {
  return v.kind == PickleValue::Kind::kString &&
         (v.s == "???" || v.s.find("${") != std::string::npos);
}

nlohmann::json UnresolvedJson(const std::string& text) {
  nlohmann::json out = nlohmann::json::object();
  out[kOmegaConfUnresolved] = text;
  return out;
}

}  // namespace

const char kOmegaConfUnresolved[] = "<omegaconf unresolved>";

void PickleCheckResolved(const nlohmann::json& value, const std::string& where) {
  if (!value.is_object() || value.size() != 1 || !value.contains(kOmegaConfUnresolved)) return;
  const std::string text = value[kOmegaConfUnresolved].get<std::string>();
  if (text == "???") {
    throw Error(where + " is omegaconf's missing value \"???\" (the option was never set)");
  }
  throw Error(where + " is the omegaconf interpolation \"" + text +
              "\", which is not resolved here (only ${a.b} paths to a value of cfg are); save "
              "the checkpoint with cfg = OmegaConf.to_container(cfg, resolve=True)");
}

namespace {

// The keys of an absolute interpolation "${a.b.c}"; empty for any other text.
std::vector<std::string> InterpolationPath(const std::string& text) {
  std::vector<std::string> keys;
  if (text.size() < 4 || text.compare(0, 2, "${") != 0 || text.back() != '}') return {};
  std::string key;
  for (size_t i = 2; i + 1 < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      if (key.empty()) return {};
      keys.push_back(key);
      key.clear();
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      key += c;
    } else {
      return {};
    }
  }
  if (key.empty()) return {};
  keys.push_back(key);
  return keys;
}

void Resolve(nlohmann::json* value, const PickleRef& root, const std::string& where, int depth) {
  std::string text;
  if (value->is_string()) {
    // A cfg saved as plain containers (fairseq >= 0.12, OmegaConf.to_container without resolve)
    // keeps its interpolations as text: the same references.
    text = value->get<std::string>();
    if (text.find("${") == std::string::npos) return;
  } else if (value->is_array()) {
    for (auto& item : *value) Resolve(&item, root, where, depth);
    return;
  } else if (!value->is_object()) {
    return;
  } else if (value->size() != 1 || !value->contains(kOmegaConfUnresolved)) {
    for (auto& item : value->items()) Resolve(&item.value(), root, where, depth);
    return;
  } else {
    text = (*value)[kOmegaConfUnresolved].get<std::string>();
  }
  const std::vector<std::string> path = InterpolationPath(text);
  PickleRef node = path.empty() || depth >= 16 ? nullptr : root;
  for (size_t k = 0; node && k < path.size(); ++k) {
    const PickleRef container = PickleOmegaConfContent(node);
    auto it = container->kind == PickleValue::Kind::kDict ? container->string_keys.find(path[k])
                                                          : container->string_keys.end();
    node = it == container->string_keys.end() ? nullptr : container->dict[it->second].second;
  }
  if (node == nullptr) {  // not a path to a value: refused where it is read
    *value = UnresolvedJson(text);
    return;
  }
  nlohmann::json target = PickleToJson(node, where + " (" + text + ")");
  Resolve(&target, root, where, depth + 1);
  *value = std::move(target);
}

}  // namespace

void PickleResolveInterpolations(nlohmann::json* value, const PickleRef& root,
                                 const std::string& where) {
  Resolve(value, root, where, 0);
}

PickleRef PickleOmegaConfContent(const PickleRef& value) {
  if (value->kind != PickleValue::Kind::kObject) return value;
  const char* key = nullptr;
  if (value->type_name == "omegaconf.dictconfig.DictConfig" ||
      value->type_name == "omegaconf.listconfig.ListConfig") {
    key = "_content";
  } else if (value->type_name.compare(0, 16, "omegaconf.nodes.") == 0) {
    key = "_val";
  } else {
    return value;
  }
  const PickleRef inner = StateEntry(*value, key);
  return inner ? PickleOmegaConfContent(inner) : value;
}

nlohmann::json PickleToJson(const PickleRef& value, const std::string& where) {
  using Kind = PickleValue::Kind;
  // omegaconf: a DictConfig / ListConfig is its _content, a value node its _val; metadata is
  // not read. A container or value that is "???" or an interpolation is kept as a marker that
  // PickleCheckResolved refuses where an option is read.
  const bool object = value->kind == Kind::kObject;
  const bool node = object && value->type_name.compare(0, 16, "omegaconf.nodes.") == 0;
  const bool dict = object && value->type_name == "omegaconf.dictconfig.DictConfig";
  const bool list = object && value->type_name == "omegaconf.listconfig.ListConfig";
  if (node || dict || list) {
    const PickleRef inner = StateEntry(*value, node ? "_val" : "_content");
    if (inner == nullptr) {
      throw Error(where + " is a \"" + value->type_name +
                  "\" object without the state omegaconf saves (_content / _val)");
    }
    if (Unresolved(*inner)) return UnresolvedJson(inner->s);
    if (inner->kind == Kind::kNone) return nullptr;
    if ((dict && inner->kind != Kind::kDict) || (list && inner->kind != Kind::kList)) {
      throw Error(where + ": the \"" + value->type_name + "\" holds a " +
                  PickleKindName(inner->kind) + " as its _content");
    }
    return PickleToJson(inner, where);
  }
  switch (value->kind) {
    case Kind::kNone:
      return nullptr;
    case Kind::kBool:
      return value->b;
    case Kind::kInt:
      return value->i;
    case Kind::kFloat:
      return value->f;
    case Kind::kString:
      return value->s;
    case Kind::kTuple:
    case Kind::kList: {
      nlohmann::json out = nlohmann::json::array();
      for (size_t i = 0; i < value->items.size(); ++i)
        out.push_back(PickleToJson(value->items[i], where + "[" + std::to_string(i) + "]"));
      return out;
    }
    case Kind::kDict: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : value->dict) {
        std::string key;
        if (kv.first->kind == Kind::kString) {
          key = kv.first->s;
        } else if (kv.first->kind == Kind::kInt) {
          key = std::to_string(kv.first->i);
        } else {
          throw Error(where + ": a dict key is a " + PickleKindName(kv.first->kind) +
                      ", expected a string or an integer");
        }
        out[key] = PickleToJson(kv.second, where + "." + key);
      }
      return out;
    }
    case Kind::kGlobal:
    case Kind::kStorage:
    case Kind::kTensor:
      break;
    case Kind::kObject:
      throw Error(where + " is a \"" + value->type_name +
                  "\" object (a class not read here; nothing in the file is run), not plain "
                  "data");
  }
  throw Error(where + " is a " + PickleDescribe(*value) + ", not plain data");
}

}  // namespace tern::convert
