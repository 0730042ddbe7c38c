; What may not be copied into a fence's address for aimed stress (src/rewrite/aim.rs): an
; expression that does something when evaluated again (a call, an assignment, an increment, a
; comma, a lambda, new/delete) ...
(call_expression) @aim.impure
(assignment_expression) @aim.impure
(update_expression) @aim.impure
(comma_expression) @aim.impure
(lambda_expression) @aim.impure
(new_expression) @aim.impure
(delete_expression) @aim.impure
; ... an access inside a pack expansion or a fold: `Is` means nothing outside `(d[Is] = 0, 0)...`
; or `((d[Is] = s[Is]), ...)` ...
(parameter_pack_expansion) @aim.packed
(fold_expression) @aim.packed
; ... and the names a statement assigns: after `i = a[i];`, `a[i]` is another element.
(assignment_expression left: (identifier) @aim.assigned)
(assignment_expression left: (parenthesized_expression (identifier) @aim.assigned))
(update_expression argument: (identifier) @aim.assigned)
(update_expression argument: (parenthesized_expression (identifier) @aim.assigned))
