// The data-only pickle subset (pickle.h): a stack machine over the opcodes
// torch's Pickler and CPython's protocols 2-4 use for plain data.
#include "harness/diagnose/pickle.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

namespace faultline::diagnose {
namespace {

using nlohmann::json;

class Unpickler {
 public:
  explicit Unpickler(std::string_view b) : b_(b) {}

  Result<json> run() {
    while (pos_ < b_.size()) {
      const size_t at = pos_;
      const auto op = static_cast<unsigned char>(b_[pos_++]);
      if (auto r = step(op, at); !r) return tl::unexpected(r.error());
      if (done_) {
        if (stack_.size() != 1) return bad(at, "STOP with " + std::to_string(stack_.size()) + " values on the stack");
        return std::move(stack_.back().value);
      }
    }
    return bad(pos_, "no STOP before the end of the data");
  }

 private:
  struct Item {
    json value;
    bool mark = false;
    bool tuple = false;  // tuples become arrays, but are immutable in pickle
  };

  Result<void> step(unsigned char op, size_t at) {
    switch (op) {
      case 0x80: return skip(1, at);                       // PROTO
      case 0x95: return skip(8, at);                       // FRAME
      case '.': done_ = true; return {};                   // STOP
      case '(': stack_.push_back({json(), true}); return {};  // MARK
      case '}': return push(json::object());               // EMPTY_DICT
      case ']': return push(json::array());                // EMPTY_LIST
      case ')': return pushTuple(json::array());           // EMPTY_TUPLE
      case 'N': return push(nullptr);                      // NONE
      case 0x88: return push(true);                        // NEWTRUE
      case 0x89: return push(false);                       // NEWFALSE
      case 'K': return pushInt(1, false, at);              // BININT1
      case 'M': return pushInt(2, false, at);              // BININT2
      case 'J': return pushInt(4, true, at);               // BININT
      case 0x8a: return pushLong(at);                      // LONG1
      case 'G': return pushFloat(at);                      // BINFLOAT
      case 'X': return pushString(4, at);                  // BINUNICODE
      case 0x8c: return pushString(1, at);                 // SHORT_BINUNICODE
      case 0x8d: return pushString(8, at);                 // BINUNICODE8
      case 'T': return pushString(4, at);                  // BINSTRING (bytes read as text)
      case 'U': return pushString(1, at);                  // SHORT_BINSTRING
      case 'C': return pushString(1, at);                  // SHORT_BINBYTES
      case 'B': return pushString(4, at);                  // BINBYTES
      case 'q': return memoPut(1, at);                     // BINPUT
      case 'r': return memoPut(4, at);                     // LONG_BINPUT
      case 0x94: return memoize(at);                       // MEMOIZE
      case 'h': return memoGet(1, at);                     // BINGET
      case 'j': return memoGet(4, at);                     // LONG_BINGET
      case 'a': return append(at);                         // APPEND
      case 'e': return appends(at);                        // APPENDS
      case 's': return setitem(at);                        // SETITEM
      case 'u': return setitems(at);                       // SETITEMS
      case 't': return tupleFromMark(at);                  // TUPLE
      case 0x85: return tupleOf(1, at);                    // TUPLE1
      case 0x86: return tupleOf(2, at);                    // TUPLE2
      case 0x87: return tupleOf(3, at);                    // TUPLE3
      case '0': return pop(at);                            // POP
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        return bad(at, std::string("opcode ") + hex + " is not plain data (an object, a tensor or an unknown opcode)");
      }
    }
  }

  tl::unexpected<Error> bad(size_t at, const std::string& what) const {
    return fail(ErrorCode::kBadInput, "pickle at byte " + std::to_string(at) + ": " + what);
  }
  Result<void> need(size_t n, size_t at) const {
    if (b_.size() - pos_ < n) return bad(at, "truncated (needs " + std::to_string(n) + " more bytes)");
    return {};
  }
  uint64_t le(size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(b_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
  Result<void> skip(size_t n, size_t at) {
    if (auto r = need(n, at); !r) return r;
    pos_ += n;
    return {};
  }
  Result<void> push(json v) {
    stack_.push_back({std::move(v)});
    return {};
  }
  Result<void> pushTuple(json v) {
    stack_.push_back({std::move(v), false, true});
    return {};
  }
  Result<void> pushInt(size_t n, bool is_signed, size_t at) {
    if (auto r = need(n, at); !r) return r;
    const uint64_t v = le(n);
    if (is_signed) return push(static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v))));
    return push(static_cast<int64_t>(v));
  }
  Result<void> pushLong(size_t at) {
    if (auto r = need(1, at); !r) return r;
    const size_t n = static_cast<unsigned char>(b_[pos_++]);
    if (n > 8) return bad(at, "LONG1 of " + std::to_string(n) + " bytes does not fit 64 bits");
    if (auto r = need(n, at); !r) return r;
    if (n == 0) return push(int64_t{0});
    uint64_t v = le(n);
    if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign-extend
    return push(static_cast<int64_t>(v));
  }
  Result<void> pushFloat(size_t at) {
    if (auto r = need(8, at); !r) return r;
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<unsigned char>(b_[pos_ + i]);  // big-endian
    pos_ += 8;
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return push(d);
  }
  Result<void> pushString(size_t len_bytes, size_t at) {
    if (auto r = need(len_bytes, at); !r) return r;
    const uint64_t n = le(len_bytes);
    if (auto r = need(n, at); !r) return r;
    std::string s(b_.substr(pos_, n));
    pos_ += n;
    return push(std::move(s));
  }
  Result<void> memoPut(size_t n, size_t at) {
    if (auto r = need(n, at); !r) return r;
    const uint64_t key = le(n);
    if (stack_.empty() || stack_.back().mark) return bad(at, "memo put with nothing to store");
    memo_[key] = stack_.back();
    return {};
  }
  Result<void> memoize(size_t at) {
    if (stack_.empty() || stack_.back().mark) return bad(at, "MEMOIZE with nothing to store");
    memo_[memo_.size()] = stack_.back();
    return {};
  }
  Result<void> memoGet(size_t n, size_t at) {
    if (auto r = need(n, at); !r) return r;
    const uint64_t key = le(n);
    auto it = memo_.find(key);
    if (it == memo_.end()) return bad(at, "memo get of " + std::to_string(key) + ", never put");
    // Only immutable values are shared in the dumps (strings, tuples, None).
    // A dict or list is memoized when still empty and filled afterwards; in
    // pickle a get is that same object, which a copy taken at the put is not,
    // so a get of one is refused rather than read wrong.
    if ((it->second.value.is_object() || it->second.value.is_array()) && !it->second.tuple) {
      return bad(at, "memo get of a shared container");
    }
    stack_.push_back(it->second);
    return {};
  }
  std::optional<size_t> markIndex() const {
    for (size_t i = stack_.size(); i-- > 0;) {
      if (stack_[i].mark) return i;
    }
    return std::nullopt;
  }
  Result<void> append(size_t at) {
    if (stack_.size() < 2 || stack_.back().mark) return bad(at, "APPEND without a list and a value");
    json v = std::move(stack_.back().value);
    stack_.pop_back();
    if (!stack_.back().value.is_array() || stack_.back().tuple) return bad(at, "APPEND to something not a list");
    stack_.back().value.push_back(std::move(v));
    return {};
  }
  Result<void> appends(size_t at) {
    auto m = markIndex();
    if (!m || *m == 0) return bad(at, "APPENDS without a MARK after a list");
    json& list = stack_[*m - 1].value;
    if (!list.is_array() || stack_[*m - 1].tuple) return bad(at, "APPENDS to something not a list");
    for (size_t i = *m + 1; i < stack_.size(); ++i) list.push_back(std::move(stack_[i].value));
    stack_.resize(*m);
    return {};
  }
  static Result<std::string> keyText(const json& k, size_t at) {
    if (k.is_string()) return k.get<std::string>();
    if (k.is_number_integer()) return std::to_string(k.get<int64_t>());
    return fail(ErrorCode::kBadInput, "pickle at byte " + std::to_string(at) + ": a dict key that is not a string or an int");
  }
  Result<void> setitem(size_t at) {
    if (stack_.size() < 3) return bad(at, "SETITEM without a dict, a key and a value");
    json v = std::move(stack_.back().value);
    stack_.pop_back();
    auto k = keyText(stack_.back().value, at);
    if (!k) return tl::unexpected(k.error());
    stack_.pop_back();
    if (!stack_.back().value.is_object()) return bad(at, "SETITEM on something not a dict");
    stack_.back().value[*k] = std::move(v);
    return {};
  }
  Result<void> setitems(size_t at) {
    auto m = markIndex();
    if (!m || *m == 0) return bad(at, "SETITEMS without a MARK after a dict");
    if ((stack_.size() - *m - 1) % 2) return bad(at, "SETITEMS with a key and no value");
    json& dict = stack_[*m - 1].value;
    if (!dict.is_object()) return bad(at, "SETITEMS on something not a dict");
    for (size_t i = *m + 1; i + 1 < stack_.size(); i += 2) {
      auto k = keyText(stack_[i].value, at);
      if (!k) return tl::unexpected(k.error());
      dict[*k] = std::move(stack_[i + 1].value);
    }
    stack_.resize(*m);
    return {};
  }
  Result<void> tupleFromMark(size_t at) {
    auto m = markIndex();
    if (!m) return bad(at, "TUPLE without a MARK");
    json t = json::array();
    for (size_t i = *m + 1; i < stack_.size(); ++i) t.push_back(std::move(stack_[i].value));
    stack_.resize(*m);
    return pushTuple(std::move(t));
  }
  Result<void> tupleOf(size_t n, size_t at) {
    if (stack_.size() < n) return bad(at, "TUPLE" + std::to_string(n) + " with fewer values on the stack");
    json t = json::array();
    for (size_t i = stack_.size() - n; i < stack_.size(); ++i) {
      if (stack_[i].mark) return bad(at, "TUPLE" + std::to_string(n) + " over a MARK");
      t.push_back(std::move(stack_[i].value));
    }
    stack_.resize(stack_.size() - n);
    return pushTuple(std::move(t));
  }
  Result<void> pop(size_t at) {
    if (stack_.empty()) return bad(at, "POP of an empty stack");
    stack_.pop_back();
    return {};
  }

  std::string_view b_;
  size_t pos_ = 0;
  bool done_ = false;
  std::vector<Item> stack_;
  std::map<uint64_t, Item> memo_;
};

}  // namespace

Result<nlohmann::json> unpickle(std::string_view bytes) { return Unpickler(bytes).run(); }

}  // namespace faultline::diagnose
