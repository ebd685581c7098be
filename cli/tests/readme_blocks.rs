//! Every fenced block in README.md is a whole program scripts/outside-test.sh builds, or is
//! marked as a fragment (issue 24, item 4). This checks the marking on every `cargo test`, in
//! a second; the outside test (part of scripts/test.sh) compiles, links and runs the programs
//! against an install.

use std::path::Path;
use std::process::{Command, Output};

fn check(readme: &Path) -> Output {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    Command::new("bash")
        .arg(repo.join("scripts/outside-test.sh"))
        .arg("--check-readme")
        .env("CUDYN_README", readme)
        .output()
        .expect("running scripts/outside-test.sh")
}

#[test]
fn every_readme_block_is_a_program_or_marked_a_fragment() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let o = check(&repo.join("README.md"));
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    // README's C, C++ and Rust programs are among what is built.
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    for lang in ["c", "cpp", "rust"] {
        assert!(
            readme.contains(&format!("<!-- outside-test: build {lang} -->\n```{lang}\n")),
            "no {lang} program built"
        );
    }

    // The check fails on a block without a marker, naming its line, and on a bad build kind.
    let dir = std::env::temp_dir().join(format!("cudyn-readme-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("README.md");
    std::fs::write(&bad, "# x\n\n<!-- outside-test: fragment -->\n```c\nint x;\n```\n\ntext\n\n```c\nint y;\n```\n")
        .unwrap();
    let o = check(&bad);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("README.md:10: a ```c block with no outside-test marker"));
    std::fs::write(&bad, "<!-- outside-test: build fortran -->\n```f\nx\n```\n").unwrap();
    let o = check(&bad);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("build 'fortran'"), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}
