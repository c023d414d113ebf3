"""The command line's words: the flag of a library parameter (:func:`flag_for`), a library
message said in flags (:func:`cli_words`), the flags each command has (:func:`command_flags`,
:func:`flag_homes`) and the words people type for a flag (:data:`SYNONYMS`). Used by the error
and warning lines of :mod:`dgp.cli` and by the commands that reword the library's hints."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping

__all__ = ["SYNONYMS", "cli_words", "command_flags", "flag_for", "flag_homes", "flags_of"]

#: words people type for a flag, and the flag dgp has for it
SYNONYMS = {"--temperature": "--tau", "--temp": "--tau", "--t": "--tau", "--dimension": "--dim",
            "--d": "--dim", "--epsilon": "--eps", "--label-temperature": "--label-tau",
            "--tau-y": "--label-tau", "--bandwidth": "--sigma", "--out-json": "--json"}

#: library parameter names whose flag is not ``--`` + the name with dashes
_FLAGS = {"W": "WEIGHTS", "log_weights": "WEIGHTS (--log-weights)", "labels": "LABELS",
          "Z": "--embeddings", "Zref": "--reference", "target": "MODULE:CALLABLE",
          "input": "the input", "tol": "--tolerance", "rtol": "--tol"}


def flag_for(param: str, flags: Mapping[str, str | None] | Iterable[str] = ()) -> str:
    """The command-line name of a library parameter (``label_tau`` -> ``--label-tau``). Where
    the running command (``flags`` as :func:`cli_words` takes them) has the parameter's own
    name as a flag but not its mapped one (``tol`` is ``--tol`` in ``classify``,
    ``--tolerance`` in ``supcon``), its own name."""
    head, sep, rest = param.partition("[")
    own = "--" + head.replace("_", "-")
    flag = _FLAGS.get(head, own)
    homes = flags if isinstance(flags, Mapping) else dict.fromkeys(flags)
    if own in homes and homes[own] is None and not (flag in homes and homes[flag] is None):
        flag = own
    return flag + sep + rest


#: library keywords whose command-line equivalent is not a flag of the same name (a keyword
#: that is neither here nor a flag of some command is left as it is)
_KEYWORD_FLAGS = {"log_weights": "--log-weights", "column": "--label-column"}
#: library keyword arguments that the command line has no flag for, and what to say instead
_KEYWORD_PHRASES = {
    "kind='continuous'": "--objective y-aware, euclid-euclid or x-clr",
    "key=...": "save it alone with numpy.save",
    "search=(lo, hi)": "--search LO:HI",
}
#: ``name=value`` in a library message: a keyword argument (``'text'``, ``...``, or a word or
#: number that does not continue as a range like ``dim=1:16``); not inside quotes or a flag
_KEYWORD = re.compile(
    r"(?<![\w'\"=-])([a-z][a-z_]*)=('[^']*'|\.\.\.|\([^()]*\)|[A-Za-z0-9_.<>-]+(?!:\d|[\w.]))"
)


def cli_words(text: str, flags: Mapping[str, str | None] | Iterable[str] = ()) -> str:
    """A library message in the words of the command line: every keyword argument it quotes
    (``dim=D``, ``want='min-dim'``, ``log_weights=...``, ``kind='continuous'``) becomes the flag
    that gives it (``--dim D``, ``--want min-dim``, ``--log-weights``) or, where the command
    line has none, what to do there instead. ``flags`` maps each flag of the command line
    (``--`` names) to ``None`` when the running command has it, or to a command that has it
    (then the hint names that command); a plain collection of flags means they are all the
    running command's. The one mapping of :func:`flag_for` decides a keyword's flag; a keyword
    without a flag anywhere is left as it is.

    >>> cli_words("give dim=D or want='min-dim' (got reduction='sum')", {"--dim", "--want",
    ...           "--reduction"})
    'give --dim D or --want min-dim (got --reduction sum)'
    >>> cli_words("pass log_weights=...", {"--tau": None, "--log-weights": "classify"})
    'pass `dgp classify --log-weights`'
    """
    homes = flags if isinstance(flags, Mapping) else dict.fromkeys(flags)

    def sub(m: re.Match[str]) -> str:
        name, value = m.group(1), m.group(2).strip("'")
        if m.group(0) in _KEYWORD_PHRASES:
            return _KEYWORD_PHRASES[m.group(0)]
        flag = _KEYWORD_FLAGS.get(name) or flag_for(name)
        if flag not in homes or value in ("None", "True", "False"):
            return m.group(0)
        said = flag if value == "..." else f"{flag} {value}"
        return said if homes[flag] is None else f"`dgp {homes[flag]} {said}`"

    return _KEYWORD.sub(sub, text)


def command_flags(args: argparse.Namespace) -> dict[str, str | None]:
    """The flags of the command line for :func:`cli_words`, from a parsed command line:
    ``None`` for the running command's own, else a command that has the flag."""
    return flag_homes(args.subcommands, args.command)


def flags_of(p: argparse.ArgumentParser) -> list[str]:
    """The ``--`` flags of one command's parser."""
    return [o for a in p._actions for o in a.option_strings if o.startswith("--")]


def flag_homes(sub: dict[str, argparse.ArgumentParser],
               command: str | None) -> dict[str, str | None]:
    """Every flag of the commands ``sub`` (name -> parser): ``None`` for those of ``command``
    (the running one), else the first command that has it."""
    homes: dict[str, str | None] = {}
    for name, p in sub.items():
        for flag in flags_of(p):
            homes.setdefault(flag, name)
    if command in sub:
        homes.update(dict.fromkeys(flags_of(sub[command])))
    return homes
