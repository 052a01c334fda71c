"""Runs `dream review` in a pseudo-terminal (Python's standard `pty` module), as
a person would: waits for each prompt and types the next answer; when the
answers run out, ends input (Ctrl-D). Prints everything the terminal showed,
then `exit N` with dream's exit code. Used by crates/dream-cli/tests/cli_memory_formats.rs.

Usage: python3 review_pty.py PATH/TO/dream [ANSWER ...]
(the working directory, DREAM_CONFIG_DIR and EDITOR come from the environment)
"""

import os
import pty
import select
import sys
import time

PROMPT = b"[q]uit? "
DEADLINE = 60.0


def main(dream, answers):
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(dream, [dream, "review"])
    shown = b""
    seen = 0
    end = time.monotonic() + DEADLINE
    while True:
        if time.monotonic() > end:
            os.kill(pid, 9)
            sys.stdout.write(shown.decode(errors="replace") + "\nexit timeout\n")
            return 3
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        prompts = shown.count(PROMPT)
        if prompts > seen:
            seen = prompts
            if answers:
                os.write(fd, answers.pop(0).encode() + b"\n")
            else:
                os.write(fd, b"\x04")
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(shown.decode(errors="replace").replace("\r\n", "\n"))
    sys.stdout.write(f"\nexit {os.waitstatus_to_exitcode(status)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
