; Declarations whose variables are not global memory: __shared__ variables (in a function or at
; file scope) and arrays local to a function. @alias.decl is a pointer declared from an initial
; value, which is not global memory when @alias.value is one of the above.
(declaration (type_qualifier "__shared__")) @shared.decl
(function_definition body: (compound_statement (declaration declarator: (array_declarator) @local.decl)))
(function_definition body: (compound_statement
  (declaration declarator: (init_declarator declarator: (array_declarator) @local.decl))))
(compound_statement (declaration declarator: (array_declarator) @local.decl))
(compound_statement (declaration declarator: (init_declarator declarator: (array_declarator) @local.decl)))
(declaration declarator: (init_declarator declarator: (pointer_declarator) @alias.decl
  value: [(identifier) @alias.value
          (subscript_expression argument: (identifier) @alias.value)
          (pointer_expression operator: "&" argument: (subscript_expression argument: (identifier) @alias.value))
          (pointer_expression operator: "&"
            argument: (subscript_expression argument: (subscript_expression argument: (identifier) @alias.value)))
          (binary_expression left: (identifier) @alias.value)]))
