; Declarations whose variables are not global memory: __shared__ variables (in a function or at
; file scope) and arrays declared in a block (a function body is one). @alias.decl is a pointer
; declared from an initial value, which is not global memory when @alias.value points into one
; of the above (found the way accesses.scm's @via captures lead).
(declaration (type_qualifier "__shared__")) @shared.decl
; Arrays are local when declared inside a scope (device_code.rs checks by byte range): a pattern
; rooted at a compound statement keeps a state open over its whole subtree, one per nesting
; level, which made the query walk grow with depth squared.
(declaration declarator: [(array_declarator) @local.decl
  (init_declarator declarator: (array_declarator) @local.decl)])
; CUDA's wmma fragments (`wmma::fragment<...> f;`, `nvcuda::wmma::fragment<...>`) are registers
; (crt/mma.h): one declared in a block is local, and `f.x[i]` is in `f` (`x` is its array of
; elements, declared in a header outside the program).
(declaration type: (template_type name: (type_identifier) @_fragment)
  declarator: (identifier) @fragment.decl (#eq? @_fragment "fragment"))
(declaration type: (qualified_identifier name: (template_type name: (type_identifier) @_fragment))
  declarator: (identifier) @fragment.decl (#eq? @_fragment "fragment"))
(declaration type: (qualified_identifier name: (qualified_identifier
    name: (template_type name: (type_identifier) @_fragment)))
  declarator: (identifier) @fragment.decl (#eq? @_fragment "fragment"))
(declaration declarator: (init_declarator declarator: (pointer_declarator) @alias.decl
  value: (_) @alias.value))
; Members declared as arrays (`int w[32];`): `s.w[i]` is in `s`, so a __shared__ `s` keeps it out
; of global memory. A name also declared as another member (a pointer `w` elsewhere) is not
; trusted: @field.decl lists every member.
(field_declaration declarator: (array_declarator) @field.array)
(field_declaration declarator: (_) @field.decl)

; Every declarator, so that an inner declaration hides an outer one of the same name. A
; @param.decl counts only where it belongs to a function or lambda (@scope.function).
(declaration declarator: (_) @var.decl)
(for_range_loop declarator: (_) @var.decl)
(parameter_declaration declarator: (_) @param.decl)
; Where names declared in them are visible: the statement, by its byte range.
[(compound_statement) (for_statement) (for_range_loop) (if_statement) (while_statement)
 (switch_statement)] @scope
[(function_definition) (lambda_expression)] @scope.function
