use super::*;

/// Which branches (by their first code line, trimmed) each configuration keeps.
fn kept(text: &str) -> Vec<Vec<String>> {
    let g = Groups::scan(text).expect("groups");
    (0..g.count)
        .map(|c| {
            g.config_text(text, c)
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        })
        .collect()
}

#[test]
fn each_branch_is_kept_by_a_configuration_nested_ones_within_their_parents() {
    let text = "a;\n#if A\nb;\n#elif B\n#ifdef C\nc;\n#else\nd;\n#endif\n#else\ne;\n#endif\nf;\n";
    assert_eq!(
        kept(text),
        [
            vec!["a;", "b;", "f;"],
            vec!["a;", "c;", "f;"],
            vec!["a;", "d;", "f;"],
            vec!["a;", "e;", "f;"],
        ]
    );
    // Offsets and newlines stay.
    let g = Groups::scan(text).unwrap();
    for c in 0..g.count {
        let t = g.config_text(text, c);
        assert_eq!(t.len(), text.len());
        assert_eq!(t.matches('\n').count(), text.matches('\n').count());
    }
}

#[test]
fn a_group_without_else_has_an_empty_branch_and_if_0_is_never_kept() {
    let text = "#ifdef A\nx;\n#endif\n#if 0\ny;\n#else\nz;\n#endif\n";
    assert_eq!(kept(text), [vec!["x;", "z;"], vec!["z;"]]);
    let g = Groups::scan(text).unwrap();
    let y = text.find("y;").unwrap();
    assert!((0..g.count).all(|c| !g.visible(c, y)));
    let x = text.find("x;").unwrap();
    assert!(g.visible(0, x) && !g.visible(1, x));
    // Directive lines are compiled by no configuration; code outside groups by all.
    assert!(!g.visible(0, text.find("#endif").unwrap() + 2));
    assert!(g.visible(1, text.len()));
}

#[test]
fn groups_side_by_side_share_configurations() {
    let text = "#if A\na;\n#else\nb;\n#endif\n#if C\nc;\n#elif D\nd;\n#else\ne;\n#endif\n";
    assert_eq!(
        kept(text),
        [vec!["a;", "c;"], vec!["b;", "d;"], vec!["b;", "e;"]]
    );
}

#[test]
fn continued_directives_and_defines_are_read_whole() {
    let text =
        "#if defined(A) && \\\n    defined(B)\na;\n#else\n#define M(x) \\\n  x\nb;\n#endif\n";
    assert_eq!(kept(text), [vec!["a;"], vec!["#define M(x) \\", "x", "b;"]]);
}

#[test]
fn branches_past_the_first_are_those_first_branches_blanks() {
    let text = "#if A\n#if B\na;\n#else\nb;\n#endif\n#else\n#if C\nc;\n#endif\n#endif\n";
    let g = Groups::scan(text).unwrap();
    let at = |s: &str| g.branch_at(text.find(s).unwrap()).unwrap();
    assert!(!g.beyond_first(at("a;")));
    assert!(g.beyond_first(at("b;")));
    assert!(g.beyond_first(at("c;")), "inside an #else");
}

#[test]
fn files_without_choices_or_with_too_many_have_no_configurations() {
    assert!(Groups::scan("a;\n").is_none());
    assert!(
        Groups::scan("#ifdef A\n").is_some(),
        "an unclosed group closes at the end"
    );
    assert!(Groups::scan("#define X 1\n").is_none());
    // Nested: each group without `#else` adds its empty branch's configuration.
    let nested = |levels: usize| -> String {
        (0..levels)
            .map(|i| format!("#if A == {i}\nx;\n"))
            .chain(std::iter::once("#else\ny;\n".to_string()))
            .chain(std::iter::repeat_n("#endif\n".to_string(), levels))
            .collect()
    };
    assert_eq!(
        Groups::scan(&nested(MAX_CONFIGS - 1)).unwrap().count,
        MAX_CONFIGS
    );
    assert!(Groups::scan(&nested(MAX_CONFIGS)).is_none());
    let chain: String = (0..MAX_CONFIGS)
        .map(|i| format!("#elif A == {i}\nx;\n"))
        .collect();
    assert!(Groups::scan(&format!("#if B\n{chain}#endif\n")).is_none());
}

#[test]
fn a_device_variable_named_in_another_branch_is_declared_per_branch() {
    let per = "#ifdef D\n__device__ int limit = 4;\n#else\nconstexpr int limit = 4;\n#endif\n";
    assert!(Groups::scan(per).unwrap().declared_per_branch(per));
    let functions =
        "#ifdef D\n__device__ int f(int x) { return x; }\n#else\nint f(int x);\n#endif\n";
    assert!(
        !Groups::scan(functions)
            .unwrap()
            .declared_per_branch(functions)
    );
    let other = "#ifdef D\n__device__ int a;\n#else\n__device__ int b;\n#endif\n";
    assert!(!Groups::scan(other).unwrap().declared_per_branch(other));
}

#[test]
fn include_guards_and_groups_without_code_need_no_configuration_of_their_own() {
    let guarded = "#ifndef K_H\n#define K_H\n#ifdef A\nx;\n#else\ny;\n#endif\n#endif\n";
    assert_eq!(
        kept(guarded),
        [vec!["#define K_H", "x;"], vec!["#define K_H", "y;"]]
    );
    let pragmas = "#if defined(G)\n#  pragma GCC system_header\n#elif defined(C)\n/* clang */\n#  pragma clang system_header\n#endif\n#ifdef A\nx;\n#else\ny;\n#endif\n";
    let g = Groups::scan(pragmas).unwrap();
    assert_eq!(g.count, 2, "the pragma group keeps its first branch");
    // A `#define` naming a thread id is planned (`plan.rs` rewrites it): a choice.
    let ids = "#ifdef A\n#define I threadIdx.x\n#else\n#define I 0\n#endif\n";
    assert_eq!(Groups::scan(ids).unwrap().count, 2);
    let code = "#ifdef A\n/* a */ x;\n#endif\n";
    assert_eq!(Groups::scan(code).unwrap().count, 2);
}
