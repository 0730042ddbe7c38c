; Statement bodies of control statements: an unbraced one is wrapped in braces before a fence
; goes at its top or after it.
(if_statement consequence: (_) @body)
(else_clause (_) @body)
(while_statement body: (_) @body)
(for_statement body: (_) @body)
(for_range_loop body: (_) @body)
(do_statement body: (_) @body)
(compound_statement) @block
