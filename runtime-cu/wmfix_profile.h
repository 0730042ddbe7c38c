// wmfix runtime: chip profiles (the host library's, wmfix_plan.h): the stress variants a profile
// sets and the parser of its TOML subset. Host code only; README.md, "Chip profiles", describes
// the format.
#ifndef WMFIX_PROFILE_H_INCLUDED
#define WMFIX_PROFILE_H_INCLUDED

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "wmfix_common.cuh"

namespace wmfix {
namespace host {

// One stress variant of a profile: what stressing threads do and on how many locations.
struct Variant {
  std::string sequence = "ld st st ld";    // access sequence (Sec. 3.3)
  unsigned seq_bits = 0x6;                 // bit i set = access i is a store
  unsigned seq_len = 4;
  unsigned spread = 2;                     // locations stressed at once (Sec. 3.4)
};

// Each launch uses one of the variants, picked at random: no single sequence and spread
// exposes every kind of bug.
struct Profile {
  unsigned patch_size = 64;                // words per patch (Sec. 3.2 of the paper)
  std::vector<Variant> variants = std::vector<Variant>(1);  // 1..kMaxVariants
};

inline std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// Text splitting as std::getline and `>>` do it (kept from when every instrumented translation
// unit included this parser, and <sstream> cost each of them half a second).

// `text` cut at each `sep`, as std::getline reads it: no empty last item after a final `sep`.
inline std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> items;
  size_t from = 0;
  while (from < text.size()) {
    size_t at = text.find(sep, from);
    if (at == std::string::npos) at = text.size();
    items.push_back(text.substr(from, at - from));
    from = at + 1;
  }
  return items;
}

// The words of `text` between spaces, tabs and line ends, as `stream >> word` reads them.
inline std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  const char* ws = " \t\r\n\v\f";
  size_t from = text.find_first_not_of(ws);
  while (from != std::string::npos) {
    const size_t end = text.find_first_of(ws, from);
    out.push_back(text.substr(from, end == std::string::npos ? std::string::npos : end - from));
    from = end == std::string::npos ? end : text.find_first_not_of(ws, end);
  }
  return out;
}

// Whole-string unsigned integer (decimal, or hex with 0x). No sign, no trailing junk.
inline bool parse_u64(const std::string& text, unsigned long long* out) {
  const std::string s = trim(text);
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (errno != 0 || end == s.c_str() || *end != '\0') return false;
  *out = v;
  return true;
}

// "ld st st ld", also "ld3 st" for ld ld ld st (the paper's ld^3 notation). `what` names the
// value in messages ("sequence", or "sequence[1]" for an array's element).
inline bool parse_sequence(const std::string& text, Variant* v, std::string* err, const std::string& what = "sequence") {
  unsigned bits = 0, len = 0;
  for (const std::string& w : words(text)) {
    const bool store = w.compare(0, 2, "st") == 0;
    if (!store && w.compare(0, 2, "ld") != 0) {
      *err = what + ": unknown access \"" + w + "\" (use ld and st, optionally with a count: ld3)";
      return false;
    }
    unsigned long long count = 1;
    if (w.size() > 2 && (!parse_u64(w.substr(2), &count) || count == 0)) {
      *err = what + ": bad count in \"" + w + "\"";
      return false;
    }
    for (unsigned long long i = 0; i < count; ++i) {
      if (len == kMaxSeqLen) {
        *err = what + " longer than " + std::to_string(kMaxSeqLen) + " accesses";
        return false;
      }
      if (store) bits |= 1U << len;
      ++len;
    }
  }
  if (len == 0) {
    *err = what + " is empty";
    return false;
  }
  v->sequence = trim(text);
  v->seq_bits = bits;
  v->seq_len = len;
  return true;
}

inline bool is_quoted(const std::string& value) {
  return value.size() >= 2 && value.front() == '"' && value.back() == '"';
}

// The elements of a one-line array ("[a, b]", strings keep their quotes; one trailing comma is
// allowed, as in TOML), or the value itself when it is not an array.
inline bool split_items(const std::string& value, std::vector<std::string>* items, std::string* err) {
  items->clear();
  if (value.empty() || value[0] != '[') {
    items->push_back(value);
    return true;
  }
  bool in_str = false;
  std::string cur;
  size_t i = 1;
  for (; i < value.size(); ++i) {
    const char c = value[i];
    if (c == '"') in_str = !in_str;
    if (in_str || (c != ',' && c != ']')) {
      cur += c;
      continue;
    }
    items->push_back(trim(cur));
    cur.clear();
    if (c == ']') break;
  }
  if (i == value.size()) {
    *err = "unclosed [ (an array is written on one line: [a, b])";
    return false;
  }
  if (i + 1 != value.size()) {
    *err = "unexpected text after ]: \"" + value.substr(i + 1) + "\"";
    return false;
  }
  if (items->size() > 1 && items->back().empty()) items->pop_back();
  if (items->size() == 1 && items->front().empty()) {
    *err = "empty array (give at least one value)";
    return false;
  }
  for (size_t k = 0; k < items->size(); ++k)
    if ((*items)[k].empty()) {
      *err = "element " + std::to_string(k) + " of the array is empty";
      return false;
    }
  if (items->size() > kMaxVariants) {
    *err = std::to_string(items->size()) + " values: at most " + std::to_string(kMaxVariants) + " variants";
    return false;
  }
  return true;
}

// One spread value (a scalar or an array's element named `what`).
inline bool parse_spread(const std::string& item, unsigned* out, std::string* err, const std::string& what) {
  unsigned long long n = 0;
  if (is_quoted(item) || !parse_u64(item, &n)) {
    *err = what + " must be an integer";
    return false;
  }
  if (n < 1 || n > kMaxSpread) {
    *err = what + " must be in 1.." + std::to_string(kMaxSpread);
    return false;
  }
  *out = (unsigned)n;
  return true;
}

// The values of a `sequence` or `spread` line: a scalar, or an array of 1..kMaxVariants.
inline bool parse_variant_values(const std::string& key, const std::string& value, std::vector<Variant>* out,
                                 std::string* err) {
  std::vector<std::string> items;
  if (!split_items(value, &items, err)) {
    *err = key + ": " + *err;
    return false;
  }
  out->assign(items.size(), Variant{});
  for (size_t k = 0; k < items.size(); ++k) {
    const std::string what = value[0] == '[' ? key + "[" + std::to_string(k) + "]" : key;
    const std::string& item = items[k];
    if (key == "spread") {
      if (!parse_spread(item, &(*out)[k].spread, err, what)) return false;
    } else if (!is_quoted(item)) {
      *err = what + " must be a quoted string, e.g. \"ld st st ld\"";
      return false;
    } else if (!parse_sequence(item.substr(1, item.size() - 2), &(*out)[k], err, what)) {
      return false;
    }
  }
  return true;
}

// The profile's variants from its `sequence` and `spread` values (a missing key keeps p's): one
// value applies to every variant; two arrays longer than 1 must have the same length.
inline bool combine_variants(const std::vector<Variant>* seqs, int seq_line, const std::vector<Variant>* spreads,
                             int spread_line, Profile* p, std::string* err) {
  const std::vector<Variant> old = p->variants;
  const std::vector<Variant>& sq = seqs ? *seqs : old;
  const std::vector<Variant>& sp = spreads ? *spreads : old;
  if (sq.size() > 1 && sp.size() > 1 && sq.size() != sp.size()) {
    *err = "line " + std::to_string(std::max(seq_line, spread_line)) + ": sequence has " + std::to_string(sq.size()) +
           " values but spread has " + std::to_string(sp.size()) +
           " (give both the same number, or one value for every variant)";
    return false;
  }
  const size_t n = std::max(sq.size(), sp.size());
  p->variants.assign(n, Variant{});
  for (size_t k = 0; k < n; ++k) {
    p->variants[k] = sq[sq.size() == 1 ? 0 : k];
    p->variants[k].spread = sp[sp.size() == 1 ? 0 : k].spread;
  }
  return true;
}

// The TOML subset of chip profiles: `key = value` lines, `#` comments, integers and "strings".
// Keys: patch_size, sequence, spread (each of the last two a value or a one-line array of them:
// the profile's variants); `name` and `description` are accepted and ignored.
inline bool parse_profile_text(const std::string& text, Profile* p, std::string* err) {
  int lineno = 0, seq_line = 0, spread_line = 0;
  std::vector<Variant> seqs, spreads;
  for (std::string line : split(text, '\n')) {
    ++lineno;
    const std::string where = "line " + std::to_string(lineno) + ": ";
    // Cut a comment that is not inside a string.
    bool in_str = false;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '"') in_str = !in_str;
      if (line[i] == '#' && !in_str) {
        line.resize(i);
        break;
      }
    }
    line = trim(line);
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      *err = where + "expected key = value";
      return false;
    }
    const std::string key = trim(line.substr(0, eq));
    const std::string value = trim(line.substr(eq + 1));
    unsigned long long n = 0;
    if (key == "patch_size") {
      if (is_quoted(value) || !parse_u64(value, &n)) {
        *err = where + "patch_size must be an integer" + (value[0] == '[' ? " (one for the chip, not an array)" : "");
        return false;
      }
      if (n < 1 || n > (1U << 20)) {
        *err = where + "patch_size must be in 1..1048576";
        return false;
      }
      p->patch_size = (unsigned)n;
    } else if (key == "sequence" || key == "spread") {
      std::string e;
      if (!parse_variant_values(key, value, key == "sequence" ? &seqs : &spreads, &e)) {
        *err = where + e;
        return false;
      }
      (key == "sequence" ? seq_line : spread_line) = lineno;
    } else if (key == "name" || key == "description") {
      if (!is_quoted(value)) {
        *err = where + key + " must be a quoted string";
        return false;
      }
    } else {
      *err = where + "unknown key \"" + key + "\" (known: patch_size, sequence, spread, name, description)";
      return false;
    }
  }
  return combine_variants(seq_line ? &seqs : nullptr, seq_line, spread_line ? &spreads : nullptr, spread_line, p, err);
}

// The profile's stress: "sequence=\"ld st st ld\" spread=2", or with several variants
// "2 variants, one per launch: [0] sequence=... spread=5, [1] ...".
inline std::string describe_variants(const Profile& p) {
  std::string out = p.variants.size() == 1 ? "" : std::to_string(p.variants.size()) + " variants, one per launch: ";
  for (size_t k = 0; k < p.variants.size(); ++k) {
    if (p.variants.size() > 1) out += (k ? ", [" : "[") + std::to_string(k) + "] ";
    out += "sequence=\"" + p.variants[k].sequence + "\" spread=" + std::to_string(p.variants[k].spread);
  }
  return out;
}

}  // namespace host
}  // namespace wmfix

#endif  // WMFIX_PROFILE_H_INCLUDED
