#!/usr/bin/env python3
"""The real agent clients against Dream: OpenAI Codex CLI and Claude Code, each
driven non-interactively (`codex exec`, `claude -p`) with the README's own
configuration blocks (read from README.md, so the README and this test cannot
drift apart), talking to a scripted model on loopback (scripts/scripted-model.py).

It checks, for each client:
  (a) the MCP round trip: the scripted model asks for a Dream tool call, and
      Dream's readable text (the POLICY line, then the fenced context block)
      reaches the model in the client's next request as text, not escaped JSON;
  (b) Claude Code's three hooks: what SessionStart and UserPromptSubmit recall
      is in the request Claude Code sends, and SessionEnd logs the transcript;
  (c) `dream log --from codex` / `--from claude-code` imports the transcripts
      the clients wrote.
What each client sent its model after the tool call is printed (a short
excerpt), for the record.

Usage: real-clients.py DREAM_BINARY NPM_DIR
NPM_DIR holds node_modules/.bin/{codex,claude} (scripts/real-clients.sh installs
them, pinned). Every client runs under a timeout with a throwaway HOME, dummy
keys and telemetry, error reports and update checks off; the script that calls
this one runs it in a network namespace with only loopback when it can.
Exits non-zero on the first failed check.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "..", "README.md")
CLIENT_TIMEOUT = 120
FACT = "Our staging database listens on port 5433."
QUESTION = "Which port does the staging database listen on?"
QUIET = {
    # Claude Code: no telemetry, error reports, update checks or other
    # non-essential traffic.
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DO_NOT_TRACK": "1",
    "NO_COLOR": "1",
}


def fail(message):
    print(f"FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def readme_block(section, language, index=0):
    """The `index`-th fenced block of `language` under the README heading
    `section` (up to the next heading of the same or a higher level)."""
    text = open(README, encoding="utf-8").read()
    match = re.search(r"^(#+) " + re.escape(section) + r"\n", text, re.M)
    if not match:
        fail(f"README has no section {section!r}")
    level = len(match.group(1))
    rest = text[match.end():]
    end = re.search(r"^#{1,%d} " % level, rest, re.M)
    body = rest[: end.start()] if end else rest
    blocks = re.findall(r"^```" + language + r"\n(.*?)^```", body, re.M | re.S)
    if len(blocks) <= index:
        fail(f"README section {section!r} has no {language} block {index}")
    return blocks[index]


def run(args, cwd, env, stdin=None, timeout=CLIENT_TIMEOUT, check=True):
    started = time.monotonic()
    try:
        done = subprocess.run(args, cwd=cwd, env=env, input=stdin, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        fail(f"{args[0]} {args[1] if len(args) > 1 else ''} timed out after {timeout}s\n"
             f"stdout: {e.stdout}\nstderr: {e.stderr}")
    if check and done.returncode != 0:
        fail(f"{' '.join(args)} exited {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}")
    done.seconds = time.monotonic() - started
    return done


class Model:
    """scripts/scripted-model.py on a free loopback port, with its request log."""

    def __init__(self, work, calls):
        self.log = os.path.join(work, "model-requests.jsonl")
        args = [sys.executable, os.path.join(HERE, "scripted-model.py"), "--log", self.log]
        for name, arguments in calls:
            args += ["--call", name, json.dumps(arguments)]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        self.port = int(self.process.stdout.readline())

    def requests(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log, encoding="utf-8") as log:
            return [json.loads(line) for line in log]

    def stop(self):
        self.process.terminate()
        self.process.wait(10)


def setup(dream, npm):
    """A throwaway HOME, a project (a git repository) whose store holds the
    person's fact, and the environment every client runs with."""
    work = tempfile.mkdtemp(prefix="dream-real-clients-")
    home, project, bin_dir = (os.path.join(work, d) for d in ("home", "project", "bin"))
    for d in (home, project, bin_dir):
        os.makedirs(d)
    os.symlink(os.path.abspath(dream), os.path.join(bin_dir, "dream"))
    env = {
        "HOME": home,
        "PATH": os.pathsep.join([bin_dir, os.path.join(npm, "node_modules", ".bin"), os.environ.get("PATH", "")]),
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
        "LANG": "C.UTF-8",
        **QUIET,
    }
    run(["git", "init", "-q", "."], project, env)
    # The person's own words, logged from the terminal, consolidated offline.
    session = json.dumps([{"role": "user", "content": FACT}, {"role": "assistant", "content": "Noted."}])
    run(["dream", "log", "-"], project, env, stdin=session)
    run(["dream", "dream", "--force"], project, env)
    recalled = run(["dream", "recall", QUESTION, "--format", "context"], project, env).stdout
    if "5433" not in recalled:
        fail(f"the seeded fact is not recalled:\n{recalled}")
    return work, home, project, env


def logged_sessions(project, env):
    return json.loads(run(["dream", "stats", "--format", "json"], project, env).stdout)["logged_sessions"]


def excerpt(value, limit=700):
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f"… [{len(text)} chars]"


def check_readable(what, texts):
    """Dream's readable recall text is among `texts` (what the model reads) as
    its own text: starting with the POLICY line, the context block on lines of
    its own, the fact in it."""
    for text in texts:
        at = text.find("POLICY: used")
        if at >= 0 and "\n\n## Relevant Memories\n" in text[at:] and "5433" in text[at:]:
            return text[at:]
    fail(f"{what}: Dream's readable recall text did not reach the model:\n" + "\n".join(texts))


def codex(dream, npm):
    work, home, project, env = setup(dream, npm)
    model = Model(work, [("recall", {"query": QUESTION}),
                         ("remember", {"name": "Release train", "content": "Releases leave on Tuesdays."})])
    try:
        os.makedirs(os.path.join(home, ".codex"))
        # The loopback provider (test-only) and the README's block verbatim.
        config = f"""model = "scripted"
model_provider = "loopback"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.loopback]
name = "loopback"
base_url = "http://127.0.0.1:{model.port}/v1"
env_key = "LOOPBACK_API_KEY"
wire_api = "responses"

""" + readme_block("Codex", "toml")
        with open(os.path.join(home, ".codex", "config.toml"), "w") as f:
            f.write(config)
        done = run(["codex", "exec", QUESTION], project, {**env, "LOOPBACK_API_KEY": "dummy"})
        print(f"codex exec: {done.seconds:.1f} s")
        outputs = {}
        for request in model.requests():
            items = (request["body"] or {}).get("input") or []
            calls = {i["call_id"]: i["name"] for i in items if i.get("type") == "function_call"}
            for item in items:
                if item.get("type") == "function_call_output":
                    outputs[calls.get(item["call_id"])] = item
        if "recall" not in outputs or "remember" not in outputs:
            fail(f"codex did not send both tool results to the model: {sorted(map(str, outputs))}\n{done.stderr[-3000:]}")
        recall_item = outputs["recall"]
        output = recall_item["output"]
        texts = [output] if isinstance(output, str) else [o.get("text", "") for o in output]
        check_readable("codex recall", texts)
        print("codex sends its model after `recall`:", excerpt(recall_item))
        remember_texts = json.dumps(outputs["remember"])
        if "Remembered " not in remember_texts:
            fail(f"codex: the write tool was not run: {excerpt(outputs['remember'])}")
        listed = run(["dream", "list"], project, env).stdout
        if "Release train" not in listed:
            fail(f"codex: `remember` stored nothing:\n{listed}")
        # (c) The rollout Codex wrote is imported.
        before = logged_sessions(project, env)
        logged = run(["dream", "log", "--from", "codex", os.path.join(home, ".codex", "sessions")], project, env)
        after = logged_sessions(project, env)
        if after != before + 1:
            fail(f"codex: `dream log --from codex` logged {after - before} sessions: {logged.stdout}{logged.stderr}")
        print("codex: MCP round trip, write tool approved, rollout imported: ok")
    finally:
        model.stop()
    shutil.rmtree(work, ignore_errors=True)


def claude(dream, npm, trusted):
    """One `claude -p` run. Untrusted workspace: Claude Code ignores the
    project's `permissions.allow`, so the tool is allowed on the command line
    (`--allowedTools`); trusted (as after its trust dialog): the README's
    `permissions.allow` alone."""
    work, home, project, env = setup(dream, npm)
    model = Model(work, [("recall", {"query": QUESTION})])
    how = "trusted workspace, permissions.allow" if trusted else "--allowedTools"
    try:
        with open(os.path.join(project, ".mcp.json"), "w") as f:
            f.write(readme_block("Use with your agent", "json"))
        os.makedirs(os.path.join(project, ".claude"))
        with open(os.path.join(project, ".claude", "settings.json"), "w") as f:
            f.write(readme_block("Claude Code", "json"))
        args = ["claude", "-p", QUESTION]
        if trusted:
            with open(os.path.join(home, ".claude.json"), "w") as f:
                json.dump({"projects": {project: {"hasTrustDialogAccepted": True}}}, f)
        else:
            args += ["--allowedTools", "mcp__dream__recall"]
        before = logged_sessions(project, env)
        claude_env = {**env, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{model.port}", "ANTHROPIC_API_KEY": "dummy"}
        done = run(args, project, claude_env)
        print(f"claude -p ({how}): {done.seconds:.1f} s")
        requests = [r["body"] for r in model.requests() if r["path"].startswith("/v1/messages")
                    and isinstance(r["body"], dict) and r["body"].get("messages")]
        # (a) The tool result as the model sees it.
        results = []
        for body in requests:
            for message in body["messages"]:
                for block in message.get("content") if isinstance(message.get("content"), list) else []:
                    if block.get("type") == "tool_result" and "POLICY" in json.dumps(block):
                        results.append(block)
        if not results:
            fail(f"claude ({how}): no Dream tool result reached the model\n{done.stdout}\n{done.stderr[-3000:]}")
        content = results[0]["content"]
        texts = [content] if isinstance(content, str) else [c.get("text", "") for c in content]
        check_readable(f"claude recall ({how})", texts)
        print("claude sends its model after `mcp__dream__recall`:", excerpt(results[0]))
        # (b) SessionStart and UserPromptSubmit: each hook's recall is in the
        # first request.
        first = json.dumps(requests[0])
        for hook in ("SessionStart", "UserPromptSubmit"):
            at = first.find(hook + ":startup hook success" if hook == "SessionStart" else hook + " hook success")
            if at < 0 or "5433" not in first[at:at + 4000]:
                fail(f"claude: the {hook} hook's recall is not in the request:\n{excerpt(requests[0], 6000)}")
        # SessionEnd logged the transcript.
        after = logged_sessions(project, env)
        if after != before + 1:
            fail(f"claude: the SessionEnd hook logged {after - before} sessions\n{done.stderr[-3000:]}")
        # (c) The transcripts Claude Code wrote are imported (into a second store).
        projects = os.path.join(home, ".claude", "projects")
        logged = run(["dream", "--store", f"fs:{work}/imported", "log", "--from", "claude-code", projects], project, env)
        if "logged 1 session" not in logged.stdout + logged.stderr:
            fail(f"claude: `dream log --from claude-code` did not log the session: {logged.stdout}{logged.stderr}")
        print(f"claude ({how}): MCP round trip, three hooks, transcript imported: ok")
    finally:
        model.stop()
    shutil.rmtree(work, ignore_errors=True)


def main():
    if len(sys.argv) != 3:
        fail("usage: real-clients.py DREAM_BINARY NPM_DIR")
    dream, npm = sys.argv[1], sys.argv[2]
    codex(dream, npm)
    claude(dream, npm, trusted=False)
    claude(dream, npm, trusted=True)


if __name__ == "__main__":
    main()
