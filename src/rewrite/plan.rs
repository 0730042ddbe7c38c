//! Everything `insert` will change in one file, before fences get their program-wide ids:
//! fence sites, braces, virtual thread ids, the stress dispatch at kernel entry, launch sites,
//! and warnings about what the rewriter cannot see.

use crate::rewrite::calls;
use crate::rewrite::device_code::{self, DeviceFunction, Locality, Precision, Program};
use crate::rewrite::edits::{Edit, Slot};
use crate::rewrite::libcuxx;
use crate::rewrite::mask::Qualified;
use crate::rewrite::parse;
use crate::rewrite::piece_facts::{Exports, Imports};
use crate::rewrite::queries::{self, Capture, Captures};
use crate::rewrite::ranges::Nested;
use crate::rewrite::sites::{self, Sites};
use crate::rewrite::source::SourceFile;
use std::ops::Range;
use tree_sitter::{Node, Tree};

pub struct FilePlan {
    /// Edits that need no fence id.
    pub fixed: Vec<Edit>,
    pub sites: Sites,
    /// The device functions that `Site::function` indexes.
    pub functions: Vec<Function>,
    pub has_device_code: bool,
    /// The file launches a kernel (`<<<...>>>`, `cudaLaunchKernelEx`).
    pub launches: bool,
    pub warnings: Vec<String>,
    pub precision: Precision,
}

/// A device function of the file.
pub struct Function {
    pub name: String,
    /// `__host__ __device__`: compiled for the host too.
    pub host: bool,
    pub kernel: bool,
    /// Returns `void` (`device_code.rs`): a hardened fence after its `return f(a[i]);` is a
    /// comma, not a lambda returning the value.
    pub returns_void: bool,
    pub body: Range<usize>,
    /// Where its name stands when that is a plain identifier, so that only a mention of the
    /// name reaches it; None for a method, an operator, a qualified or specialised name.
    pub plain_name_at: Option<usize>,
    /// Whether a launched kernel may reach it (`reach::mark`, over the whole program).
    pub reachable: bool,
}

impl FilePlan {
    /// A plan that changes nothing: for a file the queries cannot be run on.
    pub fn none() -> FilePlan {
        FilePlan {
            fixed: Vec::new(),
            sites: Sites::default(),
            functions: Vec::new(),
            has_device_code: false,
            launches: false,
            warnings: Vec::new(),
            precision: Default::default(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.fixed.is_empty() && self.sites.is_empty()
    }
}

pub fn plan(
    file: &SourceFile,
    tree: &Tree,
    program: &Program,
    qualified: &[Qualified],
) -> FilePlan {
    plan_piece(file, tree, program, qualified, &Imports::default(), false).plan
}

/// How many of a plan's fixed edits and warnings are of each kind, kinds in the order the plan
/// lists them: the plans of a file's pieces join (`pieces.rs`) kind by kind, as one plan of the
/// whole file lists them.
#[derive(Clone, Debug, Default)]
pub struct Order {
    pub fixed: Vec<usize>,
    pub warnings: Vec<usize>,
}

/// A plan of a tree that may be one piece of its file (`pieces.rs`).
pub struct PiecePlan<'s> {
    pub plan: FilePlan,
    pub order: Order,
    /// What the piece tells the other pieces; empty unless asked for.
    pub exports: Exports<'s>,
}

/// The plan of `tree`, which may hold only a piece of `file`, with what the other pieces tell
/// it; with its `Exports` where `export` says.
pub fn plan_piece<'s>(
    file: &'s SourceFile,
    tree: &Tree,
    program: &Program,
    qualified: &[Qualified],
    imports: &Imports<'s>,
    export: bool,
) -> PiecePlan<'s> {
    let text = file.text.as_str();
    let errors = Nested::new(parse::error_ranges(tree));
    let caps = Captures::run(queries::all(), tree.root_node(), text.as_bytes());
    let functions = device_code::device_functions(&caps, text, qualified);
    let bodies = device_code::bodies(&functions);
    let mut exports = Exports::default();
    if export {
        for n in caps.get(Capture::Ident) {
            *exports.idents.entry(&text[n.byte_range()]).or_default() += 1;
        }
    }
    // Pointer parameters that every call passes local memory are local too: found with what
    // is local without them, then locality again with them.
    let members = &imports.members;
    let first = Locality::new(&caps, text, &[], &imports.local_names, members);
    let source = file.rel.extension().is_some_and(|e| e == "cu");
    let params = if !source {
        Vec::new()
    } else if export {
        let (callees, calls) = calls::facts(&caps, text, &first, true);
        let idents = &exports.idents;
        let own = calls::decide(&callees, &calls, |n| idents.get(n).copied().unwrap_or(0));
        let decided = imports.local_params.as_deref().unwrap_or(&own);
        let params = calls::params_of(&caps, text, decided);
        (exports.callees, exports.calls, exports.local_params) = (callees, calls, own);
        params
    } else {
        calls::local_params(&caps, text, &first)
    };
    let local = if params.is_empty() {
        first
    } else {
        Locality::new(&caps, text, &params, &imports.local_names, members)
    };
    let found = device_code::accesses(&functions, &caps, text, program, &local, &imports.globals);
    if export {
        exports.file_scope = local.file_scope();
        exports.members = device_code::Members::of(&caps, text);
        exports.member_uses = device_code::Members::used(&caps, text);
        exports.globals = found.globals;
        exports.top = found.top;
        exports.global_uses = found.global_uses;
    }
    let accesses: Vec<_> = found
        .accesses
        .into_iter()
        .filter(|a| !errors.overlaps(a.node.byte_range()))
        .collect();
    let placed = sites::place(&accesses, &caps, text, &found.asm, &found.words);
    let unplaced: Vec<String> = placed
        .unplaced
        .iter()
        .map(|n| {
            format!(
                "{}: no place for a fence after `{}`; left unfenced",
                file.location(n.start_byte()),
                one_line(&text[n.byte_range()])
            )
        })
        .collect();
    let (ids, words) = thread_ids(&bodies, &caps, text, !functions.is_empty());
    let (launch, launch_warnings) = launches(&bodies, &caps, file);
    let (launch_ex, launch_ex_warnings) = launches_ex(&bodies, &caps, file);
    let mut fixed = [
        kernel_entries(&functions, caps.root()),
        ids,
        words,
        launch,
        launch_ex,
    ];
    for f in &mut fixed {
        f.retain(|e| !errors.overlaps(e.start..e.end));
    }
    let (qualifiers, hiding) = macro_warnings(&bodies, &caps, file, program, imports, &mut exports);
    let [coop_launches, coop_grids] = grid_sync_warnings(&caps, file);
    let warnings = [
        unplaced,
        launch_warnings,
        launch_ex_warnings,
        qualifiers,
        hiding,
        coop_launches,
        coop_grids,
    ];
    let mut precision = found.precision;
    precision.macro_functions = functions.iter().filter(|f| f.by_macro).count();
    precision.macro_functions_fenced = (0..functions.len())
        .filter(|&i| functions[i].by_macro && placed.sites.iter().any(|s| s.function == i))
        .count();
    let order = Order {
        fixed: fixed.iter().map(Vec::len).collect(),
        warnings: warnings.iter().map(Vec::len).collect(),
    };
    let plan = FilePlan {
        fixed: fixed.into_iter().flatten().collect(),
        sites: Sites::one(placed.sites),
        has_device_code: !functions.is_empty(),
        launches: !caps.get(Capture::LaunchConfig).is_empty()
            || !caps.get(Capture::LaunchExConfig).is_empty(),
        functions: plain_functions(&functions, &caps),
        warnings: warnings.into_iter().flatten().collect(),
        precision,
    };
    PiecePlan {
        plan,
        order,
        exports,
    }
}

/// The plan's view of the device functions: their names plain or not, all reachable until
/// `reach::mark` has seen the whole program.
fn plain_functions(functions: &[DeviceFunction], caps: &Captures) -> Vec<Function> {
    if functions.is_empty() {
        return Vec::new();
    }
    let idents = caps.ids(Capture::Ident);
    let function = |f: &DeviceFunction| {
        let name = device_code::name_node(f.body.parent().expect("a body has a function"));
        Function {
            name: f.name.clone(),
            host: f.host,
            kernel: f.kernel,
            returns_void: f.returns_void,
            body: f.body.byte_range(),
            plain_name_at: idents.contains(&name.id()).then(|| name.start_byte()),
            reachable: true,
        }
    };
    functions.iter().map(function).collect()
}

pub fn one_line(s: &str) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() > 100 {
        format!("{}...", s.chars().take(97).collect::<String>())
    } else {
        s
    }
}

/// Every kernel first asks the runtime whether its block is a stressing block.
fn kernel_entries(functions: &[DeviceFunction], root: Node) -> Vec<Edit> {
    functions
        .iter()
        .filter(|f| f.kernel)
        .map(|f| {
            Edit::insert(
                f.body.start_byte() + 1,
                Slot::open(sites::depth(root, f.body) + 1, false),
                " WMFIX_KERNEL_ENTRY();",
            )
        })
        .collect()
}

fn runtime_call(builtin: &str) -> String {
    format!("wmfix_{builtin}()")
}

/// `threadIdx`, `blockIdx` and `gridDim` in device code, and in macro bodies, become calls
/// that return the virtual ids; libcu++'s atomic names become the runtime's (`libcuxx_names`).
fn thread_ids(
    bodies: &Nested,
    caps: &Captures,
    text: &str,
    device_code: bool,
) -> (Vec<Edit>, Vec<Edit>) {
    let in_device = |n: &Node| bodies.holds(n.start_byte()..n.start_byte());
    let mut code: Vec<Edit> = caps
        .get(Capture::ThreadId)
        .iter()
        .filter(|n| in_device(n))
        .map(|n| Edit::replace(n.byte_range(), runtime_call(&text[n.byte_range()])))
        .collect();
    // Anywhere in a file with device code (nvcc compiles it, with the runtime header): an alias
    // at file scope (`using flag_ref = cuda::atomic_ref<...>`) names the type device code
    // uses; in host code the wrapper only forwards.
    if device_code {
        code.extend(libcuxx_names(caps, text));
    }
    let mut macros = Vec::new();
    for value in caps.get(Capture::MacroValue) {
        let r = value.byte_range();
        for (at, word) in builtin_words(&text[r.clone()]) {
            macros.push(Edit::replace(
                r.start + at..r.start + at + word.len(),
                runtime_call(word),
            ));
        }
    }
    (code, macros)
}

/// libcu++'s `cuda::atomic_ref` and `cuda::atomic` (with or without template arguments) and
/// `cuda::atomic_thread_fence` become the runtime's `WMFIX_ATOMIC_REF`, `WMFIX_ATOMIC` and
/// `WMFIX_ATOMIC_THREAD_FENCE`: libcu++'s own names, except in a race build, which records
/// their operations with scope and order.
fn libcuxx_names(caps: &Captures, text: &str) -> Vec<Edit> {
    // `::cuda::atomic_ref`: the global scope's `::` goes too (the macros name `::cuda::...`).
    let from = |start: usize| {
        let before = text[..start].trim_end();
        before.strip_suffix("::").map_or(start, str::len)
    };
    let macro_for = |name: &str, std: bool| match (name, std) {
        ("atomic_ref", false) => "WMFIX_ATOMIC_REF",
        ("atomic", false) => "WMFIX_ATOMIC",
        ("atomic_ref", true) => "WMFIX_STD_ATOMIC_REF",
        ("atomic", true) => "WMFIX_STD_ATOMIC",
        _ => "WMFIX_ATOMIC_THREAD_FENCE",
    };
    let names = caps.get(Capture::LibcuxxRef).iter();
    names
        .chain(caps.get(Capture::LibcuxxName))
        .filter_map(|n| {
            // `cuda::atomic_ref<T, S>`: the name up to the template's own name, not its arguments.
            let (name, std) = libcuxx::own_name(*n, text)?;
            Some(Edit::replace(
                from(n.start_byte())..name.end_byte(),
                macro_for(&text[name.byte_range()], std),
            ))
        })
        .collect()
}

/// Occurrences of the three built-ins as whole words in a macro body.
fn builtin_words(s: &str) -> Vec<(usize, &'static str)> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    for word in ["threadIdx", "blockIdx", "gridDim"] {
        for (at, _) in s.match_indices(word) {
            let before = s[..at].chars().next_back().is_some_and(is_word);
            let after = s[at + word.len()..].chars().next().is_some_and(is_word);
            if !before && !after {
                out.push((at, word));
            }
        }
    }
    out
}

/// `k<<<g, b, smem, st>>>(args)` becomes `k<<<wmfix_launch(g, st), b, smem, st>>>(args)`.
fn launches(bodies: &Nested, caps: &Captures, file: &SourceFile) -> (Vec<Edit>, Vec<String>) {
    let text = file.text.as_str();
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for config in caps.get(Capture::LaunchConfig) {
        if bodies.holds(config.start_byte()..config.start_byte()) {
            warnings.push(format!(
                "{}: kernel launch from device code (dynamic parallelism) is not instrumented",
                file.location(config.start_byte())
            ));
            continue;
        }
        let mut c = config.walk();
        let args: Vec<Node> = config.named_children(&mut c).collect();
        let Some(grid) = args.first() else { continue };
        let stream = args.get(3).map_or("0", |s| &text[s.byte_range()]);
        let d = sites::depth(caps.root(), *grid);
        out.push(Edit::insert(
            grid.start_byte(),
            Slot::open(d, false),
            "wmfix_launch(",
        ));
        out.push(Edit::insert(
            grid.end_byte(),
            Slot::close(d, false),
            format!(", {stream})"),
        ));
    }
    (out, warnings)
}

/// `cudaLaunchKernelEx(cfg, k, args...)` (and `cudaLaunchKernelExC`) becomes
/// `cudaLaunchKernelEx(wmfix_launch_ex(cfg), k, args...)`: the runtime decides from the config's
/// attributes whether stressing blocks may join (not for cooperative or clustered launches).
fn launches_ex(bodies: &Nested, caps: &Captures, file: &SourceFile) -> (Vec<Edit>, Vec<String>) {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let wrappers = Nested::new(
        caps.get(Capture::LaunchExWrapper)
            .iter()
            .map(Node::byte_range),
    );
    for config in caps.get(Capture::LaunchExConfig) {
        if wrappers.holds(config.start_byte()..config.start_byte()) {
            continue;
        }
        if bodies.holds(config.start_byte()..config.start_byte()) {
            // As for `<<<...>>>` in device code.
            warnings.push(format!(
                "{}: kernel launch from device code (dynamic parallelism) is not instrumented",
                file.location(config.start_byte())
            ));
            continue;
        }
        let d = sites::depth(caps.root(), *config);
        out.push(Edit::insert(
            config.start_byte(),
            Slot::open(d, false),
            "wmfix_launch_ex(",
        ));
        out.push(Edit::insert(config.end_byte(), Slot::close(d, false), ")"));
    }
    (out, warnings)
}

/// Launches, then code, that need every block of the grid resident at once.
fn grid_sync_warnings(caps: &Captures, file: &SourceFile) -> [Vec<String>; 2] {
    let what = |cap| match cap {
        Capture::CoopLaunch => "a cooperative launch",
        _ => "grid-wide synchronisation",
    };
    [Capture::CoopLaunch, Capture::CoopGrid].map(|cap| {
        caps.get(cap)
            .iter()
            .map(|n| {
                format!(
                    "{}: {} (`{}`): stressing blocks and remapped block ids break it; test this kernel under no-str- only",
                    file.location(n.start_byte()),
                    what(cap),
                    &file.text[n.byte_range()]
                )
            })
            .collect()
    })
}

/// Macros that hide CUDA qualifiers and were not learnt (`macros.rs`; functions declared with a
/// learnt one are instrumented), then uses of those that hide memory accesses (defined in the
/// text or, `imports`, another piece of its file) from the rewriter, are reported, not guessed
/// at; the latter defined here go to `exports`.
fn macro_warnings<'s>(
    bodies: &Nested,
    caps: &Captures,
    file: &'s SourceFile,
    program: &Program,
    imports: &Imports,
    exports: &mut Exports<'s>,
) -> (Vec<String>, Vec<String>) {
    let text = file.text.as_str();
    let mut out = Vec::new();
    let mut hiding = Vec::new();
    for m in &caps.matches {
        let name = m.iter().find(|(c, _)| *c == Some(Capture::MacroName));
        let value = m.iter().find(|(c, _)| *c == Some(Capture::MacroValue));
        let (Some((_, name)), Some((_, value))) = (name, value) else {
            continue;
        };
        let (name, body) = (&text[name.byte_range()], &text[value.byte_range()]);
        if ["__device__", "__global__"]
            .iter()
            .any(|q| body.contains(q))
        {
            let learnt = program.macros.by_name.contains_key(name);
            if !learnt && text.match_indices(name).nth(1).is_some() {
                out.push(format!(
                    "{}: macro `{name}` expands to a CUDA qualifier; functions declared with it are not instrumented",
                    file.location(value.start_byte())
                ));
            }
        } else if ["atomic", "->", "["].iter().any(|a| body.contains(a)) {
            hiding.push(name);
        }
    }
    exports.hiding.clone_from(&hiding);
    if hiding.is_empty() && imports.hiding.is_empty() {
        return (out, Vec::new());
    }
    let mut hiding: std::collections::HashSet<&str> = hiding.into_iter().collect();
    hiding.extend(imports.hiding.iter());
    let mut uses = Vec::new();
    for u in caps.get(Capture::Ident) {
        let name = &text[u.byte_range()];
        if hiding.contains(&name) && bodies.holds(u.start_byte()..u.start_byte()) {
            uses.push(format!(
                "{}: macro `{name}` may access memory; its accesses get no fence (expand it by hand to instrument them)",
                file.location(u.start_byte())
            ));
        }
    }
    (out, uses)
}

#[cfg(test)]
mod tests {
    #[test]
    fn builtin_words_are_whole_words() {
        let w = super::builtin_words("(threadIdx.x + myblockIdx + blockIdx.y*gridDim_x)");
        assert_eq!(w, vec![(1, "threadIdx"), (28, "blockIdx")]);
    }
}
