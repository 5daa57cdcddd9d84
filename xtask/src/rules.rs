//! The rule-citation check (`cargo xtask rules`, and a step of `ci`): every protocol rule is
//! defined once, in a module doc, as a list item that starts with its id — a set letter and a
//! number, `//! U3. A final CQE settles the request ...` — and every citation of a rule in the
//! code and in `docs/` (`U3`, "stash rule S2" style ids) names a rule that exists. A bare
//! "rule 3" is refused: it would not say which set it means.
//!
//! The sets: C cancel, E completion, P blocking pool, T tasks, U uring lifecycle, F forwarding,
//! S stash, D durability, I inbox, W worker, L loan, A the facade's worker adapter, N nested
//! drive, J blocking job cell, X the facade's thread context, Y the facade's fs fallback, Q the
//! facade's workers, M baton-compat's adapter; and
//! the benchmark crate's: H harness, K contender contract, R raw io_uring loops, G echo load
//! generator, Z HTTP load generator, B park executor.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::workspace::rust_files;

/// The rule sets, by letter.
const SETS: &[(char, &str)] = &[
    ('C', "cancel"),
    ('E', "completion"),
    ('P', "blocking pool"),
    ('T', "tasks"),
    ('U', "uring lifecycle"),
    ('F', "forwarding"),
    ('S', "stash"),
    ('D', "durability"),
    ('I', "inbox"),
    ('W', "worker"),
    ('L', "loan"),
    ('A', "worker adapter"),
    ('N', "nested drive"),
    ('J', "job cell"),
    ('X', "facade context"),
    ('Y', "fs fallback"),
    ('Q', "workers"),
    ('M', "compat adapter"),
    ('H', "bench harness"),
    ('K', "bench contender contract"),
    ('R', "bench raw io_uring loops"),
    ('G', "bench echo load generator"),
    ('Z', "bench HTTP load generator"),
    ('B', "bench park executor"),
];

/// One problem found, with where.
#[derive(Debug)]
pub(crate) struct Finding {
    pub(crate) file: PathBuf,
    pub(crate) line: usize,
    pub(crate) what: String,
}

/// A rule id: set letter and number.
type RuleId = (char, u32);

/// Checks every definition and citation under `root`; returns the findings (empty: all good)
/// and how many rules and citations were seen.
pub(crate) fn check(root: &Path) -> (Vec<Finding>, usize, usize) {
    let mut files = Vec::new();
    for dir in ["crates", "xtask/src", "tests", "bench/src"] {
        files.extend(rust_files(&root.join(dir)));
    }
    let mut docs = Vec::new();
    collect_markdown(&root.join("docs"), &mut docs);
    docs.push(root.join("README.md"));

    let mut defined: BTreeMap<RuleId, (PathBuf, usize)> = BTreeMap::new();
    let mut findings = Vec::new();
    let texts: Vec<(PathBuf, String)> = files
        .iter()
        .chain(docs.iter())
        .filter_map(|f| std::fs::read_to_string(f).ok().map(|t| (f.clone(), t)))
        .collect();
    for (file, text) in texts.iter().filter(|(f, _)| is_rust(f)) {
        if file.ends_with("xtask/src/rules.rs") {
            continue;
        }
        for (index, line) in text.lines().enumerate() {
            if let Some(id) = definition(line) {
                if let Some((first, at)) = defined.get(&id) {
                    findings.push(Finding {
                        file: file.clone(),
                        line: index + 1,
                        what: format!(
                            "rule {}{} is defined twice (first at {}:{at})",
                            id.0,
                            id.1,
                            first.display()
                        ),
                    });
                } else {
                    defined.insert(id, (file.clone(), index + 1));
                }
            }
        }
    }
    let mut citations = 0;
    for (file, text) in &texts {
        if file.ends_with("xtask/src/rules.rs") {
            continue;
        }
        for (index, line) in text.lines().enumerate() {
            let definition_here = is_rust(file) && definition(line).is_some();
            for (id, offset) in cited(line) {
                if definition_here && offset == first_id_offset(line) {
                    continue;
                }
                citations += 1;
                if !defined.contains_key(&id) {
                    findings.push(Finding {
                        file: file.clone(),
                        line: index + 1,
                        what: format!("{}{} cites a rule that does not exist", id.0, id.1),
                    });
                }
            }
            if let Some(bare) = bare_citation(line) {
                findings.push(Finding {
                    file: file.clone(),
                    line: index + 1,
                    what: format!(
                        "bare citation {bare:?}: name the rule by its set and number (e.g. U3)"
                    ),
                });
            }
        }
    }
    (findings, defined.len(), citations)
}

fn is_rust(file: &Path) -> bool {
    file.extension().is_some_and(|e| e == "rs")
}

fn collect_markdown(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_markdown(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    out.sort();
}

/// The comment text of a doc or line comment, if `line` is one.
fn comment_text(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    ["//!", "///", "//"]
        .iter()
        .find_map(|prefix| trimmed.strip_prefix(prefix))
}

/// The rule a module-doc line defines: `//! U3. ...` (a list item starting with its id).
fn definition(line: &str) -> Option<RuleId> {
    let text = comment_text(line)?.trim_start();
    let (id, rest) = parse_id(text)?;
    rest.strip_prefix(". ").map(|_| id)
}

fn first_id_offset(line: &str) -> usize {
    cited(line)
        .first()
        .map_or(usize::MAX, |&(_, offset)| offset)
}

/// A rule id at the start of `text` and what follows it.
fn parse_id(text: &str) -> Option<(RuleId, &str)> {
    let mut chars = text.char_indices();
    let (_, letter) = chars.next()?;
    if !SETS.iter().any(|(l, _)| *l == letter) {
        return None;
    }
    let digits: String = text[1..].chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() || digits.len() > 2 {
        return None;
    }
    let number = digits.parse().ok()?;
    Some(((letter, number), &text[1 + digits.len()..]))
}

/// Every rule id cited in `line`, with its byte offset: a set letter and one or two digits
/// standing alone (not inside a longer word or number).
fn cited(line: &str) -> Vec<(RuleId, usize)> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    for (offset, c) in line.char_indices() {
        if !SETS.iter().any(|(l, _)| *l == c) {
            continue;
        }
        let before_ok = offset == 0 || !is_word(bytes[offset - 1]);
        if !before_ok {
            continue;
        }
        let Some((id, rest)) = parse_id(&line[offset..]) else {
            continue;
        };
        let after_ok = rest.bytes().next().is_none_or(|b| !is_word(b));
        if after_ok {
            out.push((id, offset));
        }
    }
    out
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A "rule 3" / "rules 2 and 4" that names no set.
fn bare_citation(line: &str) -> Option<String> {
    let lower = line.to_ascii_lowercase();
    for word in ["rule ", "rules "] {
        let mut from = 0;
        while let Some(at) = lower[from..].find(word) {
            let start = from + at;
            let after = &line[start + word.len()..];
            if after.starts_with(|c: char| c.is_ascii_digit())
                && (start == 0 || !is_word(line.as_bytes()[start - 1]))
            {
                let end =
                    start + word.len() + after.chars().take_while(char::is_ascii_digit).count();
                return Some(line[start..end].to_owned());
            }
            from = start + word.len();
        }
    }
    None
}

/// The set names, for the task's report.
pub(crate) fn sets() -> String {
    SETS.iter()
        .map(|(l, name)| format!("{l} {name}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::{SETS, bare_citation, cited, definition};

    #[test]
    fn every_set_has_its_own_letter() {
        let mut letters: Vec<char> = SETS.iter().map(|(l, _)| *l).collect();
        letters.sort_unstable();
        letters.dedup();
        assert_eq!(letters.len(), SETS.len());
    }

    #[test]
    fn a_definition_is_a_doc_list_item_starting_with_its_id() {
        assert_eq!(definition("//! U3. A final CQE settles"), Some(('U', 3)));
        assert_eq!(definition("//! 3. A final CQE settles"), None);
        assert_eq!(definition("// see U3. for this"), None);
        assert_eq!(definition("//!    W11. Wake listener"), Some(('W', 11)));
    }

    #[test]
    fn citations_are_ids_standing_alone() {
        let ids: Vec<_> = cited("// (U3, F7) but not UDP3, u8, E2E or X100")
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids, vec![('U', 3), ('F', 7)]);
    }

    #[test]
    fn bare_citations_name_no_set() {
        assert_eq!(bare_citation("// rule 3: the offer"), Some("rule 3".into()));
        assert_eq!(bare_citation("// rules 2 and 4"), Some("rules 2".into()));
        assert_eq!(bare_citation("// the rule U3"), None);
        assert_eq!(bare_citation("// schedule 3 times"), None);
    }
}
