//! `docs/api-reference.md` is rendered from the doc comments of `include/tegragpu.h` by
//! `scripts/gen-api-docs.py`; the committed page must be exactly what the script produces from
//! the committed header, and must document every declaration of the header.
//!
//! `TEGRAGPU_BLESS=1 cargo test --test api_docs` (or `python3 scripts/gen-api-docs.py`)
//! rewrites the page instead of failing.

mod common;

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    common::repo_root()
}

const REGEN: &str =
    "python3 scripts/gen-api-docs.py (or TEGRAGPU_BLESS=1 cargo test --test api_docs)";

fn gen_api_docs(args: &[&str]) -> (bool, String) {
    let out = Command::new("python3")
        .arg(root().join("scripts/gen-api-docs.py"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("python3 runs scripts/gen-api-docs.py");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn api_reference_is_fresh() {
    let bless = std::env::var("TEGRAGPU_BLESS")
        .map(|v| v == "1")
        .unwrap_or(false);
    let (ok, text) = gen_api_docs(if bless { &[] } else { &["--check"] });
    println!("{text}");
    assert!(
        ok,
        "docs/api-reference.md is stale or cannot be generated from include/tegragpu.h; \
         regenerate it with {REGEN} and commit it:\n{text}"
    );
}

/// Independent of the generator's parser: every function, handle, enum, struct and `#define`
/// the header declares has a heading in the reference.
#[test]
fn api_reference_documents_every_declaration() {
    let header = std::fs::read_to_string(root().join("include/tegragpu.h")).expect("header");
    let reference = std::fs::read_to_string(root().join("docs/api-reference.md"))
        .expect("docs/api-reference.md exists");
    let mut names = Vec::new();
    for line in header.lines() {
        let t = line.trim_start();
        if line.starts_with(' ') || t.starts_with('*') || t.starts_with("/*") || t.starts_with("//")
        {
            continue;
        }
        if let Some(rest) = t.strip_prefix("#define ") {
            let mut parts = rest.split_whitespace();
            let name = parts.next().unwrap_or_default();
            if name.starts_with("TG_") && parts.next().is_some() {
                names.push(name.to_string());
            }
        } else if let Some(rest) = t
            .strip_prefix("typedef struct ")
            .or_else(|| t.strip_prefix("typedef enum "))
        {
            names.push(
                rest.split([' ', '{', ';'])
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            );
        } else if let Some(open) = t.find('(') {
            // A function declaration's first line: `<return type> tg_name(`.
            let before = &t[..open];
            let name = before
                .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()
                .unwrap_or_default();
            if name.starts_with("tg_") && !before.contains("typedef") {
                names.push(name.to_string());
            }
        }
    }
    assert!(
        names.iter().any(|n| n == "tg_device_open") && names.len() > 40,
        "the header scan found too little: {names:?}"
    );
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !reference.contains(&format!("\n### `{n}`\n")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/api-reference.md has no section for {missing:?}; regenerate it with {REGEN}"
    );
}
