#!/usr/bin/env python3
"""The documentation test: every Markdown file renders, and the commands and outputs the docs show are true.

1. Rendering. Every *.md file of the repository (git's: tracked and untracked, not ignored) is parsed with
   markdown-it-py (CommonMark, plus GFM tables). A problem is reported where rendering hurts a reader:
   - a code fence that swallows text or another fence (a line inside it that starts with ``` or ~~~ as long as
     its fence: meant to close it, but it has text after the fence, so it does not) or is never closed;
   - a table row with a different number of cells than its header, and lines of pipes that render as a
     paragraph instead of a table (no delimiter row, or one of another width);
   - a relative link or image whose file is missing, or whose #anchor names no heading of that Markdown file;
   - a backtick left over in rendered text (a code span that is never closed);
   - a doc-test marker that is not directly before a code block, or that says something unknown.
2. Commands. In README.md and docs/*.md, the commands of the fenced code blocks (sh, bash, console or
   unlabelled): a `$ ` line, or a line starting with flashsim, build/default/flashsim, build/default/flashsim-gpu,
   cmake, ctest, python3, bash or scripts/X.sh (continued by a trailing backslash; `# ...` comments dropped;
   `A && B` is two commands).
   - flashsim commands are run (the --flashsim binary, cwd a temporary folder holding links to the repository's
     top-level folders, a real build/ with build/default/flashsim; an --out or --header outside it is refused,
     so nothing is written into the repository; 60 s each), a block's commands in order in one folder; the exit
     code must be 0 or the marker's.
   - a synopsis (placeholders: PROFILE, [--flag ...], $I, <x>, ...) is not run: `flashsim SUB... --help` must
     exit 0 and name every --flag it shows. So is a skipped command (a GPU's, a slow one).
   - python3 SCRIPT: the script exists and `python3 SCRIPT --help` exits 0 (run only in an output block);
     python3 -m MODULE: `python3 -m MODULE --help` exits 0; cmake / ctest --preset X: X is a preset of that kind
     in CMakePresets.json; bash SCRIPT, scripts/X: the script exists (the latter executable).
3. Pasted outputs. A `$ command` block marked as output is compared with what its commands print now (stdout
   and stderr together, as on a terminal; trailing blanks ignored). A line `...` matches any lines. A `$` line
   that the previous command printed itself (run_candidate.py prints the verify it runs) is its output.

Markers: an HTML comment (invisible when rendered) on the line right before a code block, directives separated
by ';':

    <!-- doc-test: output -->               the block's pasted output is real: compared exactly
    <!-- doc-test: excerpt -->              real, but abridged: as output with a `...` before and after it
    <!-- doc-test: exit 2 -->               the commands' expected exit code (default 0)
    <!-- doc-test: synopsis -->             placeholders: check the subcommand and its flags only
    <!-- doc-test: skip REASON -->          not run (a GPU's, minutes of CPU): reported with the reason
    <!-- doc-test: setup COMMAND -->        a flashsim command run first in the block's folder, not shown
    <!-- doc-test: volatile WORD -->        output lines starting with WORD depend on the machine: any such line
    <!-- doc-test: no-commands -->          the block is text whose lines only look like commands

README.md has no room for markers (it is held to 10000 characters): its directives are README_DIRECTIVES below,
keyed by the command text.

    docs_test.py --root REPO --flashsim BUILD/flashsim [--no-outputs]   # exit 0 all true, 1 problems listed
    docs_test.py --self-test                                           # the checks on broken snippets
"""
import argparse
import difflib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

try:
    from markdown_it import MarkdownIt
except ImportError:  # pragma: no cover - the message is the point
    print("docs_test.py: error: markdown-it-py is missing (scripts/install-deps.sh installs it: "
          "python3 -m pip install markdown-it-py)", file=sys.stderr)
    sys.exit(2)

TIMEOUT_S = 60
COMMAND_DOCS = re.compile(r"^(README\.md|docs/[^/]+\.md)$")
SHELL_INFOS = {"", "sh", "bash", "shell", "console"}
COMMAND_START = re.compile(r"(flashsim |build/default/flashsim(-gpu)? |cmake |ctest |python3 |bash |"
                           r"scripts/[\w./-]+\.(sh|py)\b)")
FLASHSIM_NAMES = ("flashsim", "build/default/flashsim")
MARKER = re.compile(r"^\s*<!--\s*doc-test:(.*?)-->\s*$")
ANY_MARKER = re.compile(r"\s*<!--\s*doc-test")
FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
WRITE_FLAGS = ("--out", "--header")

# README.md's markers, which do not fit in its 10000 characters: command text (as extract_commands joins it,
# comment dropped) -> directives. output / excerpt / setup / volatile apply to the command's block.
README_DIRECTIVES = {
    "build/default/flashsim golden generate --suite default --out goldens/default":
        "skip generates the 195-case default suite (over 30 s on 2 cores)",
    "build/default/flashsim golden verify --golden goldens/default --candidate my_outputs/": "synopsis",
    "build/default/flashsim sim predict --batch 2 --heads 16 --seqlen 4096 --head-dim 128": "excerpt",
    "build/default/flashsim traffic compare --ncu tests/data/ncu_fa2_h100_calibration.csv": "excerpt",
    "build/default/flashsim-gpu check --golden goldens/sparse --kernel fa2-v1 --quiet":
        "skip runs fa2-v1's CUDA kernels on an H100",
}


# --------------------------------------------------------------------------------------------- problems

@dataclass
class Problem:
    path: str
    line: int
    what: str
    detail: str = ""

    def __str__(self):
        text = f"{self.path}:{self.line}: {self.what}"
        if self.detail:
            text += "\n" + "\n".join("    " + x for x in self.detail.rstrip("\n").split("\n"))
        return text


# --------------------------------------------------------------------------------------------- rendering

def parse_markdown(text):
    return MarkdownIt("commonmark").enable("table").parse(text)


def check_fences(path, lines, tokens):
    """Fences that swallow text or another fence, and fences never closed."""
    problems = []
    for t in tokens:
        if t.type != "fence" or not t.markup:
            continue
        char, width = t.markup[0], len(t.markup)
        for i, line in enumerate(t.content.split("\n")):
            m = FENCE_LINE.match(line)
            if m and m.group(1)[0] == char and len(m.group(1)) >= width:
                problems.append(Problem(
                    path, t.map[0] + 2 + i,
                    "a fence line inside the code block opened at line %d does not close it" % (t.map[0] + 1),
                    f"seen: {line.strip()[:100]!r} (text after the fence: the block goes on and swallows what "
                    f"follows)\nexpected: a closing fence alone on its line"))
        last = t.map[1] - 1
        closing = re.compile(r"^[\s>]*" + re.escape(char) + "{%d,}\\s*$" % width)
        if last <= t.map[0] or last >= len(lines) or not closing.match(lines[last]):
            problems.append(Problem(path, t.map[0] + 1, "code fence never closed: it swallows the rest of the file"))
    return problems


def table_cells(line):
    """The number of cells of a GFM table row (unescaped pipes; the outer ones optional)."""
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return len(re.split(r"(?<!\\)\|", s))


def check_tables(path, lines, tokens):
    """Rows whose cell count differs from the header's; pipe lines that do not render as a table."""
    problems = []
    for i, t in enumerate(tokens):
        if t.type == "table_open":
            head = table_cells(lines[t.map[0]])
            for n in range(t.map[0] + 2, t.map[1]):
                cells = table_cells(lines[n])
                if cells != head:
                    problems.append(Problem(path, n + 1, f"table row has {cells} cells, its header {head}",
                                            "rendered with cells dropped or empty"))
        elif t.type == "paragraph_open":
            rows = lines[t.map[0]:t.map[1]]
            if len(rows) >= 2 and all(r.strip().startswith("|") and r.count("|") >= 2 for r in rows):
                problems.append(Problem(path, t.map[0] + 1, "lines of pipes render as a paragraph, not a table",
                                        "expected: a header row, then a |---| row of as many cells"))
    return problems


def inline_text(token):
    return "".join(c.content for c in (token.children or []) if c.type in ("text", "code_inline"))


def github_slug(text):
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(tokens, text):
    """The anchors GitHub gives the file: heading slugs (duplicates numbered), and explicit ids."""
    seen, out = {}, set(re.findall(r"""(?:id|name)=["']([^"']+)["']""", text))
    for i, t in enumerate(tokens):
        if t.type == "heading_open":
            slug = github_slug(inline_text(tokens[i + 1]))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def check_links(path, tokens, root, anchors_of):
    """Relative links and images: the file exists; an anchor into Markdown names a heading there."""
    problems = []
    for t in tokens:
        if t.type != "inline":
            continue
        for c in t.children or []:
            target = c.attrGet("href") if c.type == "link_open" else c.attrGet("src") if c.type == "image" else None
            if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(os.path.join(root, dest)):
                problems.append(Problem(path, t.map[0] + 1, f"link to a missing file: {target}"))
            elif anchor and dest.endswith(".md") and anchor not in anchors_of(dest):
                problems.append(Problem(path, t.map[0] + 1, f"link to a missing anchor: {target}",
                                        f"no heading of {dest} has the slug {anchor!r}"))
    return problems


def check_backticks(path, tokens):
    """A backtick in rendered text: a code span that is never closed."""
    problems = []
    for t in tokens:
        if t.type == "inline" and any(c.type == "text" and "`" in c.content for c in t.children or []):
            problems.append(Problem(path, t.map[0] + 1, "unmatched backtick: a code span is never closed",
                                    f"rendered: {inline_text(t)[:120]!r}"))
    return problems


def check_markers(path, lines, tokens):
    """Every marker (an HTML block, not a mention in the text) is directly before a fence and says only known
    directives."""
    problems = []
    for t in tokens:
        if t.type != "html_block" or not ANY_MARKER.match(t.content):
            continue
        n = t.map[0]
        m = MARKER.match(t.content.rstrip("\n")) if t.map[1] - n == 1 else None
        if not m:
            problems.append(Problem(path, n + 1, "malformed doc-test marker (one line: <!-- doc-test: ... -->)"))
            continue
        _, errors = parse_directives(m.group(1))
        problems += [Problem(path, n + 1, e) for e in errors]
        if n + 1 >= len(lines) or not FENCE_LINE.match(lines[n + 1]):
            problems.append(Problem(path, n + 1, "doc-test marker not directly before a code block"))
    return problems


def check_rendering(path, text, root=None, anchors_of=None):
    lines = text.split("\n")
    tokens = parse_markdown(text)
    problems = check_fences(path, lines, tokens) + check_tables(path, lines, tokens)
    problems += check_backticks(path, tokens) + check_markers(path, lines, tokens)
    if root is not None:
        problems += check_links(path, tokens, root, anchors_of or (lambda p: set()))
    return problems


# --------------------------------------------------------------------------------------------- markers

def parse_directives(text):
    """'output; exit 2' -> ({'output': True, 'exit': 2}, errors)."""
    directives, errors = {}, []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        word, _, rest = part.partition(" ")
        rest = rest.strip()
        if word in ("output", "excerpt", "synopsis", "no-commands") and not rest:
            directives[word] = True
        elif word == "exit" and rest.isdigit():
            directives["exit"] = int(rest)
        elif word in ("skip", "setup", "volatile") and rest:
            directives[word] = rest
        else:
            errors.append(f"unknown doc-test directive {part!r} (output, excerpt, exit N, synopsis, skip REASON, "
                          f"setup COMMAND, volatile WORD, no-commands)")
    if "output" in directives and "excerpt" in directives:
        errors.append("doc-test: output and excerpt together")
    return directives, errors


# --------------------------------------------------------------------------------------------- commands

@dataclass
class Command:
    text: str               # continuation lines joined, the comment dropped
    line: int               # 1-based
    shown: list             # the block's lines of the command, as pasted
    directives: dict = field(default_factory=dict)
    path: str = ""


@dataclass
class Block:
    path: str
    line: int               # the fence's line, 1-based
    lines: list             # the content
    directives: dict
    commands: list
    dollar: bool            # a console transcript: `$ ` lines and their outputs


def strip_comment(text):
    """Drops a `# ...` comment that starts a word outside quotes."""
    quote = None
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i].rstrip()
    return text.rstrip()


def join_continuations(lines, start, synopsis=False):
    """(command text, the lines it spans) from lines[start]: trailing backslashes, and in a synopsis the
    indented lines that follow."""
    parts, n = [], start
    while True:
        line = lines[n]
        body = strip_comment(line)
        if body.endswith("\\") and n + 1 < len(lines):
            parts.append(body[:-1].strip())
            n += 1
            continue
        parts.append(body.strip())
        break
    while synopsis and n + 1 < len(lines) and lines[n + 1][:1].isspace() and lines[n + 1].strip():
        n += 1
        parts.append(strip_comment(lines[n]).strip())
    return " ".join(p for p in parts if p), lines[start:n + 1]


def extract_commands(lines, info, directives, first_line):
    """The block's commands; dollar: whether it is a `$` transcript."""
    if info not in SHELL_INFOS or directives.get("no-commands"):
        return [], False
    dollar = any(line.startswith("$ ") for line in lines)
    commands, n = [], 0
    while n < len(lines):
        line = lines[n]
        if dollar and line.startswith("$ "):
            text, shown = join_continuations([line[2:]] + lines[n + 1:], 0)
            shown = [line] + shown[1:]
        elif not dollar and COMMAND_START.match(line):
            text, shown = join_continuations(lines, n, bool(directives.get("synopsis")))
        else:
            n += 1
            continue
        if text:
            commands.append(Command(text, first_line + n, shown))
        n += len(shown)
    return commands, dollar


def collect_blocks(path, text):
    """The fenced blocks of a command document, with their markers' directives."""
    lines = text.split("\n")
    blocks = []
    for t in parse_markdown(text):
        if t.type != "fence":
            continue
        start = t.map[0]
        m = MARKER.match(lines[start - 1]) if start > 0 else None
        directives = parse_directives(m.group(1))[0] if m else {}
        content = t.content.rstrip("\n").split("\n") if t.content.strip() else []
        commands, dollar = extract_commands(content, t.info.strip().split(" ")[0], directives, start + 2)
        blocks.append(Block(path, start + 1, content, directives, commands, dollar))
    return blocks


def apply_readme_directives(blocks, table):
    """README_DIRECTIVES onto README.md's blocks; the entries that match no command are returned."""
    unused = dict(table)
    for b in blocks:
        for c in b.commands:
            if c.text in table:
                d, _ = parse_directives(table[c.text])
                unused.pop(c.text, None)
                for key in ("output", "excerpt", "setup", "volatile"):
                    if key in d:
                        b.directives[key] = d.pop(key)
                c.directives.update(d)
    return unused


def placeholders(tokens):
    """The tokens that cannot run as written."""
    return [t for t in tokens
            if re.search(r"[$\[\]<>]|\.\.\.", t) or re.fullmatch(r"[A-Z][A-Z0-9_]*", t.split("=")[-1])]


def split_and(tokens):
    """`A && B` -> [A, B] (also ;)."""
    out, cur = [], []
    for t in tokens:
        if t in ("&&", ";"):
            out.append(cur)
            cur = []
        else:
            cur.append(t)
    return [c for c in out + [cur] if c]


def tokenize(text):
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


# --------------------------------------------------------------------------------------------- outputs

def terminal_lines(data):
    """Bytes printed to a terminal -> the lines it shows (carriage returns overwrite, trailing blanks off)."""
    text = data.decode("utf-8", "replace")
    lines = [line.split("\r")[-1].rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def matches(expected, actual, volatile=None):
    """doctest ELLIPSIS by line: an expected line `...` matches any lines (none too). A line whose first word is
    `volatile` matches any line with that first word (a line that depends on the machine)."""
    def same(want, seen):
        return want == seen or bool(volatile) and want.split()[:1] == [volatile] == seen.split()[:1]

    def equal(want, seen):
        return len(want) == len(seen) and all(map(same, want, seen))

    segments, cur = [], []
    for line in expected:
        if line.strip() == "...":
            segments.append(cur)
            cur = []
        else:
            cur.append(line)
    segments.append(cur)
    if len(segments) == 1:
        return equal(expected, actual)
    first, last, middle = segments[0], segments[-1], segments[1:-1]
    if len(actual) < len(first) + len(last) or not equal(first, actual[:len(first)]):
        return False
    if last and not equal(last, actual[len(actual) - len(last):]):
        return False
    pos, end = len(first), len(actual) - len(last)
    for seg in middle:
        for i in range(pos, end - len(seg) + 1):
            if equal(seg, actual[i:i + len(seg)]):
                pos = i + len(seg)
                break
        else:
            return False
    return True


def fill_ellipses(expected, actual):
    """The pasted lines with each `...` replaced by the lines it stands for (up to the next pasted line found),
    so that a diff shows only the lines that differ."""
    out, j = [], 0
    for i, line in enumerate(expected):
        if line.strip() != "...":
            out.append(line)
            j += 1
            continue
        anchors = [x for x in expected[i + 1:i + 4] if x.strip() != "..."]
        k = next((k for k in range(j, len(actual)) if actual[k] in anchors), None)
        if k is None:
            k = len(actual) if i == len(expected) - 1 else j
        out += actual[j:k]
        j = k
    return out


def short_diff(expected, actual, where, limit=40):
    diff = list(difflib.unified_diff(fill_ellipses(expected, actual), actual, f"pasted ({where}; its ... filled "
                                     "in)" if any(x.strip() == "..." for x in expected) else f"pasted ({where})",
                                     "current build", n=1, lineterm=""))
    if len(diff) > limit:
        diff = diff[:limit] + [f"... ({len(diff) - limit} more diff lines)"]
    return "\n".join(diff)


# --------------------------------------------------------------------------------------------- running

class Runner:
    def __init__(self, root, flashsim, compare_outputs=True):
        self.root, self.flashsim, self.compare_outputs = root, os.path.abspath(flashsim), compare_outputs
        self.python = shutil.which("python3") or sys.executable
        self.help_cache = {}
        self.presets = self._presets()
        self.counts = {"run": 0, "synopsis": 0, "skipped": 0, "checked": 0, "outputs": 0, "unchecked": 0}
        self.skips = []

    def _presets(self):
        try:
            with open(os.path.join(self.root, "CMakePresets.json")) as f:
                data = json.load(f)
        except (OSError, ValueError):
            return {}
        return {kind: {p["name"] for p in data.get(kind, [])}
                for kind in ("configurePresets", "buildPresets", "testPresets", "workflowPresets")}

    def sandbox(self):
        """A temporary folder that looks like the repository root: links to its top-level entries, a real
        build/ whose default/flashsim is the binary under test."""
        d = tempfile.mkdtemp(prefix="docs_test.")
        for name in os.listdir(self.root):
            if name not in (".git", "build"):
                os.symlink(os.path.join(self.root, name), os.path.join(d, name))
        os.makedirs(os.path.join(d, "build", "default"))
        os.symlink(self.flashsim, os.path.join(d, "build", "default", "flashsim"))
        return d

    def run(self, argv, cwd):
        # The pasted outputs were made with OpenBLAS's AVX2 kernels; on an AVX-512 CPU it picks others, whose
        # rounding moves an error statistic in its third digit (golden verify's lse relL2: 3.64e-08 -> 3.62e-08).
        # The pin keeps the pasted runs reproducible on either CPU.
        env = dict(os.environ)
        env.setdefault("OPENBLAS_CORETYPE", "Haswell")
        try:
            p = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=TIMEOUT_S, env=env)
            return p.returncode, terminal_lines(p.stdout)
        except subprocess.TimeoutExpired as e:
            return None, terminal_lines(e.stdout or b"") + [f"(timed out after {TIMEOUT_S} s)"]
        except OSError as e:
            return None, [f"(cannot run: {e})"]

    # --- synopsis: the subcommand exists and names the flags
    def help_text(self, path):
        if path not in self.help_cache:
            self.help_cache[path] = self.run([self.flashsim] + list(path) + ["--help"], self.root)
        return self.help_cache[path]

    @staticmethod
    def subcommands(help_lines):
        names, inside = set(), False
        for line in help_lines:
            if line.strip() == "Subcommands:":
                inside = True
            elif inside and line.strip():
                names.add(line.split()[0])
            elif inside:
                inside = False
        return names

    def check_synopsis(self, cmd, tokens):
        path, problems = [], []
        for t in tokens[1:]:
            rc, out = self.help_text(tuple(path))
            if rc != 0:
                return [Problem(cmd.path, cmd.line, f"`{' '.join(['flashsim'] + path)} --help` exits {rc}",
                                "\n".join(out[-5:]))]
            subs = self.subcommands(out)
            if t in subs:
                path.append(t)
            elif subs:
                return [Problem(cmd.path, cmd.line, f"no subcommand {t!r} of `{' '.join(['flashsim'] + path)}`",
                                f"its subcommands: {', '.join(sorted(subs))}")]
            else:
                break
        rc, out = self.help_text(tuple(path))
        if rc != 0:
            return [Problem(cmd.path, cmd.line, f"`{' '.join(['flashsim'] + path)} --help` exits {rc}")]
        help_blob = "\n".join(out)
        for flag in sorted({m for t in tokens for m in re.findall(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)", t)}):
            if not re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", help_blob):
                problems.append(Problem(cmd.path, cmd.line,
                                        f"flag {flag} is not in `{' '.join(['flashsim'] + path)} --help`"))
        return problems

    # --- commands that are not flashsim's
    def check_other(self, cmd, tokens):
        head = tokens[0]
        if head == "python3":
            if len(tokens) >= 3 and tokens[1] == "-m":
                return self.expect_help([self.python, "-m", tokens[2]], cmd)
            if len(tokens) < 2 or not os.path.isfile(os.path.join(self.root, tokens[1])):
                return [Problem(cmd.path, cmd.line, f"no such script: {tokens[1] if len(tokens) > 1 else ''}")]
            return self.expect_help([self.python, os.path.join(self.root, tokens[1])], cmd)
        if head in ("cmake", "ctest"):
            return self.check_preset(cmd, tokens)
        if head == "bash":
            self.counts["checked"] += 1
            script = next((t for t in tokens[1:] if not t.startswith("-")), "")
            return [] if os.path.isfile(os.path.join(self.root, script)) else [
                Problem(cmd.path, cmd.line, f"no such script: {script}")]
        if head.startswith("scripts/"):
            self.counts["checked"] += 1
            full = os.path.join(self.root, head)
            if not os.path.isfile(full):
                return [Problem(cmd.path, cmd.line, f"no such script: {head}")]
            return [] if os.access(full, os.X_OK) else [Problem(cmd.path, cmd.line, f"{head} is not executable")]
        self.counts["unchecked"] += 1
        return []

    def expect_help(self, argv, cmd):
        self.counts["checked"] += 1
        rc, out = self.run(argv + ["--help"], self.root)
        if rc != 0:
            return [Problem(cmd.path, cmd.line, f"`{' '.join(argv[1:])} --help` exits {rc}, expected 0",
                            "\n".join(out[-5:]))]
        return []

    def check_preset(self, cmd, tokens):
        preset = None
        for i, t in enumerate(tokens):
            if t == "--preset" and i + 1 < len(tokens):
                preset = tokens[i + 1]
            elif t.startswith("--preset="):
                preset = t.split("=", 1)[1]
        if preset is None:
            self.counts["unchecked"] += 1
            return []
        self.counts["checked"] += 1
        kind = ("testPresets" if tokens[0] == "ctest" else "workflowPresets" if "--workflow" in tokens
                else "buildPresets" if "--build" in tokens else "configurePresets")
        if preset not in self.presets.get(kind, set()):
            return [Problem(cmd.path, cmd.line, f"no {kind[:-7]} preset {preset!r} in CMakePresets.json",
                            f"its {kind}: {', '.join(sorted(self.presets.get(kind, [])))}")]
        return []

    # --- a block
    @staticmethod
    def guard_writes(tokens, cwd):
        """The output paths of a command that would land outside its scratch folder (in the repository, through
        the folder's links)."""
        home = os.path.realpath(cwd) + os.sep
        return [tokens[i + 1] for i, t in enumerate(tokens[:-1])
                if t in WRITE_FLAGS and not os.path.realpath(os.path.join(cwd, tokens[i + 1])).startswith(home)]

    def run_block(self, block):
        """Every command of the block, in order, in one scratch folder; then its pasted output, if marked real."""
        output_block = bool(block.directives.get("output") or block.directives.get("excerpt"))
        run = {"cwd": None, "transcript": [], "last_output": []}
        problems = []
        try:
            for cmd in block.commands:
                cmd.path = block.path
                d = dict(block.directives, **cmd.directives)
                parts = split_and(tokenize(cmd.text))
                if not parts:
                    continue
                head = parts[0][0]
                if head == "build/default/flashsim-gpu":
                    problems += self.gpu_command(cmd, d)
                elif len(parts) > 1 or head not in FLASHSIM_NAMES and not (head == "python3" and output_block):
                    for p in parts:  # checked, not run
                        problems += self.check_synopsis(cmd, p) if p[0] in FLASHSIM_NAMES else self.check_other(cmd, p)
                elif "skip" in d:
                    self.skip(cmd, d["skip"])
                    problems += self.check_synopsis(cmd, parts[0])
                elif d.get("synopsis"):
                    self.counts["synopsis"] += 1
                    problems += self.check_synopsis(cmd, parts[0])
                else:
                    problems += self.run_command(block, cmd, parts[0], d, run)
            if output_block and self.compare_outputs and block.dollar and run["transcript"]:
                problems += self.compare(block, run["transcript"])
        finally:
            if run["cwd"]:
                shutil.rmtree(run["cwd"], ignore_errors=True)
        return problems

    def gpu_command(self, cmd, d):
        if "skip" in d:
            self.skip(cmd, d["skip"])
            return []
        return [Problem(cmd.path, cmd.line, "flashsim-gpu runs CUDA kernels: mark it <!-- doc-test: skip REASON -->")]

    def run_command(self, block, cmd, tokens, d, run):
        """Runs one flashsim (or, in an output block, python3) command in the block's folder."""
        holes = placeholders(tokens)
        if holes:
            return [Problem(block.path, cmd.line, f"cannot run: placeholder {holes[0]!r}",
                            "mark the block <!-- doc-test: synopsis --> (checks the subcommand and its flags), or "
                            "make the command runnable")]
        problems = []
        if run["cwd"] is None:
            run["cwd"] = self.sandbox()
            if "setup" in block.directives:
                problems += self.setup(block, run["cwd"])
        if block.dollar and cmd.shown[0] in run["last_output"]:
            return problems  # printed by the previous command: its output, not a command of its own
        bad = self.guard_writes(tokens, run["cwd"])
        if bad:
            return problems + [Problem(block.path, cmd.line, f"would write outside its scratch folder: {bad[0]}")]
        self.counts["run"] += 1
        rc, out = self.run([self.flashsim if tokens[0] in FLASHSIM_NAMES else self.python] + tokens[1:], run["cwd"])
        want = d.get("exit", 0)
        if rc != want:
            problems.append(Problem(block.path, cmd.line, f"exit code {rc}, expected {want}: {cmd.text}",
                                    "\n".join(["output (last lines):"] + out[-8:])))
        run["transcript"] += [line.rstrip() for line in cmd.shown] + out
        run["last_output"] = out
        return problems

    def setup(self, block, cwd):
        tokens = tokenize(block.directives["setup"])
        if not tokens or tokens[0] not in FLASHSIM_NAMES:
            return [Problem(block.path, block.line - 1, "doc-test setup: a flashsim command expected")]
        rc, out = self.run([self.flashsim] + tokens[1:], cwd)
        if rc != 0:
            return [Problem(block.path, block.line - 1, f"doc-test setup exits {rc}", "\n".join(out[-5:]))]
        return []

    def skip(self, cmd, reason):
        self.counts["skipped"] += 1
        self.skips.append(f"{cmd.path}:{cmd.line}: {cmd.text[:70]} -- {reason}")

    def compare(self, block, actual):
        self.counts["outputs"] += 1
        expected = [line.rstrip() for line in block.lines]
        while expected and not expected[-1]:
            expected.pop()
        pattern = ["..."] + expected + ["..."] if block.directives.get("excerpt") else expected
        if matches(pattern, actual, block.directives.get("volatile")):
            return []
        where = f"{block.path}:{block.line}"
        return [Problem(block.path, block.line, "pasted output differs from the current build's",
                        short_diff(pattern, actual, where))]


# --------------------------------------------------------------------------------------------- the repository

def markdown_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard",
                              "*.md"], check=True, capture_output=True).stdout
        files = [f for f in out.decode("utf-8", "surrogateescape").split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in (".git", "build") and not x.startswith(".")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith(".md")]
    return sorted(f.replace(os.sep, "/") for f in files if os.path.isfile(os.path.join(root, f)))


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


def check_repository(root, flashsim, compare_outputs):
    root = os.path.realpath(root)
    files = markdown_files(root)
    anchor_cache = {}

    def anchors_of(path):
        if path not in anchor_cache:
            try:
                text = read(root, path)
                anchor_cache[path] = anchors(parse_markdown(text), text)
            except OSError:
                anchor_cache[path] = set()
        return anchor_cache[path]

    problems = []
    for path in files:
        problems += check_rendering(path, read(root, path), root, anchors_of)
    runner = Runner(root, flashsim, compare_outputs)
    for path in filter(COMMAND_DOCS.match, files):
        blocks = collect_blocks(path, read(root, path))
        if path == "README.md":
            for text in apply_readme_directives(blocks, README_DIRECTIVES):
                problems.append(Problem(path, 1, f"README_DIRECTIVES names a command README.md no longer shows: "
                                                 f"{text}"))
        for block in blocks:
            problems += runner.run_block(block)
    return problems, runner, len(files)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", help="the repository")
    ap.add_argument("--flashsim", help="the flashsim binary under test")
    ap.add_argument("--no-outputs", action="store_true",
                    help="run the commands but do not compare pasted outputs (builds other than Release: their "
                         "floating-point results may differ in the last digits)")
    ap.add_argument("--self-test", action="store_true", help="check the checks on broken and good snippets")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.root or not args.flashsim:
        ap.error("--root and --flashsim are required (or --self-test)")
    if not os.access(args.flashsim, os.X_OK):
        print(f"docs_test.py: error: no flashsim binary at {args.flashsim}", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    problems, runner, nfiles = check_repository(args.root, args.flashsim, not args.no_outputs)
    c = runner.counts
    for s in runner.skips:
        print(f"skipped {s}")
    print(f"docs: {nfiles} Markdown files rendered; commands: {c['run']} run, {c['synopsis']} synopsis, "
          f"{c['skipped']} skipped, {c['checked']} checked (scripts, presets), {c['unchecked']} not checkable; "
          f"{c['outputs']} pasted outputs compared{' (outputs not compared)' if args.no_outputs else ''}; "
          f"{time.monotonic() - t0:.1f} s")
    if problems:
        print(f"\n{len(problems)} problem(s):")
        for p in problems:
            print(p)
        return 1
    print("all documentation checks passed")
    return 0


# --------------------------------------------------------------------------------------------- self-test

def self_test():
    """The checks on snippets: broken Markdown must be reported, good Markdown must not."""
    failures = []

    def expect(name, cond):
        if not cond:
            failures.append(name)

    def rendered(text, root=None):
        return [p.what for p in check_rendering("t.md", text, root)]

    # docs/cli.md once: text after the hw list block's closing fence, which swallowed the text and the next fence
    cli_322 = ("```\n$ build/default/flashsim hw list\n  profile  SMs\n...\n"
               "``` `hw show NAME|FILE.json`: one profile as JSON. The fields are described in\n"
               "[simulator.md](simulator.md#hardware-profiles).\n\n## flashsim sim predict\n\n"
               "```sh\nflashsim sim predict\n```\n")
    r = check_rendering("t.md", cli_322)
    expect("cli.md:322: text after a closing fence", any("does not close" in p.what and p.line == 5 for p in r))
    expect("a fence opened where one should close", rendered("```sh\na\n```sh\nb\n```\n"))
    expect("an unclosed fence at end of file", any("never closed" in w for w in rendered("text\n\n```\na\nb\n")))
    expect("an unclosed fence, nothing after", any("never closed" in w for w in rendered("```")))
    expect("a fence closed by an indented ``` in a list is fine",
           not rendered("- item\n\n  ```sh\n  a\n  ```\n\nafter\n"))
    expect("a longer fence holding ``` is fine", not rendered("````md\n```sh\nx\n```\n````\n"))
    expect("~~~ holding ``` is fine", not rendered("~~~\n```\n~~~\n"))
    expect("good fences", not rendered("# T\n\n```sh\na\n```\n\ntext `code`\n\n~~~\nb\n~~~\n"))
    expect("a table row with an extra cell",
           any("3 cells, its header 2" in w for w in rendered("| a | b |\n|---|---|\n| 1 | 2 | 3 |\n")))
    expect("a table row with a missing cell",
           any("1 cells, its header 2" in w for w in rendered("| a | b |\n|---|---|\n| 1 |\n")))
    expect("a table without its delimiter row",
           any("not a table" in w for w in rendered("| a | b |\n| 1 | 2 |\n")))
    expect("a table with escaped pipes is fine",
           not rendered("| flag | x |\n|---|---|\n| `--dtype fp64\\|fp32` | y |\n"))
    expect("an unclosed code span", any("backtick" in w for w in rendered("the `flag is open\n")))
    expect("a marker before text", any("not directly before" in w
                                       for w in rendered("<!-- doc-test: output -->\ntext\n")))
    expect("an unknown directive", any("unknown doc-test directive" in w
                                       for w in rendered("<!-- doc-test: outptu -->\n```\n$ a\n```\n")))
    expect("a marker mentioned in text is not one", not rendered("Mark it `<!-- doc-test: output -->`.\n"))
    expect("a good marker", not rendered("text:\n<!-- doc-test: output; exit 2 -->\n```\n$ a\n```\n"))
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "docs"))
        with open(os.path.join(d, "docs", "a.md"), "w") as f:
            f.write("# Exit codes\n")
        expect("a link to a missing file", any("missing file" in w for w in rendered("[x](docs/nope.md)\n", d)))
        expect("a link to a missing anchor", any("missing anchor" in w
                                                 for w in rendered("[x](docs/a.md#exit-code)\n", d)))

        def anchors_of(p):
            text = read(d, p)
            return anchors(parse_markdown(text), text)
        expect("a good link", not check_rendering("t.md", "[x](docs/a.md#exit-codes) [w](https://e.org/x)\n", d,
                                                  anchors_of))
    expect("github slugs", github_slug("GPU work: `bench/gpu/run.py` on the H100") ==
           "gpu-work-benchgpurunpy-on-the-h100" and github_slug("The field's kernels") == "the-fields-kernels")

    # commands
    doc = ("```sh\nbuild/default/flashsim ref --seqlen 300 \\\n    --causal   # a comment\n# only a comment\n"
           "scripts/install-deps.sh && cmake --workflow --preset demo\n.venv/bin/python -m pytest\n```\n\n"
           "<!-- doc-test: output; exit 2 -->\n```\n$ flashsim sim predict --seqeln 10\nflashsim: error: x\n"
           "$ flashsim hw list\n  profile\n```\n\n<!-- doc-test: synopsis -->\n```\n"
           "flashsim sim tune [--kernel K] [--hw PROFILE]\n                  [--json] [--top N]\n```\n\n"
           "```python\nflashsim.attention(q)\n```\n")
    blocks = collect_blocks("t.md", doc)
    texts = [[c.text for c in b.commands] for b in blocks]
    expect("sh block commands", texts[0] == ["build/default/flashsim ref --seqlen 300 --causal",
                                             "scripts/install-deps.sh && cmake --workflow --preset demo"])
    expect("command lines", [c.line for c in blocks[0].commands] == [2, 5] and blocks[1].commands[1].line == 13)
    expect("transcript commands", texts[1] == ["flashsim sim predict --seqeln 10", "flashsim hw list"]
           and blocks[1].dollar and blocks[1].directives == {"output": True, "exit": 2})
    expect("synopsis continuation", texts[2] == ["flashsim sim tune [--kernel K] [--hw PROFILE] [--json] [--top N]"])
    expect("python blocks hold no commands", texts[3] == [])
    expect("a layout tree is not commands", collect_blocks("t.md", "```\nscripts/   helpers\ncmake/  modules\n"
                                                                   "```\n")[0].commands == [])
    expect("no-commands", collect_blocks("t.md", "<!-- doc-test: no-commands -->\n```\nflashsim (cli/) -> app\n"
                                                 "```\n")[0].commands == [])
    expect("comments", strip_comment("a 'x # y' b # c") == "a 'x # y' b" and strip_comment("a#b") == "a#b")
    expect("&&", split_and(tokenize("a b && c")) == [["a", "b"], ["c"]])
    expect("placeholders", placeholders(tokenize("flashsim golden generate --out long.$I --hw PROFILE [--x]")) ==
           ["long.$I", "PROFILE", "[--x]"] and not placeholders(tokenize("flashsim sim predict --hw H100-SXM5-80GB")))
    expect("directives", parse_directives(" skip needs an H100; exit 1 ") == ({"skip": "needs an H100", "exit": 1},
                                                                               []))
    readme = collect_blocks("README.md", "```\n$ flashsim hw list\nx\n```\n")
    unused = apply_readme_directives(readme, {"flashsim hw list": "output", "flashsim gone": "synopsis"})
    expect("README table", readme[0].directives == {"output": True} and list(unused) == ["flashsim gone"])

    # outputs
    expect("exact", matches(["a", "b"], ["a", "b"]) and not matches(["a", "b"], ["a", "c"]))
    expect("ellipsis", matches(["a", "...", "z"], ["a", "b", "c", "z"]) and matches(["a", "...", "z"], ["a", "z"]))
    expect("indented ellipsis", matches(["a", "  ...", "x", "...", "z"], ["a", "1", "x", "2", "z"]))
    expect("ellipsis order", not matches(["a", "...", "y", "...", "x", "...", "z"], ["a", "x", "y", "z"]))
    expect("ellipsis end", not matches(["a", "...", "z"], ["a", "b", "z", "extra"]))
    expect("excerpt", matches(["...", "b", "...", "d", "..."], ["a", "b", "c", "d", "e"]))
    expect("volatile", matches(["a", "  host 2 x", "z"], ["a", "host 16 y", "z"], "host")
           and not matches(["a", "host 2", "z"], ["a", "hostile", "z"], "host"))
    expect("diff filler", fill_ellipses(["a", "...", "z", "y2"], ["a", "b", "c", "z", "y"]) ==
           ["a", "b", "c", "z", "y2"])
    expect("terminal", terminal_lines(b"bar 1\rbar 2  \nok\n\n") == ["bar 2", "ok"])

    if failures:
        print("self-test FAILED: " + "; ".join(failures))
        return 1
    print("self-test: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
