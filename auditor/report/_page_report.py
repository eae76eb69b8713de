"""report.html.j2 as compiled by jinja2 3.1.6 (see `html.COMPILED`).

Made by `auditor.report.html.compiled_module`, not by hand: `python -m pytest
tests/test_report_compiled.py --update-golden` writes it anew. A module whose KEY does
not match its template is not used (the template is compiled from its source).
"""

# ruff: noqa
# mypy: ignore-errors
# fmt: off
KEY = "856c714a1372001fea2a517a77a1bb1099d96a4037f085ec6829cc43b62abf91"
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'report.html.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_csp = resolve('csp')
    l_0_d = resolve('d')
    l_0_css = resolve('css')
    l_0_page_css = resolve('page_css')
    l_0_audited = resolve('audited')
    l_0_left_out = resolve('left_out')
    l_0_rules_evaluated = resolve('rules_evaluated')
    l_0_output_headline = resolve('output_headline')
    l_0_controls = resolve('controls')
    l_0_drill = resolve('drill')
    l_0_groups = resolve('groups')
    l_0_passing = resolve('passing')
    l_0_last_sync = resolve('last_sync')
    l_0_integrity_coverage = resolve('integrity_coverage')
    l_0_settings_judged = resolve('settings_judged')
    l_0_by_target = resolve('by_target')
    l_0_rule_total = resolve('rule_total')
    l_0_severity_counts = resolve('severity_counts')
    l_0_introduced_counts = resolve('introduced_counts')
    l_0_no_comparison = resolve('no_comparison')
    l_0_new = resolve('new')
    l_0_new_waived = resolve('new_waived')
    l_0_upgrade_note = resolve('upgrade_note')
    l_0_status_counts = resolve('status_counts')
    l_0_changes = resolve('changes')
    l_0_more_changes = resolve('more_changes')
    l_0_introduced = resolve('introduced')
    l_0_chart = resolve('chart')
    l_0_chart_waived = resolve('chart_waived')
    l_0_chart_rows = resolve('chart_rows')
    l_0_chart_cap = resolve('chart_cap')
    l_0_not_judged = resolve('not_judged')
    l_0_rows = resolve('rows')
    l_0_lapsed = resolve('lapsed')
    l_0_waivers_as_of = resolve('waivers_as_of')
    l_0_on = resolve('on')
    l_0_revisions_shown = resolve('revisions_shown')
    l_0_appendix_cap = resolve('appendix_cap')
    l_0_appendix_rest = resolve('appendix_rest')
    l_0_cell = l_0_other_inputs = l_0_waiverrows = l_0_waivertable = l_0_sc = missing
    try:
        t_1 = environment.filters['after']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'after' found.")
    try:
        t_2 = environment.filters['before']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'before' found.")
    try:
        t_3 = environment.filters['capitalize']
    except KeyError:
        @internalcode
        def t_3(*unused):
            raise TemplateRuntimeError("No filter named 'capitalize' found.")
    try:
        t_4 = environment.filters['day']
    except KeyError:
        @internalcode
        def t_4(*unused):
            raise TemplateRuntimeError("No filter named 'day' found.")
    try:
        t_5 = environment.filters['kind']
    except KeyError:
        @internalcode
        def t_5(*unused):
            raise TemplateRuntimeError("No filter named 'kind' found.")
    try:
        t_6 = environment.filters['length']
    except KeyError:
        @internalcode
        def t_6(*unused):
            raise TemplateRuntimeError("No filter named 'length' found.")
    try:
        t_7 = environment.filters['prose']
    except KeyError:
        @internalcode
        def t_7(*unused):
            raise TemplateRuntimeError("No filter named 'prose' found.")
    try:
        t_8 = environment.filters['replace']
    except KeyError:
        @internalcode
        def t_8(*unused):
            raise TemplateRuntimeError("No filter named 'replace' found.")
    try:
        t_9 = environment.filters['short']
    except KeyError:
        @internalcode
        def t_9(*unused):
            raise TemplateRuntimeError("No filter named 'short' found.")
    try:
        t_10 = environment.filters['sum']
    except KeyError:
        @internalcode
        def t_10(*unused):
            raise TemplateRuntimeError("No filter named 'sum' found.")
    try:
        t_11 = environment.filters['when']
    except KeyError:
        @internalcode
        def t_11(*unused):
            raise TemplateRuntimeError("No filter named 'when' found.")
    try:
        t_12 = environment.tests['none']
    except KeyError:
        @internalcode
        def t_12(*unused):
            raise TemplateRuntimeError("No test named 'none' found.")
    pass
    yield '<!DOCTYPE html>\n'
    def macro(l_1_v):
        t_13 = []
        if l_1_v is missing:
            l_1_v = undefined("parameter 'v' was not provided", name='v')
        pass
        if t_12(l_1_v):
            pass
            t_13.append(
                '<span class="muted">—</span>',
            )
        else:
            pass
            t_13.extend((
                '<code>',
                escape(environment.finalize(t_9(l_1_v))),
                '</code>',
            ))
        return concat(t_13)
    context.exported_vars.add('cell')
    context.vars['cell'] = l_0_cell = Macro(environment, macro, 'cell', ('v',), False, False, False, context.eval_ctx.autoescape)
    def macro(l_1_files):
        t_14 = []
        if l_1_files is missing:
            l_1_files = undefined("parameter 'files' was not provided", name='files')
        pass
        if l_1_files:
            pass
            t_14.append(
                '<h3>Other inputs</h3>\n<table>\n<thead><tr><th>Input</th><th>File</th><th>SHA-256</th></tr></thead>\n<tbody>\n',
            )
            for l_2_f in l_1_files:
                _loop_vars = {}
                pass
                t_14.extend((
                    '<tr><td>',
                    escape(environment.finalize(t_3(environment.getattr(l_2_f, 'role')))),
                    '</td><td><code>',
                    escape(environment.finalize(environment.getattr(l_2_f, 'path'))),
                    '</code></td><td class="mono">',
                    escape(environment.finalize(environment.getattr(l_2_f, 'sha256'))),
                    '</td></tr>\n',
                ))
            l_2_f = missing
            t_14.append(
                '</tbody>\n</table>\n',
            )
        return concat(t_14)
    context.exported_vars.add('other_inputs')
    context.vars['other_inputs'] = l_0_other_inputs = Macro(environment, macro, 'other_inputs', ('files',), False, False, False, context.eval_ctx.autoescape)
    def macro(l_1_items, l_1_lapsed):
        t_15 = []
        if l_1_items is missing:
            l_1_items = undefined("parameter 'items' was not provided", name='items')
        if l_1_lapsed is missing:
            l_1_lapsed = undefined("parameter 'lapsed' was not provided", name='lapsed')
        pass
        for l_2_w in l_1_items:
            _loop_vars = {}
            pass
            t_15.extend((
                '<tr><td><code>',
                escape(environment.finalize(environment.getattr(l_2_w, 'rule_id'))),
                '</code></td><td class="wrap">',
                escape(environment.finalize(environment.getattr(l_2_w, 'subject'))),
                '</td><td>',
                escape(environment.finalize(environment.getattr(l_2_w, 'owner'))),
                '</td><td>',
                escape(environment.finalize(t_4(environment.getattr(l_2_w, 'expires')))),
            ))
            if (l_2_w in l_1_lapsed):
                pass
                t_15.append(
                    ' <strong>(expired before this report)</strong>',
                )
            t_15.extend((
                '</td><td>',
                escape(environment.finalize(environment.getattr(l_2_w, 'ticket'))),
                '</td><td class="wrap">',
                escape(environment.finalize(t_9(environment.getattr(l_2_w, 'reason')))),
                '</td></tr>\n',
            ))
        l_2_w = missing
        return concat(t_15)
    context.exported_vars.add('waiverrows')
    context.vars['waiverrows'] = l_0_waiverrows = Macro(environment, macro, 'waiverrows', ('items', 'lapsed'), False, False, False, context.eval_ctx.autoescape)
    def macro(l_1_title, l_1_items, l_1_lapsed):
        t_16 = []
        if l_1_title is missing:
            l_1_title = undefined("parameter 'title' was not provided", name='title')
        if l_1_items is missing:
            l_1_items = undefined("parameter 'items' was not provided", name='items')
        if l_1_lapsed is missing:
            l_1_lapsed = ()
        pass
        t_16.extend((
            '<h3>',
            escape(environment.finalize(l_1_title)),
            ' (',
            escape(environment.finalize(t_6(l_1_items))),
            ')</h3>\n',
        ))
        if l_1_items:
            pass
            t_16.extend((
                '<table>\n<thead><tr><th>Rule</th><th>Subject</th><th>Owner</th><th>Expires</th><th>Ticket</th><th>Reason</th></tr></thead>\n<tbody>\n',
                escape(environment.finalize(context.call((undefined(name='waiverrows') if l_0_waiverrows is missing else l_0_waiverrows), l_1_items, l_1_lapsed))),
                '\n</tbody>\n</table>\n',
            ))
        else:
            pass
            t_16.append(
                '<p class="muted">None.</p>\n',
            )
        return concat(t_16)
    context.exported_vars.add('waivertable')
    context.vars['waivertable'] = l_0_waivertable = Macro(environment, macro, 'waivertable', ('title', 'items', 'lapsed'), False, False, False, context.eval_ctx.autoescape)
    yield '<html lang="en">\n<head>\n<meta charset="utf-8">\n<meta http-equiv="Content-Security-Policy" content="'
    yield escape(environment.finalize((undefined(name='csp') if l_0_csp is missing else l_0_csp)))
    yield '">\n<meta name="referrer" content="no-referrer">\n<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>Compliance report '
    yield escape(environment.finalize(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'run_id')))
    yield '</title>\n<style>'
    yield escape(environment.finalize((undefined(name='css') if l_0_css is missing else l_0_css)))
    yield '</style>\n<style>'
    yield escape(environment.finalize((undefined(name='page_css') if l_0_page_css is missing else l_0_page_css)))
    yield '</style>\n</head>\n<body>\n<header class="top">\n<div>\n<h1>'
    if (environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'mode') == 'review'):
        pass
        yield 'Pre-change review'
    else:
        pass
        yield 'Compliance report'
    yield '</h1>\n<div class="muted">'
    if environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'):
        pass
        yield 'The proposed settings file <code>'
        yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'), 'proposed_file')))
        yield '</code>, not the settings in force'
    else:
        pass
        yield escape(environment.finalize((undefined(name='audited') if l_0_audited is missing else l_0_audited)))
    yield '</div>\n</div>\n<dl class="meta">\n<dt>Organisation</dt><dd>'
    if environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'org'):
        pass
        yield escape(environment.finalize(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'org')))
    else:
        pass
        yield '<span class="muted">not named</span>'
    yield '</dd>\n<dt>Run</dt><dd><code>'
    yield escape(environment.finalize(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'run_id')))
    yield '</code></dd>\n<dt>Generated</dt><dd>'
    yield escape(environment.finalize(t_11(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'generated_at'))))
    yield '</dd>\n<dt>Tool</dt><dd>auditor '
    yield escape(environment.finalize(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'tool_version')))
    yield '</dd>\n<dt>API</dt><dd><code>'
    yield escape(environment.finalize(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'api_address')))
    yield '</code></dd>\n'
    if ((environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'mode') != 'review') and (not t_12(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'inputs'), 'settings_revision')))):
        pass
        yield '<dt>Settings</dt><dd>'
        if (environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'scope') and environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'scope'), 'all_revisions')):
            pass
            yield 'every revision up to '
            yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'inputs'), 'settings_revision')))
            yield ' (<code>--all-revisions</code>)'
        else:
            pass
            yield 'revision '
            yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'inputs'), 'settings_revision')))
        yield '</dd>'
    yield '<dt>Fail on</dt><dd>'
    if (environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'fail_on') == 'none'):
        pass
        yield 'nothing (<code>--fail-on none</code>)'
    else:
        pass
        yield escape(environment.finalize(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'fail_on')))
        yield ' and above'
    yield '</dd>\n</dl>\n</header>\n<main>\n'
    if environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'complete'):
        pass
        yield '<div class="banner complete"><strong>Complete:</strong> '
        if (undefined(name='left_out') if l_0_left_out is missing else l_0_left_out):
            pass
            yield 'every rule evaluated ('
            yield escape(environment.finalize((undefined(name='rules_evaluated') if l_0_rules_evaluated is missing else l_0_rules_evaluated)))
            yield ') was evaluated against every subject'
            if environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'):
                pass
                yield ' of the proposal'
            yield '; '
            yield escape(environment.finalize(t_10(environment, (undefined(name='left_out') if l_0_left_out is missing else l_0_left_out), attribute=1)))
            yield ' rule(s) of the policies were left out ('
            l_1_loop = missing
            for (l_1_t, l_1_n, l_1_why), l_1_loop in LoopContext((undefined(name='left_out') if l_0_left_out is missing else l_0_left_out), undefined):
                _loop_vars = {}
                pass
                yield escape(environment.finalize(l_1_n))
                yield ' '
                yield escape(environment.finalize(l_1_t))
                if (not environment.getattr(l_1_loop, 'last')):
                    pass
                    yield ', '
            l_1_loop = l_1_t = l_1_n = l_1_why = missing
            yield ': see <a href="#scope">Scope</a>).'
        else:
            pass
            yield 'every rule was evaluated against every subject.'
        yield '</div>\n'
    else:
        pass
        yield '<div class="banner incomplete"><strong>Incomplete:</strong> '
        if (environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'output_notes') and (not environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'not_evaluated'))):
            pass
            yield escape(environment.finalize((undefined(name='output_headline') if l_0_output_headline is missing else l_0_output_headline)))
            yield '; every result of the evaluation is below.'
        else:
            pass
            yield escape(environment.finalize(t_6(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'not_evaluated'))))
            yield ' item(s) could not be evaluated; results below may understate the findings.'
        yield '\n<ul>\n'
        for l_1_reason in environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'not_evaluated'):
            _loop_vars = {}
            pass
            yield '<li class="wrap">'
            yield escape(environment.finalize(t_9(l_1_reason)))
            yield '</li>\n'
        l_1_reason = missing
        for l_1_note in environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'output_notes'):
            _loop_vars = {}
            pass
            yield '<li class="wrap">'
            yield escape(environment.finalize(t_9(l_1_note)))
            yield '</li>\n'
        l_1_note = missing
        yield '</ul></div>\n'
    if environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'data_quality'):
        pass
        yield '<div class="banner data-quality"><strong>Data quality:</strong> '
        yield escape(environment.finalize(t_6(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'data_quality'))))
        yield ' warning(s) in the API data; the items were kept and the odd values read as absent.\n<ul>\n'
        for l_1_w in environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'data_quality'):
            _loop_vars = {}
            pass
            yield '<li class="wrap">'
            yield escape(environment.finalize(t_9(context.call(environment.getattr(l_1_w, 'describe'), _loop_vars=_loop_vars))))
            yield '</li>\n'
        l_1_w = missing
        yield '</ul></div>\n'
    yield '\n<nav class="toc" id="contents" aria-labelledby="contents-title">\n<h2 id="contents-title">Contents</h2>\n<ol>\n<li><a href="#scope">Scope</a></li>\n<li><a href="#summary">Summary</a></li>\n'
    if environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'):
        pass
        yield '<li><a href="#proposed-change">Proposed change</a></li>\n'
    yield '<li><a href="#controls">Compliance by framework control</a> ('
    yield escape(environment.finalize(t_6((undefined(name='controls') if l_0_controls is missing else l_0_controls))))
    yield ')</li>\n<li><a href="#drill-down">Control drill-down</a>'
    if (undefined(name='drill') if l_0_drill is missing else l_0_drill):
        pass
        yield '<ol class="cols">\n'
        for l_1_c in (undefined(name='drill') if l_0_drill is missing else l_0_drill):
            l_1_control_anchor = resolve('control_anchor')
            _loop_vars = {}
            pass
            yield '<li><a href="#'
            yield escape(environment.finalize(environment.getitem((undefined(name='control_anchor') if l_1_control_anchor is missing else l_1_control_anchor), environment.getattr(environment.getattr(l_1_c, 'row'), 'control'))))
            yield '">'
            yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_c, 'row'), 'framework')))
            yield ' '
            yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_c, 'row'), 'code')))
            yield '</a> <span class="st '
            yield escape(environment.finalize(t_8(context.eval_ctx, environment.getattr(environment.getattr(l_1_c, 'row'), 'state'), ' ', '-')))
            yield '">'
            yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_c, 'row'), 'state')))
            yield '</span></li>\n'
        l_1_c = l_1_control_anchor = missing
        yield '</ol>'
    yield '</li>\n<li><a href="#over-time">Compliance over time</a></li>\n<li><a href="#findings">Findings by rule</a> ('
    yield escape(environment.finalize(t_6((undefined(name='groups') if l_0_groups is missing else l_0_groups))))
    yield ' rule(s))'
    if (undefined(name='groups') if l_0_groups is missing else l_0_groups):
        pass
        yield '<ol class="cols">\n'
        for l_1_g in (undefined(name='groups') if l_0_groups is missing else l_0_groups):
            l_1_rule_anchor = resolve('rule_anchor')
            _loop_vars = {}
            pass
            yield '<li><a href="#'
            yield escape(environment.finalize(environment.getitem((undefined(name='rule_anchor') if l_1_rule_anchor is missing else l_1_rule_anchor), environment.getattr(environment.getattr(l_1_g, 'first'), 'rule_id'))))
            yield '">'
            yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_g, 'first'), 'rule_id')))
            yield '</a> '
            yield escape(environment.finalize(context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'badge'), environment.getattr(environment.getattr(l_1_g, 'first'), 'severity'), _loop_vars=_loop_vars)))
            yield '</li>\n'
        l_1_g = l_1_rule_anchor = missing
        yield '</ol>'
    yield '</li>\n'
    if (not t_12(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'usage'))):
        pass
        yield '<li><a href="#usage">Usage</a></li>\n'
    yield '<li><a href="#readiness">Repository readiness</a></li>\n<li><a href="#waivers">Waivers</a></li>\n<li><a href="#passing">Appendix A: passing results and their evidence</a> ('
    yield escape(environment.finalize(t_6((undefined(name='passing') if l_0_passing is missing else l_0_passing))))
    yield ' rule(s))</li>\n<li><a href="#inputs">Appendix B: inputs</a></li>\n</ol>\n</nav>\n\n<section id="scope" class="scope">\n<h2>Scope</h2>\n'
    l_0_sc = environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'scope')
    context.vars['sc'] = l_0_sc
    context.exported_vars.add('sc')
    yield '<dl class="scope">\n<dt>Organisation</dt><dd>'
    if environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'org'):
        pass
        yield escape(environment.finalize(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'org')))
    else:
        pass
        yield '<span class="muted">not named (set <code>--org</code>)</span>'
    yield '</dd>\n<dt>API address</dt><dd><code>'
    yield escape(environment.finalize(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'api_address')))
    yield '</code></dd>\n'
    if (undefined(name='last_sync') if l_0_last_sync is missing else l_0_last_sync):
        pass
        yield '<dt>Data fetched</dt><dd>last sync '
        yield escape(environment.finalize((undefined(name='last_sync') if l_0_last_sync is missing else l_0_last_sync)))
        yield '</dd>\n<dt>Integrity check</dt><dd>'
        yield escape(environment.finalize((undefined(name='integrity_coverage') if l_0_integrity_coverage is missing else l_0_integrity_coverage)))
        yield '</dd>\n'
    if environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'):
        pass
        yield '<dt>Reviewed</dt><dd>the proposed settings file <code>'
        yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'), 'proposed_file')))
        yield '</code> against '
        yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'), 'against')))
        yield '</dd>\n'
    yield '<dt>Period covered</dt><dd>'
    if ((undefined(name='sc') if l_0_sc is missing else l_0_sc) and environment.getattr((undefined(name='sc') if l_0_sc is missing else l_0_sc), 'period_start')):
        pass
        yield escape(environment.finalize(t_11(environment.getattr((undefined(name='sc') if l_0_sc is missing else l_0_sc), 'period_start'))))
        yield ' to '
        yield escape(environment.finalize(t_11(environment.getattr((undefined(name='sc') if l_0_sc is missing else l_0_sc), 'period_end'))))
        yield ' (first to last settings revision evaluated'
        if (not t_12(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'inputs'), 'settings_revision'))):
            pass
            yield ', rev '
            yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'inputs'), 'settings_revision')))
        yield ')'
    elif environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'):
        pass
        yield '<span class="muted">a review evaluates the proposal, not a period</span>'
    else:
        pass
        yield '<span class="muted">no settings revision evaluated</span>'
    yield '</dd>\n<dt>Report time</dt><dd>'
    yield escape(environment.finalize(t_11(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'generated_at'))))
    yield '</dd>\n'
    if ((undefined(name='sc') if l_0_sc is missing else l_0_sc) and environment.getattr((undefined(name='sc') if l_0_sc is missing else l_0_sc), 'as_of')):
        pass
        yield '<dt>As of</dt><dd>'
        yield escape(environment.finalize(t_11(environment.getattr((undefined(name='sc') if l_0_sc is missing else l_0_sc), 'as_of'))))
        yield ' (<code>--at</code>: the settings and readiness reports in force then)</dd>\n'
    if ((undefined(name='sc') if l_0_sc is missing else l_0_sc) and (not environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'))):
        pass
        yield '<dt>Settings judged</dt><dd>'
        yield escape(environment.finalize(t_7((undefined(name='settings_judged') if l_0_settings_judged is missing else l_0_settings_judged))))
        yield '</dd>\n'
    yield '<dt>Rules evaluated</dt><dd>'
    if (undefined(name='by_target') if l_0_by_target is missing else l_0_by_target):
        pass
        l_1_loop = missing
        for (l_1_t, l_1_n), l_1_loop in LoopContext((undefined(name='by_target') if l_0_by_target is missing else l_0_by_target), undefined):
            _loop_vars = {}
            pass
            yield escape(environment.finalize(l_1_n))
            yield ' '
            yield escape(environment.finalize(l_1_t))
            if (not environment.getattr(l_1_loop, 'last')):
                pass
                yield ', '
        l_1_loop = l_1_t = l_1_n = missing
        yield ' ('
        yield escape(environment.finalize(t_10(environment, (undefined(name='by_target') if l_0_by_target is missing else l_0_by_target), attribute=1)))
        yield ' in all)'
    else:
        pass
        yield escape(environment.finalize((undefined(name='rule_total') if l_0_rule_total is missing else l_0_rule_total)))
    yield '</dd>\n'
    if (undefined(name='left_out') if l_0_left_out is missing else l_0_left_out):
        pass
        yield '<dt>Rules left out</dt><dd>'
        l_1_loop = missing
        for (l_1_t, l_1_n, l_1_why), l_1_loop in LoopContext((undefined(name='left_out') if l_0_left_out is missing else l_0_left_out), undefined):
            _loop_vars = {}
            pass
            yield escape(environment.finalize(l_1_n))
            yield ' '
            yield escape(environment.finalize(l_1_t))
            yield ' rule(s), not evaluated: '
            yield escape(environment.finalize(t_7(l_1_why)))
            if (not environment.getattr(l_1_loop, 'last')):
                pass
                yield '; '
        l_1_loop = l_1_t = l_1_n = l_1_why = missing
        yield '</dd>\n'
    yield '</dl>\n<h3>Policy packs</h3>\n<table>\n<thead><tr><th>File</th><th>SHA-256</th><th class="num">Rules</th></tr></thead>\n<tbody>\n'
    for l_1_p in environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'policy_files'):
        _loop_vars = {}
        pass
        yield '<tr><td><code>'
        yield escape(environment.finalize(environment.getattr(l_1_p, 'path')))
        yield '</code></td><td class="mono">'
        yield escape(environment.finalize(environment.getattr(l_1_p, 'sha256')))
        yield '</td><td class="num">'
        yield escape(environment.finalize(t_6(environment.getattr(l_1_p, 'rule_ids'))))
        yield '</td></tr>\n'
    l_1_p = missing
    yield '</tbody>\n</table>\n'
    yield escape(environment.finalize(context.call((undefined(name='other_inputs') if l_0_other_inputs is missing else l_0_other_inputs), environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'input_files'))))
    yield '<h3>Populations</h3>\n'
    if (undefined(name='sc') if l_0_sc is missing else l_0_sc):
        pass
        yield '<table>\n<thead><tr><th>Population</th><th class="num">Count</th><th>Listed in</th></tr></thead>\n<tbody>\n<tr><td>Settings revisions evaluated</td><td class="num">'
        yield escape(environment.finalize(environment.getattr((undefined(name='sc') if l_0_sc is missing else l_0_sc), 'revisions')))
        yield '</td><td>Appendix B; the evidence bundle\'s <code>revisions.csv</code></td></tr>\n<tr><td>Change steps (consecutive revision pairs)</td><td class="num">'
        yield escape(environment.finalize(environment.getattr((undefined(name='sc') if l_0_sc is missing else l_0_sc), 'change_steps')))
        yield '</td><td>the evidence bundle\'s <code>changes.csv</code></td></tr>\n<tr><td>Repositories with a readiness report</td><td class="num">'
        yield escape(environment.finalize(environment.getattr((undefined(name='sc') if l_0_sc is missing else l_0_sc), 'repositories')))
        yield '</td><td><a href="#readiness">Repository readiness</a></td></tr>\n<tr><td>Readiness reports ('
        yield escape(environment.finalize(environment.getattr((undefined(name='sc') if l_0_sc is missing else l_0_sc), 'reports_evaluated')))
        yield ' evaluated: the newest per repository)</td><td class="num">'
        yield escape(environment.finalize(environment.getattr((undefined(name='sc') if l_0_sc is missing else l_0_sc), 'reports')))
        yield "</td><td>Appendix B; the evidence bundle's <code>reports.csv</code></td></tr>\n</tbody>\n</table>\n"
    else:
        pass
        yield '<p class="muted">Populations are not recorded for this report.</p>\n'
    yield '</section>\n\n<h2 id="summary">Summary</h2>\n<div class="cards">\n'
    for (l_1_s, l_1_n) in context.call(environment.getattr((undefined(name='severity_counts') if l_0_severity_counts is missing else l_0_severity_counts), 'items')):
        _loop_vars = {}
        pass
        yield '<div class="card '
        yield escape(environment.finalize(l_1_s))
        yield '"><span class="n">'
        yield escape(environment.finalize(l_1_n))
        yield '</span><span class="l">'
        yield escape(environment.finalize(l_1_s))
        yield ' open</span></div>\n'
    l_1_s = l_1_n = missing
    if environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'):
        pass
        yield '<div class="card neutral"><span class="n">'
        yield escape(environment.finalize(environment.getitem((undefined(name='introduced_counts') if l_0_introduced_counts is missing else l_0_introduced_counts), 0)))
        yield '</span><span class="l">introduced'
        if environment.getitem((undefined(name='introduced_counts') if l_0_introduced_counts is missing else l_0_introduced_counts), 1):
            pass
            yield ' (+'
            yield escape(environment.finalize(environment.getitem((undefined(name='introduced_counts') if l_0_introduced_counts is missing else l_0_introduced_counts), 1)))
            yield ' waived)'
        yield '</span></div>\n<div class="card neutral"><span class="n">'
        yield escape(environment.finalize(t_6(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'), 'fixed'))))
        yield '</span><span class="l">fixed</span></div>\n'
    elif (not (undefined(name='no_comparison') if l_0_no_comparison is missing else l_0_no_comparison)):
        pass
        yield '<div class="card neutral"><span class="n">'
        yield escape(environment.finalize(((undefined(name='new') if l_0_new is missing else l_0_new) - (undefined(name='new_waived') if l_0_new_waived is missing else l_0_new_waived))))
        yield '</span><span class="l">new'
        if (undefined(name='new_waived') if l_0_new_waived is missing else l_0_new_waived):
            pass
            yield ' (+'
            yield escape(environment.finalize((undefined(name='new_waived') if l_0_new_waived is missing else l_0_new_waived)))
            yield ' waived)'
        yield '</span></div>\n<div class="card neutral"><span class="n">'
        yield escape(environment.finalize(t_6(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'resolved'))))
        yield '</span><span class="l">resolved</span></div>\n'
    yield '</div>\n'
    if (undefined(name='no_comparison') if l_0_no_comparison is missing else l_0_no_comparison):
        pass
        yield '<p class="muted"><strong>Not compared with an earlier run:</strong> '
        yield escape(environment.finalize(t_7((undefined(name='no_comparison') if l_0_no_comparison is missing else l_0_no_comparison))))
        yield '.</p>\n'
    elif (undefined(name='upgrade_note') if l_0_upgrade_note is missing else l_0_upgrade_note):
        pass
        yield '<p class="muted"><strong>Note:</strong> '
        yield escape(environment.finalize((undefined(name='upgrade_note') if l_0_upgrade_note is missing else l_0_upgrade_note)))
        yield '.</p>\n'
    yield '<table>\n<thead><tr>'
    for l_1_s in (undefined(name='status_counts') if l_0_status_counts is missing else l_0_status_counts):
        _loop_vars = {}
        pass
        yield '<th class="num">'
        yield escape(environment.finalize(t_8(context.eval_ctx, l_1_s, '_', ' ')))
        yield '</th>'
    l_1_s = missing
    yield '</tr></thead>\n<tbody><tr>'
    for (l_1_s, l_1_n) in context.call(environment.getattr((undefined(name='status_counts') if l_0_status_counts is missing else l_0_status_counts), 'items')):
        _loop_vars = {}
        pass
        yield '<td class="num">'
        yield escape(environment.finalize(l_1_n))
        yield '</td>'
    l_1_s = l_1_n = missing
    yield '</tr></tbody>\n</table>\n'
    if environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'):
        pass
        yield '\n<h2 id="proposed-change">Proposed change</h2>\n<p><code>'
        yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'), 'proposed_file')))
        yield '</code> against '
        yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'), 'against')))
        yield ': '
        yield escape(environment.finalize(t_6(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'), 'changes'))))
        yield ' change(s), '
        yield escape(environment.finalize(environment.getitem((undefined(name='introduced_counts') if l_0_introduced_counts is missing else l_0_introduced_counts), 0)))
        if environment.getitem((undefined(name='introduced_counts') if l_0_introduced_counts is missing else l_0_introduced_counts), 1):
            pass
            yield ' (+'
            yield escape(environment.finalize(environment.getitem((undefined(name='introduced_counts') if l_0_introduced_counts is missing else l_0_introduced_counts), 1)))
            yield ' waived)'
        yield ' finding(s) introduced, '
        yield escape(environment.finalize(t_6(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'), 'fixed'))))
        yield ' fixed, '
        yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'), 'unchanged')))
        yield ' unchanged.</p>\n<table>\n<thead><tr><th>Path</th><th>Change</th><th>Before</th><th>After</th></tr></thead>\n<tbody>\n'
        for l_1_c in (undefined(name='changes') if l_0_changes is missing else l_0_changes):
            _loop_vars = {}
            pass
            yield '<tr><td>'
            if environment.getattr(l_1_c, 'old_path'):
                pass
                yield '<code>'
                yield escape(environment.finalize(environment.getattr(l_1_c, 'old_path')))
                yield '</code> → '
            yield '<code>'
            yield escape(environment.finalize(environment.getattr(l_1_c, 'path')))
            yield '</code></td><td class="nowrap">'
            yield escape(environment.finalize(t_5(l_1_c)))
            yield '</td><td>'
            yield escape(environment.finalize(context.call((undefined(name='cell') if l_0_cell is missing else l_0_cell), t_2(l_1_c), _loop_vars=_loop_vars)))
            yield '</td><td>'
            yield escape(environment.finalize(context.call((undefined(name='cell') if l_0_cell is missing else l_0_cell), t_1(l_1_c), _loop_vars=_loop_vars)))
            yield '</td></tr>\n'
        l_1_c = missing
        if (undefined(name='more_changes') if l_0_more_changes is missing else l_0_more_changes):
            pass
            yield '<tr><td colspan="4" class="more">'
            yield escape(environment.finalize((undefined(name='more_changes') if l_0_more_changes is missing else l_0_more_changes)))
            yield ' more change(s) not shown</td></tr>'
        yield '</tbody>\n</table>\n'
        if (undefined(name='introduced') if l_0_introduced is missing else l_0_introduced):
            pass
            yield '<h3>Introduced by the change</h3>\n<ul>'
            for l_1_f in (undefined(name='introduced') if l_0_introduced is missing else l_0_introduced):
                _loop_vars = {}
                pass
                yield '<li>'
                yield escape(environment.finalize(context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'badge'), environment.getattr(l_1_f, 'severity'), _loop_vars=_loop_vars)))
                yield ' <code>'
                yield escape(environment.finalize(environment.getattr(l_1_f, 'rule_id')))
                yield '</code> '
                yield escape(environment.finalize(environment.getattr(l_1_f, 'title')))
                yield ' — '
                yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_f, 'subject'), 'label')))
                yield '</li>'
            l_1_f = missing
            yield '</ul>\n'
        if environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'), 'fixed'):
            pass
            yield '<h3>Fixed by the change</h3>\n<ul>'
            for l_1_f in environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'), 'fixed'):
                _loop_vars = {}
                pass
                yield '<li>'
                yield escape(environment.finalize(context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'badge'), environment.getattr(l_1_f, 'severity'), _loop_vars=_loop_vars)))
                yield ' <code>'
                yield escape(environment.finalize(environment.getattr(l_1_f, 'rule_id')))
                yield '</code> '
                yield escape(environment.finalize(environment.getattr(l_1_f, 'title')))
                yield ' — '
                yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_f, 'subject'), 'label')))
                yield '</li>'
            l_1_f = missing
            yield '</ul>\n'
        if environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'), 'no_longer_applies'):
            pass
            yield '<h3>No longer applies after the change</h3>\n<ul>'
            for l_1_f in environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'), 'no_longer_applies'):
                _loop_vars = {}
                pass
                yield '<li>'
                yield escape(environment.finalize(context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'badge'), environment.getattr(l_1_f, 'severity'), _loop_vars=_loop_vars)))
                yield ' <code>'
                yield escape(environment.finalize(environment.getattr(l_1_f, 'rule_id')))
                yield '</code> '
                yield escape(environment.finalize(environment.getattr(l_1_f, 'title')))
                yield ' — '
                yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_f, 'subject'), 'label')))
                yield '</li>'
            l_1_f = missing
            yield '</ul>\n'
    yield '\n<h2 id="controls">Compliance by framework control</h2>\n'
    if (undefined(name='controls') if l_0_controls is missing else l_0_controls):
        pass
        yield '<table>\n<thead><tr><th>Framework</th><th>Control</th><th>State</th><th class="num">Failing</th><th class="num">Unverified</th><th class="num">Waived</th><th class="num">Passing</th><th class="num">Not applicable</th><th>Rules</th></tr></thead>\n<tbody>\n'
        for l_1_c in (undefined(name='controls') if l_0_controls is missing else l_0_controls):
            l_1_control_anchor = resolve('control_anchor')
            _loop_vars = {}
            pass
            yield '<tr><td class="nowrap">'
            yield escape(environment.finalize(environment.getattr(l_1_c, 'framework')))
            yield '</td><td class="nowrap"><a href="#'
            yield escape(environment.finalize(environment.getitem((undefined(name='control_anchor') if l_1_control_anchor is missing else l_1_control_anchor), environment.getattr(l_1_c, 'control'))))
            yield '"><code title="'
            yield escape(environment.finalize(environment.getattr(l_1_c, 'control')))
            yield '">'
            yield escape(environment.finalize(environment.getattr(l_1_c, 'code')))
            yield '</code></a></td><td><span class="st '
            yield escape(environment.finalize(t_8(context.eval_ctx, environment.getattr(l_1_c, 'state'), ' ', '-')))
            yield '">'
            yield escape(environment.finalize(environment.getattr(l_1_c, 'state')))
            yield '</span></td><td class="num">'
            yield escape(environment.finalize(environment.getattr(l_1_c, 'failing')))
            yield '</td><td class="num">'
            yield escape(environment.finalize(environment.getattr(l_1_c, 'unverified')))
            yield '</td><td class="num">'
            yield escape(environment.finalize(environment.getattr(l_1_c, 'waived')))
            yield '</td><td class="num">'
            yield escape(environment.finalize(environment.getattr(l_1_c, 'passing')))
            yield '</td><td class="num">'
            yield escape(environment.finalize(environment.getattr(l_1_c, 'not_applicable')))
            yield '</td><td class="rules">'
            yield escape(environment.finalize(context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'rulelinks'), environment.getattr(l_1_c, 'rules'), _loop_vars=_loop_vars)))
            yield '</td></tr>\n'
        l_1_c = l_1_control_anchor = missing
        yield '</tbody>\n</table>\n'
    else:
        pass
        yield '<p class="muted">No rule maps to a framework control.</p>\n'
    yield '\n<h2 id="drill-down">Control drill-down</h2>\n<p class="muted">Every result of every rule mapped to each control, passes included, by status, each with what it checked and found (results with the same evidence share a line; "+N more" counts the further evidence items in the result\'s row). Each result links to its row in <a href="#findings">Findings by rule</a> or <a href="#passing">Appendix A</a>, which gives its full evidence and links back here.</p>\n'
    t_17 = 1
    for l_1_c in (undefined(name='drill') if l_0_drill is missing else l_0_drill):
        l_1_control_anchor = resolve('control_anchor')
        l_1_ca = missing
        _loop_vars = {}
        pass
        l_1_ca = environment.getitem((undefined(name='control_anchor') if l_1_control_anchor is missing else l_1_control_anchor), environment.getattr(environment.getattr(l_1_c, 'row'), 'control'))
        _loop_vars['ca'] = l_1_ca
        yield '<section class="control" id="'
        yield escape(environment.finalize((undefined(name='ca') if l_1_ca is missing else l_1_ca)))
        yield '">\n<h3>'
        yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_c, 'row'), 'framework')))
        yield ' <code>'
        yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_c, 'row'), 'code')))
        yield '</code> <span class="st '
        yield escape(environment.finalize(t_8(context.eval_ctx, environment.getattr(environment.getattr(l_1_c, 'row'), 'state'), ' ', '-')))
        yield '">'
        yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_c, 'row'), 'state')))
        yield '</span></h3>\n<p class="muted">'
        yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_c, 'row'), 'failing')))
        yield ' failing, '
        yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_c, 'row'), 'unverified')))
        yield ' unverified, '
        yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_c, 'row'), 'waived')))
        yield ' waived, '
        yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_c, 'row'), 'passing')))
        yield ' passing, '
        yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_c, 'row'), 'not_applicable')))
        yield ' not applicable; rules '
        yield escape(environment.finalize(context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'rulelinks'), environment.getattr(environment.getattr(l_1_c, 'row'), 'rules'), _loop_vars=_loop_vars)))
        yield '.</p>\n<table class="drill">\n<thead><tr><th class="c-rule">Rule</th><th class="c-status">Status</th><th>Evidence (checked: found — results)</th></tr></thead>\n<tbody>\n'
        for l_2_part in context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'drill'), environment.getattr(l_1_c, 'rules'), (undefined(name='ca') if l_1_ca is missing else l_1_ca), _loop_vars=_loop_vars):
            _loop_vars = {}
            pass
            yield escape(environment.finalize(l_2_part))
        l_2_part = missing
        yield '</tbody>\n</table>\n</section>\n'
        t_17 = 0
    l_1_c = l_1_control_anchor = l_1_ca = missing
    if t_17:
        pass
        yield '<p class="muted">No rule maps to a framework control.</p>\n'
    yield '\n<h2 id="over-time">Compliance over time</h2>\n'
    if (undefined(name='chart') if l_0_chart is missing else l_0_chart):
        pass
        yield '<svg class="chart" viewBox="0 0 '
        yield escape(environment.finalize(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'width')))
        yield ' '
        yield escape(environment.finalize(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'height')))
        yield '" role="img" aria-label="Failing settings rules not waived per settings revision, '
        yield escape(environment.finalize(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'first')))
        yield ' to '
        yield escape(environment.finalize(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'last')))
        yield '">\n'
        for l_1_t in environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'y_ticks'):
            _loop_vars = {}
            pass
            yield '<line class="grid" x1="'
            yield escape(environment.finalize(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'plot_left')))
            yield '" x2="'
            yield escape(environment.finalize(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'plot_right')))
            yield '" y1="'
            yield escape(environment.finalize(environment.getattr(l_1_t, 'pos')))
            yield '" y2="'
            yield escape(environment.finalize(environment.getattr(l_1_t, 'pos')))
            yield '" stroke="#d1d9e0"/><text class="axis" x="'
            yield escape(environment.finalize((environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'plot_left') - 6)))
            yield '" y="'
            yield escape(environment.finalize((environment.getattr(l_1_t, 'pos') + 4)))
            yield '" text-anchor="end" fill="#59636e" font-size="11">'
            yield escape(environment.finalize(environment.getattr(l_1_t, 'label')))
            yield '</text>\n'
        l_1_t = missing
        l_1_loop = missing
        for l_1_t, l_1_loop in LoopContext(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'x_ticks'), undefined):
            _loop_vars = {}
            pass
            yield '<text class="axis" x="'
            yield escape(environment.finalize(environment.getattr(l_1_t, 'pos')))
            yield '" y="'
            yield escape(environment.finalize((environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'plot_bottom') + 18)))
            yield '" text-anchor="'
            yield escape(environment.finalize(('end' if (environment.getattr(l_1_loop, 'last') and (environment.getattr(l_1_loop, 'length') > 1)) else 'middle')))
            yield '" fill="#59636e" font-size="11">'
            yield escape(environment.finalize(environment.getattr(l_1_t, 'label')))
            yield '</text>\n'
        l_1_loop = l_1_t = missing
        yield '<polygon class="area" points="'
        yield escape(environment.finalize(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'area')))
        yield '" fill="#f5c6cb" fill-opacity="0.6"/>\n<polyline class="line" points="'
        yield escape(environment.finalize(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'line')))
        yield '" fill="none" stroke="#8b0a1e" stroke-width="2"/>\n</svg>\n<p class="muted">Failing settings rules (not waived) per settings revision (revisions '
        yield escape(environment.finalize(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'first')))
        yield '–'
        yield escape(environment.finalize(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'last')))
        yield '); now '
        yield escape(environment.finalize(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'latest')))
        yield ', peak '
        yield escape(environment.finalize(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'peak')))
        if (undefined(name='chart_waived') if l_0_chart_waived is missing else l_0_chart_waived):
            pass
            yield '; '
            yield escape(environment.finalize((undefined(name='chart_waived') if l_0_chart_waived is missing else l_0_chart_waived)))
            yield ' more fail'
            if ((undefined(name='chart_waived') if l_0_chart_waived is missing else l_0_chart_waived) == 1):
                pass
                yield 's'
            yield ' at revision '
            yield escape(environment.finalize(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'last')))
            yield ' but '
            if ((undefined(name='chart_waived') if l_0_chart_waived is missing else l_0_chart_waived) == 1):
                pass
                yield 'is'
            else:
                pass
                yield 'are'
            yield ' waived, not counted here (as in the findings table)'
        yield '. A waived result is counted under waived, as everywhere in this report.</p>\n<details class="chart-data">\n<summary>The chart\'s figures: failing settings rules (not waived) per settings revision ('
        yield escape(environment.finalize(t_6(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'spans'))))
        yield ' row(s))</summary>\n<table>\n<thead><tr><th>Settings revisions</th><th class="num">Failing rules (not waived)</th></tr></thead>\n<tbody>\n'
        for l_1_s in (undefined(name='chart_rows') if l_0_chart_rows is missing else l_0_chart_rows):
            _loop_vars = {}
            pass
            yield '<tr><td>'
            yield escape(environment.finalize(environment.getattr(l_1_s, 'first')))
            if (environment.getattr(l_1_s, 'last') != environment.getattr(l_1_s, 'first')):
                pass
                yield '–'
                yield escape(environment.finalize(environment.getattr(l_1_s, 'last')))
            yield '</td><td class="num">'
            yield escape(environment.finalize(environment.getattr(l_1_s, 'failing')))
            yield '</td></tr>\n'
        l_1_s = missing
        if (t_6(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'spans')) > t_6((undefined(name='chart_rows') if l_0_chart_rows is missing else l_0_chart_rows))):
            pass
            yield '<tr><td colspan="2" class="more">'
            yield escape(environment.finalize((t_6(environment.getattr((undefined(name='chart') if l_0_chart is missing else l_0_chart), 'spans')) - t_6((undefined(name='chart_rows') if l_0_chart_rows is missing else l_0_chart_rows)))))
            yield ' more row(s) not shown (the oldest; the newest '
            yield escape(environment.finalize((undefined(name='chart_cap') if l_0_chart_cap is missing else l_0_chart_cap)))
            yield " are listed); findings.json lists every revision's count (<code>failing_not_waived_by_revision</code>)</td></tr>"
        yield '</tbody>\n</table>\n</details>\n'
    else:
        pass
        yield '<p class="muted">Not enough revision history for a chart.</p>\n'
    yield '\n<h2 id="findings">Findings by rule</h2>\n<p class="muted">Every open or waived result with its full evidence; a result\'s fingerprint links back to it in the <a href="#drill-down">control drill-down</a>.</p>\n'
    if (not (undefined(name='groups') if l_0_groups is missing else l_0_groups)):
        pass
        yield '<p>No open or waived findings.</p>'
    l_1_loop = missing
    for l_1_g, l_1_loop in LoopContext((undefined(name='groups') if l_0_groups is missing else l_0_groups), undefined):
        l_1_rule_anchor = resolve('rule_anchor')
        l_1_pass_rules = resolve('pass_rules')
        l_1_pass_anchor = resolve('pass_anchor')
        l_1_r = missing
        _loop_vars = {}
        pass
        l_1_r = environment.getattr(l_1_g, 'first')
        _loop_vars['r'] = l_1_r
        yield '<section class="rule" id="'
        yield escape(environment.finalize(environment.getitem((undefined(name='rule_anchor') if l_1_rule_anchor is missing else l_1_rule_anchor), environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'rule_id'))))
        yield '">\n<header>'
        yield escape(environment.finalize(context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'badge'), environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'severity'), _loop_vars=_loop_vars)))
        yield '<h3><span class="rid">'
        yield escape(environment.finalize(environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'rule_id')))
        yield '</span> '
        yield escape(environment.finalize(environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'title')))
        yield '</h3>\n<span class="muted">'
        l_2_loop = missing
        for (l_2_s, l_2_n), l_2_loop in LoopContext(environment.getattr(l_1_g, 'status_counts'), undefined):
            _loop_vars = {}
            pass
            yield escape(environment.finalize(l_2_n))
            yield ' '
            yield escape(environment.finalize(t_8(context.eval_ctx, l_2_s, '_', ' ')))
            if (not environment.getattr(l_2_loop, 'last')):
                pass
                yield ', '
        l_2_loop = l_2_s = l_2_n = missing
        yield '</span></header>\n'
        if environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'description'):
            pass
            yield '<p class="wrap">'
            yield escape(environment.finalize(t_7(environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'description'))))
            yield '</p>'
        yield '<p class="muted">'
        if environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'controls'):
            pass
            yield 'Controls: '
            yield escape(environment.finalize(context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'controllinks'), environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'controls'), _loop_vars=_loop_vars)))
            yield '. '
        if environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'source'):
            pass
            yield 'Defined at <code>'
            yield escape(environment.finalize(environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'source')))
            yield '</code>.'
        if (environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'rule_id') in (undefined(name='pass_rules') if l_1_pass_rules is missing else l_1_pass_rules)):
            pass
            yield ' Passing results: <a href="#'
            yield escape(environment.finalize(environment.getitem((undefined(name='pass_anchor') if l_1_pass_anchor is missing else l_1_pass_anchor), environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'rule_id'))))
            yield '">Appendix A</a>.'
        yield '</p>\n'
        if environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'remediation'):
            pass
            yield '<p class="wrap"><strong>Remediation:</strong> '
            yield escape(environment.finalize(t_7(environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'remediation'))))
            yield '</p>'
        yield '<table class="findings">\n<thead><tr><th class="c-subject">Subject</th><th class="c-status">Status</th><th>Message and evidence</th><th class="c-since">Since</th></tr></thead>\n<tbody>\n'
        yield escape(environment.finalize(context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'findings'), environment.getattr(l_1_g, 'rows'), environment.getattr(l_1_g, 'more'), environment.getattr(l_1_g, 'cut'), _loop_vars=_loop_vars)))
        yield '</tbody>\n</table>\n</section>\n'
    l_1_loop = l_1_g = l_1_r = l_1_rule_anchor = l_1_pass_rules = l_1_pass_anchor = missing
    for (l_1_heading, l_1_words, l_1_records) in (([('Resolved since the previous run', '', environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'resolved'))] if (environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'resolved') and (not environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'review'))) else []) + (undefined(name='not_judged') if l_0_not_judged is missing else l_0_not_judged)):
        l_1_rows_per_rule = resolve('rows_per_rule')
        _loop_vars = {}
        pass
        yield '<h3>'
        yield escape(environment.finalize(l_1_heading))
        yield ' ('
        yield escape(environment.finalize(t_6(l_1_records)))
        yield ')</h3>\n'
        if l_1_words:
            pass
            yield '<p class="muted">'
            yield escape(environment.finalize(l_1_words))
            yield '</p>'
        elif (undefined(name='upgrade_note') if l_0_upgrade_note is missing else l_0_upgrade_note):
            pass
            yield '<p class="muted"><strong>Note:</strong> '
            yield escape(environment.finalize((undefined(name='upgrade_note') if l_0_upgrade_note is missing else l_0_upgrade_note)))
            yield '.</p>'
        yield '<table>\n<thead><tr><th>Rule</th><th>Subject</th><th>Severity</th><th>Was</th><th>First seen</th></tr></thead>\n<tbody>\n'
        for l_2_p in l_1_records[:(undefined(name='rows_per_rule') if l_1_rows_per_rule is missing else l_1_rows_per_rule)]:
            _loop_vars = {}
            pass
            yield '<tr><td><code>'
            yield escape(environment.finalize(environment.getattr(l_2_p, 'rule_id')))
            yield '</code></td><td class="wrap">'
            yield escape(environment.finalize(environment.getattr(l_2_p, 'subject_key')))
            yield '</td><td>'
            yield escape(environment.finalize(environment.getattr(l_2_p, 'severity')))
            yield '</td><td>'
            yield escape(environment.finalize(environment.getattr(l_2_p, 'status')))
            yield '</td><td>'
            yield escape(environment.finalize(environment.getattr(l_2_p, 'first_seen_run')))
            yield '</td></tr>\n'
        l_2_p = missing
        if (t_6(l_1_records) > (undefined(name='rows_per_rule') if l_1_rows_per_rule is missing else l_1_rows_per_rule)):
            pass
            yield '<tr><td colspan="5" class="more">'
            yield escape(environment.finalize((t_6(l_1_records) - (undefined(name='rows_per_rule') if l_1_rows_per_rule is missing else l_1_rows_per_rule))))
            yield ' more not shown</td></tr>'
        yield '</tbody>\n</table>\n'
    l_1_heading = l_1_words = l_1_records = l_1_rows_per_rule = missing
    yield '\n'
    if (not t_12(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'usage'))):
        pass
        template = environment.get_template('usage.html.j2', 'report.html.j2')
        gen = template.root_render_func(template.new_context(context.get_all(), True, {'cell': l_0_cell, 'lapsed': l_0_lapsed, 'on': l_0_on, 'other_inputs': l_0_other_inputs, 'sc': l_0_sc, 'waiverrows': l_0_waiverrows, 'waivertable': l_0_waivertable}))
        try:
            for event in gen:
                yield event
        finally: gen.close()
        yield '\n'
    yield '<h2 id="readiness">Repository readiness</h2>\n'
    if (not t_12(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'org_level'))):
        pass
        yield '<p>Organization readiness level: <strong>'
        yield escape(environment.finalize(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'org_level')))
        yield '</strong></p>'
    if environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'readiness_rows'):
        pass
        yield '<table>\n<thead><tr><th>Repository</th><th class="num">Level</th><th class="num">Score</th><th class="num">Age (days)</th><th>Clean</th><th>Report</th></tr></thead>\n<tbody>\n'
        yield escape(environment.finalize(context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'readiness'), environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'readiness_rows'))))
        yield '</tbody>\n</table>\n'
    else:
        pass
        yield '<p class="muted">No readiness reports evaluated.</p>\n'
    yield '\n<h2 id="waivers">Waivers</h2>\n'
    if (((environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'waivers'), 'in_force') or environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'waivers'), 'expiring_soon')) or environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'waivers'), 'expired')) or environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'waivers'), 'stale')):
        pass
        l_0_lapsed = environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'waivers'), 'expired_since_as_of')
        context.vars['lapsed'] = l_0_lapsed
        context.exported_vars.add('lapsed')
        if (undefined(name='waivers_as_of') if l_0_waivers_as_of is missing else l_0_waivers_as_of):
            pass
            yield '<p class="waiver-note"><strong>'
            yield escape(environment.finalize((undefined(name='waivers_as_of') if l_0_waivers_as_of is missing else l_0_waivers_as_of)))
            yield '.</strong></p>\n'
            l_0_on = markup_join((' on ', t_4(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'waivers'), 'as_of')), ))
            context.vars['on'] = l_0_on
            context.exported_vars.add('on')
            yield escape(environment.finalize(context.call((undefined(name='waivertable') if l_0_waivertable is missing else l_0_waivertable), markup_join(('In force', (undefined(name='on') if l_0_on is missing else l_0_on), ', expired before this report', )), (undefined(name='lapsed') if l_0_lapsed is missing else l_0_lapsed))))
            yield '\n'
        else:
            pass
            l_0_on = ''
            context.vars['on'] = l_0_on
            context.exported_vars.add('on')
        yield escape(environment.finalize(context.call((undefined(name='waivertable') if l_0_waivertable is missing else l_0_waivertable), markup_join(('In force', (undefined(name='on') if l_0_on is missing else l_0_on), )), environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'waivers'), 'in_force'), (undefined(name='lapsed') if l_0_lapsed is missing else l_0_lapsed))))
        yield '\n'
        yield escape(environment.finalize(context.call((undefined(name='waivertable') if l_0_waivertable is missing else l_0_waivertable), markup_join(('Expiring within 14 days', (markup_join((' of ', t_4(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'waivers'), 'as_of')), )) if (undefined(name='waivers_as_of') if l_0_waivers_as_of is missing else l_0_waivers_as_of) else ''), )), environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'waivers'), 'expiring_soon'), (undefined(name='lapsed') if l_0_lapsed is missing else l_0_lapsed))))
        yield '\n'
        yield escape(environment.finalize(context.call((undefined(name='waivertable') if l_0_waivertable is missing else l_0_waivertable), markup_join(('Expired', (markup_join((' by ', t_4(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'waivers'), 'as_of')), )) if (undefined(name='waivers_as_of') if l_0_waivers_as_of is missing else l_0_waivers_as_of) else ''), ' (no longer waiving)', )), environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'waivers'), 'expired'))))
        yield '\n'
        yield escape(environment.finalize(context.call((undefined(name='waivertable') if l_0_waivertable is missing else l_0_waivertable), 'Stale (match nothing)', environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'waivers'), 'stale'), (undefined(name='lapsed') if l_0_lapsed is missing else l_0_lapsed))))
        yield '\n'
    else:
        pass
        yield '<p class="muted">No waivers are in force, expiring, expired or stale.</p>\n'
    if environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'waivers'), 'warnings'):
        pass
        yield '<ul>'
        for l_1_w in environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'waivers'), 'warnings'):
            _loop_vars = {}
            pass
            yield '<li class="wrap">'
            yield escape(environment.finalize(t_9(l_1_w)))
            yield '</li>'
        l_1_w = missing
        yield '</ul>'
    yield '\n<h2 id="passing">Appendix A: passing results and their evidence</h2>\n<p class="muted">Results that passed or did not apply, with the evidence each rests on: auditors test the controls that pass as well as those that fail. A result\'s fingerprint links back to it in the <a href="#drill-down">control drill-down</a>.</p>\n'
    if (not (undefined(name='passing') if l_0_passing is missing else l_0_passing)):
        pass
        yield '<p class="muted">No passing results.</p>'
    l_1_loop = missing
    for l_1_g, l_1_loop in LoopContext((undefined(name='passing') if l_0_passing is missing else l_0_passing), undefined):
        l_1_pass_anchor = resolve('pass_anchor')
        l_1_open_rules = resolve('open_rules')
        l_1_rule_anchor = resolve('rule_anchor')
        l_1_r = missing
        _loop_vars = {}
        pass
        l_1_r = environment.getattr(l_1_g, 'first')
        _loop_vars['r'] = l_1_r
        yield '<section class="rule pass" id="'
        yield escape(environment.finalize(environment.getitem((undefined(name='pass_anchor') if l_1_pass_anchor is missing else l_1_pass_anchor), environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'rule_id'))))
        yield '">\n<header>'
        yield escape(environment.finalize(context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'badge'), environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'severity'), _loop_vars=_loop_vars)))
        yield '<h3>'
        if (environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'rule_id') in (undefined(name='open_rules') if l_1_open_rules is missing else l_1_open_rules)):
            pass
            yield '<a href="#'
            yield escape(environment.finalize(environment.getitem((undefined(name='rule_anchor') if l_1_rule_anchor is missing else l_1_rule_anchor), environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'rule_id'))))
            yield '" class="rid">'
            yield escape(environment.finalize(environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'rule_id')))
            yield '</a>'
        else:
            pass
            yield '<span class="rid" id="'
            yield escape(environment.finalize(environment.getitem((undefined(name='rule_anchor') if l_1_rule_anchor is missing else l_1_rule_anchor), environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'rule_id'))))
            yield '">'
            yield escape(environment.finalize(environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'rule_id')))
            yield '</span>'
        yield ' '
        yield escape(environment.finalize(environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'title')))
        yield '</h3>\n<span class="muted">'
        l_2_loop = missing
        for (l_2_s, l_2_n), l_2_loop in LoopContext(environment.getattr(l_1_g, 'status_counts'), undefined):
            _loop_vars = {}
            pass
            yield escape(environment.finalize(l_2_n))
            yield ' '
            yield escape(environment.finalize(t_8(context.eval_ctx, l_2_s, '_', ' ')))
            if (not environment.getattr(l_2_loop, 'last')):
                pass
                yield ', '
        l_2_loop = l_2_s = l_2_n = missing
        yield '</span></header>\n<p class="muted">'
        if environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'controls'):
            pass
            yield 'Controls: '
            yield escape(environment.finalize(context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'controllinks'), environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'controls'), _loop_vars=_loop_vars)))
            yield '. '
        if environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'source'):
            pass
            yield 'Defined at <code>'
            yield escape(environment.finalize(environment.getattr((undefined(name='r') if l_1_r is missing else l_1_r), 'source')))
            yield '</code>.'
        yield '</p>\n<table class="findings">\n<thead><tr><th class="c-subject">Subject</th><th class="c-status">Status</th><th>Message and evidence</th></tr></thead>\n<tbody>\n'
        yield escape(environment.finalize(context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'passing'), environment.getattr(l_1_g, 'rows'), environment.getattr(l_1_g, 'more'), environment.getattr(l_1_g, 'cut'), _loop_vars=_loop_vars)))
        yield '</tbody>\n</table>\n</section>\n'
    l_1_loop = l_1_g = l_1_r = l_1_pass_anchor = l_1_open_rules = l_1_rule_anchor = missing
    yield '\n<h2 id="inputs">Appendix B: inputs</h2>\n<h3>Policy files</h3>\n<table>\n<thead><tr><th>File</th><th>SHA-256</th><th class="num">Rules</th></tr></thead>\n<tbody>\n'
    for l_1_p in environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'policy_files'):
        _loop_vars = {}
        pass
        yield '<tr><td><code>'
        yield escape(environment.finalize(environment.getattr(l_1_p, 'path')))
        yield '</code></td><td class="mono">'
        yield escape(environment.finalize(environment.getattr(l_1_p, 'sha256')))
        yield '</td><td class="num">'
        yield escape(environment.finalize(t_6(environment.getattr(l_1_p, 'rule_ids'))))
        yield '</td></tr>\n'
    l_1_p = missing
    yield '</tbody>\n</table>\n'
    yield escape(environment.finalize(context.call((undefined(name='other_inputs') if l_0_other_inputs is missing else l_0_other_inputs), environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'input_files'))))
    yield '<h3 id="revisions-evaluated">Settings revisions evaluated ('
    yield escape(environment.finalize(t_6(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'inputs'), 'revisions_evaluated'))))
    yield ')</h3>\n'
    if environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'inputs'), 'revisions_evaluated'):
        pass
        yield '<table>\n<thead><tr><th class="num">Revision</th><th>Content SHA-256</th></tr></thead>\n<tbody>\n'
        yield escape(environment.finalize(context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'revisions'), (undefined(name='revisions_shown') if l_0_revisions_shown is missing else l_0_revisions_shown))))
        if (t_6(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'inputs'), 'revisions_evaluated')) > (undefined(name='appendix_cap') if l_0_appendix_cap is missing else l_0_appendix_cap)):
            pass
            yield '<tr><td colspan="2" class="more">'
            yield escape(environment.finalize((t_6(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'inputs'), 'revisions_evaluated')) - (undefined(name='appendix_cap') if l_0_appendix_cap is missing else l_0_appendix_cap))))
            yield ' more (the oldest; the newest '
            yield escape(environment.finalize((undefined(name='appendix_cap') if l_0_appendix_cap is missing else l_0_appendix_cap)))
            yield ' are listed); '
            yield escape(environment.finalize((undefined(name='appendix_rest') if l_0_appendix_rest is missing else l_0_appendix_rest)))
            yield '</td></tr>'
        yield '</tbody>\n</table>\n'
    else:
        pass
        yield '<p class="muted">None.</p>\n'
    yield '<h3 id="reports-evaluated">Readiness reports evaluated ('
    yield escape(environment.finalize(t_6(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'inputs'), 'reports_evaluated'))))
    yield ')</h3>\n'
    if environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'inputs'), 'reports_evaluated'):
        pass
        yield '<table>\n<thead><tr><th>Report</th><th>Content SHA-256</th></tr></thead>\n<tbody>\n'
        yield escape(environment.finalize(context.call(environment.getattr((undefined(name='rows') if l_0_rows is missing else l_0_rows), 'reports'), environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'inputs'), 'reports_evaluated')[:(undefined(name='appendix_cap') if l_0_appendix_cap is missing else l_0_appendix_cap)])))
        if (t_6(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'inputs'), 'reports_evaluated')) > (undefined(name='appendix_cap') if l_0_appendix_cap is missing else l_0_appendix_cap)):
            pass
            yield '<tr><td colspan="2" class="more">'
            yield escape(environment.finalize((t_6(environment.getattr(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'inputs'), 'reports_evaluated')) - (undefined(name='appendix_cap') if l_0_appendix_cap is missing else l_0_appendix_cap))))
            yield ' more; '
            yield escape(environment.finalize((undefined(name='appendix_rest') if l_0_appendix_rest is missing else l_0_appendix_rest)))
            yield '</td></tr>'
        yield '</tbody>\n</table>\n'
    else:
        pass
        yield '<p class="muted">None.</p>\n'
    yield '</main>\n<footer>Generated by auditor '
    yield escape(environment.finalize(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'tool_version')))
    yield ' at '
    yield escape(environment.finalize(t_11(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'generated_at'))))
    yield '. Run '
    yield escape(environment.finalize(environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'run_id')))
    yield '. Same inputs give a byte-identical report.</footer>\n</body>\n</html>\n'

blocks = {}
debug_info = '2=135&3=155&7=165&12=184&13=191&14=196&17=220&18=231&19=236&23=240&33=252&36=254&37=256&38=258&43=260&44=267&47=276&48=283&49=285&50=287&51=289&52=291&53=305&57=313&58=316&60=346&63=355&64=362&68=370&69=373&71=375&81=384&83=388&84=390&86=393&90=411&92=416&95=430&98=434&105=436&107=440&108=447&109=449&110=454&112=456&114=464&115=482&116=484&118=489&120=495&121=515&128=533&132=545&134=547&138=550&139=552&140=554&141=556&151=564&153=575&154=578&155=586&156=588&157=591&158=599&161=602&162=607&165=613&166=621&168=629&171=632&175=649&176=653&178=668&181=674&183=677&185=691&187=694&189=708&191=711&196=726&200=729&201=734&211=765&212=770&213=773&214=775&215=783&219=795&227=807&231=810&232=818&234=838&236=852&237=854&239=856&241=882&245=884&247=897&257=909&258=913&259=920&260=923&261=925&262=932&263=943&264=949&265=965&269=971&273=974&274=979&275=983&279=994&281=1009&286=1017&289=1027&290=1032&294=1035&301=1041&302=1043&303=1046&304=1051&305=1054&306=1058&307=1061&308=1063&309=1065&310=1067&314=1072&318=1084&319=1088&320=1095&321=1098&322=1100&323=1120&324=1131&328=1142&338=1146&342=1158&343=1160&344=1162&348=1165&354=1180&355=1182&359=1185&366=1198'
