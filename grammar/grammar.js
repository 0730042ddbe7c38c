// The CUDA grammar wmfix parses with: tree-sitter-cuda 0.21.2 (its generated src/grammar.json,
// `base.json`, fetched by scripts/grammar.sh) with the rules below, each for a construct of CUDA
// library code (CCCL, cuCollections, stdgpu) that the base grammar cannot parse. Node kinds stay
// those of tree-sitter-cuda: the queries in queries/ see the same trees where both parse.
// Regenerate grammar/src with scripts/grammar.sh after a change here.
const base = require('./base.json');

// `rule` with every part for which `match` holds replaced by `f(part)`.
function rewrite(rule, match, f) {
  if (match(rule)) return f(rule);
  if (Array.isArray(rule)) return rule.map((r) => rewrite(r, match, f));
  if (rule && typeof rule === 'object') {
    return Object.fromEntries(Object.entries(rule).map(([k, v]) => [k, rewrite(v, match, f)]));
  }
  return rule;
}
const isSymbol = (name) => (r) => r && r.type === 'SYMBOL' && r.name === name;
const isString = (value) => (r) => r && r.type === 'STRING' && r.value === value;

module.exports = grammar({ grammar: base }, {
  name: 'cuda',
  conflicts: ($, original) => original.concat([
    [$.type_specifier, $._typename_class],
    [$._class_name, $._typename_class],
    [$._declarator, $.call_expression],
    [$.qualified_identifier, $.operator_template],
    [$.type_specifier, $.argument_list],
  ]),
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
      field('declarator', optional(choice($._declarator, $._optional_parameter_abstract))),
      '=',
      field('default_value', choice($.expression, $.initializer_list)),
    ),
    // An unnamed pointer parameter with a default, the SFINAE form:
    // `std::enable_if_t<C>* = nullptr`, `void* = nullptr`.
    _optional_parameter_abstract: ($) => choice(
      $.abstract_pointer_declarator,
      $.abstract_reference_declarator,
    ),
    // A pointer default type argument: `typename P = void*`, `typename It = T*`.
    optional_type_parameter_declaration: ($) => seq(
      choice('typename', 'class'),
      optional(field('name', $._type_identifier)),
      '=',
      field('default_type', $.type_descriptor),
    ),
    // A temporary of a dependent type or of a `decltype`: `typename T::U{}`, `typename T::U(x)`,
    // `decltype(x){1}`; of a type of several words, `unsigned{x}`.
    compound_literal_expression: ($, original) => choice(
      original,
      seq(
        field('type', choice(
          alias($._typename_class, $.dependent_type),
          $.decltype,
          $.sized_type_specifier,
        )),
        field('value', $.initializer_list),
      ),
    ),
    _typename_class: ($) => seq(
      'typename',
      alias($.qualified_type_identifier, $.qualified_identifier),
    ),
    // A base class named by `decltype`: `struct S : decltype(f<T>(0)) {}`.
    base_class_clause: ($, original) =>
      rewrite(original, isSymbol('_class_name'), (r) => choice(r, $.decltype)),
    // `>=` inside a template argument list (`enable_if_t<N >= 32, bool>`): above the `>` that
    // closes the list, which the base grammar lexes first (over `>>`).
    binary_expression: ($, original) =>
      rewrite(original, isString('>='), () => token(prec(2, '>='))),
    // `using typename Base::T;` and a pack of bases' members: `using Bases::operator()...;`.
    using_declaration: ($) => seq(
      repeat($.attribute_declaration),
      'using',
      optional(choice('namespace', 'enum', 'typename')),
      choice($.identifier, $.qualified_identifier, $.splice_type_specifier),
      optional('...'),
      ';',
    ),
    // A pack of pointers: `const T*... p`, `const auto* __restrict__... p`.
    variadic_parameter_declaration: ($) => seq(
      $._declaration_specifiers,
      field('declarator', choice(
        $.variadic_declarator,
        alias($.variadic_reference_declarator, $.reference_declarator),
        alias($.variadic_pointer_declarator, $.pointer_declarator),
      )),
    ),
    variadic_pointer_declarator: ($) => seq('*', repeat($.type_qualifier), $.variadic_declarator),

    // Issue 45: constructs of public CUDA code beyond CCCL (cuDF, RAFT, cuVS, CUTLASS, FAISS,
    // MatX, Ginkgo).
    // A type keyword as a macro's argument: `SELECT_IMPL(float, true, 1, 1);`, `DEF(int, float)`.
    argument_list: ($, original) => rewrite(original, isSymbol('initializer_list'),
      (r) => choice(r, prec.dynamic(-1, $.primitive_type), prec.dynamic(-1, $.sized_type_specifier))),
    // A temporary of a dependent type (`typename T::U(x)`); a functional cast to a type of
    // several words (`(unsigned(x) << 2)`, which the base grammar reads as a C cast's start); a
    // call of an operator by its name (`operator++();`, `operator()<T>(a, b);`).
    call_expression: ($, original) => choice(
      original,
      prec.dynamic(1, seq(
        field('function', alias($._typename_class, $.dependent_type)),
        field('arguments', $.argument_list),
      )),
      seq(field('function', $.sized_type_specifier), field('arguments', $.argument_list)),
      seq(
        field('function', $.operator_name),
        optional(field('template_arguments', $.template_argument_list)),
        field('arguments', $.argument_list),
      ),
    ),
    // `= delete;` (and `= default;`) on a function that is not a member, or a member template:
    // `template <class T> void swap(T&, T&) = delete;`.
    function_definition: ($, original) => rewrite(original, isSymbol('try_statement'),
      (r) => choice(r, $.delete_method_clause, $.default_method_clause)),
    // An unnamed enumeration with a base (`enum : uint32_t { A };`) and attributes after
    // `enum class` (`enum class [[nodiscard]] E : int32_t {`).
    enum_specifier: ($) => prec.right(seq(
      'enum',
      optional(seq(choice('class', 'struct'), repeat($.attribute_declaration))),
      choice(
        seq(
          field('name', $._class_name),
          optional($._enum_base_clause),
          optional(field('body', $.enumerator_list)),
        ),
        seq(optional($._enum_base_clause), field('body', $.enumerator_list)),
      ),
      optional($.attribute_specifier),
    )),
    // A restrict qualifier after `&`: `T& __restrict__ x`.
    reference_declarator: ($) => prec.dynamic(1, prec.right(seq(
      choice('&', '&&'),
      optional(choice('__restrict__', '__restrict', 'restrict')),
      $._declarator,
    ))),
    // A macro between a lambda's introducer and its parameters: `[] KERNEL(auto i) {...}`. Its
    // introducer without the base's precedence, which would read `delete[] p` as a lambda's.
    lambda_expression: ($, original) => choice(original, seq(
      field('captures', alias($._macro_lambda_captures, $.lambda_capture_specifier)),
      alias($.identifier, $.lambda_specifier),
      field('declarator', $.lambda_declarator),
      field('body', $.compound_statement),
    )),
    _macro_lambda_captures: () => prec(-1, base.rules.lambda_capture_specifier.content),
    // A macro that stands for a template parameter: `template <typename T, ENABLE_IF(f<T>())>`.
    template_parameter_list: ($, original) => rewrite(original,
      isSymbol('template_template_parameter_declaration'),
      (r) => choice(r, prec.dynamic(-1, alias($._macro_call, $.call_expression)))),
    _macro_call: ($) => seq(field('function', $.identifier), field('arguments', $.argument_list)),
    // An explicit specialization of an operator template: `template <> R C::operator()<T>(...)`.
    qualified_identifier: ($, original) => rewrite(original, isSymbol('operator_name'),
      (r) => choice(r, alias($.operator_template, $.template_function))),
    operator_template: ($) => seq(
      field('name', $.operator_name),
      field('arguments', $.template_argument_list),
    ),
  },
});
