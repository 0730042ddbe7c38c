; Expressions that may read or write global memory. @access.base names the variable the access
; goes through when it is a plain identifier, so that __shared__ and local arrays can be excluded.
(subscript_expression argument: (identifier) @access.base) @access
(subscript_expression argument: (subscript_expression argument: (identifier) @access.base)) @access
(subscript_expression) @access
(pointer_expression operator: "*" argument: (identifier) @access.base) @access
(pointer_expression operator: "*"
  argument: (parenthesized_expression (binary_expression left: (identifier) @access.base))) @access
(pointer_expression operator: "*") @access
(field_expression argument: (identifier) @access.base operator: "->") @access
(field_expression operator: "->") @access

; Atomics and the explicit cache-operator loads/stores (__ldg, __ldcg, __stcg, ...).
((call_expression function: (identifier) @access.atomic.name) @access.atomic
  (#match? @access.atomic.name "^(atomic[A-Z]|__(ld|st)(g|cg|ca|cs|cv|lu|wb|wt)$)"))
; The variable an atomic's address points into: `atomicAdd(&s, 1)`, `atomicAdd(&s[i], 1)`, `atomicAdd(p, 1)`.
((call_expression function: (identifier) @access.atomic.name
   arguments: (argument_list . [(identifier) @access.base
                                (pointer_expression operator: "&" argument: (identifier) @access.base)
                                (pointer_expression operator: "&"
                                  argument: (subscript_expression argument: (identifier) @access.base))])) @access.atomic
  (#match? @access.atomic.name "^atomic[A-Z]"))

; File-scope __device__ variables are global memory too; @global.var names them.
(translation_unit (declaration "__device__" declarator: (_) @global.var))
; Names of functions: a prototype such as `__device__ int f(int);` declares no variable.
(function_declarator declarator: (_) @function.name)

; Not accesses: taking an address, and unevaluated operands.
(pointer_expression operator: "&" argument: (_) @not_access)
(pointer_expression operator: "&" argument: (field_expression argument: (_) @not_access))
(sizeof_expression) @unevaluated
(decltype) @unevaluated

; Writes, to tell loads from stores in fences.json.
(assignment_expression left: (_) @store)
(assignment_expression left: (field_expression argument: (_) @store))
(update_expression argument: (_) @store)

; Identifiers, to find uses of file-scope __device__ variables.
(identifier) @ident
