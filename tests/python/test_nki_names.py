"""docs/nki.md's table of NKI names says what nrtpy.nki does: each name
marked implemented is there, each other raises NotImplementedError naming
it, and the table lists every name of the SDK's modules once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nrtpy.nki import _names
from nrtpy.nki import isa as nisa
from nrtpy.nki import language as nl
from nrtpy.nki.legacy import isa as old_isa
from nrtpy.nki.legacy import language as old_nl

DOC = Path(__file__).resolve().parents[2] / "docs" / "nki.md"


def table(module: str) -> dict[str, str]:
    text = DOC.read_text()
    section = text.split(f"## `{module}`: ", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([A-Za-z0-9_]+)` \| (yes|no) \|", section, re.M)
    assert len(rows) == len({name for name, _ in rows})
    return dict(rows)


@pytest.mark.parametrize("public,module,names", [
    ("nki.language", nl, _names.LANGUAGE), ("nki.isa", nisa, _names.ISA)])
def test_table_matches_the_module(public, module, names):
    rows = table(public)
    assert sorted(rows) == sorted(names)
    for name, state in rows.items():
        if state == "yes":
            assert getattr(module, name) is not None
        else:
            with pytest.raises(NotImplementedError, match=re.escape(f"{public}.{name}")):
                getattr(module, name)
    done = sum(s == "yes" for s in rows.values())
    assert f"## `{public}`: {done} of {len(rows)} implemented" in DOC.read_text()


def test_the_older_namespace_forwards_the_same_names():
    assert old_nl.add is nl.add and old_nl.mgrid is nl.mgrid
    assert old_isa.engine is nisa.engine
    with pytest.raises(NotImplementedError, match="quantize_mx"):
        old_isa.quantize_mx
    with pytest.raises(AttributeError):
        old_nl.no_such_name
