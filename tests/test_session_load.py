"""`Session.load(path)` reopens from what `save` wrote, and asks for the rest by name."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from parlay import ConfigurationError, ScriptedBackend, Session
from parlay.backends.catalogue import SMOLLM2


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Audited(Session):
    """A protocol of this module: imported already when a file names it."""


def saved(tmp_path: Path, session: Session) -> Path:
    session.chat("first").value  # noqa: B018
    path = tmp_path / "kept.json"
    session.save(path)
    return path


def rewrite_meta(path: Path, **changes: object) -> None:
    document = json.loads(path.read_text())
    document["meta"].update(changes)
    path.write_text(json.dumps(document))


def test_a_saved_session_reopens_with_its_tools_found_by_their_import_path(tmp_path: Path) -> None:
    path = saved(tmp_path, Session(ScriptedBackend(["one"]), tools=[add]))
    assert json.loads(path.read_text())["meta"]["tool_paths"] == {"add": f"{__name__}:add"}
    loaded = Session.load(path, ScriptedBackend(["two"]))
    assert loaded.tools.names == ["add"] and loaded.tools.get("add").function is add  # type: ignore[union-attr]


def test_load_names_the_backend_it_cannot_rebuild(tmp_path: Path) -> None:
    path = saved(tmp_path, Session(ScriptedBackend(["one"])))
    with pytest.raises(ConfigurationError, match=r"'scripted'.*Session\.load\(path, backend\)"):
        Session.load(path)


def test_load_names_every_tool_it_cannot_find_in_one_error(tmp_path: Path) -> None:
    def local_tool(x: int) -> int:
        """A tool defined in a function: no path imports it."""
        return x

    path = saved(tmp_path, Session(ScriptedBackend(["one"]), tools=[add, local_tool]))
    rewrite_meta(path, tool_paths={})
    with pytest.raises(ConfigurationError, match="add, local_tool") as caught:
        Session.load(path)
    assert "backend" in str(caught.value)  # and the backend, in the same error
    reopened = Session.load(path, ScriptedBackend([]), tools=[add, local_tool])
    assert reopened.tools.names == ["add", "local_tool"]
    assert Session.load(path, ScriptedBackend([]), tools=[]).tools.names == []  # none, said so


def test_a_file_cannot_hand_the_model_a_standard_library_function(tmp_path: Path) -> None:
    path = saved(tmp_path, Session(ScriptedBackend(["one"])))
    rewrite_meta(path, tools=["rmtree"], tool_paths={"rmtree": "shutil:rmtree"})
    with pytest.raises(ConfigurationError, match="rmtree"):
        Session.load(path, ScriptedBackend([]))


def test_a_class_named_in_a_file_is_never_imported(tmp_path: Path) -> None:
    path = saved(tmp_path, Session(ScriptedBackend(["one"])))
    # Importing antigravity opens a web browser: a module that runs code when imported.
    assert "antigravity" not in sys.modules
    rewrite_meta(path, session_class="antigravity:Session")
    with pytest.raises(ConfigurationError, match="antigravity:Session, which is not imported"):
        Session.load(path, ScriptedBackend([]))
    assert "antigravity" not in sys.modules
    plain = Session.load(path, ScriptedBackend([]), session_class=Session)
    assert type(plain) is Session


def test_the_saved_class_is_found_among_the_imported_subclasses(tmp_path: Path) -> None:
    path = saved(tmp_path, Audited(ScriptedBackend(["one"])))
    assert json.loads(path.read_text())["meta"]["session_class"] == f"{__name__}:Audited"
    assert type(Session.load(path, ScriptedBackend([]))) is Audited
    assert type(Audited.load(path, ScriptedBackend([]))) is Audited


@pytest.mark.skipif(not SMOLLM2.installed(), reason="the embedded SmolLM2 is not installed")
def test_a_conversation_of_the_embedded_model_reopens_on_it_by_name(tmp_path: Path) -> None:
    # Nothing is asked of the model: building the backend starts no server.
    from parlay.start import embedded_backend

    path = tmp_path / "kept.json"
    Session(embedded_backend("smollm2")).save(path)
    assert json.loads(path.read_text())["meta"]["model"] == "smollm2"
    loaded = Session.load(path)
    assert loaded.backend.name == embedded_backend("smollm2").name
    assert loaded.options.temperature == 0  # greedy, as start_session runs it
