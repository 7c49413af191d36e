"""test_manpages.py -- the manual pages say what the programs do: every
setting of lib/config.c's table documented once, in ptyd.conf(5), with
the programs that read it and its default; every option of each program
in its own page; no page naming a setting or option that does not exist.

The settings come from the one table in lib/config.c (and its aliases);
each program's own options, and every option word a program knows, from
its --help (built binaries, as the rest of the suite uses).  The pages are
read as mdoc source (man/*.in): each check names the page and the key or
option that disagree.  No processes but three --help runs; nothing is
written.
"""

import os
import re
import subprocess

import pytest

from ptyd_stack import BUILDDIR, REPO

MAN = os.path.join(REPO, "man")
CONFIG_C = os.path.join(REPO, "lib", "config.c")
LETTER = {"D": "d", "F": "f", "C": "c", "P": "p"}


def _binary(*candidates):
    for rel in candidates:
        p = os.path.join(BUILDDIR, rel)
        if os.path.exists(p):
            return p
    return os.path.join(BUILDDIR, candidates[0])


# program -> (its binary, its page, the letter ptyd.conf(5) marks it with)
PROGRAMS = {
    "ptyd": (_binary("ptyd/ptyd"), "ptyd.8.in", "d"),
    "ptyd.fcgi": (_binary("fcgi/ptyd.fcgi"), "ptyd.fcgi.8.in", "f"),
    "ptydctl": (_binary("ptydctl/ptydctl"), "ptydctl.1.in", "c"),
    # Its keys are read from pool files only, never options (no letter
    # rule): its --help has no Settings part.
    "ptyd-pool": (_binary("pool/ptyd-pool"), "ptyd-pool.8.in", "p"),
}


def page(name):
    with open(os.path.join(MAN, name)) as f:
        return f.read()


# ---- lib/config.c ---------------------------------------------------------

def config_table(text=None):
    """{key: (set of program letters, default or None)} from config_defs."""
    if text is None:
        with open(CONFIG_C) as f:
            text = f.read()
    start = "config_defs[CONFIG_NKEYS] = {"
    body = text[text.index(start) + len(start):]
    body = body[:body.index("\n};")]
    keys = {}
    for m in re.finditer(r'\[CONFIG_\w+\]\s*=\s*\{\s*"(\w+)",\s*T_\w+,\s*'
                         r'[^,]+,\s*([^,]+),\s*(NULL|"(?:[^"\\]|\\.)*")',
                         body):
        progs = {LETTER[p.strip()] for p in m.group(2).split("|")}
        default = None if m.group(3) == "NULL" else m.group(3)[1:-1]
        keys[m.group(1)] = (progs, default)
    # Every row was read: one per [CONFIG_...] initializer.
    assert len(keys) == len(re.findall(r"\[CONFIG_\w+\]\s*=", body)), keys
    return keys


def config_aliases():
    """{alias option name: set of program letters} from config_aliases."""
    with open(CONFIG_C) as f:
        text = f.read()
    body = text[text.index("} config_aliases[] = {"):]
    body = body[:body.index("\n};")]
    return {m.group(1): {LETTER[m.group(2)]}
            for m in re.finditer(r'\{\s*"([\w-]+)",\s*[^,]+,\s*([DFC]),',
                                 body)}


# ---- --help -----------------------------------------------------------------

def help_text(program):
    binary = PROGRAMS[program][0]
    r = subprocess.run([binary, "--help"], capture_output=True, timeout=30,
                       stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, (program, r.stderr)
    return r.stdout.decode()


def own_options(program):
    """{long name: short letter or None}: the program's options that are
    not settings, from --help (before "Settings"), and its aliases."""
    text = help_text(program)
    if "\nSettings" not in text:       # ptyd-pool: every option its own
        opts = {}
        for line in re.findall(r"^\s+-.*$", text, re.M):
            short = re.match(r"\s+-(\w),", line)
            for long in re.findall(r"--([\w-]+)", line):
                opts[long] = short.group(1) if short else None
        return opts
    own = text[text.index("Options:"):text.index("\nSettings")]
    opts = {}
    for m in re.finditer(r"^\s+(?:-(\w), )?--([\w-]+)", own, re.M):
        opts[m.group(2)] = m.group(1)
    settings = text[text.index("\nSettings"):]
    keys = {k.replace("_", "-") for k in config_table()}
    for m in re.finditer(r"^\s+(?:-(\w), )?--([\w-]+)", settings, re.M):
        if m.group(2) not in keys:
            opts[m.group(2)] = m.group(1)
    return opts


def known_words():
    """Every --word any program's --help names (options of commands too)."""
    words = set()
    for program in PROGRAMS:
        words |= set(re.findall(r"--([\w-]+)", help_text(program)))
    return words


# ---- mdoc -------------------------------------------------------------------

def section(text, name):
    m = re.search(r"^\.Sh %s\n(.*?)(?=^\.Sh |\Z)" % re.escape(name), text,
                  re.M | re.S)
    assert m, name
    return m.group(1)


def key_entries(text):
    """{key: (set of program letters, entry text)} from ptyd.conf(5)'s
    KEYS: each `.It Cm key No (d f c)` up to the next item or list end."""
    keys = {}
    body = section(text, "KEYS")
    items = re.split(r"^(?=\.It |\.El\b|\.Ss )", body, flags=re.M)
    for item in items:
        if not item.startswith(".It "):
            continue
        tag, _, rest = item.partition("\n")
        m = re.match(r"\.It Cm (\w+) No \(([dfcp ]+)\)( \[list\])?$", tag)
        assert m, "ptyd.conf(5): a key's tag must be "\
            "'.It Cm key No (programs)': %r" % tag
        assert m.group(1) not in keys, "ptyd.conf(5): %s twice" % m.group(1)
        keys[m.group(1)] = (set(m.group(2).split()), rest)
    return keys


MACRO = re.compile(r"\b(?:Cm|No|Li|Ql|Pq|Po|Pc|Ns|Pa|Xr|Ev|Dq|Sq|Qq|Ar|Fl|"
                   r"Em|Sx|Op|Oo|Oc|Dl|Nm|Dv)\b")


def plain(mdoc):
    """Roughly the words of some mdoc, for finding a default in them."""
    out = []
    for line in mdoc.splitlines():
        if line.startswith(".\\\""):
            continue
        out.append(MACRO.sub(" ", line.lstrip(".")))
    return re.sub(r"\s+", " ", " ".join(out))


def states_default(entry, default):
    text = plain(entry)
    v = re.escape(default)
    return re.search(r"\b[Dd]efault:?\s+%s(?![\w])" % v, text) or \
        re.search(r"(?<![\w])%s\s*\(the default" % v, text)


def option_items(text):
    """The `.It` tags of the list that documents --help: a program's own
    options."""
    for lst in re.findall(r"^\.Bl .*?^\.El$", text, re.M | re.S):
        tags = re.findall(r"^\.It (.*)$", lst, re.M)
        if any(re.search(r"Fl Fl help\b", t) for t in tags):
            return tags
    raise AssertionError("no list of options with --help")


# ---- the checks ---------------------------------------------------------------

def test_every_setting_once_in_ptyd_conf_5():
    table = config_table()
    documented = key_entries(page("ptyd.conf.5.in"))
    missing = sorted(set(table) - set(documented))
    unknown = sorted(set(documented) - set(table))
    assert not missing, "ptyd.conf(5) does not document: %s" % missing
    assert not unknown, "ptyd.conf(5) documents settings lib/config.c "\
        "does not have: %s" % unknown
    for key, (progs, _) in table.items():
        assert documented[key][0] == progs, \
            "ptyd.conf(5) says %s is read by %s; lib/config.c: %s" % (
                key, sorted(documented[key][0]), sorted(progs))


def test_ptyd_conf_5_states_each_default():
    documented = key_entries(page("ptyd.conf.5.in"))
    for key, (_, default) in config_table().items():
        if default is None:
            continue            # derived or none: said in words
        assert states_default(documented[key][1], default), \
            "ptyd.conf(5), %s: no 'default %s'" % (key, default)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_each_own_option_in_its_page(program):
    """Every option of the program that is not a setting is an item of
    its page's option list, with its short letter; the list holds no
    setting (those are ptyd.conf(5)'s) and nothing the program lacks."""
    name = PROGRAMS[program][1]
    tags = option_items(page(name))
    own = own_options(program)
    tagged = {}
    for t in tags:
        longs = re.findall(r"Fl Fl ([\w-]+)", t)
        shorts = re.findall(r"Fl (\w)\b(?! Fl)", re.sub(r"Fl Fl [\w-]+", "",
                                                        t))
        for lo in longs:
            tagged[lo] = shorts
    for opt, short in own.items():
        assert opt in tagged, "%s: no item for --%s" % (name, opt)
        if short:
            assert short in tagged[opt], \
                "%s: --%s's item lacks -%s" % (name, opt, short)
    keys = {k.replace("_", "-") for k in config_table()}
    for opt in tagged:
        # ptyd-pool takes no setting as an option: its --ptyd is a path
        # of its own, not ptyd.fcgi's setting of that name.
        assert program == "ptyd-pool" or opt not in keys, \
            "%s documents the setting --%s, whose home is ptyd.conf(5)" % (
                name, opt)
        assert opt in own, "%s documents --%s, which %s does not have" % (
            name, opt, program)


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(MAN)
                                        if f.endswith(".in")))
def test_no_page_names_what_does_not_exist(name):
    """Every --option a page names is known to one of the programs, and
    every PTYD_ variable is a setting (or PTYD_CONFIG)."""
    text = page(name)
    words = known_words()
    for opt in sorted(set(re.findall(r"Fl Fl ([a-z][\w-]*)", text))):
        assert opt in words, "%s names --%s, which no program has" % (
            name, opt)
    keys = set(config_table())
    for var in sorted(set(re.findall(r"Ev (PTYD_[A-Z_]+)", text))):
        if var == "PTYD_":
            continue            # PTYD_ Ns Ar KEY: the pattern itself
        assert var == "PTYD_CONFIG" or var[5:].lower() in keys, \
            "%s names %s, which is no setting" % (name, var)


def test_program_pages_name_their_letter():
    """Each program's page sends its reader to the keys marked with its
    letter, the rule the option lists rely on."""
    for program, (_, name, letter) in PROGRAMS.items():
        if program == "ptyd-pool":
            continue            # its keys are no options
        assert re.search(r"marked %s there is also an option" % letter,
                         page(name)), name


def test_config_table_reader_sees_every_row():
    """The reader of lib/config.c fails loudly on a row it cannot parse,
    so a new kind of row cannot slip past the checks above."""
    with open(CONFIG_C) as f:
        text = f.read()
    broken = text.replace('[CONFIG_LINGER] = { "linger", T_SECONDS',
                          '[CONFIG_LINGER] = { linger, T_SECONDS')
    assert broken != text
    with pytest.raises(AssertionError):
        config_table(broken)
