//! The runtime's host library on the CPU, through a fake CUDA runtime
//! (`runtime-cu/tests/host_fake_cuda.cpp`): the library wmfix builds (`app::host_lib`, in a
//! cache folder of the test's own) plans stressing blocks for launches on the legacy default
//! stream and on the program's streams, none inside a stream capture, and offers a warm
//! process's server its health check.

use std::path::Path;
use std::process::Command;

#[test]
fn the_host_library_stresses_default_stream_launches_through_a_fake_cuda_runtime() {
    let tmp = tempfile::tempdir().unwrap();
    // SAFETY: set before any thread of this test binary reads the environment (one test here).
    unsafe { std::env::set_var("WMFIX_CACHE_DIR", tmp.path().join("cache")) };
    let lib = wmfix::app::host_lib::ensure().expect("the host library builds");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = tmp.path().join("host_fake_cuda");
    let built = Command::new("g++")
        .args(["-std=c++17", "-O1", "-rdynamic", "-o"])
        .arg(&exe)
        .arg(root.join("runtime-cu/tests/host_fake_cuda.cpp"))
        .arg("-ldl")
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run = Command::new(&exe)
        .arg(&lib)
        .env_remove("WMFIX_PROFILE")
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert!(run.status.success(), "{out}{err}");
    assert_eq!(out.trim(), "host_fake_cuda: PASS", "{err}");
}
