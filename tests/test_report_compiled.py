"""The HTML page's templates load from their compiled modules (`auditor.report.html.COMPILED`),
which must be the code jinja2 makes of the templates as they are; a module that is not (an
edited template, another jinja2) is passed over and the template compiled, same page."""

from __future__ import annotations

import importlib.util
import traceback
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


def _template_lines(env: jinja2.Environment) -> list[int]:
    """The template lines a render error's traceback names (no context: `csp` is undefined)."""
    with pytest.raises(jinja2.UndefinedError) as info:
        env.get_template("report.html.j2").render()
    frames = traceback.extract_tb(info.value.__traceback__)
    return [f.lineno or 0 for f in frames if f.filename.endswith("report.html.j2")]


def test_an_error_names_the_same_template_line_as_the_source_compiled() -> None:
    from_module = _template_lines(environment())
    source_env = jinja2.Environment(
        loader=jinja2.PackageLoader("auditor.report", "templates"),
        **{k: getattr(environment(), k) for k in ("autoescape", "trim_blocks", "lstrip_blocks")},
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    source_env.filters.update(environment().filters)
    assert from_module and from_module == _template_lines(source_env)


def test_a_module_whose_code_fails_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Code made by another jinja2 may fail to import (a name it no longer has): the template
    is compiled from its source, and the page is the same."""
    data = build_report_data()
    expected = html.render_html(data)
    env = environment()
    key = compiled_key(env, env.loader.get_source(env, "report.html.j2")[0])  # type: ignore[union-attr]
    (tmp_path / "old_page.py").write_text(
        f'KEY = "{key}"\nfrom jinja2.runtime import NoSuchName\n', encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(html.COMPILED, "report.html.j2", "old_page")
    fresh = html.environment.__wrapped__()
    assert "KEY" not in fresh.get_template("report.html.j2").root_render_func.__globals__
    monkeypatch.setattr(html, "environment", lambda: fresh)
    assert html.render_html(data) == expected
