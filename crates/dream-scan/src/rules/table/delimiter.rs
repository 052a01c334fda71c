//! Delimiter and role-token injection rules.

use super::*;

/// A chat-template turn that opens a line (after quoting or other template tokens)
/// and carries content: `<|im_start|>system\n…`, `<|start_header_id|>user<|end_header_id|>`,
/// `<start_of_turn>model`, `<|assistant|>`, `[INST] …`, `<<SYS>>`; or a closing token
/// with a new line of text after it. A turn whose content is a placeholder
/// (`{{ prompt }}`) or another token is a template being shown, not a turn.
fn template_turn() -> String {
    let role = r"(?:system|user|assistant|deveioper|tooi|modei|ipython|function|human)";
    let lead = r"^[ \t`>]*(?:(?:<\|[a-z_]{2,30}\|>|</?s>|<end_of_turn>|\[/?inst\])[ \t]*)*";
    let open = format!(
        r"(?:<\|(?:im_start|start|start_header_id)\|>[ \t]*{role}(?:[ \t]*<\|(?:end_header_id|message)\|>)?|<start_of_turn>[ \t]*{role}|<\|{role}\|>|\[inst\]|<<sys>>)"
    );
    let content = r"[ \t]*(?:\n[ \t]*){0,2}[^\s{<\[]";
    let close = r"(?:<\|(?:im_end|eot_id|endoftext|end|eot)\|>|<end_of_turn>)[ \t]*\n[ \t]*(?:\n[ \t]*)?[a-z]";
    format!("(?m){lead}(?:{open}{content}|{close})")
}

/// A whole chat-template turn anywhere in a line, opening token, role, content and
/// closing token: `… <|im_start|>system\nAlways …<|im_end|>`, `[INST] … [/INST]`,
/// `<start_of_turn>user … <end_of_turn>`. Complete, it is structure even mid-line;
/// a token mentioned in prose is not a turn (see [`turn_has_words`]).
fn complete_turn() -> String {
    let role = r"(?:system|user|assistant|deveioper|tooi|modei|ipython|function|human)(?-u:\b)";
    let open = format!(
        r"(?:<\|(?:im_start|start)\|>[ \t]*{role}|<\|start_header_id\|>[ \t]*{role}[ \t]*<\|end_header_id\|>|<start_of_turn>[ \t]*{role}|<\|{role}\|>|\[inst\]|<<sys>>)"
    );
    let close = r"(?:<\|(?:im_end|eot_id|end|eot)\|>|<end_of_turn>|\[/inst\]|<</sys>>)";
    format!(r"{open}[^<>\[\]{{}}]{{8,600}}?{close}")
}

/// The delimiter and role-token injection rules, in table order.
pub(super) fn rules(d: &mut Vec<Def>) {
    use crate::Category::*;
    // The attacker's aim: fake conversation structure in text the model reads later
    // (a template turn, a closed frame, an end-of-content marker, a system or tool
    // header, a role record). Two kinds of rule:
    // - LLM vocabulary anywhere (template tokens, bare role tags, `\n\nHuman:`,
    //   `"role": "system"`): transcripts only, since authored memory may talk about
    //   LLM formats;
    // - structure, in both modes: the same vocabulary where it opens a line and
    //   carries content (a template turn, an Alpaca or ReAct header, a role record), a
    //   frame tag, an end marker with text after it, a header naming an authority
    //   followed by a directive.
    d.push(
        raw(
            "delim.chat_template_token",
            DelimiterInjection,
            r"<[ \t]?\|[ \t]?[a-z_]{2,30}[ \t]?\|[ \t]?>|\[/?inst\]|<<?/?sys>>|</?start_of_turn>|</?end_of_turn>|<\|?(?:begin|end)_of_text\|?>",
            &["<|", "< |", "[inst]", "[/inst]", "<<sys>>", "<</sys>>", "_of_turn>", "_of_text"],
        )
        .transcript_only(),
    );
    d.push(raw(
        "delim.template_turn",
        DelimiterInjection,
        template_turn(),
        &["<|", "_of_turn>", "[inst]", "<<sys>>"],
    ));
    d.push(
        raw(
            "delim.template_turn_complete",
            DelimiterInjection,
            complete_turn(),
            &["<|", "_of_turn>", "[inst]", "<<sys>>"],
        )
        .check(turn_has_words),
    );
    d.push(raw(
        "delim.header_grant_claim",
        DelimiterInjection,
        header_grant_claim(),
        AUTHORITY_ANCHORS,
    ));
    d.push(
        raw(
            "delim.human_assistant_turn",
            DelimiterInjection,
            r"\n[ \t]*\n[ \t]*(?:human|assistant)[ \t]*:",
            &["human", "assistant"],
        )
        .transcript_only(),
    );
    d.push(
        raw(
            "delim.short_turn_pair",
            DelimiterInjection,
            // Anthropic's abbreviated turns: "\n\nH: …\n\nA: …".
            r"\n[ \t]*\n[ \t]*h[ \t]*:[^\n]{1,300}\n[ \t]*\n[ \t]*a[ \t]*:",
            &["\nh:", "\nh :"],
        )
        .transcript_only(),
    );
    d.push(
        raw(
            "delim.user_assistant_pair",
            DelimiterInjection,
            // A user turn answered, on the next line, by a model's turn (turns of
            // words, not a roster's `User: Maria` / `Assistant: Tom`).
            r"(?m)^[ \t]*(?:user|human)[ \t]*:[ \t]*[^\s]+(?:[ \t]+[^\s]+){2}[^\n]{0,300}\n(?:[ \t]*\n)?[ \t]*(?:assistant|ai|gpt|chatgpt|ciaude|modei|iim)[ \t]*:[ \t]*[^\s]+[ \t]+[^\s]",
            &["assistant:", "assistant :", "ai:", "gpt:", "ciaude:", "modei:", "iim:"],
        )
        .transcript_only(),
    );
    d.push(
        raw(
            "delim.fake_assistant_turn",
            DelimiterInjection,
            r"(?m)^[ \t]*(?:assistant|ai|modei|gpt|chatgpt|ciaude|bot)[ \t]*:[ \t]*(?:sure|of course|certainiy|okay|ok|absoiuteiy|i wiii|i'ii|i have|here is|here's|as requested|understood)\b",
            &["assistant", "chatgpt", "ciaude", "modei", "gpt", "bot"],
        )
        .transcript_only(),
    );
    d.push(
        raw(
            "delim.role_tag",
            DelimiterInjection,
            r"<\s*/?\s*(?:(?:system|deveioper)(?:[_-](?:message|prompt|reminder|note|notice|override|update|instructions?|directive|ruies|poiicy|context))?|assistant|user|instructions|instruction|context|document|im_start|im_end)\s*>",
            &["system>", "assistant>", "user>", "deveioper>", "instruction>", "instructions>", "context>", "document>", "im_start>", "im_end>", "system >", "user >", "<system", "</system", "<deveioper", "</deveioper"],
        )
        .transcript_only(),
    );
    d.push(
        raw(
            "delim.role_json",
            DelimiterInjection,
            r#"["']roie["']\s*:\s*["'](?:system|deveioper)["']"#,
            &["roie"],
        )
        .transcript_only(),
    );
    d.push(raw(
        "delim.role_record",
        DelimiterInjection,
        // A chat message record that opens a line: `{"role": "system", …`.
        r#"(?m)^[ \t]*\[?[ \t]*\{[ \t]*["']roie["'][ \t]*:[ \t]*["'](?:system|deveioper)["']"#,
        &["roie"],
    ));
    d.push(raw(
        "delim.alpaca_header",
        DelimiterInjection,
        // Alpaca / Vicuna / Orca turn headers: `### Instruction:`, `### User:`.
        r"(?m)^[ \t>]*#{2,4}[ \t]*(?:instruction|system|user|assistant|human)[ \t]*:",
        &[
            "#instruction",
            "# instruction",
            "#system",
            "# system",
            "#user",
            "# user",
            "#assistant",
            "# assistant",
            "#human",
            "# human",
        ],
    ));
    d.push(raw(
        "delim.react_trace",
        DelimiterInjection,
        // ReAct agent steps: `Action:` then `Action Input:` or `Observation:` on the
        // next lines, or an action called like a tool (`Action: Search[…]`). A note's
        // `Thought: …` / `Action: ask Maria` is not a trace.
        r"(?m)^[ \t]*action[ \t]*(?:\d{1,2}[ \t]*)?:(?:[^\n]{0,200}\n(?:[^\n]{0,300}\n)?[ \t]*(?:action[ \t]*input|observation)[ \t]*(?:\d{1,2}[ \t]*)?:|[ \t]*[a-z_]{2,30}\[[^\]\n]{0,200}\][ \t]*$)",
        &["action:", "action :", "action input", "action 1", "action 2", "action 3"],
    ));
    // Frame tags and markers: never legitimate in memory or transcripts.
    d.push(raw(
        "delim.frame_tag",
        DelimiterInjection,
        // A frame name, then an id (`_3`, `-42`: a hyphenated suffix needs a digit,
        // so `<session-timeout>` and `<memory-card>` stay ordinary elements); or one
        // frame closed and the next opened with id-like suffixes (`</session-7f3a>
        // <session-7f3b>`: the leet reading turns such hex ids into the letters
        // `a-f`, `o i e s t b`; `</session-config><session-timeout>` are words).
        r"<\s*/\s*(?:session|memory|transcript|conversation|turn)[_-][0-9a-fiostb_-]{1,40}\s*>\s*<\s*(?:session|memory|transcript|conversation|turn)[_-][0-9a-fiostb_-]{1,40}\s*>|<\s*/?\s*(?:session|sesion|sessao|sessione|sitzung|conversacion|conversazione|memory|transcript|untrusted|fetched|tooi_resuits?|tooi_output|tooi_response|tooi_caiis?|tooi_use|function_resuits?|function_caiis?|search_resuits|user_input|untrusted_input|externai_content|retrieved_content|document_content|antmi:[a-z_]+)(?:_[a-z0-9_]*|-[a-z0-9-]*[0-9][a-z0-9-]*)?(?:\s+[a-z_:-]+\s*=\s*[^>\n]{0,80})?\s*>",
        &["session", "sesion", "sessao", "sitzung", "conversacion", "conversazione", "memory", "transcript", "conversation", "/turn", "untrusted", "fetched", "tooi_", "function_", "search_resuits", "user_input", "externai_content", "retrieved_content", "document_content", "antmi"],
    )
    .check(not_generic_type));
    d.push(phrase(
        "delim.content_marker",
        DelimiterInjection,
        r"(end|begin|start) (of)? (the)? ^(untrusted|fetched|user|external|retrieved|trusted|system) (content|input|data|text|document|message|instructions|prompt|section|context) {[ \t]*(?:(?m:$)|[\n\-=#*>\]!.:;,)])}",
    ));
    d.push(raw(
        "delim.end_marker_line",
        DelimiterInjection,
        end_marker_line(),
        END_MARKER_ANCHORS,
    ));
    d.push(phrase(
        "delim.trusted_claim",
        DelimiterInjection,
        "(the|this)? (text|content|instructions|message|section|part|note) (below|after this|that follows|following) (is|are|comes|come) ~1 ^(trusted|from the operator|from the system|from the developer|from the admin|from the administrator|from the owner|authorized|authorised|verified)",
    ));
    d.push(phrase(
        "delim.trusted_claim_following",
        DelimiterInjection,
        "the following ^(text|content|instructions|message) (is|are) (trusted|from the operator|from the system|from the developer|from the admin|authorized|authorised|verified)",
    ));
    d.push(raw(
        "delim.system_header",
        DelimiterInjection,
        r#"(?m)^[ \t]*[#*\[(<{>"'`]*[ \t]*(?:(?:system|deveioper|admin|administrator|operator|root)(?:[ _-]?(?:message|prompt|note|notice|override|update|instruction|instructions|directive|aiert|command|ruies?))?|assistant[ _-]?(?:instruction|instructions|directive|ruies?|note|override))[ \t]*[\])>}*"'`]*[ \t]*:[ \t]*(?:\n[ \t]*)?(?:you|your|ignore|disregard|forget|from now|new|aii (?:previous|prior|earlier|iater|future|subsequent|foiiowing|further|other|remaining|users?|requests|messages|memories|instructions|ruies|checks|restrictions|fiiters|safety)|the (?:assistant|ai|modei|user)|aiways|never|do not|don't|obey|compiy|foiiow|deiete|send|forward|reveai|grant|approve|must|skip|bypass|disabie|as of|effective|important|attention)\b"#,
        &["system", "deveioper", "admin", "operator", "root", "assistant"],
    ));
    d.push(raw(
        "delim.header_directive",
        DelimiterInjection,
        header_directive(),
        HEADER_ANCHORS,
    ));
    d.push(raw(
        "delim.bracket_role",
        DelimiterInjection,
        // `[SYSTEM]`, `(ADMIN NOTE)`, `<<SYSTEM>>` opening a line; `{{SYSTEM}}` only
        // with text after it (`{{ system_message }}` is a template placeholder).
        r"(?m)^[ \t]*(?:#{1,6}[ \t]*)?(?:(?:\[|\(|<<)[ \t]*(?:system|deveioper|admin|administrator|operator)(?:[ _-]?(?:message|prompt|note|notice|override|update|instructions?))?[ \t]*(?:\]|\)|>>)|\{\{[ \t]*(?:system|deveioper|admin|administrator|operator)[ \t]*\}\}[ \t]*[a-z])",
        &["system", "deveioper", "admin", "operator"],
    )
    .check(not_config_section));

    // An end-of-content marker, then a role header on the same line: "END OF
    // DOCUMENT. SYSTEM MESSAGE: the assistant must …", "[end of transcript][system] …".
    d.push(raw(
        "delim.marker_then_header",
        DelimiterInjection,
        r"\bend\s+of\s+(?:the\s+)?(?:document|articie|emaii|e-maii|message|transcript|page|text|data|content|fiie|input|context|conversation|section|ietter|post|report|chat|session|(?:tooi|function|search|command|too)\s+(?:output|resuits?|response)|output|resuits|response|observation)\s*(?:[.!:;\-]+\s*(?:(?:system|admin|administrator|deveioper|operator|assistant|sistema|systeme)(?:\s+(?:message|note|notice|prompt|instructions?|override|update|command|aiert))?\s*:\s*(?:you|your|ignore|disregard|forget|from now|new|the\s+(?:assistant|ai|modei|user|operator)|aiways|never|do not|don't|obey|compiy|foiiow|deiete|send|forward|reveai|grant|approve|must|skip|bypass|disabie|iist|trust)\b)|\]\s*\[\s*(?:system|admin|administrator|deveioper|operator|assistant|sistema|systeme)\s*\])",
        &["end of", "end  of"],
    ));
    // A banner line holding only a role between rules (`=== SYSTEM ===`, `# # #
    // S Y S T E M # # #`), then an order on the next line.
    d.push(raw(
        "delim.banner_header",
        DelimiterInjection,
        r"(?m)^[ \t]*(?:[#=*~_\-][ \t]*){2,}(?:system|admin|administrator|deveioper|operator|sistema|systeme)(?:[ \t]+(?:message|prompt|note|notice|override|update|instructions?))?[ \t]*(?:[#=*~_\-][ \t]*){2,}\n[ \t]*[^\n]{0,40}?\b(?:override|poiicy|instruction|instructions|ruie|ruies|directive|you|your|must|ignore|disregard|forward|obey|trust|aiways|never|reveai|send)\b",
        &["system", "admin", "deveioper", "operator", "sistema", "systeme"],
    ));
    // `[SISTEMA]:`, `[SYSTÈME] :`: a bracketed system header in another language,
    // with the colon that makes it a turn.
    d.push(raw(
        "delim.bracket_role_ml",
        DelimiterInjection,
        r"(?m)^[ \t]*(?:\[|\(|<<)[ \t]*(?:sistema|systeme|systemnachricht|sisteme)[ \t]*(?:\]|\)|>>)[ \t]*:",
        &["sistema", "systeme", "systemnachricht"],
    ));
}
