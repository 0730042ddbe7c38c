//! GPUs by name: the file-name form of a GPU's name, and the chip profiles wmfix ships
//! (`runtime-cu/profiles/`, built into the binary), one of which runs get when it is made for
//! the GPU they run on.

include!(concat!(env!("OUT_DIR"), "/profile_files.rs"));

/// `NVIDIA H200` -> `nvidia-h200`; the name `wmfix tune` gives `profiles/<name>.toml`.
pub fn slug(gpu: &str) -> String {
    let mut out = String::new();
    for c in gpu.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "unknown-gpu".into()
    } else {
        out
    }
}

/// The shipped profile made for `gpu`: the one whose name is the GPU's slug, or the longest
/// that begins it at a word (`nvidia-h100` for `NVIDIA H100 80GB HBM3`). Its name and text.
pub fn shipped_for(gpu: &str) -> Option<(&'static str, &'static str)> {
    shipped_in(PROFILE_FILES, gpu)
}

fn shipped_in(
    files: &[(&'static str, &'static str)],
    gpu: &str,
) -> Option<(&'static str, &'static str)> {
    let s = slug(gpu);
    files
        .iter()
        .filter(|(name, _)| {
            s == *name
                || s.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('-'))
        })
        .max_by_key(|(name, _)| name.len())
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_is_picked_by_the_gpus_name() {
        let files = [
            ("hopper-default", "a"),
            ("nvidia-h200", "b"),
            ("nvidia-h100", "c"),
            ("nvidia-h100-nvl", "d"),
        ];
        let pick = |g: &str| shipped_in(&files, g).map(|p| p.0);
        assert_eq!(pick("NVIDIA H200"), Some("nvidia-h200"));
        assert_eq!(pick("NVIDIA H100 80GB HBM3"), Some("nvidia-h100"));
        assert_eq!(pick("NVIDIA H100 NVL"), Some("nvidia-h100-nvl"));
        assert_eq!(pick("NVIDIA H2000"), None, "a prefix must end at a word");
        assert_eq!(pick("NVIDIA A100-SXM4-80GB"), None);
    }

    #[test]
    fn the_shipped_profiles_are_built_in() {
        let names: Vec<&str> = PROFILE_FILES.iter().map(|p| p.0).collect();
        assert!(names.contains(&"hopper-default"), "{names:?}");
        assert_eq!(shipped_for("NVIDIA H200").map(|p| p.0), Some("nvidia-h200"));
        // The name nvidia-smi gives the H100 SXM card the H100 cells were measured on.
        assert_eq!(
            shipped_for("NVIDIA H100 80GB HBM3").map(|p| p.0),
            Some("nvidia-h100")
        );
        // The built-in default is named for no GPU.
        for gpu in ["NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA GH200 480GB"] {
            assert_ne!(
                shipped_for(gpu).map(|p| p.0),
                Some("hopper-default"),
                "{gpu}"
            );
        }
    }
}
