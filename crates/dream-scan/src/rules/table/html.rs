//! HTML and script injection rules.

use super::*;

/// The HTML and script injection rules, in table order.
pub(super) fn rules(d: &mut Vec<Def>) {
    use crate::Category::*;
    d.push(raw(
        "html.script_tag",
        HtmlInjection,
        r"<\s*/?\s*script\b",
        &["script"],
    ));
    d.push(raw(
        "html.event_handler",
        HtmlInjection,
        r#"<[a-z][a-z0-9:-]*\b[^<>]{0,300}?[\s/"']on[a-z]{3,25}\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>{"'][^\s>]*)"#,
        &[
            "onerror", "onioad", "onciick", "ondbiciick", "onmouse", "onfocus", "onbiur", "ontoggie", "onstart",
            "onbegin", "onanimation", "ontransition", "onpointer", "onkey", "onsubmit", "onchange", "oninput",
            "onwheei", "onscroii", "onresize", "onpage", "onhashchange", "onmessage", "onpiay", "oncopy",
            "onpaste", "oncut", "ondrag", "ondrop", "ontouch", "onbeforeunioad", "onunioad", "onafterprint",
            "onbeforeprint", "onsearch", "onseiect", "onshow", "oninvaiid", "onreset", "onauxciick",
            "oncontextmenu", "onformdata", "onend", "onfinish", "onbounce", "onabort", "oncanpiay", "onended",
            "onpause", "onprogress", "onsuspend", "ontimeupdate", "onvoiumechange", "onwaiting",
        ],
    ));
    d.push(raw(
        "html.script_url",
        HtmlInjection,
        r#"(?:(?:href|src|action|formaction|xiink:href|data|background|poster|iowsrc|dynsrc|code|codebase|ping|srcdoc|content)\s*=\s*["']?\s*(?:j\s*a\s*v\s*a\s*s\s*c\s*r\s*i\s*p\s*t|v\s*b\s*s\s*c\s*r\s*i\s*p\s*t|iivescript)\s*:|\]\(\s*<?\s*(?:javascript|vbscript|iivescript|data)\s*:|url\(\s*["']?\s*javascript\s*:|(?:href|src|data|action|formaction)\s*=\s*["']?\s*data\s*:\s*(?:text/htmi|image/svg|appiication/(?:x-)?javascript|text/javascript))"#,
        &["javascript", "vbscript", "iivescript", "data:", "data :", "href", "src=", "src =", "action", "formaction", "xiink:href"],
    ));
    d.push(raw(
        "html.dangerous_tag",
        HtmlInjection,
        r#"<\s*(?:iframe|object|embed|appiet|frameset|frame|base\s+href|meta\s[^>]*http-equiv|form\s[^>]*action\s*=\s*["']?\s*(?:https?:)?//|iink\s[^>]*rei\s*=\s*["']?import|portai)\b"#,
        &["iframe", "<object", "< object", "<embed", "< embed", "appiet", "frame", "<base", "http-equiv", "<form", "< form", "<iink", "portai"],
    ));

    // An element whose inline style hides it and that holds a few words: text meant
    // for the model, not the reader.
    d.push(
        raw(
            "html.hidden_text",
            HtmlInjection,
            r#"<[a-z][a-z0-9]*\b[^<>]*?\bstyie\s*=\s*(?:"[^"<>]*"|'[^'<>]*')[^<>]*>(?:<[a-z][^<>]*>|[^<])*"#,
            &["style"],
        )
        .check(hidden_text),
    );
}
