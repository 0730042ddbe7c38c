//! `wmfix insert` on random CUDA. A seeded generator (splitmix64, fixed seeds) writes kernels,
//! `__device__` and `__host__ __device__` functions and host code that mix what the rewriter
//! must handle: nested `if`/`else` with and without braces, `for`/`while`/`do` and range `for`
//! with and without braces and with accesses in their conditions, `#pragma unroll`, `switch`,
//! declarations and C++17 init-statements in conditions, labels, comments between a header and
//! its body, `return` of a load, comma expressions, `for` initialisers and updates, `__shared__`
//! and local arrays (1-3 dimensions), pointers into them, shadowing in inner blocks, atomics,
//! `__ldg`, `p->f`, `*p`, file-scope `__device__` variables, `&` and `sizeof`, calls, thread
//! ids, and launches from `main`.
//! For every statement it writes, the generator knows which global-memory accesses it makes and
//! where their fence goes. Checked:
//! 1. the instrumented files build and link with nvcc (device code to unoptimised PTX for sm_90,
//!    `-arch=compute_90 -Xcicc -O0 -std=c++17`; the original is built too only when one fails,
//!    to tell whose fault it is);
//! 2. fences.json lists exactly the expected fences, line by line: the accesses each orders,
//!    its kind, function and placement forms; statements that touch only `__shared__` or local
//!    memory, and host code, get none;
//! 3. taking the inserted text out of each instrumented file gives back the original byte for
//!    byte, where braces around unbraced bodies (which cannot be told from the original's by
//!    their text) may only be ` {`/` }` insertions, as many opened as closed; each fence's text
//!    lies on the lines fences.json gives for its placements, and each kernel entry on its
//!    kernel's first line.
//!
//! `WMFIX_RANDOM_SEEDS=1,2,3` runs other seeds (one file each); the generated tree is kept and
//! its path printed when a check fails, or always with `WMFIX_RANDOM_KEEP=1`.

mod common;
use common::*;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// One file per seed.
const SEEDS: &[u64] = &[0x5eed_0001, 0x5eed_0002, 0x5eed_0003, 0x5eed_0004];
/// Functions per file, host code included.
const FUNCTIONS: usize = 56;

// ------------------------------------------------------------------------------------------
// What the generator knows about the code it writes

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Load,
    Store,
    /// `__ldg(p)`: a cache-operator load/store call.
    Call,
    Atomic,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Load => "load",
            Kind::Store => "store",
            Kind::Call => "call",
            Kind::Atomic => "atomic",
        }
    }
}

/// Where a fence goes, as fences.json's placements say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum How {
    /// After a statement.
    After,
    /// A condition: at the top of the body and after the statement (or at the top of `else`).
    Cond,
    /// Around a returned or switched-on value, or a declared one in a `for` or condition.
    Wrap,
    /// After a comma operand, a `for` update, or an expression `for` initialiser or
    /// init-statement.
    Comma,
}

impl How {
    fn placements(self) -> Vec<&'static str> {
        match self {
            How::After => vec!["statement"],
            How::Cond => vec!["statement", "statement"],
            How::Wrap => vec!["wrap"],
            How::Comma => vec!["comma"],
        }
    }
}

/// A fence the rewriter must insert: the accesses it orders.
#[derive(Clone, Debug)]
struct Site {
    how: How,
    acc: Vec<(Kind, String)>,
}

/// An expression: its text, the global-memory accesses whose fence is the enclosing
/// statement's, and the fences inside it (left operands of commas).
#[derive(Clone, Debug, Default)]
struct Expr {
    text: String,
    acc: Vec<(Kind, String)>,
    sites: Vec<Site>,
}

impl Expr {
    fn lit(text: impl Into<String>) -> Expr {
        Expr {
            text: text.into(),
            ..Expr::default()
        }
    }

    /// `text` made of `parts`, with their accesses.
    fn of(text: String, parts: Vec<Expr>) -> Expr {
        let mut e = Expr::lit(text);
        for p in parts {
            e.acc.extend(p.acc);
            e.sites.extend(p.sites);
        }
        e
    }

    /// The fences of a statement or condition made of this expression.
    fn sited(self, how: How) -> Vec<Site> {
        let mut out = self.sites;
        if !self.acc.is_empty() {
            out.push(Site { how, acc: self.acc });
        }
        out
    }
}

/// An lvalue: its text, the access it is (none for `__shared__`/local memory), and the
/// accesses in its indices.
#[derive(Clone, Debug)]
struct Lv {
    text: String,
    top: Option<String>,
    rest: Expr,
    /// Atomics may take its address: global or `__shared__` memory.
    atomic_ok: bool,
}

impl Lv {
    fn used(self, kind: Kind) -> Expr {
        let mut e = self.rest;
        e.text = self.text;
        if let Some(top) = self.top {
            e.acc.insert(0, (kind, top));
        }
        e
    }
    fn read(self) -> Expr {
        self.used(Kind::Load)
    }
    fn write(self) -> Expr {
        self.used(Kind::Store)
    }
    /// `&lv`: not an access; its indices still are.
    fn addr(self) -> Expr {
        let mut e = self.rest;
        e.text = format!("&{}", self.text);
        e
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ty {
    /// An `int` variable.
    Int,
    /// A template parameter: an `int` that is not an lvalue.
    Const,
    /// `int *` into global memory (parameters, pointers derived from them).
    Global,
    /// An `int` array of 1-3 dimensions, `__shared__` or local.
    Array {
        dims: u8,
        shared: bool,
    },
    /// `int *` into such an array.
    Alias {
        shared: bool,
    },
    /// A local `Node` array, and a pointer into one.
    Nodes,
    NodeAlias,
}

/// The left operand of a parenthesised comma expression. tree-sitter-cuda (0.21) does not
/// parse `(a = b, c)` (nor `(a += b, c)`), though it parses `(a++, c)`, `((a = b), c)` and
/// `a = b, c;` as a statement: an assignment there gets parentheses.
fn comma_left(mut e: Expr) -> Expr {
    if [" = ", " += ", " ^= ", " |= "]
        .iter()
        .any(|op| e.text.contains(op))
    {
        e.text = format!("({})", e.text);
    }
    e
}

/// A line of output with the fences it must get.
struct Line {
    text: String,
    sites: Vec<Site>,
}

fn pad(ind: usize) -> String {
    "  ".repeat(ind)
}

fn line(ind: usize, text: impl AsRef<str>, sites: Vec<Site>) -> Line {
    Line {
        text: format!("{}{}", pad(ind), text.as_ref()),
        sites,
    }
}

/// A function generated so far, callable from the ones after it.
#[derive(Clone)]
struct Callee {
    name: String,
    returns: bool,
    fun: Fun,
}

/// The kind of function being written.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fun {
    Kernel,
    Device,
    HostDevice,
    Host,
}

struct Gen {
    rng: Rng,
    /// The last constant written: a fresh one in most indices makes most access texts unique,
    /// and failures readable.
    k: u64,
    scopes: Vec<Vec<(String, Ty)>>,
    fresh: usize,
    fun: Fun,
    returns: bool,
    callees: Vec<Callee>,
}

const PARAMS: &str = "int *ga, int *gb, float *gf, Node *node, int *m, int n";
const ARGS: &str = "ga, gb, gf, node, m, n";

impl Gen {
    fn konst(&mut self) -> u64 {
        self.k += 1;
        self.k
    }

    fn name(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    /// Whether device-only constructs may be written (thread ids, atomics, `__shared__`,
    /// `__device__` variables).
    fn device_only(&self) -> bool {
        matches!(self.fun, Fun::Kernel | Fun::Device)
    }

    /// Functions written so far that this one may call.
    fn callable(&self, returns: bool) -> Vec<Callee> {
        let ok = |f: Fun| match self.fun {
            Fun::Kernel | Fun::Device => matches!(f, Fun::Device | Fun::HostDevice),
            Fun::HostDevice => f == Fun::HostDevice,
            Fun::Host => matches!(f, Fun::Host | Fun::HostDevice),
        };
        let f = self
            .callees
            .iter()
            .filter(|c| c.returns == returns && ok(c.fun));
        f.cloned().collect()
    }

    fn declare(&mut self, name: &str, ty: Ty) {
        self.scopes.last_mut().unwrap().push((name.to_string(), ty));
    }

    /// The visible variables whose type passes `f`, innermost declaration of each name.
    fn visible(&self, f: impl Fn(Ty) -> bool) -> Vec<(String, Ty)> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for scope in self.scopes.iter().rev() {
            for (name, ty) in scope.iter().rev() {
                if seen.insert(name.clone()) && f(*ty) {
                    out.push((name.clone(), *ty));
                }
            }
        }
        out.sort();
        out
    }

    // --------------------------------------------------------------------------- expressions

    /// A small index; global loads in it only when `g`.
    fn index(&mut self, d: u32, g: bool) -> Expr {
        match self.rng.below(if d > 0 { 6 } else { 4 }) {
            0 => Expr::lit(self.konst().to_string()),
            1 => Expr::lit(format!("t + {}", self.konst())),
            2 | 3 => {
                let ints = self.visible(|t| matches!(t, Ty::Int | Ty::Const));
                let v = self.rng.pick(&ints).0;
                Expr::lit(format!("{v} + {}", self.konst()))
            }
            4 => self.llv(d - 1, g).read(),
            _ if g => self.glv(d - 1, g).read(),
            _ => Expr::lit(self.konst().to_string()),
        }
    }

    /// `(index) & mask`.
    fn masked(&mut self, d: u32, g: bool, mask: u32) -> Expr {
        let i = self.index(d, g);
        Expr::of(format!("({}) & {mask}", i.text), vec![i])
    }

    /// An `int` lvalue in global memory.
    fn glv(&mut self, d: u32, g: bool) -> Lv {
        let ptrs = self.visible(|t| t == Ty::Global);
        let choices = if self.device_only() { 9 } else { 7 };
        let lv = |text: String, top: Option<String>, rest: Expr| Lv {
            text,
            top,
            rest,
            atomic_ok: true,
        };
        match self.rng.below(choices) {
            0 | 1 => {
                let p = self.rng.pick(&ptrs).0;
                let i = self.index(d, g);
                let text = format!("{p}[{}]", i.text);
                lv(text.clone(), Some(text), i)
            }
            2 => {
                let p = self.rng.pick(&ptrs).0;
                let i = self.index(d, g);
                let text = format!("*({p} + {})", i.text);
                lv(text.clone(), Some(text), i)
            }
            3 => {
                let p = self.rng.pick(&ptrs).0;
                let text = format!("*{p}");
                lv(text.clone(), Some(text), Expr::default())
            }
            4 => {
                let i = self.index(d, g);
                let text = format!("(node + {})->val", i.text);
                lv(text.clone(), Some(text), i)
            }
            5 => {
                // The subscript is the access; `.val` is inside the element it reads.
                let i = self.index(d, g);
                let top = format!("node[{}]", i.text);
                lv(format!("{top}.val"), Some(top), i)
            }
            6 => {
                let i = self.index(d, g);
                let next = format!("(node + {})->next", i.text);
                let mut rest = i;
                rest.acc.insert(0, (Kind::Load, next.clone()));
                let text = format!("{next}->val");
                lv(text.clone(), Some(text), rest)
            }
            7 => {
                let i = self.index(d, g);
                let text = format!("gdev[{}]", i.text);
                lv(text.clone(), Some(text), i)
            }
            _ => lv("gcount".into(), Some("gcount".into()), Expr::default()),
        }
    }

    /// An `int` lvalue in `__shared__` or local memory; its indices may load global memory
    /// when `g`.
    fn llv(&mut self, d: u32, g: bool) -> Lv {
        let vars = self.visible(|t| {
            matches!(
                t,
                Ty::Array { .. } | Ty::Alias { .. } | Ty::Nodes | Ty::NodeAlias
            )
        });
        let lv = |text: String, rest: Expr, atomic_ok: bool| Lv {
            text,
            top: None,
            rest,
            atomic_ok,
        };
        if vars.is_empty() {
            let ints = self.visible(|t| t == Ty::Int);
            return lv(self.rng.pick(&ints).0, Expr::default(), false);
        }
        let (v, ty) = self.rng.pick(&vars);
        match ty {
            Ty::Array { dims, shared } => {
                let masks: &[u32] = match (dims, shared) {
                    (1, true) => &[63],
                    (1, false) => &[7],
                    (2, _) => &[7, 7],
                    _ => &[1, 1, 1],
                };
                let mut parts = Vec::new();
                let mut text = v;
                for &mask in masks {
                    let i = self.masked(d, g, mask);
                    text += &format!("[{}]", i.text);
                    parts.push(i);
                }
                lv(text.clone(), Expr::of(text, parts), shared)
            }
            Ty::Alias { shared } => match self.rng.below(3) {
                0 => lv(format!("*{v}"), Expr::default(), shared),
                1 => {
                    let i = self.masked(d, g, 7);
                    lv(format!("*({v} + ({}))", i.text), i, shared)
                }
                _ => {
                    let i = self.masked(d, g, 7);
                    lv(format!("{v}[{}]", i.text), i, shared)
                }
            },
            Ty::Nodes => {
                let i = self.masked(d, g, 1);
                lv(format!("{v}[{}].val", i.text), i, false)
            }
            _ => lv(format!("{v}->val"), Expr::default(), false),
        }
    }

    /// An `int` value; global memory only when `g`.
    fn int_expr(&mut self, d: u32, g: bool) -> Expr {
        loop {
            let e = match self.rng.below(16) {
                0 => Expr::lit(self.konst().to_string()),
                1 => {
                    let ints = self.visible(|t| matches!(t, Ty::Int | Ty::Const));
                    Expr::lit(self.rng.pick(&ints).0)
                }
                2 if self.device_only() => Expr::lit(self.rng.pick(&[
                    "(int)threadIdx.x",
                    "(int)blockIdx.y",
                    "(int)gridDim.x",
                    "(int)(blockIdx.x * blockDim.x + threadIdx.x)",
                    "(int)(threadIdx.y + blockIdx.z * gridDim.y)",
                ])),
                3 | 4 if g => self.glv(d, g).read(),
                5 | 6 => self.llv(d, g).read(),
                7 if d > 0 => {
                    let (a, b) = (self.int_expr(d - 1, g), self.int_expr(d - 1, g));
                    let op = self.rng.pick(&["+", "-", "*", "^", "|"]);
                    Expr::of(format!("({} {op} {})", a.text, b.text), vec![a, b])
                }
                8 if d > 0 => {
                    let c = self.cond(d - 1, g);
                    let (a, b) = (self.int_expr(d - 1, g), self.int_expr(d - 1, g));
                    let text = format!("({} ? {} : {})", c.text, a.text, b.text);
                    Expr::of(text, vec![c, a, b])
                }
                9 if self.device_only() => self.atomic(d, g),
                10 if g && self.device_only() => {
                    let lv = self.glv(d, g);
                    let a = lv.addr();
                    let text = format!("__ldg({})", a.text);
                    let mut e = Expr::of(text.clone(), vec![a]);
                    e.acc.insert(0, (Kind::Call, text));
                    e
                }
                // Unevaluated: no access at all.
                11 => {
                    let lv = if g { self.glv(d, g) } else { self.llv(d, g) };
                    Expr::lit(format!("(int)sizeof({})", lv.text))
                }
                12 if g => {
                    let i = self.index(d, g);
                    let text = format!("gf[{}]", i.text);
                    let mut e = Expr::of(format!("(int){text}"), vec![i]);
                    e.acc.insert(0, (Kind::Load, text));
                    e
                }
                13 if d > 0 => {
                    let fs = self.callable(true);
                    if fs.is_empty() {
                        continue;
                    }
                    let f = self.rng.pick(&fs);
                    self.call(&f.name, d - 1, g)
                }
                14 if d > 0 => {
                    let a = comma_left(self.effect(d - 1, g));
                    let b = self.int_expr(d - 1, g);
                    let mut e = Expr::lit(format!("({}, {})", a.text, b.text));
                    e.sites = a.sited(How::Comma);
                    e.sites.extend(b.sites);
                    e.acc = b.acc;
                    e
                }
                // `&` takes an address: no access, but its indices are evaluated.
                15 if g => {
                    let lv = self.glv(d, g);
                    let a = lv.addr();
                    Expr::of(format!("(int)({} - ga)", a.text), vec![a])
                }
                _ => continue,
            };
            return e;
        }
    }

    /// A call of a function written before, with accesses in its arguments now and then.
    fn call(&mut self, f: &str, d: u32, g: bool) -> Expr {
        if self.rng.percent(50) {
            return Expr::lit(format!("{f}({ARGS})"));
        }
        let i = self.index(d, g);
        let v = self.int_expr(d, g);
        let text = format!("{f}(ga + {}, gb, gf, node, m, {})", i.text, v.text);
        Expr::of(text, vec![i, v])
    }

    fn cond(&mut self, d: u32, g: bool) -> Expr {
        let a = self.int_expr(d, g);
        match self.rng.below(4) {
            0 => a,
            _ => {
                let op = self.rng.pick(&["<", ">", "!=", "=="]);
                let b = self.int_expr(d, g);
                Expr::of(format!("{} {op} {}", a.text, b.text), vec![a, b])
            }
        }
    }

    /// An atomic call (device code only): on global memory an access, on `__shared__` none.
    fn atomic(&mut self, d: u32, g: bool) -> Expr {
        let f = self
            .rng
            .pick(&["atomicAdd", "atomicMax", "atomicOr", "atomicExch"]);
        if g && self.rng.percent(70) {
            let addr = match self.rng.below(4) {
                0 => {
                    let p = self.rng.pick(&self.visible(|t| t == Ty::Global)).0;
                    let i = self.index(d, g);
                    Expr::of(format!("{p} + {}", i.text), vec![i])
                }
                1 => Expr::lit(format!("m + {}", self.konst())),
                2 => {
                    let e = Expr::lit(format!("m + {}", self.konst()));
                    let cas = format!("atomicCAS({}, 0, 1)", e.text);
                    let mut x = Expr::lit(cas.clone());
                    x.acc.push((Kind::Atomic, cas));
                    return x;
                }
                _ => self.glv(d, g).addr(),
            };
            let v = self.int_expr(d.saturating_sub(1), g);
            let text = format!("{f}({}, {})", addr.text, v.text);
            let mut e = Expr::of(text.clone(), vec![addr, v]);
            e.acc.insert(0, (Kind::Atomic, text));
            e
        } else {
            let shared = self.visible(|t| {
                matches!(
                    t,
                    Ty::Array { shared: true, .. } | Ty::Alias { shared: true }
                )
            });
            let addr = if !shared.is_empty() && self.rng.percent(40) {
                let (v, ty) = self.rng.pick(&shared);
                match ty {
                    Ty::Alias { .. } if self.rng.percent(50) => Expr::lit(v),
                    Ty::Alias { .. } => Expr::lit(format!("{v} + {}", self.konst() % 8)),
                    _ => {
                        let lv = self.shared_lv(&v, ty, d, g);
                        lv.addr()
                    }
                }
            } else {
                let mut lv = self.llv(d, g);
                while !lv.atomic_ok {
                    if shared.is_empty() {
                        return self.int_expr(0, false);
                    }
                    lv = self.llv(d, g);
                }
                lv.addr()
            };
            let v = self.int_expr(d.saturating_sub(1), g);
            Expr::of(format!("{f}({}, {})", addr.text, v.text), vec![addr, v])
        }
    }

    /// An element of the `__shared__` array or alias `v`.
    fn shared_lv(&mut self, v: &str, ty: Ty, d: u32, g: bool) -> Lv {
        loop {
            let lv = self.llv(d, g);
            if lv.atomic_ok && lv.text.starts_with(v) {
                return lv;
            }
            if let Ty::Array { dims: 1, .. } = ty {
                let i = self.masked(d, g, 63);
                return Lv {
                    text: format!("{v}[{}]", i.text),
                    top: None,
                    rest: i,
                    atomic_ok: true,
                };
            }
        }
    }

    /// An expression with a side effect: an assignment, an update, an atomic, a call.
    fn effect(&mut self, d: u32, g: bool) -> Expr {
        let lv = |s: &mut Gen| {
            if g && s.rng.percent(60) {
                s.glv(d, g)
            } else if s.rng.percent(85) {
                s.llv(d, g)
            } else {
                let ints = s.visible(|t| t == Ty::Int);
                Lv {
                    text: s.rng.pick(&ints).0,
                    top: None,
                    rest: Expr::default(),
                    atomic_ok: false,
                }
            }
        };
        match self.rng.below(8) {
            0..=2 => {
                let l = lv(self).write();
                let r = self.int_expr(d, g);
                let op = self.rng.pick(&["=", "=", "+=", "^=", "|="]);
                Expr::of(format!("{} {op} {}", l.text, r.text), vec![l, r])
            }
            3 => {
                let l = lv(self).write();
                // `*p++` would increment the pointer.
                let postfix = if l.text.starts_with('*') {
                    format!("({})", l.text)
                } else {
                    l.text.clone()
                };
                let text = match self.rng.below(3) {
                    0 => format!("{postfix}++"),
                    1 => format!("++{}", l.text),
                    _ => format!("{postfix}--"),
                };
                Expr::of(text, vec![l])
            }
            4 | 5 if self.device_only() => self.atomic(d, g),
            6 if g => {
                let i = self.index(d, g);
                let v = self.int_expr(d, g);
                let target = format!("gf[{}]", i.text);
                let mut e = Expr::of(format!("{target} = (float)({})", v.text), vec![i, v]);
                e.acc.insert(0, (Kind::Store, target));
                e
            }
            7 => {
                let fs = self.callable(false);
                if fs.is_empty() {
                    return self.effect(d, g);
                }
                let f = self.rng.pick(&fs);
                self.call(&f.name, d, g)
            }
            _ => self.effect(d, g),
        }
    }

    // ---------------------------------------------------------------------------- statements

    /// One statement at indentation `ind`, nesting at most `d` deeper; a declaration only where
    /// `decl` (not as an unbraced body or in an unbraced `case`).
    fn stmt(&mut self, ind: usize, d: u32, decl: bool) -> Vec<Line> {
        let g = !self.rng.percent(30);
        let choice = self.rng.below(if d > 0 { 24 } else { 12 });
        match choice {
            0..=3 => {
                let e = self.effect(2, g);
                vec![line(ind, format!("{};", e.text), e.sited(How::After))]
            }
            4 => {
                let a = self.effect(1, g);
                let b = self.effect(1, g);
                let mut text = format!("{}, {}", a.text, b.text);
                let mut sites = a.sited(How::Comma);
                let last = if self.rng.percent(40) {
                    sites.extend(b.sited(How::Comma));
                    let c = self.effect(1, g);
                    text = format!("{text}, {}", c.text);
                    c
                } else {
                    b
                };
                sites.extend(last.sited(How::After));
                vec![line(ind, format!("{text};"), sites)]
            }
            5 | 6 if decl => self.declaration(ind, g),
            7 if decl => self.array_declaration(ind),
            8 if decl => self.alias_declaration(ind, g),
            9 if self.device_only() => {
                let f = self
                    .rng
                    .pick(&["__syncthreads();", "__threadfence_block();"]);
                vec![line(ind, f, vec![])]
            }
            10 if self.device_only() => {
                // A spin lock: an access in the condition of a loop with an empty body.
                let k = self.konst();
                let cas = format!("atomicCAS(m + {k}, 0, 1)");
                let site = Site {
                    how: How::Cond,
                    acc: vec![(Kind::Atomic, cas.clone())],
                };
                let body = self.rng.pick(&[";", " {}", " { }"]);
                vec![line(ind, format!("while ({cas} != 0){body}"), vec![site])]
            }
            11 if self.rng.percent(30) => {
                // A return: of a value in an `int` function, which gets wrapped.
                if self.returns {
                    let e = self.int_expr(2, g);
                    vec![line(ind, format!("return {};", e.text), e.sited(How::Wrap))]
                } else {
                    vec![line(ind, "return;", vec![])]
                }
            }
            12..=14 => self.if_stmt(ind, d),
            15 | 16 => self.for_stmt(ind, d),
            17 => self.while_stmt(ind, d),
            18 => self.do_stmt(ind, d),
            19 => self.switch_stmt(ind, d),
            20 => self.block(ind, d),
            21 => {
                // A labelled statement (never a declaration): as a body it is braced whole.
                let label = self.name("label");
                let mut inner = self.stmt(ind, d.saturating_sub(1), false);
                if !inner[0].text.trim_start().starts_with('#') {
                    inner[0].text = format!("{}{label}: {}", pad(ind), inner[0].text.trim_start());
                }
                inner
            }
            _ => {
                let e = self.effect(2, g);
                vec![line(ind, format!("{};", e.text), e.sited(How::After))]
            }
        }
    }

    fn declaration(&mut self, ind: usize, g: bool) -> Vec<Line> {
        let a = self.name("v");
        let ea = if self.rng.percent(25) {
            // A comma in an initialiser: its left operand gets its own fence.
            let l = comma_left(self.effect(1, g));
            let r = self.int_expr(1, g);
            let mut e = Expr::lit(format!("({}, {})", l.text, r.text));
            e.sites = l.sited(How::Comma);
            e.sites.extend(r.sites);
            e.acc = r.acc;
            e
        } else {
            self.int_expr(2, g)
        };
        let out = if self.rng.percent(30) {
            let b = self.name("v");
            let eb = self.int_expr(1, g);
            let text = format!("int {a} = {}, {b} = {};", ea.text, eb.text);
            self.declare(&b, Ty::Int);
            line(
                ind,
                text,
                Expr::of(String::new(), vec![ea, eb]).sited(How::After),
            )
        } else {
            line(ind, format!("int {a} = {};", ea.text), ea.sited(How::After))
        };
        self.declare(&a, Ty::Int);
        vec![out]
    }

    fn array_declaration(&mut self, ind: usize) -> Vec<Line> {
        let shared = self.device_only() && self.rng.percent(50);
        let a = self.name(if shared { "s" } else { "l" });
        let (text, ty) = match self.rng.below(5) {
            0 if shared => {
                let b = self.name("s");
                self.declare(&b, Ty::Array { dims: 1, shared });
                (
                    format!("__shared__ int {a}[64], {b}[64];"),
                    Ty::Array { dims: 1, shared },
                )
            }
            0 | 1 if shared => (
                format!("__shared__ int {a}[64];"),
                Ty::Array { dims: 1, shared },
            ),
            0 => (format!("int {a}[8];"), Ty::Array { dims: 1, shared }),
            1 => (
                format!("int {a}[8] = {{1, 2, 3}};"),
                Ty::Array { dims: 1, shared },
            ),
            2 => {
                let q = if shared { "__shared__ " } else { "" };
                (format!("{q}int {a}[8][8];"), Ty::Array { dims: 2, shared })
            }
            3 => {
                let q = if shared { "__shared__ " } else { "" };
                (
                    format!("{q}int {a}[2][2][2];"),
                    Ty::Array { dims: 3, shared },
                )
            }
            _ if shared => (
                format!("__shared__ int {a}[64];"),
                Ty::Array { dims: 1, shared },
            ),
            _ => (format!("Node {a}[2];"), Ty::Nodes),
        };
        self.declare(&a, ty);
        vec![line(ind, text, vec![])]
    }

    /// A pointer declared from an address: into `__shared__`/local memory (not global), or
    /// into global memory.
    fn alias_declaration(&mut self, ind: usize, g: bool) -> Vec<Line> {
        let arrays = self.visible(|t| matches!(t, Ty::Array { .. } | Ty::Nodes));
        let p = self.name("p");
        if arrays.is_empty() || self.rng.percent(30) {
            let q = self.rng.pick(&self.visible(|t| t == Ty::Global)).0;
            let i = self.index(1, g);
            let text = match self.rng.below(2) {
                0 => format!("int *{p} = {q} + {};", i.text),
                _ => format!("int *{p} = &{q}[{}];", i.text),
            };
            self.declare(&p, Ty::Global);
            return vec![line(ind, text, i.sited(How::After))];
        }
        let (a, ty) = self.rng.pick(&arrays);
        let (text, i, ty) = match ty {
            Ty::Nodes => (format!("Node *{p} = {a};"), Expr::default(), Ty::NodeAlias),
            Ty::Array { dims, shared } => {
                let mask = if shared && dims == 1 { 63 } else { 7 };
                let ty = Ty::Alias { shared };
                match (dims, self.rng.below(3)) {
                    (1, 0) => (format!("int *{p} = {a};"), Expr::default(), ty),
                    (1, 1) => {
                        let i = self.masked(1, g, mask);
                        (format!("int *{p} = &{a}[{}];", i.text), i, ty)
                    }
                    (1, _) => (format!("int *{p} = {a} + {};", mask), Expr::default(), ty),
                    (2, _) => {
                        let i = self.masked(1, g, 7);
                        (format!("int *{p} = {a}[{}];", i.text), i, ty)
                    }
                    _ => {
                        let (i, j) = (self.masked(1, g, 1), self.masked(1, g, 1));
                        let text = format!("int *{p} = &{a}[{}][{}][0];", i.text, j.text);
                        (text, Expr::of(String::new(), vec![i, j]), ty)
                    }
                }
            }
            _ => unreachable!(),
        };
        self.declare(&p, ty);
        vec![line(ind, text, i.sited(How::After))]
    }

    /// Appends a control statement's `head` and its body, braced or not, on the next line or on
    /// the head's. Returns whether the body is braced (its last line is then `}`).
    fn with_body(&mut self, out: &mut Vec<Line>, mut head: Line, ind: usize, d: u32) -> bool {
        let d = d.saturating_sub(1);
        self.scopes.push(vec![]);
        if self.rng.percent(8) {
            // A comment between a header and its body is a sibling of the body in the tree.
            head.text += &format!(" /* b{} */", self.konst());
        }
        let braced = match self.rng.below(5) {
            0 | 1 => {
                head.text += " {";
                out.push(head);
                for _ in 0..1 + self.rng.below(3) {
                    out.extend(self.stmt(ind + 1, d, true));
                }
                out.push(line(ind, "}", vec![]));
                true
            }
            2 => {
                let body = self.stmt(ind + 1, d, false);
                if body.len() == 1 {
                    head.text = format!("{} {}", head.text, body[0].text.trim_start());
                    head.sites.extend(body.into_iter().flat_map(|l| l.sites));
                    out.push(head);
                } else {
                    out.push(head);
                    out.extend(body);
                }
                false
            }
            _ => {
                out.push(head);
                out.extend(self.stmt(ind + 1, d, false));
                false
            }
        };
        self.scopes.pop();
        braced
    }

    /// What goes between the parentheses of `if`, `while` (no init-statement) and `switch`: a
    /// condition or value, a declaration, or (C++17) an init-statement and a condition. What it
    /// declares goes in the current scope.
    fn clause(&mut self, g: bool, switch: bool, init: bool) -> (String, Vec<Site>) {
        let how = if switch { How::Wrap } else { How::Cond };
        let plain = |s: &mut Gen| {
            if switch {
                s.int_expr(1, g)
            } else {
                s.cond(1, g)
            }
        };
        match self.rng.below(10) {
            0 => {
                // A declaration's value is wrapped, as in a `for` initialiser.
                let v = self.name("v");
                let e = self.int_expr(1, g);
                self.declare(&v, Ty::Int);
                (format!("int {v} = {}", e.text), e.sited(How::Wrap))
            }
            1 if init => {
                let v = self.name("v");
                let e = self.int_expr(1, g);
                self.declare(&v, Ty::Int);
                let c = plain(self);
                let text = format!("int {v} = {}; {}", e.text, c.text);
                let mut sites = e.sited(How::Wrap);
                sites.extend(c.sited(how));
                (text, sites)
            }
            2 if init => {
                // An expression init-statement gets a comma fence.
                let e = self.effect(1, g);
                let c = plain(self);
                let text = format!("{}; {}", e.text, c.text);
                let mut sites = e.sited(How::Comma);
                sites.extend(c.sited(how));
                (text, sites)
            }
            _ => {
                let c = plain(self);
                (c.text.clone(), c.sited(how))
            }
        }
    }

    fn if_stmt(&mut self, ind: usize, d: u32) -> Vec<Line> {
        let g = !self.rng.percent(30);
        self.scopes.push(vec![]);
        let out = self.if_else(ind, d, g);
        self.scopes.pop();
        out
    }

    fn if_else(&mut self, ind: usize, d: u32, g: bool) -> Vec<Line> {
        let (c, sites) = self.clause(g, false, true);
        let head = line(ind, format!("if ({c})"), sites);
        let mut out = Vec::new();
        let braced = self.with_body(&mut out, head, ind, d);
        if self.rng.percent(50) {
            let mut els = if braced && self.rng.percent(60) {
                let mut l = out.pop().unwrap();
                l.text += " else";
                l
            } else {
                line(ind, "else", vec![])
            };
            if d > 1 && self.rng.percent(40) {
                let mut inner = self.if_stmt(ind, d - 1);
                els.text = format!("{} {}", els.text, inner[0].text.trim_start());
                els.sites.append(&mut inner[0].sites);
                out.push(els);
                out.extend(inner.into_iter().skip(1));
            } else {
                self.with_body(&mut out, els, ind, d);
            }
        }
        out
    }

    fn pragma(&mut self, ind: usize, out: &mut Vec<Line>) {
        if self.rng.percent(35) {
            let p = self
                .rng
                .pick(&["#pragma unroll", "#pragma unroll 4", "#pragma unroll 1"]);
            let ind = if self.rng.percent(50) { 0 } else { ind };
            out.push(line(ind, p, vec![]));
        }
    }

    fn for_stmt(&mut self, ind: usize, d: u32) -> Vec<Line> {
        let g = !self.rng.percent(30);
        let mut out = Vec::new();
        self.pragma(ind, &mut out);
        let arrays = self.range_arrays();
        if !arrays.is_empty() && self.rng.percent(15) {
            return self.range_for(out, &arrays, ind, d);
        }
        self.scopes.push(vec![]);
        let mut sites = Vec::new();
        let ints = self.visible(|t| t == Ty::Int);
        let (init, i) = match self.rng.below(5) {
            0 | 1 => {
                let i = self.name("i");
                (format!("int {i} = 0"), i)
            }
            2 => {
                // A declaration's value is wrapped.
                let i = self.name("i");
                let e = self.int_expr(1, g);
                let text = format!("int {i} = {}", e.text);
                sites.extend(e.sited(How::Wrap));
                (text, i)
            }
            3 => {
                let (i, j) = (self.name("i"), self.name("j"));
                let (a, b) = (self.int_expr(1, g), self.int_expr(1, g));
                let text = format!("int {i} = {}, {j} = {}", a.text, b.text);
                sites.extend(a.sited(How::Wrap));
                sites.extend(b.sited(How::Wrap));
                self.declare(&j, Ty::Int);
                (text, i)
            }
            _ => {
                // An expression initialiser gets a comma fence.
                let i = self.rng.pick(&ints).0;
                let e = self.int_expr(1, g);
                let text = format!("{i} = {}", e.text);
                sites.extend(e.sited(How::Comma));
                (text, i)
            }
        };
        self.declare(&i, Ty::Int);
        let cond = if self.rng.percent(10) {
            String::new()
        } else {
            let b = self.int_expr(1, g);
            let text = format!("{i} < {}", b.text);
            sites.extend(b.sited(How::Cond));
            text
        };
        let update = match self.rng.below(5) {
            0 | 1 => format!("{i}++"),
            2 => {
                let e = self.int_expr(1, g);
                let text = format!("{i} += {}", e.text);
                sites.extend(e.sited(How::Comma));
                text
            }
            3 => {
                let e = self.effect(1, g);
                let text = format!("{i}++, {}", e.text);
                sites.extend(e.sited(How::Comma));
                text
            }
            _ => {
                let e = self.effect(1, g);
                let text = format!("{}, ++{i}", e.text);
                sites.extend(e.sited(How::Comma));
                text
            }
        };
        let head = line(ind, format!("for ({init}; {cond}; {update})"), sites);
        self.with_body(&mut out, head, ind, d);
        self.scopes.pop();
        out
    }

    /// The arrays a range `for` may go over.
    fn range_arrays(&self) -> Vec<String> {
        let mut arrays: Vec<String> = self
            .visible(|t| matches!(t, Ty::Array { dims: 1, .. }))
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        if self.device_only() {
            arrays.push("gdev".into());
        }
        arrays
    }

    /// A range `for` over an array: a `__device__` one is read before each pass (a fence at
    /// the top of the body and after the loop), a `__shared__` or local one is not global.
    fn range_for(
        &mut self,
        mut out: Vec<Line>,
        arrays: &[String],
        ind: usize,
        d: u32,
    ) -> Vec<Line> {
        let a = self.rng.pick(arrays);
        let sites = if a == "gdev" {
            let acc = vec![(Kind::Load, a.clone())];
            vec![Site {
                how: How::Cond,
                acc,
            }]
        } else {
            vec![]
        };
        self.scopes.push(vec![]);
        let x = self.name("x");
        self.declare(&x, Ty::Int);
        let r = if self.rng.percent(50) { "&" } else { "" };
        let head = line(ind, format!("for (int {r}{x} : {a})"), sites);
        self.with_body(&mut out, head, ind, d);
        self.scopes.pop();
        out
    }

    fn while_stmt(&mut self, ind: usize, d: u32) -> Vec<Line> {
        let g = !self.rng.percent(30);
        let mut out = Vec::new();
        self.pragma(ind, &mut out);
        self.scopes.push(vec![]);
        let (c, sites) = self.clause(g, false, false);
        let head = line(ind, format!("while ({c})"), sites);
        self.with_body(&mut out, head, ind, d);
        self.scopes.pop();
        out
    }

    fn do_stmt(&mut self, ind: usize, d: u32) -> Vec<Line> {
        let g = !self.rng.percent(30);
        let mut out = Vec::new();
        self.pragma(ind, &mut out);
        let mut body = Vec::new();
        let braced = self.with_body(&mut body, line(ind, "do", vec![]), ind, d);
        let c = self.cond(1, g);
        let tail = format!("while ({});", c.text);
        let mut last = body.pop().unwrap();
        if braced || self.rng.percent(50) {
            last.text = format!("{} {tail}", last.text);
            last.sites.extend(c.sited(How::Cond));
            body.push(last);
        } else {
            body.push(last);
            body.push(line(ind, tail, c.sited(How::Cond)));
        }
        out.extend(body);
        out
    }

    fn switch_stmt(&mut self, ind: usize, d: u32) -> Vec<Line> {
        let g = !self.rng.percent(30);
        self.scopes.push(vec![]);
        let (c, sites) = self.clause(g, true, true);
        let mut out = vec![line(ind, format!("switch ({c}) {{"), sites)];
        let d = d.saturating_sub(1);
        let cases = 1 + self.rng.below(3);
        for c in 0..=cases {
            let label = if c == cases {
                "default:".to_string()
            } else {
                format!("case {c}:")
            };
            self.scopes.push(vec![]);
            if self.rng.percent(35) {
                out.push(line(ind + 1, format!("{label} {{"), vec![]));
                for _ in 0..1 + self.rng.below(2) {
                    out.extend(self.stmt(ind + 2, d, true));
                }
                out.push(line(ind + 2, "break;", vec![]));
                out.push(line(ind + 1, "}", vec![]));
            } else {
                out.push(line(ind + 1, label, vec![]));
                for _ in 0..self.rng.below(3) {
                    out.extend(self.stmt(ind + 2, d, false));
                }
                out.push(line(ind + 2, "break;", vec![]));
            }
            self.scopes.pop();
        }
        out.push(line(ind, "}", vec![]));
        self.scopes.pop();
        out
    }

    /// A block, maybe hiding outer names: a pointer named like a local array is global memory
    /// in it, an array named like a global pointer is not.
    fn block(&mut self, ind: usize, d: u32) -> Vec<Line> {
        let mut out = vec![line(ind, "{", vec![])];
        self.scopes.push(vec![]);
        if self.rng.percent(70) {
            let locals = self.visible(|t| matches!(t, Ty::Array { .. } | Ty::Alias { .. }));
            let globals = self.visible(|t| t == Ty::Global);
            if !locals.is_empty() && self.rng.percent(50) {
                let v = self.rng.pick(&locals).0;
                let text = format!("int *{v} = m + {};", self.konst());
                self.declare(&v, Ty::Global);
                out.push(line(ind + 1, text, vec![]));
            } else {
                let v = self.rng.pick(&globals).0;
                if v != "m" {
                    let shared = self.device_only() && self.rng.percent(40);
                    let text = if shared {
                        format!("__shared__ int {v}[64];")
                    } else {
                        format!("int {v}[8];")
                    };
                    self.declare(&v, Ty::Array { dims: 1, shared });
                    out.push(line(ind + 1, text, vec![]));
                }
            }
        }
        for _ in 0..1 + self.rng.below(3) {
            out.extend(self.stmt(ind + 1, d.saturating_sub(1), true));
        }
        self.scopes.pop();
        out.push(line(ind, "}", vec![]));
        out
    }
}

// ------------------------------------------------------------------------------------------
// Files

/// A fence expected in a file.
#[derive(Debug)]
struct Expected {
    line: usize,
    function: String,
    site: Site,
}

struct Generated {
    text: String,
    expected: Vec<Expected>,
    /// The line of each kernel's opening brace.
    kernel_lines: Vec<usize>,
    kernels: usize,
}

const PRELUDE: &str = "\
#include <cuda_runtime.h>

struct Node {
  int val;
  int pad[3];
  Node *next;
};

__device__ int gdev[64];
__device__ int gcount;
__shared__ int fsh[64];
";

/// One random `.cu` file of `functions` functions and a `main` that launches its kernels.
fn generate(seed: u64, file: usize, functions: usize) -> Generated {
    let mut g = Gen {
        rng: Rng(seed),
        k: 100,
        scopes: Vec::new(),
        fresh: 0,
        fun: Fun::Kernel,
        returns: false,
        callees: Vec::new(),
    };
    let mut lines: Vec<String> = vec![format!("// wmfix random test, seed {seed:#x}")];
    lines.extend(PRELUDE.lines().map(String::from));
    let mut expected = Vec::new();
    let mut kernel_lines = Vec::new();
    let mut launches = Vec::new();
    for f in 0..functions {
        g.fresh = 0;
        g.fun = match g.rng.below(20) {
            0..=8 => Fun::Kernel,
            9..=15 => Fun::Device,
            16 | 17 => Fun::HostDevice,
            _ => Fun::Host,
        };
        g.returns = matches!(g.fun, Fun::Device | Fun::HostDevice | Fun::Host) && g.rng.percent(70);
        let ret = if g.returns { "int" } else { "void" };
        let mut params: Vec<(String, Ty)> = ["ga", "gb", "m"]
            .iter()
            .map(|p| (p.to_string(), Ty::Global))
            .chain([("n".to_string(), Ty::Int)])
            .collect();
        lines.push(String::new());
        let name;
        let mut template = false;
        let head = match g.fun {
            Fun::Kernel => {
                name = format!("k{file}_{f}");
                match g.rng.below(6) {
                    0 => format!("__global__ void __launch_bounds__(128) {name}({PARAMS})"),
                    1 => {
                        template = true;
                        params.push(("B".into(), Ty::Const));
                        lines.push("template <int B>".into());
                        format!("__global__ void {name}({PARAMS})")
                    }
                    2 => format!(
                        "__global__ void {name}(int *__restrict__ ga, int *gb, float *gf, Node *node, int *m, int n)"
                    ),
                    _ => format!("__global__ void {name}({PARAMS})"),
                }
            }
            Fun::Device => {
                name = format!("d{file}_{f}");
                let q = g.rng.pick(&[
                    "__device__",
                    "__device__ __forceinline__",
                    "static __device__",
                    "__device__ __noinline__",
                ]);
                format!("{q} {ret} {name}({PARAMS})")
            }
            Fun::HostDevice => {
                name = format!("h{file}_{f}");
                format!("__host__ __device__ {ret} {name}({PARAMS})")
            }
            Fun::Host => {
                name = format!("host{file}_{f}");
                format!("static {ret} {name}({PARAMS})")
            }
        };
        let mut body: Vec<Line> = Vec::new();
        g.scopes = vec![params];
        if g.device_only() {
            g.declare(
                "fsh",
                Ty::Array {
                    dims: 1,
                    shared: true,
                },
            );
        }
        g.scopes.push(vec![]);
        let t = match g.fun {
            Fun::Kernel | Fun::Device => g.rng.pick(&[
                "int t = threadIdx.x;",
                "int t = blockIdx.x * blockDim.x + threadIdx.x;",
                "int t = threadIdx.x + threadIdx.y * blockDim.x;",
            ]),
            _ => "int t = n & 7;",
        };
        body.push(line(1, t, vec![]));
        g.declare("t", Ty::Int);
        for _ in 0..1 + g.rng.below(3) {
            body.extend(g.array_declaration(1));
        }
        if g.rng.percent(60) {
            body.extend(g.alias_declaration(1, false));
        }
        for _ in 0..3 + g.rng.below(8) {
            body.extend(g.stmt(1, 3, true));
        }
        if g.returns {
            let gl = !g.rng.percent(30);
            let e = g.int_expr(2, gl);
            body.push(line(1, format!("return {};", e.text), e.sited(How::Wrap)));
        }
        // The opening brace on the head's line or on its own.
        let brace_own_line = g.rng.percent(20);
        if brace_own_line {
            lines.push(head);
            lines.push("{".into());
        } else {
            lines.push(format!("{head} {{"));
        }
        if g.fun == Fun::Kernel {
            kernel_lines.push(lines.len());
            launches.push((name.clone(), template));
        }
        for l in body {
            // Trailing comments now and then; never after a #pragma.
            let mut text = l.text;
            if !text.trim_start().starts_with('#') && g.rng.percent(5) {
                text += &format!("  // note {}", g.konst());
            }
            lines.push(text);
            if g.fun == Fun::Host {
                continue; // host code gets no fences
            }
            for site in l.sites {
                expected.push(Expected {
                    line: lines.len(),
                    function: name.clone(),
                    site,
                });
            }
        }
        lines.push("}".into());
        if g.fun != Fun::Kernel {
            g.callees.push(Callee {
                name,
                returns: g.returns,
                fun: g.fun,
            });
        }
    }
    lines.push(String::new());
    lines.push("int main() {".into());
    lines.push("  int *ga = nullptr, *gb = nullptr, *m = nullptr;".into());
    lines.push("  float *gf = nullptr;".into());
    lines.push("  Node *node = nullptr;".into());
    lines.push("  int n = 64;".into());
    lines.push("  cudaStream_t st;".into());
    lines.push("  cudaStreamCreate(&st);".into());
    let kernels = launches.len();
    for (name, template) in launches {
        let name = if template {
            format!("{name}<{}>", 1 << g.rng.below(8))
        } else {
            name
        };
        let config = g.rng.pick(&[
            "2, 64",
            "dim3(2, 2), dim3(8, 8)",
            "4, 32, 256",
            "dim3(3), 128, 0, st",
            "1, dim3(16, 2, 2), 0, 0",
        ]);
        lines.push(format!("  {name}<<<{config}>>>({ARGS});"));
    }
    lines.push("  cudaDeviceSynchronize();".into());
    lines.push("  return 0;".into());
    lines.push("}".into());
    let mut text = lines.join("\n");
    text.push('\n');
    Generated {
        text,
        expected,
        kernel_lines,
        kernels,
    }
}

// ------------------------------------------------------------------------------------------
// Checks

/// As `plan::one_line`: whitespace collapsed, long texts cut at 100 characters.
fn one_line(s: &str) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() > 100 {
        format!("{}...", s.chars().take(97).collect::<String>())
    } else {
        s
    }
}

/// A fence as compared: function, kind, placement forms, accesses (sorted).
type Key = (String, String, Vec<String>, Vec<String>);

fn expected_key(e: &Expected) -> Key {
    let kind = e.site.acc.iter().map(|a| a.0).max().unwrap();
    let mut acc: Vec<String> = e
        .site
        .acc
        .iter()
        .map(|(k, t)| format!("{}: {}", k.name(), one_line(t)))
        .collect();
    acc.sort();
    let hows = e
        .site
        .how
        .placements()
        .iter()
        .map(|s| s.to_string())
        .collect();
    (e.function.clone(), kind.name().to_string(), hows, acc)
}

fn actual_key(f: &serde_json::Value) -> Key {
    let strings = |v: &serde_json::Value, field: &str| -> Vec<String> {
        v[field]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect()
    };
    let mut acc = strings(f, "accesses");
    acc.sort();
    let hows = f["placements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["how"].as_str().unwrap().to_string())
        .collect();
    (
        f["function"].as_str().unwrap().to_string(),
        f["kind"].as_str().unwrap().to_string(),
        hows,
        acc,
    )
}

/// Compares the fences of one file with the expected ones, line by line.
fn check_fences(
    file: &str,
    text: &str,
    generated: &Generated,
    fences: &[&serde_json::Value],
    errors: &mut Vec<String>,
) {
    let mut want: BTreeMap<usize, Vec<Key>> = BTreeMap::new();
    for e in &generated.expected {
        want.entry(e.line).or_default().push(expected_key(e));
    }
    let mut got: BTreeMap<usize, Vec<Key>> = BTreeMap::new();
    for f in fences {
        let line = f["line"].as_u64().unwrap() as usize;
        got.entry(line).or_default().push(actual_key(f));
    }
    let lines: Vec<&str> = text.lines().collect();
    let all: std::collections::BTreeSet<usize> = want.keys().chain(got.keys()).copied().collect();
    for l in all {
        let mut w = want.remove(&l).unwrap_or_default();
        let mut g = got.remove(&l).unwrap_or_default();
        w.sort();
        g.sort();
        if w != g {
            errors.push(format!(
                "{file}:{l}: {}\n    expected {w:?}\n    got      {g:?}",
                lines.get(l - 1).unwrap_or(&"").trim()
            ));
        }
    }
}

/// Where a fence's text was found in an instrumented file: id, line of the original, form.
type Found = (usize, usize, &'static str);

/// The instrumented text with everything wmfix inserts taken out, except braces around
/// bodies; the fences and kernel entries found, by line of the original.
fn strip(text: &str) -> (String, Vec<Found>, Vec<usize>) {
    #[derive(PartialEq)]
    enum Open {
        After(usize),
        Launch(usize),
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut found = Vec::new();
    let mut entries = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    let (mut i, mut line, mut depth) = (0, 1, 0usize);
    let number = |i: &mut usize| {
        let start = *i;
        while b[*i].is_ascii_digit() {
            *i += 1;
        }
        text[start..*i].parse::<usize>().unwrap()
    };
    while i < b.len() {
        let rest = &text[i..];
        // Only these bytes can start an insertion: the others are copied at once.
        let rest_or_none = if matches!(b[i], b' ' | b',' | b'W' | b'w') {
            rest
        } else {
            ""
        };
        if let Some(r) = rest_or_none.strip_prefix(" if (WMFIX_IN_LOOP(") {
            // A loop condition's in-body placement: the guard, then the fence itself.
            i = text.len() - r.len();
            number(&mut i);
            assert_eq!(&text[i..i + 2], "))");
            i += 2;
            assert!(
                text[i..].starts_with(" WMFIX_FENCE"),
                "an unguarded IN_LOOP"
            );
        } else if let Some(r) = rest_or_none.strip_prefix(" WMFIX_FENCE(") {
            i = text.len() - r.len();
            let id = number(&mut i);
            assert_eq!(&text[i..i + 2], ");");
            i += 2;
            found.push((id, line, "statement"));
        } else if let Some(r) = rest_or_none
            .strip_prefix(" WMFIX_FENCE_AT(")
            .or_else(|| rest_or_none.strip_prefix(" WMFIX_FENCE_PTR("))
            .or_else(|| rest_or_none.strip_prefix(" WMFIX_FENCE_AIM("))
            .or_else(|| rest_or_none.strip_prefix(" WMFIX_FENCE_AIM_PTR("))
            .or_else(|| rest_or_none.strip_prefix(" WMFIX_FENCE_AIM_IF("))
            .or_else(|| rest_or_none.strip_prefix(" WMFIX_RACE_LOAD("))
            .or_else(|| rest_or_none.strip_prefix(" WMFIX_RACE_STORE("))
        {
            // A fence naming its access's address for aim-str (or a race build's record of
            // another access, before it): the id, then the address, one line with balanced
            // parentheses.
            let race_hook = rest.starts_with(" WMFIX_RACE_");
            i = text.len() - r.len();
            let id = number(&mut i);
            assert_eq!(&text[i..i + 2], ", ");
            i += 2;
            let mut level = 0;
            while !(b[i] == b')' && level == 0) {
                match b[i] {
                    b'(' => level += 1,
                    b')' => level -= 1,
                    b'\n' => panic!("an address over two lines at line {line}"),
                    _ => {}
                }
                i += 1;
            }
            assert_eq!(&text[i..i + 2], ");");
            i += 2;
            if race_hook {
                assert!(
                    text[i..].starts_with(" WMFIX_RACE_")
                        || text[i..].starts_with(&format!(" WMFIX_FENCE_AT({id}, "))
                        || text[i..].starts_with(&format!(" WMFIX_FENCE_PTR({id}, "))
                        || text[i..].starts_with(&format!(" WMFIX_FENCE_AIM({id}, "))
                        || text[i..].starts_with(&format!(" WMFIX_FENCE_AIM_PTR({id}, "))
                        || text[i..].starts_with(&format!(" WMFIX_FENCE_AIM_IF({id}, "))
                        || text[i..].starts_with(&format!(" WMFIX_FENCE({id});")),
                    "a race record not followed by its fence at line {line}"
                );
            } else {
                found.push((id, line, "statement"));
            }
        } else if let Some(r) = rest_or_none.strip_prefix(", WMFIX_FENCE_EXPR(") {
            i = text.len() - r.len();
            let id = number(&mut i);
            assert_eq!(&text[i..i + 1], ")");
            i += 1;
            found.push((id, line, "comma"));
        } else if let Some(r) = rest_or_none
            .strip_prefix("WMFIX_AFTER(")
            .or_else(|| rest_or_none.strip_prefix("WMFIX_AFTER_RETURN("))
            .or_else(|| rest_or_none.strip_prefix("WMFIX_AFTER_IF("))
            .or_else(|| rest_or_none.strip_prefix("WMFIX_AFTER_RETURN_IF("))
        {
            let places = rest_or_none.starts_with("WMFIX_AFTER_IF(")
                || rest_or_none.starts_with("WMFIX_AFTER_RETURN_IF(");
            i = text.len() - r.len();
            let id = number(&mut i);
            assert_eq!(&text[i..i + 2], ", ");
            i += 2;
            if places {
                // `WMFIX_GLOBAL(p) || ...`, then the value.
                assert!(text[i..].starts_with("WMFIX_GLOBAL("), "line {line}");
                let mut level = 0;
                while !(b[i] == b',' && level == 0) {
                    match b[i] {
                        b'(' => level += 1,
                        b')' => level -= 1,
                        b'\n' => panic!("places over two lines at line {line}"),
                        _ => {}
                    }
                    i += 1;
                }
                assert_eq!(&text[i..i + 2], ", ");
                i += 2;
            }
            found.push((id, line, "wrap"));
            stack.push(Open::After(depth));
        } else if let Some(r) = rest_or_none.strip_prefix(" WMFIX_KERNEL_ENTRY();") {
            i = text.len() - r.len();
            entries.push(line);
        } else if let Some(r) = rest_or_none.strip_prefix("wmfix_launch(") {
            i = text.len() - r.len();
            stack.push(Open::Launch(depth));
        } else if let Some((word, r)) = ["threadIdx", "blockIdx", "gridDim"]
            .iter()
            .find_map(|w| Some((*w, rest_or_none.strip_prefix(&format!("wmfix_{w}()"))?)))
        {
            out.push_str(word);
            i = text.len() - r.len();
        } else {
            let c = b[i];
            match c {
                b'(' => depth += 1,
                b')' if stack.last() == Some(&Open::After(depth)) => {
                    stack.pop();
                    i += 1;
                    continue;
                }
                b')' if stack.last() == Some(&Open::Launch(depth)) => {
                    stack.pop();
                    i += 1;
                    continue;
                }
                b')' => depth -= 1,
                b',' if stack.last() == Some(&Open::Launch(depth)) => {
                    // `, stream)`: skip to the `)` that closes wmfix_launch.
                    let mut level = 0;
                    while !(b[i] == b')' && level == 0) {
                        match b[i] {
                            b'(' => level += 1,
                            b')' => level -= 1,
                            _ => {}
                        }
                        i += 1;
                    }
                    continue;
                }
                b'\n' => line += 1,
                _ => {}
            }
            let ch = rest.chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    assert!(stack.is_empty(), "unclosed WMFIX_AFTER or wmfix_launch");
    (out, found, entries)
}

/// Whether `got` is `want` with ` {` and ` }` inserted; how many of each.
fn braces_only(got: &[u8], want: &[u8]) -> Option<(usize, usize)> {
    fn go(
        got: &[u8],
        want: &[u8],
        i: usize,
        j: usize,
        failed: &mut HashSet<(usize, usize)>,
    ) -> Option<(usize, usize)> {
        if i == got.len() && j == want.len() {
            return Some((0, 0));
        }
        if failed.contains(&(i, j)) {
            return None;
        }
        if i < got.len()
            && j < want.len()
            && got[i] == want[j]
            && let Some(r) = go(got, want, i + 1, j + 1, failed)
        {
            return Some(r);
        }
        for (brace, open) in [(b" {", true), (b" }", false)] {
            if got[i..].starts_with(brace)
                && let Some((o, c)) = go(got, want, i + 2, j, failed)
            {
                return Some(if open { (o + 1, c) } else { (o, c + 1) });
            }
        }
        failed.insert((i, j));
        None
    }
    go(got, want, 0, 0, &mut HashSet::new())
}

/// Property 3 for one file, plus the fences' lines and the kernel entries.
fn check_text(
    file: &str,
    original: &str,
    instrumented: &str,
    total: usize,
    generated: &Generated,
    fences: &[&serde_json::Value],
    errors: &mut Vec<String>,
) {
    let header = format!(
        "#define WMFIX_NUM_FENCES {total}\n#define WMFIX_FENCE_SCOPE 1\n#include \"../runtime/wmfix.cuh\"\n#line 1\n"
    );
    let Some(body) = instrumented.strip_prefix(&header) else {
        errors.push(format!("{file}: header is not {header:?}"));
        return;
    };
    let (stripped, found, entries) = strip(body);
    for word in ["WMFIX", "wmfix_"] {
        if stripped.contains(word) {
            errors.push(format!("{file}: {word} left after stripping"));
        }
    }
    let (want, got): (Vec<&str>, Vec<&str>) =
        (original.lines().collect(), stripped.lines().collect());
    if want.len() != got.len() {
        errors.push(format!(
            "{file}: {} lines, the original has {}",
            got.len(),
            want.len()
        ));
    }
    let (mut opens, mut closes) = (0, 0);
    for (n, (w, g)) in want.iter().zip(&got).enumerate() {
        if w == g {
            continue;
        }
        match braces_only(g.as_bytes(), w.as_bytes()) {
            Some((o, c)) => {
                opens += o;
                closes += c;
            }
            None => errors.push(format!(
                "{file}:{}: the original line is not kept\n    original {w:?}\n    stripped {g:?}",
                n + 1
            )),
        }
    }
    if opens != closes {
        errors.push(format!("{file}: {opens} braces opened, {closes} closed"));
    }
    if original.ends_with('\n') != stripped.ends_with('\n') {
        errors.push(format!("{file}: the final newline differs"));
    }
    if entries != generated.kernel_lines {
        errors.push(format!(
            "{file}: kernel entries on lines {entries:?}, kernels open on {:?}",
            generated.kernel_lines
        ));
    }
    for (word, count) in [
        ("threadIdx", original.matches("threadIdx").count()),
        ("blockIdx", original.matches("blockIdx").count()),
        ("gridDim", original.matches("gridDim").count()),
    ] {
        let replaced = instrumented.matches(&format!("wmfix_{word}()")).count();
        if replaced != count {
            errors.push(format!("{file}: {replaced} of {count} {word} replaced"));
        }
    }
    let launches = instrumented.matches("<<<wmfix_launch(").count();
    if launches != generated.kernels || original.matches("<<<").count() != generated.kernels {
        errors.push(format!(
            "{file}: {launches} launches rewritten, {} kernels",
            generated.kernels
        ));
    }
    // Each fence's text where fences.json places it.
    let mut placed: Vec<(usize, usize, String)> = fences
        .iter()
        .flat_map(|f| {
            let id = f["id"].as_u64().unwrap() as usize;
            f["placements"].as_array().unwrap().iter().map(move |p| {
                (
                    id,
                    p["line"].as_u64().unwrap() as usize,
                    p["how"].as_str().unwrap().to_string(),
                )
            })
        })
        .collect();
    let mut seen: Vec<(usize, usize, String)> = found
        .iter()
        .map(|(id, l, how)| (*id, *l, how.to_string()))
        .collect();
    placed.sort();
    seen.sort();
    if placed != seen {
        let only_json: Vec<_> = placed.iter().filter(|p| !seen.contains(p)).collect();
        let only_text: Vec<_> = seen.iter().filter(|p| !placed.contains(p)).collect();
        errors.push(format!(
            "{file}: fence texts differ from fences.json's placements: only in fences.json {only_json:?}, only in the text {only_text:?}"
        ));
    }
}

/// Builds each instrumented file with nvcc, in parallel; where one fails, builds the original
/// too, to tell a generator bug from a rewriter bug.
fn build_all(tree: &Path, originals: &Path, files: &[String], errors: &mut Vec<String>) {
    // Device code to PTX for sm_90 (compute_90), not optimised (-Xcicc -O0): the front end and
    // the host compiler check the rewriter's output, and it inserts no assembly, so neither the
    // optimiser nor ptxas checks anything of it. With -arch=sm_90 -G a file took 22 s of CPU,
    // three quarters of it in ptxas; this takes 6 s (and -O3 102 s). -w: the random code warns
    // a lot (unused and uninitialised variables).
    let flags = "-arch=compute_90 -Xcicc -O0 -std=c++17 -w";
    let results: Vec<(String, std::process::Output)> = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .iter()
            .map(|f| {
                s.spawn(move || {
                    let exe = f.trim_end_matches(".cu");
                    let cmd = format!("nvcc {flags} -o {exe} {f}");
                    (
                        f.clone(),
                        nvcc_command(tree).arg("-c").arg(&cmd).output().unwrap(),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (f, o) in results {
        if o.status.success() {
            continue;
        }
        let orig = nvcc_command(originals)
            .arg("-c")
            .arg(format!("nvcc {flags} -c -o /dev/null {f}"))
            .output()
            .unwrap();
        let whose = if orig.status.success() {
            "the original builds: a rewriter bug"
        } else {
            "the original does not build either: a generator bug"
        };
        errors.push(format!(
            "{f}: the instrumented file does not build ({whose}):\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
}

fn seeds() -> Vec<u64> {
    match std::env::var("WMFIX_RANDOM_SEEDS") {
        Ok(s) => s
            .split(',')
            .map(|x| {
                let x = x.trim();
                match x.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16).unwrap(),
                    None => x.parse().unwrap(),
                }
            })
            .collect(),
        Err(_) => SEEDS.to_vec(),
    }
}

#[test]
fn random_programs_are_instrumented_faithfully() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("random");
    std::fs::create_dir_all(&src).unwrap();
    let mut generated = Vec::new();
    let mut names = Vec::new();
    for (n, seed) in seeds().into_iter().enumerate() {
        let g = generate(seed, n, FUNCTIONS);
        let name = format!("r{n}.cu");
        std::fs::write(src.join(&name), &g.text).unwrap();
        names.push(name);
        generated.push(g);
    }

    let o = run(tmp.path(), &["insert", "random", "--out", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut errors: Vec<String> = stderr(&o)
        .lines()
        .filter(|l| !l.starts_with("wmfix: "))
        .map(|l| format!("wmfix insert: {l}"))
        .collect();
    let out = tmp.path().join("out");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("fences.json")).unwrap()).unwrap();
    let fences = json["fences"].as_array().unwrap();
    let total = fences.len();
    assert_eq!(json["total"].as_u64(), Some(total as u64));

    let ids: Vec<usize> = fences
        .iter()
        .map(|f| f["id"].as_u64().unwrap() as usize)
        .collect();
    if ids != (0..total).collect::<Vec<_>>() {
        errors.push("fence ids are not 0..total in order".to_string());
    }
    for (name, g) in names.iter().zip(&generated) {
        let in_file: Vec<&serde_json::Value> = fences
            .iter()
            .filter(|f| f["file"] == name.as_str())
            .collect();
        check_fences(name, &g.text, g, &in_file, &mut errors);
        let instrumented = std::fs::read_to_string(out.join("tree").join(name)).unwrap();
        check_text(
            name,
            &g.text,
            &instrumented,
            total,
            g,
            &in_file,
            &mut errors,
        );
    }
    build_all(&out.join("tree"), &src, &names, &mut errors);

    let expected: usize = generated.iter().map(|g| g.expected.len()).sum();
    let keep = !errors.is_empty() || std::env::var_os("WMFIX_RANDOM_KEEP").is_some();
    let dir = if keep {
        tmp.keep()
    } else {
        tmp.path().to_path_buf()
    };
    let sources = dir.join("random");
    assert!(
        errors.is_empty(),
        "{} problems in {} random files ({expected} fences expected, {total} inserted); sources kept in {}:\n{}",
        errors.len(),
        names.len(),
        sources.display(),
        errors.join("\n")
    );
    let lines: usize = generated.iter().map(|g| g.text.lines().count()).sum();
    eprintln!("{} files, {lines} lines, {total} fences", names.len());
    if keep {
        eprintln!("sources kept in {}", sources.display());
    }
}
