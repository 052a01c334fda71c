//! The Dream section of a memory file agents read at start-up (`AGENTS.md`,
//! `CLAUDE.md`): the admitted memories rendered as recall's context block,
//! between [`BEGIN`] and [`END`]. [`splice`] replaces only that section and
//! leaves every other byte of the file as it was.

use crate::recall::RecallResult;

/// The line that opens the section.
pub const BEGIN: &str = "<!-- dream:begin -->";
/// The line that closes the section.
pub const END: &str = "<!-- dream:end -->";

/// Why a file's section cannot be replaced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SectionError {
    /// A begin marker without an end marker after it.
    #[error("the file has `{BEGIN}` without `{END}` after it; fix it by hand")]
    Unclosed,
    /// An end marker with no begin marker before it.
    #[error("the file has `{END}` without `{BEGIN}` before it; fix it by hand")]
    Unopened,
    /// More than one section.
    #[error("the file has more than one `{BEGIN}` section; keep one")]
    Several,
}

/// The section for `result`: only its admitted memories, each field fenced as
/// recalled data (see [`crate::recall::context`]), markers included and ending
/// in a newline. Comment openers inside are defused, so no memory can forge a
/// marker and move the section's end.
pub fn section(result: &RecallResult) -> String {
    wrap(&result.to_context())
}

/// `block` between the markers, ending in a newline, its comment openers
/// defused so nothing inside can forge a marker.
pub fn wrap(block: &str) -> String {
    let block = block.replace("<!--", "<! --");
    let mut out = format!("{BEGIN}\n{block}");
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(END);
    out.push('\n');
    out
}

/// `existing` with its section replaced by `section` (which [`section`] made), or
/// `section` appended after a blank line when it has none. Every byte outside the
/// section is kept.
pub fn splice(existing: &str, section: &str) -> Result<String, SectionError> {
    let Some(begin) = existing.find(BEGIN) else {
        if existing.contains(END) {
            return Err(SectionError::Unopened);
        }
        let mut out = existing.to_owned();
        if !out.is_empty() {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push('\n');
        }
        out.push_str(section);
        return Ok(out);
    };
    if existing[..begin].contains(END) {
        return Err(SectionError::Unopened);
    }
    let after_begin = begin + BEGIN.len();
    let end = existing[after_begin..]
        .find(END)
        .map(|at| after_begin + at + END.len())
        .ok_or(SectionError::Unclosed)?;
    let rest = &existing[end..];
    if rest.contains(BEGIN) || rest.contains(END) {
        return Err(SectionError::Several);
    }
    // The section ends with its own newline; keep the file's after the marker.
    let rest = rest.strip_prefix('\n').unwrap_or(rest);
    Ok(format!("{}{section}{rest}", &existing[..begin]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECTION: &str = "<!-- dream:begin -->\nnew\n<!-- dream:end -->\n";

    #[test]
    fn only_the_section_is_replaced() {
        let before = "# Project\r\n\r\nKeep   this\ttext.\n\n<!-- dream:begin -->\nold\nlines\n<!-- dream:end -->\n\n## After\nno newline at end";
        let after = splice(before, SECTION).unwrap();
        assert_eq!(
            after,
            "# Project\r\n\r\nKeep   this\ttext.\n\n<!-- dream:begin -->\nnew\n<!-- dream:end -->\n\n## After\nno newline at end"
        );
        // Idempotent: splicing the same section again changes nothing.
        assert_eq!(splice(&after, SECTION).unwrap(), after);
    }

    #[test]
    fn a_file_without_a_section_gets_one_appended() {
        assert_eq!(splice("", SECTION).unwrap(), SECTION);
        assert_eq!(splice("# A", SECTION).unwrap(), format!("# A\n\n{SECTION}"));
        assert_eq!(
            splice("# A\n", SECTION).unwrap(),
            format!("# A\n\n{SECTION}")
        );
    }

    #[test]
    fn broken_markers_are_refused_not_guessed() {
        assert_eq!(
            splice("x\n<!-- dream:begin -->\ny", SECTION),
            Err(SectionError::Unclosed)
        );
        assert_eq!(
            splice("<!-- dream:end -->\n", SECTION),
            Err(SectionError::Unopened)
        );
        assert_eq!(
            splice(
                "<!-- dream:end -->\n<!-- dream:begin -->\n<!-- dream:end -->",
                SECTION
            ),
            Err(SectionError::Unopened)
        );
        let two = format!("{SECTION}{SECTION}");
        assert_eq!(splice(&two, SECTION), Err(SectionError::Several));
    }
}
