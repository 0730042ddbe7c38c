; Expressions that may read or write global memory.
(subscript_expression) @access
(pointer_expression operator: "*") @access
(field_expression operator: "->") @access
; The range of a range `for` when it names an array (a __device__ one, or a __shared__ or
; local one, which the base finds): each pass reads an element.
(for_range_loop right: (identifier) @access)

; Atomics, and the explicit cache-operator loads/stores (__ldg, __ldcg, __stcg, ...), which
; fences.json counts as load/store calls (`call`).
((call_expression function: (identifier) @access.atomic.name) @access.atomic
  (#match? @access.atomic.name "^atomic[A-Z]"))
((call_expression function: (identifier) @access.cached.name) @access.cached
  (#match? @access.cached.name "^__(ld|st)(g|cg|ca|cs|cv|lu|wb|wt)$"))
; A store through a reference a call returns (`at(t, i) = v`, `v.at(i) += 1`, `++slot(k)`):
; the memory is the callee's to know, so it may be global.
(assignment_expression left: (call_expression) @access.ref)
(update_expression argument: (call_expression) @access.ref)
; CUB's documented cache-modified and strong loads and stores take the address first, like
; __stcg, and hide the access in inline PTX of macro-generated overloads where no fence can go:
; `ThreadStore<STORE_CG>(p, v)`, `cub::ThreadLoad<LOAD_CG>(p)`, `detail::store_relaxed(p, v)`.
((call_expression function: (template_function name: (identifier) @access.cached.name)) @access.cached
  (#match? @access.cached.name "^Thread(Load|Store)$"))
((call_expression function: (qualified_identifier name: (template_function name: (identifier) @access.cached.name))) @access.cached
  (#match? @access.cached.name "^Thread(Load|Store)$"))
((call_expression function: (qualified_identifier name: (identifier) @access.cached.name)) @access.cached
  (#match? @access.cached.name "^(load|store)_(relaxed|acquire|release)$"))

; Inline PTX: src/rewrite/asm.rs reads the template for loads, stores and atomics, and takes the
; address from the operand `[%N]` names (outputs, then inputs, in order).
(gnu_asm_expression assembly_code: (_) @access.asm.code) @access.asm
(gnu_asm_output_operand value: (_) @asm.operand)
(gnu_asm_input_operand value: (_) @asm.operand)

; The way from an access to the variable whose memory it touches (`base` in
; src/device_code.rs), so that __shared__ and local arrays can be excluded: `a` in `a[i][j][k]`,
; `p` in `*(p + i)` and `p->f`, `s` in `atomicAdd(&s[i][j], 1)`. The way goes through the
; @access and @access.atomic nodes above (`a[i]`: the memory `a` points into, or the array `a`
; itself; `*p`, `p->f`, an atomic's address: the memory `p` points into) and the nodes captured
; here: member (`s.f`), address (`&x`), and those that keep the pointer (parentheses, `p + i`,
; casts).
(field_expression operator: ".") @via.member
(pointer_expression operator: "&") @via.address
(parenthesized_expression) @via.paren
(binary_expression operator: ["+" "-"]) @via.arith
(cast_expression) @via.cast

; __device__ variables are global memory too; @global.var names them. Naming an array
; (@global.array) reads nothing: its subscripts and dereferences are the accesses. Not rooted at
; the translation unit: one inside an include guard (`#ifndef`) or a namespace counts too;
; device_code.rs keeps those outside any function.
(declaration "__device__" declarator: (_) @global.var)
; Those at the top level of the file, for --stats: the others are what a query rooted at the
; translation unit used to miss.
(translation_unit (declaration "__device__" declarator: (_) @global.top))
(declaration "__device__"
  declarator: [(array_declarator) (init_declarator declarator: (array_declarator))] @global.array)
; __device__ variables nothing can write: `constexpr`, or `const` and not a pointer. No fence
; orders their reads (a variable template's name alone, `tile_size_v`, is no expression either).
(declaration "__device__" (type_qualifier "constexpr") declarator: (_) @global.immutable)
(declaration (type_qualifier "constexpr") "__device__" declarator: (_) @global.immutable)
(declaration "__device__" (type_qualifier "const")
  declarator: [(identifier) (init_declarator declarator: (identifier))] @global.immutable)
(declaration (type_qualifier "const") "__device__"
  declarator: [(identifier) (init_declarator declarator: (identifier))] @global.immutable)
; (__device__ libcu++ atomics, `cuda::atomic<int, S> x;`, are no such variables: using one is
; calling its operations, libcuxx.scm's.)
; Names of functions: a prototype such as `__device__ int f(int);` declares no variable.
(function_declarator declarator: (_) @function.name)

; Not accesses: taking an address, and unevaluated operands. Through `.` only: in `&p->f`, `p`
; is read, and in `&a[i]->f` so is `a[i]`.
(pointer_expression operator: "&" argument: (_) @not_access)
(pointer_expression operator: "&" argument: (field_expression argument: (_) @not_access operator: "."))
; A method called through a pointer (`o->clear()`, `o->a.clear()`) reads no memory at the
; callee: what the method reads is instrumented in its own body.
(call_expression function: (field_expression operator: "->") @not_access)
(call_expression function: (field_expression argument: (field_expression operator: "->") @not_access operator: "."))
; libcu++'s atomic_ref binds a reference (`cuda::atomic_ref<int, S>(a[i]).fetch_add(1)`): its
; argument is not read there; its operations are (race builds trace them), and the temporary
; (@libcuxx.temp) is their receiver, whose word is the argument (libcuxx.scm). Named from the
; global scope too (`::cuda::atomic_ref<...>{x}`, CUB's way), and cuda::std's.
((call_expression
  function: (qualified_identifier) @_ref.type
  arguments: (argument_list (_) @not_access)) @libcuxx.temp
  (#match? @_ref.type "^(::\\s*)?cuda\\s*::\\s*(std\\s*::\\s*)?atomic_ref\\b"))
((compound_literal_expression
  type: (qualified_identifier) @_ref.type
  value: (initializer_list (_) @not_access)) @libcuxx.temp
  (#match? @_ref.type "^(::\\s*)?cuda\\s*::\\s*(std\\s*::\\s*)?atomic_ref\\b"))
(sizeof_expression) @unevaluated
(decltype) @unevaluated
; A static assertion is evaluated by the compiler, and `noexcept(e)` (which the grammar reads as
; a call) asks only whether `e` may throw: a fence after `*this` there would stand outside any
; function.
(static_assert_declaration) @unevaluated
((call_expression function: (identifier) @_noexcept) @unevaluated
  (#eq? @_noexcept "noexcept"))

; Writes, to tell loads from stores in fences.json: `x = `, `x++`, also through a member
; (`a[i].f = `, where `a[i]` is the access) and parentheses (`(*p)++`). Not through `->`: in
; `p->next->f = v`, `p->next` is only read.
(assignment_expression left: (_) @store)
(assignment_expression left: (field_expression argument: (_) @store operator: "."))
(assignment_expression left: (parenthesized_expression (_) @store))
(update_expression argument: (_) @store)
(update_expression argument: (field_expression argument: (_) @store operator: "."))
(update_expression argument: (parenthesized_expression (_) @store))

; Identifiers, to find uses of file-scope __device__ variables; what a call calls is none
; (`ns::advance(i, n)`, src/rewrite/device_code.rs `callees`).
(identifier) @ident
(call_expression function: (_) @call.function)
