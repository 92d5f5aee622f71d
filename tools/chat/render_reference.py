#!/usr/bin/python3
"""Renders a chat template for a conversation the way Hugging Face transformers does.

The reference for gemmaserve's C++ Jinja interpreter: same environment as transformers'
chat_template_utils (ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, loop
controls and the {% generation %} tag; a tojson filter without HTML escaping; raise_exception
and strftime_now globals) and the same variables (messages, tools, documents,
add_generation_prompt, special tokens, extra keyword arguments such as enable_thinking).
Needs only Debian's python3-jinja2 (run it with /usr/bin/python3).

Usage:
  render_reference.py --template T.jinja --conversation CONV.json [--bos-token B] [--eos-token E]
  render_reference.py --batch  (JSON lines on stdin: {"template": PATH, "conversation": PATH,
                                "bos_token": ..., "eos_token": ...}; one JSON result per line out)

CONV.json: {"messages": [...], "tools": [...] (optional), "add_generation_prompt": bool,
"enable_thinking": bool (optional), "extra": {...} (optional, more template variables)}
or a bare messages array. Prints the rendered prompt exactly (no added newline); a template
error prints "ERROR: <type>: <message>" on stderr and exits with status 3.
"""
import argparse
import json
import sys
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %}: transformers marks assistant text with it; the
    rendered text is just the body (the index tracking is not needed for rendering)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render_body"), [], [], body).set_lineno(lineno)

    def _render_body(self, caller):
        return caller()


def make_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


ENV = make_environment()


def render(template_source, conversation, bos_token="<bos>", eos_token="<eos>"):
    if isinstance(conversation, list):
        conversation = {"messages": conversation}
    kwargs = {"bos_token": bos_token, "eos_token": eos_token}
    if "enable_thinking" in conversation:
        kwargs["enable_thinking"] = conversation["enable_thinking"]
    kwargs.update(conversation.get("extra", {}))
    compiled = ENV.from_string(template_source)
    return compiled.render(messages=conversation["messages"], tools=conversation.get("tools"), documents=None,
                           add_generation_prompt=conversation.get("add_generation_prompt", False), **kwargs)


def read(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--template")
    ap.add_argument("--conversation")
    ap.add_argument("--bos-token", default="<bos>")
    ap.add_argument("--eos-token", default="<eos>")
    ap.add_argument("--batch", action="store_true")
    args = ap.parse_args()
    if args.batch:
        for line in sys.stdin:
            if not line.strip():
                continue
            job = json.loads(line)
            try:
                out = render(read(job["template"]), json.loads(read(job["conversation"])),
                             job.get("bos_token", "<bos>"), job.get("eos_token", "<eos>"))
                result = {"ok": True, "output": out}
            except Exception as e:  # the test only needs to know that jinja2 raised
                result = {"ok": False, "error": f"{type(e).__name__}: {e}"}
            print(json.dumps(result), flush=True)
        return 0
    if not args.template or not args.conversation:
        ap.error("--template and --conversation are required (or --batch)")
    try:
        out = render(read(args.template), json.loads(read(args.conversation)), args.bos_token, args.eos_token)
    except Exception as e:
        print(f"ERROR: {type(e).__name__}: {e}", file=sys.stderr)
        return 3
    sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
