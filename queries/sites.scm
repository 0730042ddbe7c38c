; Where the fence for an access goes, found by walking up from the access to the first node
; captured here. See src/sites.rs for what each role does.
(expression_statement) @site.after
(declaration) @site.after
(return_statement (_) @site.wrap)
(switch_statement condition: (condition_clause value: (_) @site.wrap))
(if_statement condition: (_) @site.if_cond)
(while_statement condition: (_) @site.loop_cond)
(do_statement condition: (_) @site.loop_cond)
(for_statement condition: (_) @site.loop_cond)
(for_statement update: (_) @site.comma)
(for_statement initializer: (declaration declarator: (init_declarator value: (_) @site.wrap)))
(for_statement initializer: (declaration) @site.stop)
(for_statement initializer: (_) @site.comma)
(comma_expression left: (_) @site.comma)
