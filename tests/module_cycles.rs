//! The layers of `src/` point one way: no top-level module depends, through `crate::` paths in
//! its non-test code, on a module that depends back on it (directly or around a loop). Test
//! code (`tests.rs` files, `#[cfg(test)] mod` blocks) may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn strip(text: &str) -> String {
    let mut s: String = text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
    while let Some(at) = s.find("#[cfg(test)]") {
        let rest = &s[at..];
        let Some(open) = rest.find('{') else { break };
        if !rest[..open].contains("mod ") {
            s.replace_range(at..at + "#[cfg(test)]".len(), "");
            continue;
        }
        let mut depth = 0;
        let mut end = rest.len();
        for (i, c) in rest[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        s.replace_range(at..at + end, "");
    }
    s
}

fn walk(dir: &Path, top: Option<&str>, graph: &mut BTreeMap<String, BTreeSet<String>>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            walk(&p, Some(top.unwrap_or(&name)), graph);
            continue;
        }
        if !name.ends_with(".rs") || name == "tests.rs" || (top.is_none() && name == "lib.rs") {
            continue;
        }
        let module = top.map(str::to_string).unwrap_or_else(|| name.trim_end_matches(".rs").to_string());
        let text = strip(&std::fs::read_to_string(&p).unwrap());
        let deps = graph.entry(module.clone()).or_default();
        for (i, _) in text.match_indices("crate::") {
            let word: String = text[i + 7..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
            if !word.is_empty() && word != module {
                deps.insert(word);
            }
        }
    }
}

#[test]
fn no_module_depends_on_itself_around_a_loop() {
    let mut graph = BTreeMap::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), None, &mut graph);
    assert!(graph.len() > 10, "read too few modules: {graph:?}");
    // A module is in a cycle when it can reach itself.
    let mut cycles = Vec::new();
    for start in graph.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = graph[start].iter().collect();
        while let Some(m) = stack.pop() {
            if m == start {
                cycles.push(start.clone());
                break;
            }
            if seen.insert(m.clone()) {
                stack.extend(graph.get(m).into_iter().flatten());
            }
        }
    }
    assert!(cycles.is_empty(), "modules in a dependency cycle: {cycles:?}\ngraph: {graph:#?}");
}
