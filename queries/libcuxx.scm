; libcu++'s atomics (`cuda::atomic_ref<T, S>`, `cuda::atomic<T, S>`) in device code: each of their
; operations is an atomic access, so that the fence site after it names it (a race build traces
; the operation itself, runtime-cu/wmfix_race.cuh, without knowing where it stands). Rust
; (src/rewrite/libcuxx.rs) keeps those whose receiver is one: a variable or parameter whose type
; is one (an alias's too: `using block_ref = cuda::atomic_ref<...>`), or a temporary
; (`cuda::atomic_ref<...>(x)`, @libcuxx.temp in accesses.scm).

; An operation by name, on any receiver: only those the race build traces.
((call_expression
   function: (field_expression argument: (_) @libcuxx.receiver operator: "."
     field: (field_identifier) @_libcuxx.method)) @libcuxx.op
  (#any-of? @_libcuxx.method "load" "store" "exchange" "fetch_add" "fetch_sub" "fetch_and"
   "fetch_or" "fetch_xor" "fetch_min" "fetch_max" "compare_exchange_strong"
   "compare_exchange_weak"))
; The same through a pointer to one (`p->load()`): the pointer is @libcuxx.pointer.
((call_expression
   function: (field_expression argument: (_) @libcuxx.pointer operator: "->"
     field: (field_identifier) @_libcuxx.method)) @libcuxx.op
  (#any-of? @_libcuxx.method "load" "store" "exchange" "fetch_add" "fetch_sub" "fetch_and"
   "fetch_or" "fetch_xor" "fetch_min" "fetch_max" "compare_exchange_strong"
   "compare_exchange_weak"))
; Its operators on a name, an element (`a[i]`, `*p`) or a member (`q->count`): `flag = 1` (a
; store), `c += 2`, `++c` (read-modify-writes), and the conversion that loads (`flag == 0`,
; `!flag`, `while (flag)`, `x = flag`).
(assignment_expression
  left: [(identifier) (subscript_expression) (pointer_expression) (field_expression)] @libcuxx.operand)
(assignment_expression
  right: [(identifier) (subscript_expression) (pointer_expression) (field_expression)] @libcuxx.operand)
(update_expression
  argument: [(identifier) (subscript_expression) (pointer_expression) (field_expression)] @libcuxx.operand)
(binary_expression
  left: [(identifier) (subscript_expression) (pointer_expression) (field_expression)] @libcuxx.operand)
(binary_expression
  right: [(identifier) (subscript_expression) (pointer_expression) (field_expression)] @libcuxx.operand)
(unary_expression
  argument: [(identifier) (subscript_expression) (pointer_expression) (field_expression)] @libcuxx.operand)
(condition_clause
  value: [(identifier) (subscript_expression) (pointer_expression) (field_expression)] @libcuxx.operand)
; A call's argument (`peek(a[0])`): an atomic there is bound to a reference parameter (or loaded
; by its conversion), never read as plain memory.
(argument_list
  [(identifier) (subscript_expression) (pointer_expression) (field_expression)] @libcuxx.argument)

; Declarations whose type may be one (the `type` field: a qualified name libcu++'s names are,
; thread_ids.scm's @libcuxx.ref/@libcuxx.name, or an alias's name), and the aliases themselves.
(declaration type: [(qualified_identifier) (type_identifier)]) @libcuxx.typed
(parameter_declaration type: [(qualified_identifier) (type_identifier)]) @libcuxx.typed
(alias_declaration type: (type_descriptor type: [(qualified_identifier) (type_identifier)]))
  @libcuxx.alias
(type_definition type: [(qualified_identifier) (type_identifier)]) @libcuxx.alias
; `auto r = cuda::atomic_ref<int, S>(x);` (the value an atomic_ref temporary: accesses.scm's
; @libcuxx.temp): the init declarator.
(declaration type: (placeholder_type_specifier)
  declarator: (init_declarator declarator: (identifier) value: (_)) @libcuxx.auto)
; Their pointers and arrays (`cuda::atomic<int> *p`, `a[4]`): `p = q` is no atomic's operation.
(declaration type: [(qualified_identifier) (type_identifier)]
  declarator: [(pointer_declarator) (array_declarator)
               (init_declarator declarator: [(pointer_declarator) (array_declarator)])]
  @libcuxx.indirect)
(parameter_declaration type: [(qualified_identifier) (type_identifier)]
  declarator: [(pointer_declarator) (array_declarator)] @libcuxx.indirect)
; Members of a libcu++ atomic type (`struct Queue { cuda::atomic<int, S> head; }`), and every
; member's declarator: a name some other member has with another type is not taken as one.
(field_declaration type: [(qualified_identifier) (type_identifier)]
  declarator: (field_identifier) @libcuxx.member)
(field_declaration declarator: (_) @libcuxx.field)
