#include "sources/json_value.hpp"

#include "facts/utf8.hpp"

#include <cstdint>

namespace shmbpf {

const JsonValue *JsonValue::get(std::string_view key) const {
  const JsonValue *found = nullptr;
  for (const JsonMember &m : members)
    if (m.key == key)
      found = &m.value;
  return found;
}

std::string_view JsonValue::str(std::string_view key) const {
  const JsonValue *v = get(key);
  return v && v->type == Type::string ? std::string_view(v->text) : std::string_view();
}

namespace {

class Parser {
public:
  explicit Parser(std::string_view s) : s_(s) {}

  std::optional<JsonValue> document() {
    JsonValue v;
    if (!value(v, 0))
      return std::nullopt;
    skip_space();
    if (i_ != s_.size())
      return std::nullopt;
    return v;
  }

private:
  std::string_view s_;
  size_t i_ = 0;

  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }

  bool eat(char c) {
    skip_space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }

  bool literal(std::string_view word, JsonValue::Type type, JsonValue &out) {
    if (s_.substr(i_, word.size()) != word)
      return false;
    i_ += word.size();
    out.type = type;
    out.text = word;
    return true;
  }

  bool value(JsonValue &out, size_t depth) {
    if (depth >= kJsonMaxDepth)
      return false;
    skip_space();
    if (i_ >= s_.size())
      return false;
    switch (s_[i_]) {
    case '{':
      return object(out, depth);
    case '[':
      return array(out, depth);
    case '"':
      out.type = JsonValue::Type::string;
      return string(out.text);
    case 't':
      return literal("true", JsonValue::Type::boolean, out);
    case 'f':
      return literal("false", JsonValue::Type::boolean, out);
    case 'n':
      return literal("null", JsonValue::Type::null, out);
    default:
      return number(out);
    }
  }

  bool object(JsonValue &out, size_t depth) {
    out.type = JsonValue::Type::object;
    ++i_; // '{'
    if (eat('}'))
      return true;
    do {
      skip_space();
      std::string key;
      if (i_ >= s_.size() || s_[i_] != '"' || !string(key) || !eat(':'))
        return false;
      JsonValue v;
      if (!value(v, depth + 1))
        return false;
      out.members.push_back(JsonMember{std::move(key), std::move(v)});
    } while (eat(','));
    return eat('}');
  }

  bool array(JsonValue &out, size_t depth) {
    out.type = JsonValue::Type::array;
    ++i_; // '['
    if (eat(']'))
      return true;
    do {
      JsonValue v;
      if (!value(v, depth + 1))
        return false;
      out.items.push_back(std::move(v));
    } while (eat(','));
    return eat(']');
  }

  bool number(JsonValue &out) {
    const size_t start = i_;
    auto digits = [&] {
      size_t n = 0;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9')
        ++i_, ++n;
      return n;
    };
    if (i_ < s_.size() && s_[i_] == '-')
      ++i_;
    if (digits() == 0)
      return false;
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (digits() == 0)
        return false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-'))
        ++i_;
      if (digits() == 0)
        return false;
    }
    out.type = JsonValue::Type::number;
    out.text = s_.substr(start, i_ - start);
    return true;
  }

  bool hex4(uint32_t &cp) {
    if (s_.size() - i_ < 4)
      return false;
    cp = 0;
    for (int k = 0; k < 4; ++k) {
      char c = s_[i_++];
      cp <<= 4;
      if (c >= '0' && c <= '9')
        cp |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        cp |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        cp |= static_cast<uint32_t>(c - 'A' + 10);
      else
        return false;
    }
    return true;
  }

  // Escapes are decoded; a lone surrogate becomes U+FFFD. Raw bytes are
  // kept as they are: invalid UTF-8 is the views' escaping rule's business.
  bool string(std::string &out) {
    ++i_; // '"'
    while (i_ < s_.size()) {
      char c = s_[i_++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20)
        return false;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size())
        return false;
      switch (s_[i_++]) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp = 0;
        if (!hex4(cp))
          return false;
        if (cp >= 0xd800 && cp < 0xdc00 && s_.substr(i_, 2) == "\\u") {
          const size_t save = i_;
          i_ += 2;
          uint32_t lo = 0;
          if (hex4(lo) && lo >= 0xdc00 && lo < 0xe000)
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          else
            i_ = save;
        }
        if (cp >= 0xd800 && cp < 0xe000)
          cp = 0xfffd;
        append_utf8(out, static_cast<char32_t>(cp));
        break;
      }
      default:
        return false;
      }
    }
    return false;
  }
};

} // namespace

std::optional<JsonValue> parse_json(std::string_view text) {
  if (text.size() > kJsonMaxBytes)
    return std::nullopt;
  return Parser(text).document();
}

} // namespace shmbpf
