// The tree read into `flat.rs`'s entries in one pass over tree-sitter's subtrees, giving the
// nodes, fields and kinds its tree cursor gives. The cursor redoes work at every step (each move
// to a sibling restarts its parent's child iterator; each field id walks back up the stack), and
// was the matcher's largest cost. Built against the internal headers of the one tree-sitter
// version Cargo.toml pins; flat.rs's tests compare every entry with the cursor's.

#include <stdlib.h>

#include "./language.h"
#include "./length.h"
#include "./subtree.h"
#include "./tree.h"
#include "tree_sitter/api.h"

// flat.rs's `Entry`, field for field.
typedef struct {
  TSNode node;
  uint32_t end;
  uint16_t kind;
  uint16_t field;
  bool named;
  bool error;
} WmfixEntry;

_Static_assert(sizeof(WmfixEntry) == 48, "flat.rs's Entry is 48 bytes");

// A subtree whose children are being read: a visible node's, or a hidden node's between it and
// its visible children.
typedef struct {
  Subtree parent;
  // Where the next child starts.
  Length position;
  uint32_t child_index;
  uint32_t structural_child_index;
  const TSSymbol *aliases;
  const TSFieldMapEntry *fields;
  const TSFieldMapEntry *fields_end;
  // The field of this subtree in the ones above it, for its visible descendants that have
  // none of their own (0 for a visible node's children).
  TSFieldId inherited;
  // How many visible levels below the root its visible children are.
  uint32_t depth;
  // The entry this frame reads the subtree of; -1 for a hidden node.
  int64_t entry;
} Frame;

static Frame frame(const TSLanguage *language, Subtree parent, Length position,
                   TSFieldId inherited, uint32_t depth, int64_t entry) {
  uint16_t production = ts_subtree_production_id(parent);
  Frame f = {
      .parent = parent,
      .position = position,
      .aliases = ts_language_alias_sequence(language, production),
      .inherited = inherited,
      .depth = depth,
      .entry = entry,
  };
  ts_language_field_map(language, production, &f.fields, &f.fields_end);
  return f;
}

static WmfixEntry entry(const TSTree *tree, const Subtree *subtree, Length position,
                        TSSymbol alias, TSFieldId field) {
  TSNode node = ts_node_new(tree, subtree, position, alias);
  TSSymbol kind = ts_node_symbol(node);
  bool error = kind == ts_builtin_sym_error;
  return (WmfixEntry){
      .node = node,
      .end = 0,
      .kind = kind,
      .field = field,
      .named = error || ts_language_symbol_type(tree->language, kind) == TSSymbolTypeRegular,
      .error = error,
  };
}

// Writes `root` and its visible descendants down to `max_depth` levels below it into `out`, in
// pre-order, each with the index after its subtree; gives how many were written, or -1 where
// `capacity` entries were not enough or memory ran out.
int64_t wmfix_flat(TSNode root, uint32_t max_depth, WmfixEntry *out, uint64_t capacity) {
  if (capacity == 0) return -1;
  const TSTree *tree = root.tree;
  const TSLanguage *language = tree->language;
  const Subtree *top = (const Subtree *)root.id;
  Length start = {root.context[0], {root.context[1], root.context[2]}};
  out[0] = entry(tree, top, start, ts_subtree_extra(*top) ? 0 : root.context[3], 0);
  uint64_t n = 1;

  size_t size = 0, room = 64;
  Frame *stack = malloc(room * sizeof(Frame));
  if (!stack) return -1;
  if (ts_subtree_child_count(*top) > 0 && max_depth >= 1) {
    stack[size++] = frame(language, *top, start, 0, 1, 0);
  } else {
    out[0].end = 1;
  }
  while (size > 0) {
    Frame *f = &stack[size - 1];
    uint32_t count = f->parent.ptr->child_count;
    if (f->child_index == count) {
      if (f->entry >= 0) out[f->entry].end = (uint32_t)n;
      size--;
      continue;
    }
    const Subtree *children = ts_subtree_children(f->parent);
    const Subtree *child = &children[f->child_index];
    Length position = f->position;
    bool extra = ts_subtree_extra(*child);
    bool visible = ts_subtree_visible(*child);
    TSSymbol alias = 0;
    TSFieldId field = 0;
    if (!extra) {
      uint32_t structural = f->structural_child_index++;
      if (f->aliases) {
        alias = f->aliases[structural];
        visible |= alias != 0;
      }
      field = f->inherited;
      for (const TSFieldMapEntry *m = f->fields; m < f->fields_end; m++) {
        if (!m->inherited && m->child_index == structural) {
          field = m->field_id;
          break;
        }
      }
    }
    f->position = length_add(position, ts_subtree_size(*child));
    f->child_index++;
    if (f->child_index < count) {
      f->position = length_add(f->position, ts_subtree_padding(children[f->child_index]));
    }
    uint32_t depth = f->depth;
    bool deeper = ts_subtree_child_count(*child) > 0;
    Frame next;
    if (visible) {
      if (n == capacity) {
        free(stack);
        return -1;
      }
      out[n] = entry(tree, child, position, alias, field);
      if (deeper && depth + 1 <= max_depth) {
        next = frame(language, *child, position, 0, depth + 1, (int64_t)n);
      } else {
        out[n].end = (uint32_t)(n + 1);
        deeper = false;
      }
      n++;
    } else if (deeper && ts_subtree_visible_child_count(*child) > 0) {
      next = frame(language, *child, position, field, depth, -1);
    } else {
      deeper = false;
    }
    if (!deeper) continue;
    if (size == room) {
      room *= 2;
      Frame *grown = realloc(stack, room * sizeof(Frame));
      if (!grown) {
        free(stack);
        return -1;
      }
      stack = grown;
    }
    stack[size++] = next;
  }
  free(stack);
  return (int64_t)n;
}
