; Calls between device functions, to find pointer parameters that every call passes shared or
; per-thread memory (src/rewrite/calls.rs).
(call_expression function: (identifier) @call.name arguments: (argument_list) @call.args)
(function_definition
  declarator: (function_declarator declarator: (identifier) @callee.name
    parameters: (parameter_list) @callee.params)
  body: (compound_statement) @callee.body)
(parameter_declaration declarator: (pointer_declarator)) @param.pointer
