"""src/nrtpy/_nrtpy.pyi describes exactly the public surface of nrtpy._nrtpy."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import nrtpy
from nrtpy import _nrtpy

STUB = Path(nrtpy.__file__).parent / "_nrtpy.pyi"


def public(names):
    return {n for n in names if not n.startswith("_")}


def parse_stub():
    """{name: set of member names or None for functions}, from the stub."""
    tree = ast.parse(STUB.read_text(), filename=str(STUB))
    out: dict[str, set[str] | None] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members: set[str] = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    members.update(t.id for t in item.targets if isinstance(t, ast.Name))
            out[node.name] = members
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = None
    return out


def stub_functions():
    tree = ast.parse(STUB.read_text())
    funcs = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            funcs[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    funcs[f"{node.name}.{item.name}"] = item
    return funcs


def test_stub_is_installed():
    assert STUB.is_file()
    assert (STUB.parent / "py.typed").is_file()


def test_module_names_match():
    stub = public(parse_stub())
    runtime = public(vars(_nrtpy))
    assert runtime - stub == set(), "in nrtpy._nrtpy but not in the stub"
    assert stub - runtime == set(), "in the stub but not in nrtpy._nrtpy"


@pytest.mark.parametrize("name", sorted(public(n for n, v in vars(_nrtpy).items() if isinstance(v, type))))
def test_class_members_match(name):
    stub = parse_stub()
    cls = getattr(_nrtpy, name)
    assert stub.get(name) is not None, f"{name} is not a class in the stub"
    stub_members = public(stub[name])
    runtime_members = public(vars(cls))
    assert runtime_members - stub_members == set(), f"{name}: missing from the stub"
    assert stub_members - runtime_members == set(), f"{name}: not in nrtpy._nrtpy"


def test_functions_are_functions_in_both():
    stub = parse_stub()
    for name, members in stub.items():
        if name.startswith("_"):
            continue
        obj = getattr(_nrtpy, name)
        assert (members is None) == (not isinstance(obj, type)), name


def test_property_kinds_match():
    """A stub @property is a data descriptor at run time, a stub method a
    callable, a @staticmethod/@classmethod likewise."""
    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
            continue
        cls = getattr(_nrtpy, node.name)
        for item in node.body:
            if not isinstance(item, ast.FunctionDef) or item.name.startswith("_"):
                continue
            decorators = {d.id for d in item.decorator_list if isinstance(d, ast.Name)}
            attr = inspect.getattr_static(cls, item.name)
            where = f"{node.name}.{item.name}"
            if "property" in decorators:
                assert inspect.isdatadescriptor(attr), where
            elif "staticmethod" in decorators:
                assert isinstance(attr, staticmethod) or inspect.isbuiltin(
                    getattr(cls, item.name)
                ), where
                assert callable(getattr(cls, item.name)), where
            elif "classmethod" in decorators:
                bound = getattr(cls, item.name)
                assert getattr(bound, "__self__", None) is cls, where
            else:
                assert callable(attr) and not inspect.isdatadescriptor(attr), where


def stub_params(func: ast.FunctionDef) -> list[str]:
    args = func.args
    names = [a.arg for a in args.posonlyargs + args.args]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return names + [a.arg for a in args.kwonlyargs]


def runtime_params(obj) -> list[str]:
    sig = inspect.signature(obj)
    return [p for p in sig.parameters if p not in ("self", "cls", "$self", "$cls")]


def stub_callables():
    """Qualified names of the public functions and methods of the stub."""
    names = []
    for qualname, func in stub_functions().items():
        if any(part.startswith("_") for part in qualname.split(".")):
            continue
        if any(isinstance(d, ast.Name) and d.id == "property" for d in func.decorator_list):
            continue
        names.append(qualname)
    return sorted(names)


@pytest.mark.parametrize("qualname", stub_callables())
def test_signatures_match(qualname):
    """The run-time signature (from the docstring's text signature) has the
    stub's parameter names, in the stub's order."""
    func = stub_functions()[qualname]
    obj = _nrtpy
    for part in qualname.split("."):
        obj = getattr(obj, part)
    assert runtime_params(obj) == stub_params(func)


@pytest.mark.parametrize("cls", ["Nrtpy", "NrtpyTensor"])
def test_constructor_signatures_match(cls):
    func = stub_functions()[f"{cls}.__init__"]
    assert runtime_params(getattr(_nrtpy, cls)) == stub_params(func)


def test_package_exports():
    assert set(nrtpy.__all__) >= {
        "MemoryStats", "NrtError", "NrtTensor", "Nrtpy", "NrtpyError",
        "NrtpyRuntimeError", "NrtpyTensor", "configure", "get_nrtpy_singleton",
        "memory_stats", "reset", "runtime_info",
    }
    for name in nrtpy.__all__:
        assert hasattr(nrtpy, name), name
    assert len(set(nrtpy.__all__)) == len(nrtpy.__all__)
