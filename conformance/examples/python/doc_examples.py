#!/usr/bin/env python3
"""Keeps the examples of docs/remote-protocol.md the lines provider.py really sends.

It runs every request of the document's examples through provider.py, in id order,
with a few requests of its own that set the scene (site-b black-holed for the
listing, a hung backend for the cancelled Get), and puts what the provider answered
after each request. With --write it rewrites the document; without, it exits 1 when
the document differs from what the provider sends (times, which differ run by run,
and the order of a Check's concurrent calls aside).

    python3 conformance/examples/python/doc_examples.py [--write] [DOC]
"""

import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "..", "..", "docs", "remote-protocol.md")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
# The request the document's notification example belongs to; it sends no line.
UNSHOWN = 36


def session(requests):
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "provider.py")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    out = {}

    def run(m, then=None):
        for msg in [m] + ([then] if then else []):
            p.stdin.write(json.dumps(msg) + "\n")
        p.stdin.flush()
        lines = []
        while True:
            line = p.stdout.readline().rstrip("\n")
            lines.append(line)
            if json.loads(line).get("id") == m["id"]:
                return lines

    def scene(i, method, params):
        run({"jsonrpc": "2.0", "id": i, "method": method, "params": params})

    for i in sorted(requests):
        if i == 13:
            scene(1001, "faults/set_reachability",
                  {"testbed": 1, "location": "site-b", "reachability": "BlackHole"})
        if i == 14:
            scene(1002, "faults/set_reachability",
                  {"testbed": 1, "location": "site-b", "reachability": "Up"})
        if i == 35:
            scene(1003, "faults/inject", {"testbed": 1, "spec": {
                "location": "site-a", "trigger": {"type": "Always"}, "kind": {"type": "Hang"}}})
            out[i] = run(requests[i], {"jsonrpc": "2.0", "method": "$/cancel", "params": {"id": i}})
            scene(1004, "faults/clear", {"testbed": 1})
            scene(1005, "observation/set_verbosity", {"testbed": 1, "verbosity": "V1"})
            out[UNSHOWN] = run({"jsonrpc": "2.0", "id": UNSHOWN, "method": "provider/get", "params": {
                "provider": 2, "deadline_ms": 10000, "id": "sites/site-a/instances/nowhere"}})
            continue
        out[i] = run(requests[i])
    p.stdin.close()
    p.wait()
    return out


def rewrite(doc, out):
    new, i = [], 0
    while i < len(doc):
        if doc[i] != "```text":
            new.append(doc[i])
            i += 1
            continue
        block = [doc[i]]
        i += 1
        while doc[i] != "```":
            block.append(doc[i])
            i += 1
        sent = [line for line in block if line.startswith("--> ")]
        if any(line.startswith("<-- ") for line in block):
            ids = [json.loads(s[4:])["id"] for s in sent if "id" in json.loads(s[4:])]
            block = ["```text"]
            if not ids:
                block += ["<-- " + line for line in out[UNSHOWN] if '"method"' in line]
            else:
                for s in sent:
                    block.append(s)
                    m = json.loads(s[4:])
                    if "id" in m and (m["id"] != 35 or s is sent[-1]):
                        block += ["<-- " + line for line in out[m["id"]]]
        new += block + ["```"]
        i += 1
    return new


NUMBERED = re.compile(r'"(span|parent|connection)": \d+')


def normal(lines):
    """The lines as a multiset, with times, span and connection numbers masked and
    a trace's calls compared by their shape: a listing and a Check visit their
    sites at once, so their calls interleave differently run by run, and which of
    them fall after a `since` differs too (the line itself is still one a run
    wrote, with --write)."""
    out = []
    for line in lines:
        if line.startswith("<-- ") and '"calls"' in line:
            m = json.loads(line[4:])
            m["result"]["calls"] = sorted(
                {tuple(sorted(c.keys())) for c in m["result"]["calls"]})
            line = "<-- " + json.dumps(m)
        out.append(NUMBERED.sub(r'"\1": #', TIME.sub("T", line)))
    return sorted(out)


def main():
    write = "--write" in sys.argv[1:]
    args = [a for a in sys.argv[1:] if a != "--write"]
    path = args[0] if args else DOC
    doc = open(path).read().split("\n")
    requests = {}
    for line in doc:
        if line.startswith("--> "):
            m = json.loads(line[4:])
            if "id" in m:
                requests[m["id"]] = m
    new = rewrite(doc, session(requests))
    if write:
        open(path, "w").write("\n".join(new))
        return 0
    if normal(new) != normal(doc):
        gone = sorted(set(normal(doc)) - set(normal(new)))
        print("docs/remote-protocol.md's examples are not what provider.py sends; run "
              "`python3 conformance/examples/python/doc_examples.py --write`. First difference:\n  "
              + (gone[0] if gone else "(lines in another order)"), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
