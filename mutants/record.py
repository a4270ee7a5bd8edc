#!/usr/bin/env python3
"""The mutants record: folds cargo-mutants outcomes into mutants/<crate>.json.

    record.py fold --crate C --version V --listing LIST.json [--unmeasured WHY] OUT...
    record.py unmeasured --crate C --listing LIST.json
    record.py missed --crate C
    record.py judge --crate C JUDGMENTS.json
    record.py summary [--check | --markdown]

A mutant's key is its name without line and column (`file: replace .. with ..`), with
` #2`, ` #3` .. on repeats in listing order, so that judgments survive code moving.
Its fingerprint is the text of the function it mutates (or of its own span, outside a
function): when that text changes, its outcome is measured again, and its judgment is
kept for whoever re-reads it (`recheck`).
`fold` reads the listing of the current tree (`cargo mutants --list --json`) and each
run's output directory (OUT/mutants.out/outcomes.json, OUT/commit, OUT/seconds).
`judge` sets judgments from {key or name: [judgment, why]}.
`summary` prints the figures of every record; with --check it fails when a record's
stored figures are not the ones its entries give; with --markdown it prints them as
a table and writes it between the figures markers of mutants/README.md.
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUTCOMES = {
    "CaughtMutant": "caught",
    "MissedMutant": "missed",
    "Unviable": "unviable",
    "Timeout": "timeout",
}
JUDGMENTS = ("equivalent", "gap", "killed-since")


def record_path(crate):
    return os.path.join(HERE, f"{crate}.json")


def strip_line_col(name):
    """`file:12:5: replace ..` → `file: replace ..`."""
    return re.sub(r"^([^:]+):\d+:\d+: ", r"\1: ", name)


def keyed(names):
    """Keys in listing order, repeats numbered."""
    seen = {}
    keys = []
    for n in names:
        base = strip_line_col(n)
        seen[base] = seen.get(base, 0) + 1
        keys.append(base if seen[base] == 1 else f"{base} #{seen[base]}")
    return keys


def escape(text):
    """`text` as a regex matching itself (the regex crate's metacharacters escaped)."""
    return re.sub(r"([\\.^$*+?(){}\[\]|])", r"\\\1", text)


def anchored(key):
    """A regex matching the names of the mutants of `key`, whatever their line and column."""
    file, what = key.split(" #")[0].split(": ", 1)
    return f"^{escape(file)}:[0-9]+:[0-9]+: {escape(what)}$"


def fingerprint(m, sources, commit=None):
    """A digest of the text of the function the mutant sits in (its own span outside one),
    in the worktree or, given `commit`, in that commit."""
    path = m["file"]
    if (commit, path) not in sources:
        if commit is None:
            with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                text = f.read()
        else:
            text = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT,
                                  capture_output=True, text=True, check=True).stdout
        sources[(commit, path)] = text.splitlines()
    path = (commit, path)
    lines = sources[path]
    span = (m.get("function") or {}).get("span") or m["span"]
    text = "\n".join(lines[span["start"]["line"] - 1 : span["end"]["line"]])
    body = m["name"].split(": ", 1)[1] + "\n" + text
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def place(m):
    """Where the mutant sits in its function: line and column from the function's start."""
    fn = (m.get("function") or {}).get("span") or m["span"]
    return (m["span"]["start"]["line"] - fn["start"]["line"], m["span"]["start"]["column"])


def load(crate):
    path = record_path(crate)
    if not os.path.exists(path):
        return {"crate": crate, "runs": [], "mutants": []}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def summarise(rec):
    count = {k: 0 for k in ("listed", "caught", "missed", "unviable", "timeout", "unmeasured")}
    judged = {k: 0 for k in JUDGMENTS}
    for m in rec["mutants"]:
        count["listed"] += 1
        count[m.get("outcome") or "unmeasured"] += 1
        if m.get("outcome") == "missed" and m.get("judgment") in judged:
            judged[m["judgment"]] += 1
    viable = count["caught"] + count["missed"] + count["timeout"]
    non_equivalent = viable - judged["equivalent"]
    # A timeout is the suite not passing within its limit: killed, as a CI job would be.
    killed = count["caught"] + count["timeout"] + judged["killed-since"]
    s = dict(count)
    s.update({
        "viable": viable,
        "equivalent": judged["equivalent"],
        "gap": judged["gap"],
        "killed_since": judged["killed-since"],
        "non_equivalent": non_equivalent,
        "killed": killed,
        "kill_rate_percent": round(100.0 * killed / non_equivalent, 1) if non_equivalent else None,
    })
    return s


def write(crate, rec):
    rec["summary"] = summarise(rec)
    with open(record_path(crate), "w", encoding="utf-8") as f:
        json.dump(rec, f, indent=2, ensure_ascii=False)
        f.write("\n")


def read_run(out):
    """(commit, seconds, {name: (outcome, seconds)}) of one run's output directory."""
    with open(os.path.join(out, "mutants.out", "outcomes.json"), encoding="utf-8") as f:
        data = json.load(f)
    commit = open(os.path.join(out, "commit")).read().strip()
    seconds = None
    if os.path.exists(os.path.join(out, "seconds")):
        seconds = int(open(os.path.join(out, "seconds")).read().strip())
    found = {}
    mutants = []
    for o in data["outcomes"]:
        sc = o["scenario"]
        if not isinstance(sc, dict) or "Mutant" not in sc:
            continue
        summary = o["summary"]
        if summary not in OUTCOMES:
            raise SystemExit(f"{out}: {sc['Mutant']['name']}: outcome {summary} is not recordable")
        took = round(sum(p["duration"] for p in o["phase_results"]), 1)
        found[sc["Mutant"]["name"]] = (OUTCOMES[summary], took)
        mutants.append(sc["Mutant"])
    # The same outcomes by key and the fingerprint at the run's commit, so that a
    # mutant whose function is unchanged keeps its outcome when lines above it move.
    by_key = {}
    sources = {}
    names = [m["name"] for m in mutants]
    for key, m in zip(keyed(names), mutants):
        at = (found[m["name"]], (fingerprint(m, sources, commit), place(m)))
        by_key[key] = at
        found[m["name"]] = at
    return commit, seconds, data, found, by_key


def fold(args):
    with open(args.listing, encoding="utf-8") as f:
        listing = json.load(f)
    rec = load(args.crate)
    old = {m["key"]: m for m in rec["mutants"]}
    runs = [read_run(out) for out in args.out]
    sources = {}
    mutants = []
    for key, m in zip(keyed([m["name"] for m in listing]), listing):
        fp = fingerprint(m, sources)
        entry = {"key": key, "name": m["name"], "fingerprint": fp}
        prev = old.get(key)
        if prev and prev.get("fingerprint") == fp and prev.get("outcome"):
            for k in ("outcome", "seconds", "commit"):
                entry[k] = prev[k]
        # A run's outcome counts for a mutant of the same function text (found by its
        # name, or by its key when lines above it moved since the run's commit).
        for commit, _, _, found, by_key in runs:
            at = found.get(m["name"]) or by_key.get(key)
            if at and at[1] == (fp, place(m)):
                entry["outcome"], entry["seconds"] = at[0]
                entry["commit"] = commit
        if prev:
            for k in ("judgment", "why"):
                if k in prev:
                    entry[k] = prev[k]
            if prev.get("fingerprint") != fp and "judgment" in prev:
                entry["recheck"] = True
        if not entry.get("outcome"):
            why = args.unmeasured or (prev or {}).get("unmeasured")
            if why:
                entry["unmeasured"] = why
        if entry.get("outcome") in ("caught", "unviable", "timeout"):
            entry.pop("judgment", None)
            entry.pop("why", None)
            entry.pop("recheck", None)
        mutants.append(entry)
    rec["crate"] = args.crate
    rec["cargo_mutants"] = args.version
    for out, (commit, seconds, data, found, _) in zip(args.out, runs):
        label = os.path.basename(os.path.normpath(out))
        rec["runs"] = [r for r in rec["runs"] if r.get("label") != label]
        rec["runs"].append({
            "label": label,
            "commit": commit,
            "mutants_tested": len(found),
            "seconds": seconds,
            "counts": {OUTCOMES.get(k, k): v for k, v in data.items()
                       if k in ("caught", "missed", "timeout", "unviable", "success", "failure")},
        })
    rec["mutants"] = mutants
    write(args.crate, rec)
    s = rec["summary"]
    print(f"{args.crate}: {json.dumps(s)}")


def unmeasured(args):
    """Anchored regexes of the listed mutants the record has no current outcome for."""
    with open(args.listing, encoding="utf-8") as f:
        listing = json.load(f)
    rec = load(args.crate)
    old = {m["key"]: m for m in rec["mutants"]}
    sources = {}
    for key, m in zip(keyed([m["name"] for m in listing]), listing):
        prev = old.get(key)
        if prev and prev.get("outcome") and prev.get("fingerprint") == fingerprint(m, sources):
            continue
        print(anchored(strip_line_col(m["name"])))


def missed(args):
    """Anchored regexes of the mutants the record has as missed."""
    for m in load(args.crate)["mutants"]:
        if m.get("outcome") == "missed":
            print(anchored(m["key"]))


def judge(args):
    """Sets judgments from a JSON object {key or name: [judgment, why]}."""
    with open(args.judgments, encoding="utf-8") as f:
        given = json.load(f)
    rec = load(args.crate)
    by_key = {m["key"]: m for m in rec["mutants"]}
    by_name = {m["name"]: m for m in rec["mutants"]}
    for k, (judgment, why) in given.items():
        m = by_key.get(k) or by_name.get(k)
        if m is None:
            raise SystemExit(f"{args.crate}: no mutant {k!r}")
        if judgment not in JUDGMENTS:
            raise SystemExit(f"{k}: judgment {judgment!r} is not one of {JUDGMENTS}")
        if m.get("outcome") != "missed":
            raise SystemExit(f"{k}: {m.get('outcome')}, not a survivor to judge")
        m["judgment"], m["why"] = judgment, why
        m.pop("recheck", None)
    write(args.crate, rec)
    print(f"{args.crate}: {json.dumps(rec['summary'])}")


def markdown():
    """The figures of both records as the Markdown table mutants/README.md shows."""
    rows = ["| crate | listed | caught | missed | unviable | timeout | not run | equivalent | gap | killed since | kill rate |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    runs = []
    for crate in ("kvm2", "template"):
        rec = load(crate)
        s = summarise(rec)
        rate = "–" if s["kill_rate_percent"] is None else f"{s['kill_rate_percent']} %"
        rows.append(f"| {crate} | {s['listed']} | {s['caught']} | {s['missed']} | {s['unviable']} | "
                    f"{s['timeout']} | {s['unmeasured']} | {s['equivalent']} | {s['gap']} | "
                    f"{s['killed_since']} | {rate} |")
        took = [m["seconds"] for m in rec["mutants"] if m.get("outcome") and m.get("seconds")]
        if took:
            runs.append(f"- {crate}: {len(took)} mutants measured, {sum(took) / len(took):.0f} s a mutant"
                        f" on average (build and test), {sum(took) / 60:.0f} min in all.")
        for r in rec["runs"]:
            tested = r["mutants_tested"]
            took = r.get("seconds")
            pace = f", {took / tested:.0f} s a mutant" if took and tested else ""
            runs.append(f"- {crate}, {r['label']}: {tested} mutants at {r['commit'][:10]}"
                        + (f" in {took} s{pace}" if took else "") + ".")
    return "\n".join(rows + [""] + runs)


def summary(args):
    if args.markdown:
        table = markdown()
        print(table)
        readme = os.path.join(HERE, "README.md")
        text = open(readme, encoding="utf-8").read()
        start, end = "<!-- figures -->\n", "<!-- /figures -->\n"
        if start in text and end in text:
            head, rest = text.split(start, 1)
            _, tail = rest.split(end, 1)
            with open(readme, "w", encoding="utf-8") as f:
                f.write(head + start + table + "\n" + end + tail)
        return
    bad = False
    for crate in ("kvm2", "template"):
        if not os.path.exists(record_path(crate)):
            continue
        rec = load(crate)
        s = summarise(rec)
        print(f"{crate}: {json.dumps(s)}")
        if args.check and rec.get("summary") != s:
            print(f"{crate}: the stored summary is stale: {json.dumps(rec.get('summary'))}")
            bad = True
    sys.exit(1 if bad else 0)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fold")
    f.add_argument("--crate", required=True)
    f.add_argument("--version", required=True)
    f.add_argument("--listing", required=True)
    f.add_argument("--unmeasured", help="why the mutants with no outcome were not run")
    f.add_argument("out", nargs="*")
    u = sub.add_parser("unmeasured")
    u.add_argument("--crate", required=True)
    u.add_argument("--listing", required=True)
    m = sub.add_parser("missed")
    m.add_argument("--crate", required=True)
    j = sub.add_parser("judge")
    j.add_argument("--crate", required=True)
    j.add_argument("judgments")
    s = sub.add_parser("summary")
    s.add_argument("--check", action="store_true")
    s.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    {"fold": fold, "unmeasured": unmeasured, "missed": missed, "judge": judge,
     "summary": summary}[args.cmd](args)


if __name__ == "__main__":
    main()
