; Statement bodies of control statements: an unbraced one is wrapped in braces before a fence
; goes at its top or after it.
(if_statement consequence: (_) @body)
; `statement` (a supertype), not `_`: a comment after `else` is a child of the clause too.
(else_clause (statement) @body)
(while_statement body: (_) @body)
(for_statement body: (_) @body)
(for_range_loop body: (_) @body)
(do_statement body: (_) @body)
(compound_statement) @block
; A statement with a label (`done: x;`) or attributes: as a body it is braced whole.
[(labeled_statement) (attributed_statement)] @labeled
