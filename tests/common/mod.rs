//! Helpers shared by the integration tests: the real binary, run on copies of fixture trees.
#![allow(dead_code)]

pub mod race_trace;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn wmfix() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wmfix"))
}

/// Runs wmfix with `args` in `cwd`.
pub fn run(cwd: &Path, args: &[&str]) -> Output {
    wmfix()
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("wmfix runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Copies `src` (a fixture or case-study folder) to `dest/<name>`.
pub fn copy_tree(src: &Path, dest: &Path) -> PathBuf {
    let target = dest.join(src.file_name().unwrap());
    for entry in walkdir::WalkDir::new(src) {
        let entry = entry.unwrap();
        let to = target.join(entry.path().strip_prefix(src).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
    target
}

/// Copies `tests/fixtures/<name>` into a fresh temporary directory.
pub fn fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let path = copy_tree(&repo().join("tests/fixtures").join(name), tmp.path());
    (tmp, path)
}

/// Every file under `root` with its bytes, to show that a tree was left as it was.
pub fn snapshot_bytes(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = walkdir::WalkDir::new(root)
        .sort_by_file_name()
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().to_path_buf(), std::fs::read(e.path()).unwrap()))
        .collect();
    out.sort();
    out
}

/// nvcc: from PATH, CUDA_HOME, or the virtualenv that scripts/nvcc-env.sh installs.
pub fn nvcc() -> PathBuf {
    if let Ok(p) = which("nvcc") {
        return p;
    }
    if let Ok(home) = std::env::var("CUDA_HOME") {
        let p = Path::new(&home).join("bin/nvcc");
        if p.exists() {
            return p;
        }
    }
    let venv = repo().join(".venv-nvcc/lib");
    if let Some(p) = walkdir::WalkDir::new(&venv)
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| {
            e.file_name() == "nvcc" && e.path().parent().is_some_and(|d| d.ends_with("cu13/bin"))
        })
    {
        return p.path().to_path_buf();
    }
    panic!(
        "nvcc not found: run the tests with scripts/test.sh, which installs nvcc 13.0 from PyPI"
    );
}

fn which(name: &str) -> Result<PathBuf, ()> {
    let path = std::env::var_os("PATH").ok_or(())?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or(())
}

/// A command running nvcc's toolchain, with the wheel's lib/ on the linker's path.
pub fn nvcc_command(cwd: &Path) -> Command {
    let nvcc = nvcc();
    let bin = nvcc.parent().unwrap().to_path_buf();
    let lib = bin.parent().unwrap().join("lib");
    let mut c = Command::new("sh");
    c.current_dir(cwd);
    let path = std::env::var("PATH").unwrap_or_default();
    c.env("PATH", format!("{}:{path}", bin.display()));
    let lp = std::env::var("LIBRARY_PATH").unwrap_or_default();
    c.env("LIBRARY_PATH", format!("{}:{lp}", lib.display()));
    c
}

/// Whether process `pid` still runs, waiting up to 2 s for it to go: a killed process may stay
/// a zombie for a moment until it is reaped.
pub fn alive(pid: i32) -> bool {
    let t0 = std::time::Instant::now();
    loop {
        let running = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| !r.trim_start().starts_with('Z'))
        });
        if !running || t0.elapsed().as_secs() >= 2 {
            return running;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Sends ctrl-c to a wmfix started by the test and checks it exits 130, as documented.
pub fn interrupt(child: std::process::Child) -> Output {
    sigint(&child);
    exited_130(child.wait_with_output().unwrap())
}

/// SIGINT twice, as `timeout -s INT` delivers it (to wmfix, then to its process group): the
/// second as soon as wmfix says it has taken the first (so that the kernel does not merge the
/// two into one), a millisecond or so later, while wmfix is stopping. One interruption: wmfix must stop as
/// it does for one. Checks exit 130. The child's stderr must be piped.
pub fn interrupt_twice(mut child: std::process::Child) -> Output {
    use std::io::Read;
    use std::sync::{Arc, Mutex};
    let err = Arc::new(Mutex::new(Vec::new()));
    let mut pipe = child.stderr.take().expect("stderr piped");
    let reader = {
        let err = Arc::clone(&err);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                err.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    sigint(&child);
    let t0 = std::time::Instant::now();
    let taken = || String::from_utf8_lossy(&err.lock().unwrap()).contains("wmfix: interrupted");
    while !taken() {
        assert!(
            t0.elapsed().as_secs() < 10,
            "the first SIGINT was not taken"
        );
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    sigint(&child);
    let mut o = child.wait_with_output().unwrap();
    reader.join().unwrap();
    o.stderr = err.lock().unwrap().clone();
    exited_130(o)
}

fn sigint(child: &std::process::Child) {
    // SAFETY: kill(2) sends SIGINT to a process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
}

fn exited_130(o: Output) -> Output {
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// splitmix64 (Steele, Lea, Flood 2014): the random tests' generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn percent(&mut self, p: u64) -> bool {
        self.next() % 100 < p
    }
    pub fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())].clone()
    }
}

/// A copy of the stand-in app of `wmfix test` (`fixtures/standin`) with a kernel of two fences.
pub fn standin_with_kernel(tmp: &Path) -> PathBuf {
    let app = copy_tree(&repo().join("tests/fixtures/standin"), tmp);
    std::fs::write(
        app.join("kernel.cu"),
        "__global__ void k(int *a) {\n  a[0] = 1;\n  a[1] = 2;\n}\n",
    )
    .unwrap();
    app
}
