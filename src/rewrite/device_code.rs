//! Device code: the `__global__`/`__device__` functions of a file, and the expressions in them
//! that may access global memory.

use crate::rewrite::asm::AsmPointers;
use crate::rewrite::libcuxx::{self, Words};
use crate::rewrite::macros::Meaning;
use crate::rewrite::mask::Qualified;
use crate::rewrite::queries::{self, Capture, Captures, IdMap, IdSet};
use crate::rewrite::ranges::Nested;
use crate::rewrite::scopes::{Bindings, Scopes};
pub use crate::rewrite::scopes::{function_name, name_node};
use std::collections::HashSet;
use std::num::NonZeroU16;
use std::sync::OnceLock;
use tree_sitter::Node;

pub use crate::fences::record::AccessKind;

pub struct DeviceFunction<'t> {
    pub body: Node<'t>,
    pub name: String,
    pub kernel: bool,
    /// `__host__ __device__`: compiled for the host too.
    pub host: bool,
    /// Returns a reference (`T&`, `auto&&`, a `reference` typedef): what it returns is not read.
    pub returns_ref: bool,
    /// Returns `void`, as written before its name (a kernel does; a lambda says nothing).
    pub returns_void: bool,
    /// Declared through a qualifier macro (`MY_DEVICE int f()`), or an extended lambda.
    pub by_macro: bool,
}

pub struct Access<'t> {
    pub node: Node<'t>,
    pub kind: AccessKind,
    /// Index into the file's device functions.
    pub function: usize,
}

/// The device functions of a file: those that say `__global__` or `__device__`, and those whose
/// head held a device qualifier macro that masking left blank (`qualified`).
pub fn device_functions<'t>(
    caps: &Captures<'t>,
    text: &str,
    qualified: &[Qualified],
) -> Vec<DeviceFunction<'t>> {
    let kernels = caps.ids(Capture::KernelBody);
    let host = caps.ids(Capture::HostBody);
    let mut seen = IdSet::default();
    let mut out = Vec::new();
    // A blanked macro is in the function's head, or just before it (the function then starts
    // at the next token: `MY_DEVICE int f()`, `template <class T> HD T g()`).
    let by_macro = |body: &Node| -> Option<Meaning> {
        let function = body.parent()?;
        let head = function.start_byte()..body.start_byte();
        let next = |end: usize| end + text[end..].len() - text[end..].trim_start().len();
        qualified
            .iter()
            .filter(|q| head.contains(&q.at.start) || next(q.at.end) == function.start_byte())
            .map(|q| q.meaning)
            .max()
    };
    let candidates = caps
        .get(Capture::KernelBody)
        .iter()
        .chain(caps.get(Capture::DeviceBody))
        .map(|b| (b, None))
        .chain(
            caps.get(Capture::FunctionBody)
                .iter()
                .filter(|_| !qualified.is_empty())
                .filter_map(|b| by_macro(b).map(|m| (b, Some(m)))),
        );
    for (body, meaning) in candidates {
        if !seen.insert(body.id()) {
            continue;
        }
        let function = body.parent().expect("a body has a function");
        // A lambda declares no name: its parameter list is what a declarator leads to.
        let name = match declared_name(function, text) {
            n if n.starts_with('(') => {
                format!("lambda at line {}", function.start_position().row + 1)
            }
            n => n.to_string(),
        };
        out.push(DeviceFunction {
            body: *body,
            name,
            kernel: kernels.contains(&body.id()) || meaning == Some(Meaning::Kernel),
            host: host.contains(&body.id()) || meaning == Some(Meaning::Device { host: true }),
            returns_ref: returns_ref(function, text),
            returns_void: returns_void(function, text),
            by_macro: meaning.is_some() || by_macro(body).is_some(),
        });
    }
    out.sort_by_key(|f| f.body.start_byte());
    out
}

/// Whether a function definition's return type is a reference, as written before its name:
/// `T& f()`, `auto&& f()`, `decltype(auto) f()`, or a `reference` typedef (`typename B::reference`).
fn returns_ref(function: Node, text: &str) -> bool {
    let head = &text[function.start_byte()..function_name(function, text).start_byte()];
    head.contains('&') || head.contains("reference") || head.contains("decltype(auto)")
}

/// Whether a function definition's return type is `void` as written before its name: the word
/// `void` and no pointer, reference or template argument list in the head (`__device__ void f()`,
/// `template <int N> static __device__ void f()`; not `void* f()`).
fn returns_void(function: Node, text: &str) -> bool {
    let head = &text[function.start_byte()..function_name(function, text).start_byte()];
    let head = head.rsplit('>').next().unwrap_or(head);
    head.split_whitespace().any(|w| w == "void") && !head.contains(['*', '&', '(', ':'])
}

/// Whether a few levels up from `node` is a `return` statement (the returned expression's
/// operands: `return g[i];`, `return static_cast<B&>(*this).get();`).
fn in_return(node: Node, text: &str) -> bool {
    std::iter::successors(node.parent(), Node::parent)
        .take(8)
        .any(|p| text[p.byte_range()].starts_with("return"))
}

/// The name a declaration declares: follow `declarator` fields to the innermost one.
pub fn declared_name<'s>(node: Node, text: &'s str) -> &'s str {
    &text[function_name(node, text).byte_range()]
}

/// The ids of the fields this module follows, found once: by name, each look-up is a string
/// search.
struct Fields {
    declarator: NonZeroU16,
    indices: NonZeroU16,
    argument: NonZeroU16,
    arguments: NonZeroU16,
    left: NonZeroU16,
    value: NonZeroU16,
    name: NonZeroU16,
    field: NonZeroU16,
}

fn fields() -> &'static Fields {
    static IDS: OnceLock<Fields> = OnceLock::new();
    IDS.get_or_init(|| {
        let id = queries::field;
        Fields {
            declarator: id("declarator"),
            indices: id("indices"),
            argument: id("argument"),
            arguments: id("arguments"),
            left: id("left"),
            value: id("value"),
            name: id("name"),
            field: id("field"),
        }
    })
}

/// What an expression on the way to a variable stands for: the memory an lvalue designates, or
/// the memory a pointer value points into.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    Object,
    Pointer,
}

/// The nodes of a file by what they do on the way from an access to its variable (accesses.scm:
/// @access, @access.atomic and the @via captures).
struct Ways<'s> {
    /// Members declared in this text (and the pieces before it): `s.w`, `w` an array member,
    /// as a pointer value is inside `s`.
    members: Members<'s>,
    text: &'s str,
    /// Subscripts (`a[i]`, which have indices) and dereferences (`*p`, `p->f`).
    access: IdSet,
    atomic: IdSet,
    member: IdSet,
    address: IdSet,
    paren: IdSet,
    arith: IdSet,
    cast: IdSet,
}

/// The member holding a wmma fragment's elements (`x`, an array: crt/mma.h).
const FRAGMENT_ELEMENTS: &str = "x";

/// Member names a text declares: as arrays, and otherwise. `s.w` is inside `s` only where `w`
/// is declared as an array and never otherwise (another struct's pointer member `w`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Members<'s> {
    pub arrays: HashSet<&'s str>,
    pub others: HashSet<&'s str>,
}

impl<'s> Members<'s> {
    pub fn of(caps: &Captures, text: &'s str) -> Members<'s> {
        let name = |n: &Node| &text[name_node(*n).byte_range()];
        let arrays = caps.ids(Capture::FieldArray);
        let all = caps.get(Capture::FieldDecl);
        let mut arrays_named: HashSet<&'s str> =
            caps.get(Capture::FieldArray).iter().map(name).collect();
        if !caps.get(Capture::FragmentDecl).is_empty() {
            // A wmma fragment's elements (`f.x[i]`), declared in CUDA's header.
            arrays_named.insert(FRAGMENT_ELEMENTS);
        }
        Members {
            arrays: arrays_named,
            others: all
                .iter()
                .filter(|n| !arrays.contains(&n.id()))
                .map(name)
                .collect(),
        }
    }

    pub fn extend(&mut self, other: &Members<'s>) {
        self.arrays.extend(other.arrays.iter().copied());
        self.others.extend(other.others.iter().copied());
    }

    pub fn is_array(&self, name: &str) -> bool {
        self.arrays.contains(name) && !self.others.contains(name)
    }

    /// The member names used after `.` in a text (what a piece's plan depends on).
    pub fn used(caps: &Captures, text: &'s str) -> HashSet<&'s str> {
        let members = caps.get(Capture::ViaMember).iter();
        let field = |m: &Node| {
            m.child_by_field_id(fields().field.get())
                .map(|f| f.byte_range())
        };
        members.filter_map(field).map(|r| &text[r]).collect()
    }
}

impl<'s> Ways<'s> {
    /// `imported`: members the other pieces of a big file declare (`piece_facts.rs`).
    fn new(caps: &Captures, text: &'s str, imported: &Members<'s>) -> Ways<'s> {
        let mut members = Members::of(caps, text);
        members.extend(imported);
        Ways {
            members,
            text,
            access: caps.ids(Capture::Access),
            atomic: caps.ids(Capture::AccessAtomic),
            member: caps.ids(Capture::ViaMember),
            address: caps.ids(Capture::ViaAddress),
            paren: caps.ids(Capture::ViaParen),
            arith: caps.ids(Capture::ViaArith),
            cast: caps.ids(Capture::ViaCast),
        }
    }

    /// The variable whose memory `node` (an lvalue or a pointer value, as `via` says) touches:
    /// `a` for `a[i][j][k]` (a multi-dimensional array is one object), `p` for `*(p + i)`,
    /// `p->f`, `atomicAdd(&p[i], 1)` and `(int *)p`, `s` for `&s[i].f`. None where the way
    /// goes through a pointer read from memory (`p->next->f`, `(*pp)[i]`) or anything else.
    fn base<'t>(&self, mut node: Node<'t>, mut via: Via) -> Option<Node<'t>> {
        let f = fields();
        loop {
            let id = node.id();
            if node.child_count() == 0 {
                return Some(node); // an identifier (or a literal, which names nothing)
            }
            let argument = node.child_by_field_id(f.argument.get());
            let subscript = || node.child_by_field_id(f.indices.get()).is_some();
            let (next, then) = if self.access.contains(&id) && (via == Via::Object || subscript()) {
                // `a[i]`, `*p`, `p->f` are in the memory `a` or `p` points into; `a[i]` as a
                // pointer value is a row of a multi-dimensional array.
                (argument, Via::Pointer)
            } else if self.atomic.contains(&id) && via == Via::Object {
                let args = node.child_by_field_id(f.arguments.get());
                (args.and_then(first_named), Via::Pointer)
            } else if (self.member.contains(&id)
                && (via == Via::Object || self.is_array_member(node)))
                || (self.address.contains(&id) && via == Via::Pointer)
            {
                // `s.f` is in `s`; `&x` points into `x`.
                (argument, Via::Object)
            } else if self.paren.contains(&id) {
                (first_named(node), via)
            } else if self.arith.contains(&id) && via == Via::Pointer {
                (node.child_by_field_id(f.left.get()), via)
            } else if self.cast.contains(&id) && via == Via::Pointer {
                (node.child_by_field_id(f.value.get()), via)
            } else {
                return None;
            };
            node = next?;
            via = then;
        }
    }
}

impl Ways<'_> {
    /// Whether the member `s.f` names an array member (`f` declared only as an array here).
    fn is_array_member(&self, member: Node) -> bool {
        let field = member.child_by_field_id(fields().field.get());
        field.is_some_and(|f| self.members.is_array(&self.text[f.byte_range()]))
    }
}

/// The pointer an atomic or cache-operator call accesses: its first argument.
pub fn call_pointer(call: Node) -> Option<Node> {
    call.child_by_field_id(fields().arguments.get())
        .and_then(first_named)
}

/// The first named child that is not a comment.
pub fn first_named(node: Node) -> Option<Node> {
    let mut c = node.walk();
    let mut children = node.named_children(&mut c);
    children.find(|n| !n.is_extra())
}

/// The device function bodies of a file, indexed by byte range: `innermost` gives the body
/// holding a node as an index into the functions.
pub fn bodies(functions: &[DeviceFunction]) -> Nested {
    Nested::new(functions.iter().map(|f| f.body.byte_range()))
}

/// Whether each declared name is not global memory where it is visible: `__shared__`
/// variables, arrays local to a block, and pointers initialised from those. Every declaration of
/// such a name is bound, so that a parameter or inner variable of the same name hides it.
fn locality<'s>(
    scopes: &Scopes,
    ways: &Ways<'_>,
    caps: &Captures,
    text: &'s str,
    params: &[Node],
    imported: &[(&'s str, usize)],
) -> Bindings<'s, bool> {
    let mut locals = local_declarators(scopes, caps, ways);
    locals.always.extend(params.iter().map(Node::start_byte));
    locals.names.extend(params);
    // A name never declared local is global memory wherever it is used: it needs no binding.
    let mut candidates: HashSet<&str> =
        locals.names.iter().map(|n| &text[n.byte_range()]).collect();
    candidates.extend(imported.iter().map(|(n, _)| *n));
    let mut names: Vec<(Node, bool)> = Vec::new();
    for (cap, param) in [(Capture::VarDecl, false), (Capture::ParamDecl, true)] {
        for name in caps.get(cap).iter().map(|d| name_node(*d)) {
            if candidates.contains(&text[name.byte_range()]) {
                names.push((name, param));
            }
        }
    }
    // Source order, so that an alias sees the declarations before it.
    names.sort_by_key(|(n, _)| n.start_byte());

    let mut bindings = Bindings::new();
    for (name, from) in imported {
        bindings.declare(None, name, *from, true);
    }
    for (name, param) in names {
        let at = name.start_byte();
        let scope = scopes.at(at);
        if param && !scope.is_some_and(|s| scopes.is_function(s)) {
            continue; // a prototype's parameter
        }
        let from_local = |v: &Option<Node>| {
            v.is_some_and(|v| {
                let value = &text[v.byte_range()];
                bindings.lookup(scopes, value, v.start_byte()) == Some(&true)
            })
        };
        let local = locals.always.contains(&at) || locals.aliases.get(&at).is_some_and(from_local);
        bindings.declare(scope, &text[name.byte_range()], name.end_byte(), local);
    }
    bindings
}

/// Which names are not global memory where they are used (`locality`), with the scopes and
/// ways it was found through.
pub struct Locality<'s> {
    scopes: Scopes,
    ways: Ways<'s>,
    bindings: Bindings<'s, bool>,
    text: &'s str,
    /// Pointer parameters taken as local (every call passes local memory).
    params: usize,
}

impl<'s> Locality<'s> {
    /// `params`: pointer parameters (their names) known to point into local memory;
    /// `imported`: names bound local at file scope before this text (`piece_facts.rs`), each
    /// with the byte it is visible from; `members`: those the other pieces declare.
    pub fn new(
        caps: &Captures,
        text: &'s str,
        params: &[Node],
        imported: &[(&'s str, usize)],
        members: &Members<'s>,
    ) -> Locality<'s> {
        let scopes = Scopes::new(caps);
        let ways = Ways::new(caps, text, members);
        let bindings = locality(&scopes, &ways, caps, text, params, imported);
        Locality {
            scopes,
            ways,
            bindings,
            text,
            params: params.len(),
        }
    }

    /// What is bound at file scope: name, the byte it is visible from, whether it is local.
    pub fn file_scope(&self) -> Vec<(&'s str, usize, bool)> {
        let all = self.bindings.at_file_scope();
        all.map(|(n, from, local)| (n, from, *local)).collect()
    }

    /// Whether the name `base` (an identifier) is local where it is used.
    fn is_local(&self, base: &Node) -> bool {
        let name = &self.text[base.byte_range()];
        self.bindings.lookup(&self.scopes, name, base.start_byte()) == Some(&true)
    }

    /// Whether the pointer value `arg` points into shared or per-thread memory.
    pub fn points_local(&self, arg: Node) -> bool {
        self.ways
            .base(arg, Via::Pointer)
            .is_some_and(|b| self.is_local(&b))
    }
}

/// The declared names that may not be global memory, keyed by the byte each starts at.
struct LocalDeclarators<'t> {
    /// `__shared__` variables and local arrays.
    always: IdSet,
    /// Pointers, with the variable their initial value points into (if one is found): local
    /// when that one is.
    aliases: IdMap<Option<Node<'t>>>,
    /// The names of both.
    names: Vec<Node<'t>>,
}

fn local_declarators<'t>(
    scopes: &Scopes,
    caps: &Captures<'t>,
    ways: &Ways<'_>,
) -> LocalDeclarators<'t> {
    let mut names: Vec<Node> = Vec::new();
    for decl in caps.get(Capture::SharedDecl) {
        // One __shared__ declaration may declare several variables.
        let mut c = decl.walk();
        names.extend(
            decl.children_by_field_id(fields().declarator, &mut c)
                .map(name_node),
        );
    }
    // An array is local inside a block; at file or namespace scope it is global memory. So is
    // a wmma fragment (registers).
    let arrays = caps.get(Capture::LocalDecl).iter().map(|d| name_node(*d));
    let fragments = caps.get(Capture::FragmentDecl).iter().copied();
    names.extend(
        arrays
            .chain(fragments)
            .filter(|n| scopes.at(n.start_byte()).is_some()),
    );
    let always = names.iter().map(Node::start_byte).collect();
    let mut aliases = IdMap::default();
    for m in &caps.matches {
        let alias = m.iter().find(|(c, _)| *c == Some(Capture::AliasDecl));
        let value = m.iter().find(|(c, _)| *c == Some(Capture::AliasValue));
        if let (Some((_, a)), Some((_, v))) = (alias, value) {
            let name = name_node(*a);
            aliases.insert(name.start_byte(), ways.base(*v, Via::Pointer));
            names.push(name);
        }
    }
    LocalDeclarators {
        always,
        aliases,
        names,
    }
}

/// Names of `__device__` variables declared outside any function (at file scope, in a
/// namespace, inside an include guard) whose name alone reads them: not arrays, not immutable
/// ones (nothing writes them), not libcu++ atomics (their operations are traced as such), and
/// not functions (a prototype's declarator declares none).
pub fn global_variables<'s>(caps: &Captures, text: &'s str, scopes: &Scopes) -> HashSet<&'s str> {
    let functions = caps.ids(Capture::FunctionName);
    let arrays = caps.ids(Capture::GlobalArray);
    let immutable = caps.ids(Capture::GlobalImmutable);
    let atomic = libcuxx::objects(caps, text);
    caps.get(Capture::GlobalVar)
        .iter()
        .filter(|n| !arrays.contains(&n.id()) && !immutable.contains(&n.id()))
        .filter(|n| scopes.at(n.start_byte()).is_none())
        .map(|n| name_node(*n))
        .filter(|n| !functions.contains(&n.id()) && !atomic.contains(&n.start_byte()))
        .map(|n| &text[n.byte_range()])
        .collect()
}

/// Where a name of a `__device__` variable is hidden by a variable or parameter of the same
/// name declared inside a function.
fn shadows<'s>(
    names: &dyn Fn(&str) -> bool,
    scopes: &Scopes,
    caps: &Captures,
    text: &'s str,
) -> Bindings<'s, ()> {
    let mut out = Bindings::new();
    for (cap, param) in [(Capture::VarDecl, false), (Capture::ParamDecl, true)] {
        for name in caps.get(cap).iter().map(|d| name_node(*d)) {
            let n = &text[name.byte_range()];
            let scope = scopes.at(name.start_byte());
            let Some(s) = scope else { continue };
            if names(n) && (!param || scopes.is_function(s)) {
                out.declare(scope, n, name.end_byte(), ());
            }
        }
    }
    out
}

/// What device code in one file can see of the rest of the program.
#[derive(Default)]
pub struct Program {
    /// Names of the `__device__` variables (not arrays) that headers declare: a file that
    /// includes one reads the variable by its name.
    pub header_globals: HashSet<String>,
    /// Qualifier and namespace macros learnt from the whole tree (`macros.rs`).
    pub macros: crate::rewrite::macros::Macros,
}

/// What `accesses` found beyond the accesses themselves, for `--stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Precision {
    /// Uses of `__device__` variables declared somewhere other than this file's top level
    /// (an include guard, a namespace, a header).
    pub hidden_globals: usize,
    /// Pointer parameters found to point into shared or per-thread memory at every call.
    pub local_params: usize,
    /// Device functions declared through a qualifier macro (or extended lambdas), and those of
    /// them with a fence.
    pub macro_functions: usize,
    pub macro_functions_fenced: usize,
    /// `#elif`/`#else` branches (and branches inside them) that hold a fence because each
    /// configuration of the file's `#if` groups was planned (`configs.rs`): where a group splits
    /// a statement, only the first branches were before.
    pub if_branches: usize,
}

/// What `accesses` found.
pub struct Accesses<'t, 's> {
    pub accesses: Vec<Access<'t>>,
    pub precision: Precision,
    /// The `__device__` variables the text declares outside functions (`global_variables`).
    pub globals: HashSet<&'s str>,
    /// The names of its top-level `__device__` declarations.
    pub top: HashSet<&'s str>,
    /// The name of each access through a `__device__` variable's name.
    pub global_uses: Vec<&'s str>,
    /// Inline PTX accesses' address operands, by node id (`asm.rs`), for the fences' aim.
    pub asm: AsmPointers<'t>,
    /// libcu++ atomics' operations: the word each touches (`libcuxx.rs`), for the fences' aim.
    pub words: Words<'t>,
}

/// Every expression in device code that may access global memory; `outside`: `__device__`
/// variables declared in other pieces of the file (`piece_facts.rs`).
pub fn accesses<'t, 's>(
    functions: &[DeviceFunction<'t>],
    caps: &Captures<'t>,
    text: &'s str,
    program: &Program,
    local: &Locality,
    outside: &HashSet<&str>,
) -> Accesses<'t, 's> {
    let Locality { scopes, ways, .. } = local;
    let is_local = |base: &Node| local.is_local(base);
    let mut not_access = caps.ids(Capture::NotAccess);
    // An element or member an operation is called on (`a[i]` of `a[i].load()`) is the
    // operation's word, not a plain access; nor is what libcu++ binds or is passed.
    let libcuxx::Found {
        ops: lib_ops,
        unread,
    } = libcuxx::ops(caps, text, scopes);
    not_access.extend(
        lib_ops
            .iter()
            .flat_map(|op| op.not_accesses(text))
            .chain(unread)
            .map(|n| n.id()),
    );
    let stores = caps.ids(Capture::Store);
    let unevaluated = Nested::new(caps.get(Capture::Unevaluated).iter().map(Node::byte_range));
    let bodies = bodies(functions);

    let globals = global_variables(caps, text, scopes);
    let is_global =
        |n: &str| globals.contains(n) || program.header_globals.contains(n) || outside.contains(n);
    let shadowed = shadows(&is_global, scopes, caps, text);
    // Top-level declarations of this file, as the query once found them alone.
    let top: HashSet<&str> = caps
        .get(Capture::GlobalTop)
        .iter()
        .map(|n| &text[name_node(*n).byte_range()])
        .collect();
    let mut precision = Precision {
        local_params: local.params,
        ..Precision::default()
    };
    let mut global_uses = Vec::new();

    let mut seen = IdSet::default();
    let mut out = Vec::new();
    let mut push = |node: Node<'t>, kind: AccessKind, out: &mut Vec<Access<'t>>| {
        if !seen.insert(node.id())
            || not_access.contains(&node.id())
            || unevaluated.holds(node.byte_range())
        {
            return;
        }
        let Some(function) = bodies.innermost(node.byte_range()) else {
            return;
        };
        // `return a[i];` in `T& at(int i)` hands out the element's address; nothing is read
        // (and a fence around the returned value would make it a prvalue).
        if functions[function].returns_ref && in_return(node, text) {
            return;
        }
        if ways.base(node, Via::Object).is_some_and(|b| is_local(&b)) {
            return;
        }
        let kind = if kind == AccessKind::Load && is_store(node, &stores) {
            AccessKind::Store
        } else {
            kind
        };
        out.push(Access {
            node,
            kind,
            function,
        });
    };
    for n in caps.get(Capture::AccessAtomic) {
        push(*n, AccessKind::Atomic, &mut out);
    }
    for n in caps.get(Capture::AccessCached) {
        push(*n, AccessKind::Call, &mut out);
    }
    for n in caps.get(Capture::AccessRef) {
        push(*n, AccessKind::Store, &mut out);
    }
    // libcu++ atomics' operations, but those on a word in shared or per-thread memory.
    let mut words = Words::default();
    for op in lib_ops {
        let local = |p: Node| ways.base(p, Via::Object).is_some_and(|b| is_local(&b));
        if op.place.is_some_and(local) {
            continue;
        }
        push(op.node, AccessKind::Atomic, &mut out);
        words.insert(op.node.id(), op.word);
    }
    let asm = super::asm::asm_accesses(caps, text);
    for a in &asm {
        push(a.node, a.kind, &mut out);
    }
    for n in caps.get(Capture::Access) {
        push(*n, AccessKind::Load, &mut out);
    }
    let callees = callees(caps);
    // A `__device__` struct's member (`box.data`) is the access, not the struct: another member
    // (`box.ready`, an atomic) lives at the struct's own address. Not a method (`box.f()`). By
    // the member's object, from the captures (`parent()` walks down from the root).
    let called = caps.ids(Capture::CallFunction);
    let argument = fields().argument;
    let member_by_object: IdMap<Node> = (caps.get(Capture::ViaMember).iter())
        .filter(|m| !called.contains(&m.id()))
        .filter_map(|m| m.child_by_field_id(argument.get()).map(|o| (o.id(), *m)))
        .collect();
    let member_of = |mut n: Node<'t>| {
        while let Some(m) = member_by_object.get(&n.id()) {
            n = *m;
        }
        n
    };
    for n in caps.get(Capture::Ident) {
        // Name first: `parent()` walks down from the root, too slow for every identifier.
        let name = &text[n.byte_range()];
        if is_global(name)
            && shadowed.lookup(scopes, name, n.start_byte()).is_none()
            && !is_declarator(*n)
            && !callees.contains(&n.id())
        {
            let before = out.len();
            push(member_of(*n), AccessKind::Load, &mut out);
            if out.len() > before {
                global_uses.push(name);
                precision.hidden_globals += usize::from(!top.contains(name));
            }
        }
    }
    out.sort_by_key(|a| a.node.start_byte());
    Accesses {
        accesses: out,
        precision,
        globals,
        top,
        global_uses,
        asm: super::asm::pointers(&asm),
        words,
    }
}

/// The name a declaration declares, not a use of it.
fn is_declarator(n: Node) -> bool {
    n.parent()
        .and_then(|p| p.child_by_field_name("declarator"))
        .is_some_and(|d| d.id() == n.id())
}

/// The names calls call (`swap(a, b)`, `ns::advance(i, n)`, `get<0>(t)`): a `__device__` object
/// called so is a function object (libcu++'s `cuda::std::ranges::advance`), read for no data,
/// and a qualified name may not even be that object.
fn callees(caps: &Captures) -> IdSet {
    let mut ids = IdSet::default();
    for f in caps.get(Capture::CallFunction) {
        let mut n = *f;
        while let Some(name) = n.child_by_field_id(fields().name.get()) {
            n = name;
        }
        ids.insert(n.id());
    }
    ids
}

fn is_store(node: Node, stores: &IdSet) -> bool {
    stores.contains(&node.id())
}
