"""``python -m nrtpy compat install|status|uninstall``.

``install`` writes nrtpy's compat layer into an environment: the ``spike``,
``neuronxcc`` and ``nki`` packages of :data:`nrtpy.compat.SHIMS` and
:data:`nrtpy.compat.ALIASES` (three-line modules that take their names
from nrtpy), a ``neuronx-cc`` script that runs
``nrtpy-cc``, the metadata of a ``neuronx-cc`` distribution (version
:data:`NEURONX_CC_VERSION`, so that pip takes nkipy's requirement
``neuronx-cc!=1.*,<3.0`` as met), and an ``nrtpy_compat-<version>.dist-info``
folder whose RECORD lists every file written, so that ``uninstall`` (or
``pip uninstall nrtpy-compat``) removes exactly those.

Where: the running interpreter's site-packages (``sysconfig``'s purelib)
and scripts folder; ``--prefix P`` for the install scheme under ``P``;
``--target T`` for ``T`` itself with the script in ``T/bin`` (as ``pip
install --target`` does).

Never over someone else's: ``install`` refuses, and changes nothing, when a
``spike``, ``neuronxcc`` or ``nki`` package or a ``neuronx-cc`` distribution that is
not nrtpy's is in the destination or on the interpreter's ``sys.path`` (the
current directory excepted), or a ``neuronx-cc`` script that is not nrtpy's
is in the scripts folder or on ``PATH``; with ``--keep-real`` it leaves
those parts out and installs the others beside them (a real Spike built
against nrtpy's libnrt, with nrtpy's ``neuronx-cc``).  A file is nrtpy's
when a RECORD of ours lists it with the same hash; ``uninstall`` leaves any
file that changed since.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import importlib.util
import io
import os
import re
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from importlib.machinery import PathFinder
from importlib.metadata import PathDistribution
from pathlib import Path
from typing import Sequence

from nrtpy.compat import ALIASES, MODULES, PACKAGES, is_package

PROG = "python -m nrtpy compat"
DIST = "nrtpy_compat"  # the distribution "nrtpy-compat", as folder names write it
SCRIPT = "neuronx-cc"
# In the script: how a neuronx-cc found on PATH is known to be ours.
SCRIPT_MARK = "# nrtpy compat layer: neuronx-cc runs nrtpy-cc"
# The distribution that nkipy requires as "neuronx-cc>=0.0,!=1.*,<3.0".  Its
# version meets that: the local label "+nrtpy" is ignored by specifiers
# without one (PEP 440), and 2.0.0 is below every real 2.x release, so that
# an explicit upgrade from AWS's index replaces it.
REQUIRED_DIST = "neuronx-cc"
NEURONX_CC_VERSION = "2.0.0+nrtpy"


@dataclass(frozen=True)
class Location:
    """Where the layer goes: packages into ``site``, the script into
    ``scripts``."""

    site: Path
    scripts: Path


def location(prefix: str | None = None, target: str | None = None) -> Location:
    """The running interpreter's environment, an install prefix, or a target
    folder (its scripts in ``bin/``)."""
    if target is not None:
        site = Path(target).absolute()
        return Location(site, site / "bin")
    if prefix is not None:
        base = str(Path(prefix).absolute())
        scheme = sysconfig.get_preferred_scheme("prefix")
        paths = sysconfig.get_paths(scheme, vars={"base": base, "platbase": base})
    else:
        paths = sysconfig.get_paths()
    return Location(Path(paths["purelib"]), Path(paths["scripts"]))


# -- what the layer writes ------------------------------------------------
def _module_path(module: str) -> str:
    """The file of a compat module, relative to site-packages: a module that
    prefixes another is a package."""
    parts = module.split(".")
    if is_package(module):
        return "/".join(parts) + "/__init__.py"
    return "/".join(parts) + ".py"


def _module_text(module: str) -> str:
    if module in ALIASES:
        return (f'"""{module}, from nrtpy\'s compat layer: {ALIASES[module]} '
                f'under this name (nrtpy.compat.ALIASES)."""\n'
                f"# Written by `{PROG} install`; `{PROG} uninstall` removes it.\n"
                f"from nrtpy.compat import alias as _alias\n\n"
                f"__all__ = _alias({module!r}, globals())\n")
    return (f'"""{module}, from nrtpy\'s compat layer: names mapped onto nrtpy '
            f'(nrtpy.compat.SHIMS)."""\n'
            f"# Written by `{PROG} install`; `{PROG} uninstall` removes it.\n"
            f"from nrtpy.compat import export as _export\n\n"
            f"__all__ = _export({module!r}, globals())\n")


def _script_text() -> str:
    return (f"#!{sys.executable}\n"
            f"{SCRIPT_MARK} (`{PROG} uninstall` removes it).\n"
            f"import sys\n\n"
            f"from nrtpy.cc import main\n\n"
            f"sys.exit(main())\n")


def _dist_info() -> str:
    from nrtpy import __version__

    return f"{DIST}-{__version__}.dist-info"


def _metadata() -> str:
    from nrtpy import __version__

    return ("Metadata-Version: 2.1\n"
            "Name: nrtpy-compat\n"
            f"Version: {__version__}\n"
            "Summary: spike and neuronxcc names over nrtpy "
            f"(written by `{PROG} install`)\n")


def _normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _required_dist_info() -> str:
    return f"{_normalize(REQUIRED_DIST).replace('-', '_')}-{NEURONX_CC_VERSION}.dist-info"


def _required_dist_files(site: Path) -> dict[Path, tuple[bytes, int]]:
    """The neuronx-cc distribution's metadata, with a RECORD of its own that
    lists only these files: ``pip uninstall neuronx-cc`` (as pip does before
    installing the real one) removes just them."""
    info = site / _required_dist_info()
    files = {
        info / "METADATA": ((
            "Metadata-Version: 2.1\n"
            f"Name: {REQUIRED_DIST}\n"
            f"Version: {NEURONX_CC_VERSION}\n"
            "Summary: neuronx-cc's name for nrtpy-cc, not AWS's compiler "
            f"(written by `{PROG} install`)\n").encode(), 0o644),
        info / "INSTALLER": (b"nrtpy\n", 0o644),
    }
    rows = io.StringIO()
    out = csv.writer(rows, lineterminator="\n")
    for path, (data, _) in files.items():
        out.writerow([os.path.relpath(path, site), _digest(data), len(data)])
    out.writerow([os.path.relpath(info / "RECORD", site), "", ""])
    files[info / "RECORD"] = (rows.getvalue().encode(), 0o644)
    return files


def _files(loc: Location, keep: frozenset[str] = frozenset()
           ) -> dict[Path, tuple[bytes, int]]:
    """Every file of the layer but our RECORD: path -> (contents, mode),
    without the parts in ``keep`` (package names, REQUIRED_DIST, SCRIPT:
    someone else's, left as they are)."""
    files = {loc.site / _module_path(m): (_module_text(m).encode(), 0o644)
             for m in MODULES if m.split(".")[0] not in keep}
    if SCRIPT not in keep:
        files[loc.scripts / SCRIPT] = (_script_text().encode(), 0o755)
    if REQUIRED_DIST not in keep:
        files.update(_required_dist_files(loc.site))
    info = loc.site / _dist_info()
    files[info / "METADATA"] = (_metadata().encode(), 0o644)
    files[info / "INSTALLER"] = (b"nrtpy\n", 0o644)
    files[info / "top_level.txt"] = ("".join(f"{p}\n" for p in PACKAGES
                                             if p not in keep).encode(), 0o644)
    return files


def _digest(data: bytes) -> str:
    raw = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


# -- RECORD ----------------------------------------------------------------
def _record_path(site: Path) -> Path | None:
    """Our RECORD in ``site``, whatever nrtpy version wrote it."""
    found = sorted(site.glob(f"{DIST}-*.dist-info/RECORD"))
    return found[-1] if found else None


def _read_record(site: Path) -> dict[Path, str] | None:
    """Our RECORD in ``site`` as {absolute path: digest ('' for RECORD
    itself)}, or None when the layer is not installed there."""
    path = _record_path(site)
    if path is None:
        return None
    entries: dict[Path, str] = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            if row:
                entries[Path(os.path.normpath(site / row[0]))] = row[1] if len(row) > 1 else ""
    return entries


def _is_ours(path: Path, site: Path) -> bool:
    """Whether ``path`` (a file, or a package folder) was written by the
    layer and is unchanged: our RECORD in ``site`` lists it (a package by
    its ``__init__.py``) with its current hash."""
    record = _read_record(site)
    if record is None:
        return False
    file = path / "__init__.py" if path.is_dir() else path
    digest = record.get(Path(os.path.normpath(file)))
    try:
        return bool(digest) and _digest(file.read_bytes()) == digest
    except OSError:
        return False


# -- what is there ---------------------------------------------------------
def _search_path(loc: Location) -> list[str]:
    """The destination, then what the interpreter searches, but not the
    current directory (a source checkout holding a ``spike/`` folder is not
    an installed package)."""
    cwd = os.getcwd()
    entries = [str(loc.site)]
    for entry in sys.path:
        if entry and os.path.abspath(entry) != cwd and entry not in entries:
            entries.append(entry)
    return entries


def _spec_path(spec) -> Path | None:
    if spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    return Path(spec.origin) if spec.origin else None


def found_packages(loc: Location, name: str) -> list[Path]:
    """Where ``name`` is importable, in import order: the destination first,
    then the interpreter's path entries, then any other finder (an editable
    install's)."""
    places: list[Path] = []
    for entry in _search_path(loc):
        spec = PathFinder.find_spec(name, [entry])
        if spec is not None and (p := _spec_path(spec)) is not None and p not in places:
            places.append(p)
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and (p := _spec_path(spec)) is not None:
        if p != Path(os.getcwd()) / name and p not in places:
            places.append(p)
    return places


def found_distributions(loc: Location, name: str = REQUIRED_DIST) -> list[Path]:
    """The metadata folders (``.dist-info``, ``.egg-info``) of distribution
    ``name`` on the search path, in its order."""
    want = _normalize(name)
    places: list[Path] = []
    for entry in _search_path(loc):
        try:
            children = sorted(Path(entry).iterdir())
        except OSError:  # missing, or not a folder (a zip file)
            continue
        for child in children:
            if child.suffix not in (".dist-info", ".egg-info") or child in places:
                continue
            if not _normalize(child.name).startswith(want):  # before reading it
                continue
            metadata = PathDistribution(child).metadata
            found = metadata["Name"] if metadata is not None else None
            if found is not None and _normalize(found) == want:
                places.append(child)
    return places


def _distribution_is_ours(place: Path) -> bool:
    """A distribution's metadata folder is ours by its METADATA."""
    return _is_ours(place / "METADATA", place.parent)


def found_scripts(loc: Location) -> list[Path]:
    """``neuronx-cc`` in the destination's scripts folder, then on PATH."""
    places = []
    if (loc.scripts / SCRIPT).exists():
        places.append(loc.scripts / SCRIPT)
    on_path = shutil.which(SCRIPT)
    if on_path is not None and Path(on_path) not in places:
        places.append(Path(on_path))
    return places


def _script_is_ours(path: Path, loc: Location) -> bool:
    """The destination's script is ours by its RECORD; one elsewhere on PATH
    (another environment's) by the line the layer writes into it."""
    if path == loc.scripts / SCRIPT:
        return _is_ours(path, loc.site)
    try:
        with open(path, "rb") as f:
            return SCRIPT_MARK.encode() in f.read(4096)
    except OSError:
        return False


def conflicts_by_part(loc: Location) -> dict[str, list[str]]:
    """Per part of the layer (a package name, REQUIRED_DIST, SCRIPT), one
    line per package, distribution or script that is not nrtpy's and that
    the part would shadow or overwrite; parts without any are absent."""
    found: dict[str, list[str]] = {}
    for name in PACKAGES:
        for place in found_packages(loc, name):
            if not _is_ours(place, place.parent):
                found.setdefault(name, []).append(
                    f"a {name!r} that is not nrtpy's is installed at {place}")
    for place in found_distributions(loc):
        if not _distribution_is_ours(place):
            found.setdefault(REQUIRED_DIST, []).append(
                f"a {REQUIRED_DIST!r} distribution that is not nrtpy's is "
                f"installed at {place}")
    for place in found_scripts(loc):
        if not _script_is_ours(place, loc):
            found.setdefault(SCRIPT, []).append(
                f"a {SCRIPT!r} that is not nrtpy's is at {place}")
    return found


def conflicts(loc: Location) -> list[str]:
    """One line per package or script that is not nrtpy's and that the
    layer would shadow or overwrite."""
    return [line for lines in conflicts_by_part(loc).values() for line in lines]


# -- the commands ----------------------------------------------------------
def _remove_files(loc: Location, record: dict[Path, str]) -> list[Path]:
    """Remove what ``record`` lists (and the bytecode Python cached for it),
    then the folders left empty; return the files kept because they changed
    since they were written, or lie outside the site and scripts folders."""
    kept: list[Path] = []
    folders: set[Path] = set()
    roots = (Path(os.path.normpath(loc.site)), Path(os.path.normpath(loc.scripts)))
    # Folders left empty go, up to the site folder and the scripts folder's
    # parent (a target's or prefix's bin/ was made for the script).
    stops = (roots[0], roots[1].parent)
    for path, digest in record.items():
        if not any(path.is_relative_to(r) for r in roots):
            kept.append(path)
            continue
        if not path.exists():
            continue
        if digest and _digest(path.read_bytes()) != digest:
            kept.append(path)
            continue
        path.unlink()
        folders.add(path.parent)
        if path.suffix == ".py":
            cache = path.parent / "__pycache__"
            for pyc in cache.glob(f"{path.stem}.*.pyc"):
                pyc.unlink()
            folders.add(cache)
    # Deepest first; stop at the roots themselves.
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        while folder not in stops and any(folder.is_relative_to(r) for r in roots):
            try:
                folder.rmdir()
            except OSError:
                break  # not empty (or gone): its parents are not empty either
            folder = folder.parent
    return kept


def install(loc: Location, keep_real: bool = False) -> int:
    """Write the layer into ``loc``; 0, or 1 after a refusal or a failed
    write (nothing is left changed in either case).  With ``keep_real``,
    a part that someone else's package, distribution or script would be
    shadowed by is left out, and the rest installed (a real Spike built
    against nrtpy's libnrt, with nrtpy's neuronx-cc beside it)."""
    found = conflicts_by_part(loc)
    if found and not keep_real:
        for line in (line for lines in found.values() for line in lines):
            print(f"nrtpy compat: refusing to install: {line}", file=sys.stderr)
        print("nrtpy compat: nothing was changed; the real package is used as it is "
              "(uninstall it, use another environment, or --keep-real to install "
              "the other parts beside it)", file=sys.stderr)
        return 1
    for line in (line for lines in found.values() for line in lines):
        print(f"nrtpy compat: keeping the real one: {line}")
    previous = _read_record(loc.site)
    if previous is not None:  # ours: a reinstall replaces it
        _remove_files(loc, previous)
    files = _files(loc, frozenset(found))
    written: dict[Path, str] = {}
    try:
        for path, (data, mode) in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "xb") as f:
                written[path] = ""
                f.write(data)
            os.chmod(path, mode)
            written[path] = _digest(data)
        record = loc.site / _dist_info() / "RECORD"
        rows = io.StringIO()
        out = csv.writer(rows, lineterminator="\n")
        for path, (data, _) in files.items():
            out.writerow([os.path.relpath(path, loc.site), _digest(data), len(data)])
        out.writerow([os.path.relpath(record, loc.site), "", ""])
        with open(record, "x", encoding="utf-8") as f:
            written[record] = ""
            f.write(rows.getvalue())
    except OSError as e:
        _remove_files(loc, written)
        left = "nothing was changed" if previous is None else \
            "the layer installed before was removed"
        print(f"nrtpy compat: cannot install into {loc.site}: {e}; {left}", file=sys.stderr)
        return 1
    parts = [p for p in PACKAGES if p not in found]
    if REQUIRED_DIST not in found:
        parts.append(f"the {REQUIRED_DIST} {NEURONX_CC_VERSION} metadata")
    script = f" and {SCRIPT} into {loc.scripts}" if SCRIPT not in found else ""
    print(f"nrtpy compat: installed {', '.join(parts) or 'nothing'} into "
          f"{loc.site}{script}")
    if str(loc.site) not in map(os.path.abspath, filter(None, sys.path)):
        print(f"nrtpy compat: {loc.site} is not on this Python's path: add it to PYTHONPATH")
    if str(loc.scripts) not in map(os.path.abspath, os.environ.get("PATH", "").split(os.pathsep)):
        print(f"nrtpy compat: {loc.scripts} is not on PATH: add it, since tools run "
              f"{SCRIPT} from PATH")
    return 0


def uninstall(loc: Location) -> int:
    """Remove the layer from ``loc``; 0, or 1 when changed files were kept."""
    record = _read_record(loc.site)
    if record is None:
        print(f"nrtpy compat: not installed in {loc.site}; nothing to remove")
        return 0
    kept = _remove_files(loc, record)
    for path in kept:
        print(f"nrtpy compat: kept {path}: not as the layer wrote it", file=sys.stderr)
    print(f"nrtpy compat: uninstalled from {loc.site}")
    return 1 if kept else 0


def status(loc: Location) -> int:
    """Print what is installed and whose it is; 0."""
    record_path = _record_path(loc.site)
    if record_path is None:
        print(f"nrtpy compat layer: not installed in {loc.site}")
    else:
        print(f"nrtpy compat layer: installed in {loc.site} ({record_path.parent.name})")
    for name in PACKAGES:
        places = found_packages(loc, name)
        if not places:
            print(f"  {name:<11} absent")
        for place in places:
            whose = "nrtpy's" if _is_ours(place, place.parent) else "not nrtpy's"
            print(f"  {name:<11} {whose:<12} {place}")
    dists = found_distributions(loc)
    if not dists:
        print(f"  {REQUIRED_DIST:<11} absent (distribution)")
    for place in dists:
        whose = "nrtpy's" if _distribution_is_ours(place) else "not nrtpy's"
        print(f"  {REQUIRED_DIST:<11} {whose:<12} {place}")
    scripts = found_scripts(loc)
    if not scripts:
        print(f"  {SCRIPT:<11} absent")
    for place in scripts:
        whose = "nrtpy's" if _script_is_ours(place, loc) else "not nrtpy's"
        print(f"  {SCRIPT:<11} {whose:<12} {place}")
    return 0


COMMANDS = {"install": install, "status": status, "uninstall": uninstall}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m nrtpy compat COMMAND [--prefix P | --target T]``."""
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=list(COMMANDS))
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--prefix", help="the install scheme under this prefix")
    where.add_argument("--target", help="this folder (scripts in its bin/)")
    parser.add_argument("--keep-real", action="store_true",
                        help="install: leave out the parts a package, "
                             "distribution or script that is not nrtpy's already "
                             "provides, and install the rest beside it")
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    if args.keep_real and args.command != "install":
        parser.error("--keep-real is an option of install")
    try:
        loc = location(args.prefix, args.target)
        if args.command == "install":
            return install(loc, keep_real=args.keep_real)
        return COMMANDS[args.command](loc)
    except (OSError, UnicodeError, csv.Error) as e:  # an unreadable RECORD or folder
        print(f"nrtpy compat: {args.command} failed: {e}", file=sys.stderr)
        return 1

