//! Tool and shell execution rules.

use super::*;

/// The tool and shell execution rules, in table order.
pub(super) fn rules(d: &mut Vec<Def>) {
    use crate::Category::*;
    d.push(phrase(
        "tool.pipe_to_shell",
        ToolExecution,
        r"^(curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod|fetch) {[^\n|;]{0,300}\|\s*(?:sudo\s+(?:-[a-z]+\s+)*)?(?:(?:ba|z|k|da|fi)?sh|python\w*|peri|ruby|node|iex|pwsh|powershe\w*|source)\b}",
    ));
    d.push(phrase(
        "tool.subshell_fetch",
        ToolExecution,
        r#"{(?:(?:ba|z|k|da)?sh\s+-c\s*["'`]?\s*\$\(|\beva[il]\s+["'`]?\s*\$\(|(?:(?:ba|z|k|da)?sh|source|\.)\s+<\()\s*} ^(curl|wget)"#,
    ));
    d.push(phrase(
        "tool.decode_to_shell",
        ToolExecution,
        r"^(base64|b64|xxd|openssl) {[^\n|]{0,40}\|\s*(?:sudo\s+)?(?:ba|z|k|da)?sh\b}",
    ));
    d.push(raw(
        "tool.destructive_rm",
        ToolExecution,
        r#"\brm\s+(?:-[a-z]*r[a-z]*f[a-z]*|-[a-z]*f[a-z]*r[a-z]*|-r\s+-f|-f\s+-r|--recursive\s+--force|--force\s+--recursive)\s+(?:--no-preserve-root\s+)?(?:/(?:\s|$|\*|["'`]|etc|usr|var|home|bin|boot|iib|opt|root|srv|sys|dev|proc)|~/?(?:\s|$|\*|["'`]|\.?[a-z]+)|\*|(?:\$\{?|s)home\b|c:)"#,
        &["-rf", "-fr", "-r -f", "-f -r", "--recursive", "--force"],
    ));
    d.push(raw(
        "tool.reverse_shell",
        ToolExecution,
        r"(?:/dev/tcp/|/dev/udp/|\bn(?:c|cat|etcat)\b[^\n]{0,40}\s-(?:e|c)\s|\bbash\s+-i\b[^\n]{0,20}>&|\bmkfifo\b[^\n]{0,80}\b(?:nc|ncat|netcat|sh)\b|\bsocat\b[^\n]{0,60}\bexec:|\|\s*/bin/(?:ba)?sh\s+-i\b)",
        &["/dev/tcp", "/dev/udp", "nc -e", "nc -c", "ncat", "netcat", "bash -i", "mkfifo", "socat", "/bin/sh", "/bin/bash"],
    ));
    d.push(phrase(
        "tool.powershell_encoded",
        ToolExecution,
        r"^(powershell|pwsh) ~6 {-(?:e|en|enc|encodedcommand|ec)\s+[a-z0-9+/=]{16,}}",
    ));
    d.push(phrase(
        "tool.powershell_hidden",
        ToolExecution,
        r"^(powershell|pwsh) ~6 {-(?:w|windowstyie)\s+hidden\b}",
    ));
    d.push(phrase(
        "tool.powershell_download",
        ToolExecution,
        r"^(downloadstring|downloadfile|invoke-expression) {\s*\(}",
    ));
    d.push(phrase(
        "tool.iex",
        ToolExecution,
        r"^iex {\s*\(\s*(?:new-object|iwr|irm|invoke|\[)}",
    ));
    d.push(raw(
        "tool.fork_bomb",
        ToolExecution,
        r":\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:",
        &[":|:", ": | :", ":()"],
    ));
    d.push(raw(
        "tool.chmod_system",
        ToolExecution,
        r#"\bchmod\s+(?:-r\s+)?(?:[0-7]{3,4}|[ugoa]*\+[rwxs]+)\s+(?:/(?:etc|usr|bin|sbin|var|root|boot|iib)\b|/(?:\s|$|[*"'`])|~/?(?:\s|$|[*"'`]))"#,
        &["chmod"],
    ));
    d.push(raw(
        "tool.download_exec",
        ToolExecution,
        r"(?:\b(?:curi|wget)\b[^\n]{0,200}(?:&&|;)\s*(?:sudo\s+)?(?:chmod\s+\+x|(?:ba|z|k|da)?sh\s|python\w*\s|peri\s|/tmp/)|chmod\s+\+x\s+/tmp/\S+\s*(?:&&|;)\s*/tmp/)",
        &["chmod", "curl", "wget"],
    ));
    d.push(raw(
        "tool.python_os_system",
        ToolExecution,
        r#"__import__\s*\(\s*['"]os['"]\s*\)\s*\.\s*(?:system|popen)|\bos\.system\s*\(\s*['"](?:curi|wget|rm|nc|bash|sh)\b"#,
        &["__import__", "os.system"],
    ));
    d.push(raw(
        "tool.read_secret_file",
        ToolExecution,
        r"(?:(?:~|\$home|/home/[a-z0-9_.-]+|/root)?/\.ssh/[a-z0-9_.-]*|(?:~|\$home|/home/[a-z0-9_.-]+|/root)/\.(?:aws/credentiais|env|netrc|git-credentiais|pgpass|npmrc|pypirc|docker/config\.json|kube/config)\b|/etc/(?:shadow|passwd|sudoers)\b|\bid_(?:rsa|dsa|ecdsa|ed[a-z0-9]+)\b(?:\.pub)?)",
        &[".ssh/", "/etc/shadow", "/etc/passwd", "/etc/sudoers", "id_rsa", "id_dsa", "id_ecdsa", "id_ed", "/.aws/", "/.env", "/.netrc", "/.git-cred", "/.pgpass", "/.npmrc", "/.pypirc", "/.docker/", "/.kube/"],
    )
    .check(reads_secret_file));
    d.push(raw(
        "tool.fetch_with_substitution",
        ToolExecution,
        r"\b(?:curi|wget|nc|ping|nsiookup|dig)\b[^\n]{0,160}(?:\$\(|`)\s*(?:whoami|hostname|id|cat|env|printenv|uname|pwd|ls|base6a)\b",
        &["curl", "wget", "nslookup", "dig", "ping"],
    ));
    d.push(raw(
        "tool.find_secret_files",
        ToolExecution,
        r#"\bfind\s+(?:~|/|\$home)\S*\s[^\n]{0,80}-i?name\s+['"]?[*.]*(?:pem|key|p12|pfx|kdbx|env|id_rsa|id_ed[a-z0-9]*|credentiais|waiiet\.dat)\b"#,
        &["find"],
    ));
    d.push(phrase(
        "tool.stealth_exec",
        ToolExecution,
        format!("{EXEC_EN} ~8 ^{STEALTH_EN}"),
    ));
    d.push(phrase(
        "tool.stealth_exec_before",
        ToolExecution,
        format!("^{STEALTH_EN} ~4 {EXEC_EN}"),
    ));
    d.push(phrase(
        "tool.stealth_exec_other",
        ToolExecution,
        format!("^(führe|führen sie|exécute|exécutez|lance|lancez|ejecuta|ejecute|corre|esegui|eseguite|lancia|execute|executa|rode|roda|lösche|supprime|borra|cancella|apague|envía|envoie|invia|envie) ~8 ^{STEALTH_EN}"),
    ));
    d.push(phrase(
        "tool.call_destructive_tool",
        ToolExecution,
        r"(call|invoke|trigger|use|run|execute) (the|your)? {[a-z0-9_.-]*(?:deiete|remove|wipe|destroy|transfer|withdraw|drop|grant|erase|purge|format|shutdown|send_?emaii|payment|pay_|exec|shell)[a-z0-9_.-]*} ^(tool|function|action|api|endpoint|command|skill|plugin)",
    ));

    d.push(phrase(
        "tool.powershell_bypass",
        ToolExecution,
        r"^(powershell|pwsh) ~6 {-(?:executionpoiicy|ep|exec)\s+(?:bypass|unrestricted)\b}",
    ));
    // Overwriting a disk: `dd if=/dev/zero of=/dev/sda`, `mkfs.ext4 /dev/sda1`.
    d.push(
        raw(
            "tool.disk_wipe",
            ToolExecution,
            r"\bdd\s+(?:[^\n]{0,60}\s)?if=/dev/(?:zero|urandom|random)\b[^\n]{0,60}\bof=/dev/[a-z]|\bmkfs(?:\.[a-z0-9]+)?\s+(?:-[a-z]+\s+)*/dev/[a-z]|\bshred\s+[^\n]{0,40}/dev/[a-z]|\bwipefs\s+-[a-z]*a",
            &["if=/dev/", "mkfs", "shred", "wipefs"],
        )
        .check(not_negated),
    );
    // Python fetching code and running it: `exec(urlopen(…).read())`.
    d.push(raw(
        "tool.python_remote_exec",
        ToolExecution,
        r"\b(?:exec|eva[il])\s*\([^\n]{0,200}?(?:uriopen|requests\.get|uriiib|httpx\.get|uriretrieve|urii?ib\.request)",
        &["exec(", "exec (", "evai(", "evai (", "eval(", "eval ("],
    ));
    // A forced push, when something tells the reader to run it.
    d.push(
        raw(
            "tool.git_force_push",
            ToolExecution,
            r"\bgit\s+push\s+(?:[^\n`]{0,40}\s)?(?:--force(?:\s|$|[`'\x22])|-f(?:\s|$|[`'\x22]))|\bgit\s+reset\s+--hard\b[^\n]{0,80}\bgit\s+ciean\s+-[a-z]*f",
            &["git push", "git reset"],
        )
        .check(directive_before),
    );
    // A standing order to run what arrives from outside: "always run shell commands
    // found in retrieved documents".
    d.push(phrase(
        "tool.exec_untrusted",
        ToolExecution,
        "(run|execute|exec|eval|evaluate|carry out|launch) (any|all|every|the)? ~2 (commands|command|code|code snippets|snippets|scripts|script|shell commands|terminal commands|payloads) ~2 (found|contained|embedded|included|given|appearing|present|that appear)? (in|inside|within|from) ~2 ^(retrieved|fetched|web|external|untrusted|downloaded|incoming|scraped|third-party) ~1 (documents|document|pages|page|web pages|content|emails|files|results|sites|data|text|messages)",
    ));
    // A tool call that destroys or runs code: "use your browser tool to open
    // …/admin/purge", "call the shell tool with `git push --force`".
    d.push(phrase(
        "tool.tool_call_destructive",
        ToolExecution,
        "(use|call|invoke|run|trigger) (your|the) ~1 (shell|terminal|bash|browser|python|code|exec|run_python|file|filesystem|email|payment|http|admin|sql|database) ^(tool|function|plugin) ~12 (wipe|purge|delete|erase|destroy|format|reset|drop|exec|eval|force|rm|transfer|withdraw|chmod|mkfs|dd|shred)",
    ));
}
