#!/usr/bin/env python3
"""A scripted model on loopback, for driving real agent clients in tests.

Speaks the two protocols the clients use, streaming (SSE) included:
  POST /v1/responses       OpenAI Responses API (Codex)
  POST /v1/messages        Anthropic Messages API (Claude Code)
Anything else gets 404 (and is logged).

The script is a list of tool calls (`--call TOOL JSON`, repeatable), made in
order. For each request, the scripted calls the conversation already holds say
which comes next: while one remains and the client offers a tool so named (or
an MCP tool whose name ends with it, e.g. `mcp__dream__recall` for `recall`,
also inside a Responses API namespace), the model asks for that call. A tool
the client only lists as deferred (Claude Code's MCP tools), or whose server is
still connecting, is first looked up with the client's `ToolSearch`, as a real
model does. Otherwise the model answers
with text that ends the turn.

Every request is appended to `--log` as one JSON line (method, path, body), so a
test can read what the client sent its model. Stdlib only; binds 127.0.0.1.
Prints the port on stdout once it listens.
"""

import argparse
import json
import re
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FINAL_TEXT = "Scripted model: done."


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", required=True, help="JSON lines file of requests")
    parser.add_argument(
        "--call",
        nargs=2,
        action="append",
        default=[],
        metavar=("TOOL", "ARGS_JSON"),
        help="a tool call to ask for, in order",
    )
    args = parser.parse_args()
    calls = []
    for name, arguments in args.call:
        json.loads(arguments)  # refuse a malformed script before serving
        calls.append((name, arguments))
    return args, calls


def offered_tool(tools, wanted):
    """`(namespace, name)` of the offered tool that is `wanted`: named exactly so
    or as the last `__`-separated part of an MCP tool name (`mcp__dream__recall`),
    at the top level (namespace None) or inside a Responses API namespace entry
    (`{"type": "namespace", "name": "mcp__dream", "tools": [...]}`); else None."""

    def matches(name):
        return isinstance(name, str) and (name == wanted or name.endswith("__" + wanted))

    for tool in tools or []:
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                if isinstance(inner, dict) and matches(inner.get("name")):
                    return tool.get("name"), inner["name"]
        elif matches(tool.get("name")):
            return None, tool["name"]
    return None


def anthropic_calls(messages):
    """Names of the tools the assistant called so far in a Messages conversation."""
    names = []
    for message in messages or []:
        content = message.get("content")
        if message.get("role") == "assistant" and isinstance(content, list):
            names += [b.get("name") for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
    return names


def responses_calls(items):
    """Names of the tools the model called so far in a Responses input."""
    if not isinstance(items, list):
        return []
    return [i.get("name") for i in items if isinstance(i, dict) and i.get("type") == "function_call"]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "scripted-model"

    def log_message(self, fmt, *args):  # keep stderr for real problems
        pass

    def record(self, body):
        with self.server.lock:
            with open(self.server.log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps({"method": self.command, "path": self.path, "body": body}) + "\n")

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return {"unparsed": raw[:2000].decode("utf-8", "replace")}

    def send_json(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, events):
        body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.record(None)
        self.send_json(404, {"error": {"type": "not_found", "message": self.path}})

    def do_POST(self):
        body = self.read_body()
        self.record(body)
        path = self.path.split("?")[0]
        if not isinstance(body, dict):
            self.send_json(400, {"error": {"type": "invalid_request_error", "message": "JSON body expected"}})
        elif path.endswith("/v1/messages"):
            self.anthropic_messages(body)
        elif path.endswith("/v1/responses"):
            self.openai_responses(body)
        else:
            self.send_json(404, {"error": {"type": "not_found", "message": self.path}})

    def next_call(self, body, tools, called):
        """The next scripted call as `((namespace, name), arguments_json)`, or
        None to end the turn. A tool the client defers (Claude Code lists MCP
        tools by name and loads them through `ToolSearch`) is loaded first, as a
        real model would."""
        made = sum(1 for c in called if any(c == n or str(c).endswith("__" + n) for n, _ in self.server.calls))
        if made >= len(self.server.calls):
            return None
        name, arguments = self.server.calls[made]
        offered = offered_tool(tools, name)
        if offered:
            return offered, arguments
        search = offered_tool(tools, "ToolSearch")
        if not search or called.count(search[1]) > made:
            return None
        # Listed as deferred: load it by name. Not listed yet (its server is
        # still connecting): search by keyword, which waits for the server.
        deferred = re.search(r"(mcp__[A-Za-z0-9_-]+?__" + re.escape(name) + r")\b", json.dumps(body))
        query = "select:" + deferred.group(1) if deferred else name
        return search, json.dumps({"query": query})

    # Anthropic Messages API.
    def anthropic_messages(self, body):
        call = self.next_call(body, body.get("tools"), anthropic_calls(body.get("messages")))
        if call:
            (_, name), arguments = call
            block = {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": name, "input": json.loads(arguments)}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": FINAL_TEXT}
            stop = "end_turn"
        message = {
            "id": "msg_" + uuid.uuid4().hex[:20],
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "scripted"),
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 10},
        }
        if not body.get("stream"):
            self.send_json(200, message)
            return
        start = dict(message, content=[], stop_reason=None)
        if block["type"] == "text":
            opening, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            opening = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        self.send_sse(
            [
                {"type": "message_start", "message": start},
                {"type": "content_block_start", "index": 0, "content_block": opening},
                {"type": "content_block_delta", "index": 0, "delta": delta},
                {"type": "content_block_stop", "index": 0},
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 10},
                },
                {"type": "message_stop"},
            ]
        )

    # OpenAI Responses API.
    def openai_responses(self, body):
        call = self.next_call(body, body.get("tools"), responses_calls(body.get("input")))
        response_id = "resp_" + uuid.uuid4().hex[:20]
        if call:
            (namespace, name), arguments = call
            item = {
                "type": "function_call",
                "id": "fc_" + uuid.uuid4().hex[:20],
                "call_id": "call_" + uuid.uuid4().hex[:20],
                "name": name,
                "arguments": arguments,
                "status": "completed",
            }
            if namespace:
                item["namespace"] = namespace
            events = [{"type": "response.output_item.done", "output_index": 0, "item": item}]
        else:
            item_id = "msg_" + uuid.uuid4().hex[:20]
            item = {
                "type": "message",
                "id": item_id,
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}],
            }
            events = [
                {"type": "response.output_item.added", "output_index": 0, "item": dict(item, content=[], status="in_progress")},
                {"type": "response.output_text.delta", "item_id": item_id, "output_index": 0, "content_index": 0, "delta": FINAL_TEXT},
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ]
        response = {
            "id": response_id,
            "object": "response",
            "status": "completed",
            "model": body.get("model", "scripted"),
            "output": [item],
            "usage": {
                "input_tokens": 100,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 10,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 110,
            },
        }
        if not body.get("stream"):
            self.send_json(200, response)
            return
        created = dict(response, status="in_progress", output=[])
        self.send_sse(
            [{"type": "response.created", "response": created}]
            + events
            + [{"type": "response.completed", "response": response}]
        )


def main():
    args, calls = parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.calls = calls
    server.log_path = args.log
    server.lock = threading.Lock()
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
