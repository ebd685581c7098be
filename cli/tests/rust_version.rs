//! The Rust minimum the manifests and README state is what a fresh build needs (issue 24,
//! item 5). A crate that depends on cudyn, and `cargo install --path cli`, resolve their
//! dependencies anew, ignoring this repository's Cargo.lock, and a default resolver (edition
//! 2021) takes each dependency's newest compatible release whatever Rust it needs. So the test
//! resolves both the way they do, in an empty folder, and holds each package's `rust-version`
//! to the highest `rust-version` among what it builds (a crate that declares none counts as
//! its edition's first Rust). Equal, not merely at least: the minimum said is the true one.
//! Our own code's needs are checked by clippy's `incompatible_msrv` lint against the same
//! field (scripts/test.sh runs clippy).
//!
//! It asks crates.io for the newest releases; without a network it resolves from cargo's local
//! index instead and says so (what it checks then is the newest releases cargo has seen).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    // As an edition-2021 dependent resolves: newest releases, whatever Rust they need.
    c.env("CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS", "allow").env_remove("CARGO_TARGET_DIR");
    c
}

/// (major, minor) of "1.87" / "1.87.0".
fn version(s: &str) -> (u32, u32) {
    let mut it = s.split('.').map(|p| p.parse::<u32>().unwrap_or_else(|_| panic!("bad Rust version {s:?}")));
    (it.next().unwrap(), it.next().unwrap_or(0))
}

/// The first Rust of an edition: what a crate without `rust-version` needs at least.
fn edition_minimum(edition: &str) -> (u32, u32) {
    match edition {
        "2015" => (1, 0),
        "2018" => (1, 31),
        "2021" => (1, 56),
        "2024" => (1, 85),
        other => panic!("unknown edition {other}"),
    }
}

/// A fresh lock for the workspace at `dir`, then its metadata.
fn resolve(dir: &Path) -> Value {
    let _ = std::fs::remove_file(dir.join("Cargo.lock"));
    let online = cargo().arg("generate-lockfile").current_dir(dir).env("CARGO_HTTP_TIMEOUT", "60").output().unwrap();
    let offline = !online.status.success();
    if offline {
        eprintln!(
            "rust_version: no fresh resolve from crates.io ({}); resolving from cargo's local index",
            String::from_utf8_lossy(&online.stderr).lines().last().unwrap_or("")
        );
        let local = cargo().args(["generate-lockfile", "--offline"]).current_dir(dir).output().unwrap();
        assert!(local.status.success(), "{}", String::from_utf8_lossy(&local.stderr));
    }
    // Online, the metadata may need the manifests of releases cargo has not downloaded yet (a
    // fresh machine has only what the repository's own lock named); offline, what it has.
    let mut metadata = cargo();
    metadata.args(["metadata", "--format-version", "1"]).current_dir(dir);
    if offline {
        metadata.arg("--offline");
    }
    let m = metadata.output().unwrap();
    assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
    serde_json::from_slice(&m.stdout).unwrap()
}

/// Every package `root` builds (normal and build dependencies, default features), with the
/// Rust each needs: its `rust-version`, else its edition's first.
fn needs(meta: &Value, root: &str) -> BTreeMap<String, (u32, u32)> {
    let packages: BTreeMap<&str, &Value> =
        meta["packages"].as_array().unwrap().iter().map(|p| (p["id"].as_str().unwrap(), p)).collect();
    let nodes: BTreeMap<&str, &Value> =
        meta["resolve"]["nodes"].as_array().unwrap().iter().map(|n| (n["id"].as_str().unwrap(), n)).collect();
    let start = packages.iter().find(|(_, p)| p["name"] == root).map(|(id, _)| *id).expect("root package");
    let mut seen = BTreeSet::new();
    let mut stack = vec![start];
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        for d in nodes[id]["deps"].as_array().unwrap() {
            let built = d["dep_kinds"].as_array().unwrap().iter().any(|k| k["kind"].is_null() || k["kind"] == "build");
            if built {
                stack.push(d["pkg"].as_str().unwrap());
            }
        }
    }
    seen.iter()
        .map(|id| {
            let p = packages[id];
            let need = match p["rust_version"].as_str() {
                Some(v) => version(v),
                None => edition_minimum(p["edition"].as_str().unwrap()),
            };
            (format!("{} {}", p["name"].as_str().unwrap(), p["version"].as_str().unwrap()), need)
        })
        .collect()
}

fn declared(meta: &Value, name: &str) -> (u32, u32) {
    let p = meta["packages"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap();
    version(p["rust_version"].as_str().unwrap_or_else(|| panic!("{name} declares no rust-version")))
}

/// The highest need, and who has it.
fn highest(n: &BTreeMap<String, (u32, u32)>) -> ((u32, u32), Vec<&str>) {
    let top = *n.values().max().unwrap();
    (top, n.iter().filter(|(_, v)| **v == top).map(|(k, _)| k.as_str()).collect())
}

struct Scratch(PathBuf);
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn the_stated_rust_minimum_is_what_a_fresh_resolve_needs() {
    let scratch = Scratch(std::env::temp_dir().join(format!("cudyn-rust-version-{}", std::process::id())));
    let s = &scratch.0;
    let _ = std::fs::remove_dir_all(s);

    // 1. A crate that depends on cudyn by path (as README's "From Rust" shows).
    std::fs::create_dir_all(s.join("dependent/src")).unwrap();
    std::fs::write(
        s.join("dependent/Cargo.toml"),
        format!(
            "[package]\nname = \"dependent\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ncudyn = {{ path = {:?} }}\n",
            repo().display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(s.join("dependent/src/main.rs"), "fn main() {}\n").unwrap();
    let meta = resolve(&s.join("dependent"));
    let lib = needs(&meta, "cudyn");
    let ours = declared(&meta, "cudyn");

    // 2. `cargo install --path cli`: the workspace's manifests as they are, resolved anew (the
    //    sources do not take part in resolving; empty ones stand in).
    let ws = s.join("workspace");
    for f in ["src/lib.rs", "cli/src/main.rs", "tests/header.rs", "README.md"] {
        std::fs::create_dir_all(ws.join(f).parent().unwrap()).unwrap();
        std::fs::write(ws.join(f), "").unwrap();
    }
    std::fs::write(ws.join("build.rs"), "fn main() {}\n").unwrap();
    std::fs::copy(repo().join("Cargo.toml"), ws.join("Cargo.toml")).unwrap();
    std::fs::copy(repo().join("cli/Cargo.toml"), ws.join("cli/Cargo.toml")).unwrap();
    let meta = resolve(&ws);
    let cli = needs(&meta, "cudyn-cli");
    let cli_ours = declared(&meta, "cudyn-cli");

    for (what, pkg_needs, stated) in [("cudyn", &lib, ours), ("cudyn-cli", &cli, cli_ours)] {
        let deps: BTreeMap<String, (u32, u32)> = pkg_needs
            .iter()
            .filter(|(k, _)| !k.starts_with(&format!("{what} ")))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        let (top, who) = highest(&deps);
        assert_eq!(
            stated,
            top,
            "{what} says rust-version {}.{}, but a fresh build of it needs Rust {}.{} ({who:?}); set rust-version (and \
             README's minimum) to {}.{}",
            stated.0,
            stated.1,
            top.0,
            top.1,
            top.0,
            top.1
        );
    }
    assert_eq!(ours, cli_ours, "the library and the command state different minimums");

    // 3. README says the same minimum wherever it names one.
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let stated: Vec<&str> = readme
        .match_indices(" or newer")
        .filter_map(|(at, _)| readme[..at].rsplit(|c: char| c == ' ' || c == '(').next())
        .filter(|v| v.starts_with("1."))
        .collect();
    assert!(!stated.is_empty(), "README names no Rust minimum");
    for v in stated {
        assert_eq!(version(v), ours, "README says Rust {v} or newer; the manifests say {}.{}", ours.0, ours.1);
    }
}
