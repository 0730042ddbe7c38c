// The CUDA grammar wmfix parses with: tree-sitter-cuda 0.21.2 (its generated src/grammar.json,
// `base.json`, fetched by scripts/grammar.sh) with the rules below, each for a construct of CUDA
// library code (CCCL, cuCollections, stdgpu) that the base grammar cannot parse. Node kinds stay
// those of tree-sitter-cuda: the queries in queries/ see the same trees where both parse.
// Regenerate grammar/src with scripts/grammar.sh after a change here.
const base = require('./base.json');

module.exports = grammar({ grammar: base }, {
  name: 'cuda',
  rules: {
    // Specifiers before `friend`: `[[nodiscard]] __host__ __device__ friend constexpr bool
    // operator==(...)`. A member declaration whose specifiers include `friend`; the lower
    // precedence leaves `friend` first to friend_declaration, as before.
    _declaration_modifiers: (_, original) => choice(original, prec(-1, 'friend')),
    // Without its `constexpr` prefix, which the specifiers above now take.
    friend_declaration: ($) => seq(
      'friend',
      choice(
        $.declaration,
        $.function_definition,
        seq(optional(choice('class', 'struct', 'union')), $._class_name, ';'),
      ),
    ),
    // A braced default argument: `const Env& env = {}`.
    optional_parameter_declaration: ($) => seq(
      $._declaration_specifiers,
      field('declarator', optional(choice($._declarator, $.abstract_reference_declarator))),
      '=',
      field('default_value', choice($.expression, $.initializer_list)),
    ),
  },
});
