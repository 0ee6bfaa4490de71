"""Nothing loaded from a file can run code: a loaded context never chooses a template
folder unless the caller allows it, and every template renders in Jinja2's sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
import pytest

import parlay
from parlay import Context, Instruction, ScriptedBackend, Session, ToolResult
from parlay.engine.contract.pieces import ContractOptions, render_results
from parlay.errors import TemplateFolderNotAllowedError, TemplateSecurityError

# The reproduction of issue 48: a template that runs a shell command when rendered.
EVIL = "{{ cycler.__init__.__globals__.os.system('id > RAN') }}"


def document(template_dir: str | None, template: str = "evil") -> str:
    item: dict[str, Any] = {"kind": "instruction", "template": template, "variables": {}}
    if template_dir is not None:
        item["template_dir"] = template_dir
    return json.dumps({"format": "parlay.context", "version": 1, "meta": {}, "items": [item]})


def folder_with(root: Path, template: str, name: str = "evil") -> Path:
    (root / "components").mkdir(parents=True, exist_ok=True)
    (root / "components" / f"{name}.j2").write_text(template)
    return root


@pytest.fixture
def evil_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The reproduction, as written: a session file in a folder holding its template."""
    folder_with(tmp_path, EVIL)
    (tmp_path / "s.json").write_text(document("."))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "s.json"


def test_a_template_in_a_loaded_session_cannot_run_code(evil_file: Path) -> None:
    with pytest.raises(TemplateFolderNotAllowedError) as refused:
        Session.load(evil_file, ScriptedBackend(["ok"]))
    message = str(refused.value)
    assert "item 0 (instruction 'evil')" in message and "'.'" in message
    assert "template_dirs=" in message and "trust_template_dirs=True" in message
    assert isinstance(refused.value, parlay.InvalidRequestError)
    assert not (evil_file.parent / "RAN").exists()


@pytest.mark.parametrize("allow", ["folder", "trust"])
def test_an_allowed_folder_still_renders_in_the_sandbox(evil_file: Path, allow: str) -> None:
    how: dict[str, Any] = (
        {"template_dirs": ["."]} if allow == "folder" else {"trust_template_dirs": True}
    )
    session = Session.load(evil_file, ScriptedBackend(["ok"]), **how)
    with pytest.raises(TemplateSecurityError, match="'__init__'"):
        session.chat("hi").value  # noqa: B018
    assert not (evil_file.parent / "RAN").exists()


# Each reaches Python's internals (or changes a value) in plain Jinja2: the first test
# below shows it does, so the sandbox test that follows is not refusing a harmless string.
ESCAPES = [
    "{{ ''.__class__.__mro__[1] }}",
    "{{ ''.__class__.__mro__[1].__subclasses__()|length }}",
    "{{ cycler.__init__.__globals__.os.getcwd() }}",
    "{{ joiner.__init__.__globals__.os.getcwd() }}",
    "{{ namespace.__init__.__globals__.os.getcwd() }}",
    "{{ lipsum.__globals__['os'].getcwd() }}",
    "{{ self._TemplateReference__context.get('cycler').__init__.__globals__.os.getcwd() }}",
    "{{ range.__class__ }}",
    "{{ '{0.__class__}'.format(x) }}",
    "{{ '{a.__class__}'.format_map({'a': x}) }}",
    "{{ x|attr('__class__') }}",
    "{{ x.append(1) or x }}",
]


@pytest.mark.parametrize("escape", ESCAPES)
def test_each_escape_works_in_plain_jinja(escape: str) -> None:
    plain = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(escape)
    assert plain.render(x=[1]) not in ("", "[1]")


@pytest.mark.parametrize("escape", ESCAPES)
def test_a_components_template_cannot_escape_the_sandbox(tmp_path: Path, escape: str) -> None:
    folder_with(tmp_path, escape, "probe")
    instruction = Instruction("probe", {"x": [1]}, str(tmp_path))
    with pytest.raises(TemplateSecurityError, match="sandbox"):
        instruction.text  # noqa: B018


@pytest.mark.parametrize("escape", ESCAPES)
def test_a_contract_template_cannot_escape_the_sandbox(tmp_path: Path, escape: str) -> None:
    (tmp_path / "contract").mkdir()
    (tmp_path / "contract" / "continuation.j2").write_text("{% set x = results %}" + escape)
    options = ContractOptions(template_dir=str(tmp_path))
    with pytest.raises(TemplateSecurityError, match="sandbox"):
        render_results([ToolResult("c1", "add", "3")], options)


def test_the_sandbox_error_is_a_parlay_error() -> None:
    assert issubclass(TemplateSecurityError, parlay.ParlayError)


# -- which folder a loaded context may name --------------------------------------------
def test_a_folder_allowed_as_a_relative_path_admits_the_files_absolute_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder_with(tmp_path, "hello {{ who }}", "greet")
    monkeypatch.chdir(tmp_path)
    text = document(str(tmp_path), "greet")
    loaded = Context.from_json(text, template_dirs=["."])[0]
    assert isinstance(loaded, Instruction)
    assert loaded.template_dir == str(tmp_path.resolve())


def test_a_folder_allowed_as_an_absolute_path_admits_the_files_relative_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder_with(tmp_path / "t", "hello", "greet")
    monkeypatch.chdir(tmp_path)
    loaded = Context.from_json(document("./t/../t", "greet"), template_dirs=[tmp_path / "t"])
    assert loaded[0].template_dir == str((tmp_path / "t").resolve())


def test_a_symlink_to_an_allowed_folder_is_that_folder(tmp_path: Path) -> None:
    real = folder_with(tmp_path / "real", "hello", "greet")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    by_link = Context.from_json(document(str(link), "greet"), template_dirs=[real])
    by_real = Context.from_json(document(str(real), "greet"), template_dirs=[link])
    assert by_link[0].template_dir == by_real[0].template_dir == str(real.resolve())


def test_a_symlink_inside_an_allowed_folder_does_not_lead_out(tmp_path: Path) -> None:
    allowed = folder_with(tmp_path / "allowed", "hello", "greet")
    elsewhere = folder_with(tmp_path / "elsewhere", EVIL)
    (allowed / "out").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(TemplateFolderNotAllowedError, match=r"resolved: .*elsewhere"):
        Context.from_json(document(str(allowed / "out")), template_dirs=[allowed])


def test_a_subfolder_of_an_allowed_folder_is_not_allowed(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    folder_with(allowed / "sub", "hello", "greet")
    with pytest.raises(TemplateFolderNotAllowedError):
        Context.from_json(document(str(allowed / "sub"), "greet"), template_dirs=[allowed])


def test_a_loaded_instruction_keeps_the_folder_it_was_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Allowed as "." here; rendered after moving elsewhere, it still reads this folder.
    folder_with(tmp_path / "mine", "hello {{ 'from mine' }}", "greet")
    folder_with(tmp_path / "other", EVIL, "greet")
    monkeypatch.chdir(tmp_path / "mine")
    loaded = Context.from_json(document(".", "greet"), template_dirs=["."])
    monkeypatch.chdir(tmp_path / "other")
    assert loaded.messages()[0].content == "hello from mine"


def test_a_single_folder_is_not_read_as_its_letters(tmp_path: Path) -> None:
    folder_with(tmp_path, "hello", "greet")
    loaded = Context.from_json(document(str(tmp_path), "greet"), template_dirs=str(tmp_path))
    assert loaded[0].template_dir == str(tmp_path.resolve())


@pytest.mark.parametrize("name", ["", "a\x00b", "x" * 5000, "../" * 300, "~"])
def test_a_hostile_folder_name_is_refused_with_a_short_error(tmp_path: Path, name: str) -> None:
    with pytest.raises(TemplateFolderNotAllowedError) as refused:
        Context.from_json(document(name), template_dirs=[tmp_path])
    assert len(str(refused.value)) < 1200


def test_trusting_the_file_keeps_its_folders_as_written(tmp_path: Path) -> None:
    folder_with(tmp_path, "hello {{ who }}", "greet")
    text = document(str(tmp_path), "greet")
    loaded = Context.from_json(text, trust_template_dirs=True)
    assert loaded[0].template_dir == str(tmp_path)
    assert loaded.to_json() == Context.from_json(text, trust_template_dirs=True).to_json()


def test_an_instruction_saved_with_its_folder_loads_back_only_when_allowed(
    tmp_path: Path,
) -> None:
    folder_with(tmp_path, "hello {{ who }}", "greet")
    session = Session(ScriptedBackend(["hi"]))
    session.ctx = Context([Instruction("greet", {"who": "you"}, str(tmp_path))])
    path = tmp_path / "kept.json"
    session.save(path)
    with pytest.raises(TemplateFolderNotAllowedError):
        Session.load(path, ScriptedBackend([]))
    again = Session.load(path, ScriptedBackend([]), template_dirs=[tmp_path])
    assert again.ctx.messages() == session.ctx.messages()
    assert again.ctx.messages()[0].content == "hello you"


def test_an_instruction_without_a_folder_needs_no_allowance() -> None:
    ctx = Context([Instruction.query({"a": 1}, "what is a?")])
    assert Context.from_json(ctx.to_json()).messages() == ctx.messages()


def test_a_function_marked_unsafe_is_not_called(tmp_path: Path) -> None:
    ran: list[str] = []

    def wipe() -> str:
        ran.append("wiped")
        return ""

    wipe.unsafe_callable = True  # type: ignore[attr-defined]  # Jinja2's own marker
    folder_with(tmp_path, "{{ wipe() }}", "probe")
    with pytest.raises(TemplateSecurityError, match="may not call"):
        Instruction("probe", {"wipe": wipe}, str(tmp_path)).text  # noqa: B018
    assert ran == []
