//! Silence and noise (issue 24, item 7): a long step of scripts/test.sh or scripts/demo.sh
//! says how far it is (scripts/progress.sh `with_progress`), and a long message several
//! commands repeat is said once (`say_once`). Run here through bash, as the scripts run them.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn bash(script: &str, env: &[(&str, &str)]) -> (i32, String) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!("set -u; source {}/scripts/progress.sh; {script}", repo.display()))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn a_long_step_says_how_long_it_has_run_and_what_it_is_doing() {
    let dir = std::env::temp_dir().join(format!("cudyn-progress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("step.log");
    let start = Instant::now();
    let (rc, out) = bash(
        &format!(
            "with_progress 'slow-step' {} bash -c 'echo compiling first; sleep 2.5; printf \"test second ... ok\\r\\n\"; sleep 2; exit 3'",
            log.display()
        ),
        &[("CUDYN_PROGRESS_EVERY", "1")],
    );
    assert_eq!(rc, 3, "the command's own status comes back: {out}");
    assert!(start.elapsed().as_secs_f64() < 10.0);
    let lines: Vec<&str> = out.lines().collect();
    // Not a terminal: a line each second, with the time so far and the last line written
    // (how many lines, and the seconds on each, depend on how busy the machine is).
    assert!(lines.len() >= 2, "{out:?}");
    let mut last = 0;
    for l in &lines {
        let (secs, what) = l
            .strip_prefix("slow-step  ")
            .and_then(|r| r.split_once(" s: "))
            .unwrap_or_else(|| panic!("not a progress line: {l:?} in {out:?}"));
        let secs: u64 = secs.parse().unwrap_or_else(|_| panic!("{l:?}"));
        assert!(secs >= 1 && secs >= last, "{out:?}");
        last = secs;
        assert!(what == "compiling first" || what == "test second ... ok", "{l:?}");
    }
    assert!(lines.iter().any(|l| l.ends_with(": compiling first")), "{out:?}");
    assert!(lines.iter().any(|l| l.ends_with(": test second ... ok")), "{out:?}");
    // The log holds everything; nothing of it went to standard output but the progress.
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("compiling first") && logged.contains("test second ... ok"));
    assert!(!lines.contains(&"compiling first"), "{out:?}");

    // A quick command says nothing but what it is asked to.
    let (rc, out) = bash(&format!("with_progress quick {} true", log.display()), &[]);
    assert_eq!((rc, out.as_str()), (0, ""));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_long_message_repeated_is_said_once() {
    let dir = std::env::temp_dir().join(format!("cudyn-say-once-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("seen");
    let long = format!("the CUDA driver could not be opened; tried: {}", "libcuda.so.1 (not found), ".repeat(16));
    let script = format!(
        "printf '%s\\n' 'first: {long}' | say_once {s}; printf '%s\\n' 'SKIP: second: {long}' 'short line' | say_once {s}; \
         printf '%s\\n' 'third ({long})' | say_once {s}",
        s = state.display()
    );
    let (rc, out) = bash(&script, &[]);
    assert_eq!(rc, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(lines[0], format!("first: {long}"), "the first time in full");
    assert_eq!(lines[1], "SKIP: second: the CUDA driver could not be opened ... (as above)");
    assert_eq!(lines[2], "short line");
    assert!(lines[3].starts_with("third (the CUDA driver could not be opened ... (as above)"), "{}", lines[3]);
    assert!(out.len() < long.len() + 300, "said more than once: {out}");
    let _ = std::fs::remove_dir_all(&dir);
}
