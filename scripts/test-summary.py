#!/usr/bin/env python3
"""Counts for scripts/test.sh, read from the logs it keeps in build/test-logs/.

  test-summary.py line LOG            one line: what the log's test runners counted
  test-summary.py total LOGDIR SECS   the closing summary: totals, and why tests were skipped
  test-summary.py failures LOG        what failed in a log: cargo's failure reports, ctest's
                                      failed tests' output; else the log's last 150 lines
"""
import collections
import os
import re
import sys
import xml.etree.ElementTree as ET

CARGO_RESULT = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")
CARGO_IGNORED = re.compile(r"^test (\S+) \.\.\. ignored(?:, (.*))?$")
CTEST_RESULT = re.compile(r"^\d+% tests passed, (\d+) tests? failed out of (\d+)")
CTEST_NOT_RUN = re.compile(r"^\s*\d+ - (\S+) \((Skipped|Not Run|Disabled)\)")
STEPS = re.compile(r"^outside-test: (\d+) steps? passed")


def counts(path):
    """{'cargo': [passed, failed, ignored], 'ctest': [passed, failed, skipped], 'steps': n}"""
    c = {"cargo": [0, 0, 0], "ctest": [0, 0, 0], "steps": 0}
    seen = {"cargo": False, "ctest": False}
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return c, seen
    skipped = 0
    for line in lines:
        m = CARGO_RESULT.match(line)
        if m:
            seen["cargo"] = True
            for i in range(3):
                c["cargo"][i] += int(m.group(i + 1))
        m = CTEST_RESULT.match(line)
        if m:
            seen["ctest"] = True
            failed, total = int(m.group(1)), int(m.group(2))
            c["ctest"][1] += failed
            c["ctest"][0] += total - failed
        if CTEST_NOT_RUN.match(line):
            skipped += 1
        m = STEPS.match(line)
        if m:
            c["steps"] += int(m.group(1))
    # ctest counts a skipped test as passed in its percentage line.
    c["ctest"][0] -= skipped
    c["ctest"][2] += skipped
    return c, seen


def describe(c, seen):
    parts = []
    if seen["cargo"]:
        p, f, i = c["cargo"]
        parts.append(f"cargo: {p} passed, {f} failed" + (f", {i} ignored" if i else ""))
    if seen["ctest"]:
        p, f, s = c["ctest"]
        parts.append(f"ctest: {p} passed, {f} failed" + (f", {s} skipped" if s else ""))
    if c["steps"]:
        parts.append(f"{c['steps']} steps passed")
    return "; ".join(parts)


def skip_reason(text):
    """The first clause after 'SKIP: ' in a test's output."""
    for line in text.splitlines():
        i = line.find("SKIP: ")
        if i < 0:
            i = line.find("SKIP ")
            if i < 0:
                continue
        reason = line[i:].split(" ", 1)[1].strip()
        # "no usable GPU: the CUDA driver could not be opened; tried: ..." -> the clause
        # before the detail, and the detail's first clause.
        # Tests name themselves differently ("no usable GPU: ...", "load_and_launch: ..."):
        # group by the detail, the why, when there is one.
        head, _, rest = reason.partition(": ")
        detail = rest.split(";")[0].split(" (")[0].strip()
        return detail or head
    return "no reason printed"


def ctest_skips(xml_path):
    reasons = collections.Counter()
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError):
        return reasons
    for tc in root.iter("testcase"):
        if tc.find("skipped") is None and tc.get("status") not in ("notrun", "disabled"):
            continue
        out = tc.findtext("system-out") or ""
        reasons[skip_reason(out)] += 1
    return reasons


def cargo_ignored(path):
    reasons = collections.Counter()
    try:
        for line in open(path, errors="replace"):
            m = CARGO_IGNORED.match(line.rstrip("\n"))
            if m:
                reasons[m.group(2) or "#[ignore] without a reason"] += 1
    except OSError:
        pass
    return reasons


def failures(path):
    lines = open(path, errors="replace").read().splitlines()
    out = []
    # cargo: from each "failures:" report to its "test result:" line, and cargo's last words.
    keep = False
    for line in lines:
        if line == "failures:":
            keep = True
        if keep:
            out.append(line)
        if line.startswith("test result:"):
            keep = False
        if line.startswith("error: test failed") or line.startswith("error: could not compile"):
            out.append(line)
    # The compiler's and the linker's own diagnostics: each "error" block to its blank line, so
    # that a failed build says why (cargo's "could not compile" alone does not).
    keep = False
    for line in lines:
        if re.match(r"^error(\[E\d+\])?: ", line) and not line.startswith(
            ("error: test failed", "error: could not compile")
        ):
            keep = True
        elif keep and not line.strip():
            keep = False
        if keep:
            out.append(line)
    # ctest --output-on-failure: each failed test's output follows its "***Failed" line.
    keep = False
    for line in lines:
        if re.match(r"^\s*\d+/\d+ Test +#\d+: ", line):
            keep = "***" in line and "Skipped" not in line
        if keep:
            out.append(line)
    if not out:
        out = lines[-150:]
    print("\n".join(out))


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "failures":
        failures(sys.argv[2])
        return
    if len(sys.argv) >= 3 and sys.argv[1] == "line":
        print(describe(*counts(sys.argv[2])))
        return
    if len(sys.argv) >= 4 and sys.argv[1] == "total":
        d, secs = sys.argv[2], sys.argv[3]
        passed = failed = skipped = 0
        ignored = collections.Counter()
        for name in sorted(os.listdir(d)):
            if not name.endswith(".log"):
                continue
            c, _ = counts(os.path.join(d, name))
            passed += c["cargo"][0] + c["ctest"][0]
            failed += c["cargo"][1] + c["ctest"][1]
            skipped += c["cargo"][2] + c["ctest"][2]
            ignored.update(cargo_ignored(os.path.join(d, name)))
        print(f"== summary ({secs} s; logs in {d}/)")
        reasons = ctest_skips(os.path.join(d, "ctest.xml"))
        if reasons:
            print(f"ctest skipped {sum(reasons.values())}, because:")
            for r, n in reasons.most_common():
                print(f"  {n:4}  {r}")
        if ignored:
            print(f"cargo ignored {sum(ignored.values())}, because:")
            for r, n in ignored.most_common():
                print(f"  {n:4}  {r}")
        if skipped:
            print("(the sanitizer run skips the same GPU tests as ctest)")
        print(f"total: {passed} passed, {failed} failed, {skipped} skipped")
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
