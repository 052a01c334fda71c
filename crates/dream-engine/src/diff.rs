//! Readable diffs of plans, safe for a terminal: every control character and
//! bidirectional override is escaped, so stored text cannot drive the terminal.

use std::borrow::Cow;
use std::fmt::Write as _;

use dream_core::{Memory, Scope};

use crate::consolidate::BatchSession;
use crate::gate::Gated;

/// Escapes control, bidirectional and invisible characters as `\u{…}` (keeping
/// `\n` when `multiline`), so text from a store or a model can be shown to a person.
pub fn escape_for_display(text: &str, multiline: bool) -> Cow<'_, str> {
    dream_core::display::escape_for_display(text, multiline)
}

fn line(text: &str) -> Cow<'_, str> {
    escape_for_display(text, false)
}

fn body(out: &mut String, sign: char, text: &str) {
    for l in escape_for_display(text, true).lines() {
        let _ = writeln!(out, "    {sign} {l}");
    }
}

fn head(m: &Memory) -> String {
    format!("{} [{}] \"{}\"", m.id, m.kind.as_str(), line(&m.name))
}

/// What changed from `before` to `after`, safe for a terminal: the name and
/// the description when they changed, then the old body's lines (`-`) and the
/// new body's (`+`). The one rendering of an edit: a plan's update and `dream
/// review`'s diff to the prior version.
pub fn memory_changes(before: &Memory, after: &Memory) -> String {
    let mut out = String::new();
    let fields = [
        ("name", &before.name, &after.name),
        ("description", &before.description, &after.description),
    ];
    for (field, old, new) in fields {
        if old != new {
            let _ = writeln!(out, "    {field}: \"{}\" -> \"{}\"", line(old), line(new));
        }
    }
    if before.content != after.content {
        body(&mut out, '-', &before.content);
        body(&mut out, '+', &after.content);
    }
    out
}

/// Renders what a gated plan does, one block per action.
pub(crate) fn render_diff(
    pass: &str,
    scope: &Scope,
    consolidator: &str,
    sessions: &[BatchSession],
    gated: &Gated,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "plan {pass} — scope {scope}, {} sessions, by {}",
        sessions.len(),
        line(consolidator)
    );
    for s in sessions {
        let _ = writeln!(
            out,
            "  {} = session {} ({})",
            s.reference,
            s.id,
            s.created_at.format("%Y-%m-%d %H:%M")
        );
    }
    for c in &gated.creates {
        let _ = writeln!(out, "+ create {}", head(&c.memory));
        let _ = writeln!(out, "    description: {}", line(&c.memory.description));
        body(&mut out, '+', &c.memory.content);
        if !c.memory.supersedes.is_empty() {
            let ids: Vec<&str> = c.memory.supersedes.iter().map(|i| i.as_str()).collect();
            let _ = writeln!(out, "    supersedes: {}", ids.join(", "));
        }
    }
    for c in &gated.updates {
        let _ = writeln!(out, "~ update {}", head(&c.after));
        out.push_str(&memory_changes(&c.before, &c.after));
    }
    for c in &gated.supersedes {
        let by = c.by.as_ref().map(|b| b.as_str()).unwrap_or("?");
        let _ = writeln!(out, "~ supersede {} (by {by})", head(&c.before));
    }
    for r in &gated.deletes {
        let _ = writeln!(
            out,
            "- delete {} to the trash: {}",
            head(&r.memory),
            line(&r.reason)
        );
    }
    for r in &gated.prunes {
        let _ = writeln!(
            out,
            "- prune {} to the trash: {}",
            head(&r.memory),
            line(&r.reason)
        );
    }
    for q in &gated.quarantine {
        let rules: Vec<&str> = q.findings.iter().map(|f| f.rule.as_str()).collect();
        let _ = writeln!(
            out,
            "! quarantine {} ({:?} proposal; rules: {})",
            q.id,
            q.kind,
            rules.join(", ")
        );
    }
    for r in &gated.refused {
        let target = r.target.as_deref().unwrap_or("-");
        let _ = writeln!(out, "x refuse {} {}: {}", r.action, target, line(&r.reason));
    }
    if !(gated.changes_memories() || !gated.quarantine.is_empty() || !gated.refused.is_empty()) {
        out.push_str("(no change to memories; the sessions will be marked consumed)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_terminal_controls_and_bidi_overrides() {
        assert!(matches!(
            escape_for_display("plain text", false),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            escape_for_display("a\u{1b}[31mred", false),
            "a\\u{1b}[31mred"
        );
        assert_eq!(escape_for_display("x\u{202e}y", false), "x\\u{202e}y");
        assert_eq!(escape_for_display("l1\nl2", true), "l1\nl2");
        assert_eq!(escape_for_display("l1\nl2", false), "l1\\u{a}l2");
        assert_eq!(escape_for_display("bell\u{7}", true), "bell\\u{7}");
    }
}
