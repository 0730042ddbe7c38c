; Where the fence for an access goes, found by walking up from the access to the first node
; captured here. See src/sites.rs for what each role does.
(expression_statement) @site.after
(declaration) @site.after
(return_statement (_) @site.return)
; `return { a[0], a[1] };`: a braced list cannot be a macro's argument that deduces its type; its
; elements are evaluated in order, so the fence wraps the last one.
(return_statement (initializer_list) @site.list)
(switch_statement condition: (condition_clause value: (_) @site.wrap))
(if_statement condition: (_) @site.if_cond)
(while_statement condition: (_) @site.loop_cond)
(do_statement condition: (_) @site.loop_cond)
(for_statement condition: (_) @site.loop_cond)
(for_statement update: (_) @site.comma)
(for_statement initializer: (declaration declarator: (init_declarator value: (_) @site.wrap)))
(for_statement initializer: (declaration) @site.stop)
(for_statement initializer: (_) @site.comma)
; Declarations and init-statements inside the parentheses of `if`/`while`/`switch`: `if (int v =
; a[0])`, `if (int v = a[0]; v > 0)`, `switch (x = a[0]; x)`. A fence there could not be a
; statement: values are wrapped, as in a `for` initialiser, and an expression gets a comma.
(condition_clause value: (declaration value: (_) @site.wrap))
(condition_clause value: (declaration declarator: (init_declarator value: (_) @site.wrap)))
(condition_clause value: (declaration) @site.stop)
(init_statement (declaration declarator: (init_declarator value: (_) @site.wrap)))
(init_statement (declaration) @site.stop)
(init_statement (expression_statement (_) @site.comma))
; A range `for` over global memory (`for (int x : table)`) reads an element before each pass.
(for_range_loop right: (_) @site.loop_cond)
(comma_expression left: (_) @site.comma)
