"""The HTML page's templates load from their compiled modules (`auditor.report.html.COMPILED`),
which must be the code jinja2 makes of the templates as they are; a module that is not (an
edited template, another jinja2) is passed over and the template compiled, same page."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jinja2
import pytest
from report_fixture import build_report_data

from auditor.report import html
from auditor.report.html import COMPILED, compiled_key, compiled_module, environment


def _path(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, f"{module} missing (--update-golden)"
    return Path(spec.origin)


@pytest.mark.parametrize("name", list(COMPILED))
def test_compiled_module_is_current(name: str, update_golden: bool) -> None:
    text = compiled_module(name)
    module = COMPILED[name]
    if update_golden:
        path = Path(html.__file__).parent / f"{module.rsplit('.', 1)[1]}.py"
        path.write_text(text, encoding="utf-8", newline="\n")
    assert _path(module).read_text(encoding="utf-8") == text, (
        f"{module} is not {name} as compiled now: run pytest --update-golden and review the diff"
    )


@pytest.mark.parametrize("name", list(COMPILED))
def test_template_is_loaded_from_its_module(name: str) -> None:
    env = environment()
    template = env.get_template(name)
    namespace = template.root_render_func.__globals__
    source = env.loader.get_source(env, name)[0]  # type: ignore[union-attr]
    assert namespace["__file__"] == str(_path(COMPILED[name]))
    assert namespace["KEY"] == compiled_key(env, source)
    assert template.filename is not None and template.filename.endswith(name)


def test_a_module_made_for_another_template_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    data = build_report_data()
    expected = html.render_html(data)
    monkeypatch.setattr(html, "compiled_key", lambda env, source: "another template")
    fresh = html.environment.__wrapped__()  # not the cached environment
    template = fresh.get_template("report.html.j2")
    assert "KEY" not in template.root_render_func.__globals__  # compiled from the source
    monkeypatch.setattr(html, "environment", lambda: fresh)
    assert html.render_html(data) == expected


def test_the_key_changes_with_the_template_and_the_settings() -> None:
    env = environment()
    other = jinja2.Environment(autoescape=True, trim_blocks=False, lstrip_blocks=True)
    assert compiled_key(env, "a") != compiled_key(env, "b")
    assert compiled_key(env, "a") != compiled_key(other, "a")
